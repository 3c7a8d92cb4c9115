"""Link graphs on Spark (``pip install scrapy-iri[spark]``): see :mod:`scrapy_iri.graph._spark`."""

from .graph._spark import archive_rows, canonical_rows, normalize_graph, rows_schema, session

__all__ = ["archive_rows", "canonical_rows", "normalize_graph", "rows_schema", "session"]
