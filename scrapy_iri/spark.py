"""Link graphs on Spark (``pip install scrapy-iri[spark]``): see :mod:`scrapy_iri.graph._spark`."""

from .graph._spark import canonical_rows, normalize_graph, rows_schema, session

__all__ = ["canonical_rows", "normalize_graph", "rows_schema", "session"]
