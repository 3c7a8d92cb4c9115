"""Link graphs: every node in its canonical form, duplicate edges merged.

``scrapy-iri graph IN OUT`` reads a collected link graph (CSV or TSV with a
``source`` and a ``target`` column, JSON Lines objects with those keys, or
Parquet) or the links of web archives (WARC, WAT; the protocol rung learned
from their own redirects: ``_archive``, ``_learn``), canonicalizes both
ends of every edge at a rung of the comparison ladder and writes each
distinct canonical edge once, in first-seen order, as CSV or Parquet.
``--engine dask|spark`` canonicalizes on a local Dask cluster or Spark
session and writes the same output (see ``_engines``); archives are read
there too, in pieces (``_split``: :func:`archive_pieces`,
:func:`piece_rows`, for a job of your own).

Memory grows with the distinct nodes and edges kept for de-duplication, not
with the input: a node is a 16-byte BLAKE2b digest of its canonical form
mapped to a number, an edge is the pair of its nodes' numbers packed in one
int, and the cache of canonical forms is a bounded LRU. Two distinct nodes
share a digest with probability 2**-128; among n nodes, below n**2 / 2**129.
Bad rows are reported with their line numbers and counted, never dropped
silently. See docs/graph.md.
"""

from ._cli import cmd_graph, format_summary, register
from ..errors import BadEdge, GraphError
from ._archive import archive_links
from ._inputs import FORMATS, detect_format
from ._learn import LearnedStore, learn_files
from ._normalize import DEFAULT_CACHE_SIZE, GraphNormalizer, GraphSummary, normalize_graph
from ._run import GraphOptions, normalize_graph_file
from ._split import ROW_COLUMNS, Piece, archive_pieces, learn_captures, piece_captures, piece_rows

__all__ = [
    "BadEdge",
    "LearnedStore",
    "Piece",
    "ROW_COLUMNS",
    "archive_links",
    "archive_pieces",
    "learn_captures",
    "piece_captures",
    "piece_rows",
    "learn_files",
    "GraphError",
    "GraphNormalizer",
    "GraphOptions",
    "GraphSummary",
    "normalize_graph",
    "normalize_graph_file",
    "register",
]
