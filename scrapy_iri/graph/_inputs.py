"""What ``graph`` reads: edge files and web archives, behind one :class:`GraphInput`."""

from __future__ import annotations

import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ..errors import GraphError
from ._readers import _READERS, _SUFFIXES, _open_input

from ._source import ARCHIVE_COLUMNS, ARCHIVE_FORMATS, EDGE_COLUMNS, EDGE_FORMATS, FORMATS, GraphInput

__all__ = ["ARCHIVE_COLUMNS", "ARCHIVE_FORMATS", "EDGE_COLUMNS", "EDGE_FORMATS", "FORMATS", "GraphInput",
           "detect_format", "open_input"]


COMPRESSED = (".gz", ".bz2", ".xz")
"""Name endings of compressed edge files (read by their content: gzip, bzip2 or xz)."""


def name_suffix(name: str) -> str:
    """The lowercased suffix of a file name that tells its format, a compression ending looked through."""
    path = Path(name.lower())
    return path.with_suffix("").suffix if path.suffix in COMPRESSED else path.suffix


def detect_format(name: str) -> str:
    """``csv``, ``tsv``, ``jsonl``, ``parquet`` or ``warc``: web archives by their content, edge files
    by their name (``.gz`` looked through); ``-`` is CSV; a directory holds Parquet parts or archives."""
    from ._archive import archive_files, is_archive

    if name == "-":
        return "csv"
    if os.path.isdir(name):
        if any(entry.name.lower().endswith(".parquet") for entry in os.scandir(name)):
            return "parquet"
        return "warc"
    if not os.path.exists(name) and any(c in name for c in "*?["):
        matched = archive_files(name)  # an error when the glob matches nothing
        if not any(is_archive(path) for path in matched):
            raise GraphError(f"{name}: a glob reads web archives, and none of the {len(matched):,} files it matches"
                             " is a WARC or WAT file: give an edge file by its name, or Parquet parts as a directory")
        return "warc"
    if is_archive(name):
        return "warc"
    suffix = name_suffix(name)
    if suffix in (".warc", ".wat"):
        return "warc"
    if suffix in (".cdx", ".cdxj") or (suffix not in _SUFFIXES and _is_index(name)):
        raise GraphError(f"{name}: an index holds no links: learn from it with 'scrapy-iri store learn', "
                         "and give graph the WARC files")
    try:
        return _SUFFIXES[suffix]
    except KeyError:
        choices = ",".join(FORMATS)
        raise GraphError(f"{name}: cannot tell the format from the name: use --format {{{choices}}}") from None


def _is_index(name: str) -> bool:
    """Whether ``name`` is a CDX or CDXJ index, by its content (as ``store learn`` knows one)."""
    from ._learn import _capture_file

    found = _capture_file(name)
    return found is not None and found.kind in ("cdx", "cdxj")


def _raw_text(row: tuple[Any, ...], problem: str) -> str:
    raw = row[3]
    return raw if raw.endswith(("\n", "\r")) else raw + "\n"


def _parquet_text(row: tuple[Any, ...], problem: str) -> str:
    from ._parquet import row_text

    return row[3] or row_text(row[1], row[2])


def open_input(name: str, fmt: str, stdin: Any, stack: ExitStack, *, redirects: str = "skip") -> GraphInput:
    """The rows of ``name`` read as ``fmt`` (files it opens are closed by ``stack``)."""
    if fmt in ARCHIVE_FORMATS:
        from ._archive import archive_input

        return archive_input(name, redirects=redirects)
    if fmt == "parquet":
        from ._parquet import parquet_rows

        header, rows = parquet_rows(name)
        return GraphInput(rows, header, _parquet_text)
    # JSON Lines ends lines with LF only (a CR is JSON whitespace); CSV and TSV with CR, LF or CRLF.
    newline = "\n" if fmt == "jsonl" else ""
    text, position_of, total, closing = _open_input(name, stdin if stdin is not None else sys.stdin, newline)
    if closing:
        stack.callback(text.close)
    label = "<stdin>" if name == "-" else name
    header, rows = _READERS[fmt](iter(text), label)  # the header is checked before any output exists
    tell = position_of.tell if position_of is not None else (lambda: None)
    return GraphInput(rows, header, _raw_text, tell=tell, total=total)
