"""Link graphs on Dask (``pip install scrapy-iri[dask]``): see :mod:`scrapy_iri.graph._dask`."""

from .graph._dask import normalize_graph

__all__ = ["normalize_graph"]
