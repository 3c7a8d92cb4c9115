"""One input of ``graph``: its rows and how they are reported (edge files and archives alike)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

EDGE_FORMATS = ("csv", "tsv", "jsonl", "parquet")
ARCHIVE_FORMATS = ("warc",)
FORMATS = EDGE_FORMATS + ARCHIVE_FORMATS
EDGE_COLUMNS = ("source", "target")
ARCHIVE_COLUMNS = ("source", "target", "path", "date", "source_original", "target_original")


@dataclass
class GraphInput:
    """Rows ``(where, source, target, raw, problem, ...)`` and how to report them.

    ``where`` is a line number (edge files) or ``file:offset`` (archives);
    ``reject(row, problem)`` is the row's text in the bad-rows output, under
    ``header``; ``columns`` are the output's; ``skipped`` counts archive
    records that hold no links, by why; ``made`` says the rows come with
    their nodes, made by an engine that read the input itself.
    """

    rows: Iterator[tuple[Any, ...]]
    header: str
    reject: Callable[[tuple[Any, ...], str], str]
    columns: tuple[str, ...] = EDGE_COLUMNS
    tell: Callable[[], int | None] = lambda: None
    total: int | None = None
    skipped: Counter[str] = field(default_factory=Counter)
    made: bool = False  # rows come as (row, source node, target node), their nodes made by an engine


