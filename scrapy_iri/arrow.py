"""The batch kernel on Arrow columns (``pip install scrapy-iri[arrow]``): see :mod:`scrapy_iri.graph._arrow`."""

from .graph._arrow import (
    CACHE_SIZE,
    alias_table,
    canonicalize_array,
    canonicalize_edges,
    normalize_batch,
    split_rows,
    worker_store,
)

__all__ = [
    "CACHE_SIZE",
    "alias_table",
    "canonicalize_array",
    "canonicalize_edges",
    "normalize_batch",
    "split_rows",
    "worker_store",
]
