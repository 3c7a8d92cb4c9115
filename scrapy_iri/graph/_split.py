"""Web archives on Dask and Spark: the work on a piece in a worker, the merge and the learning here.

The archives are cut into pieces (``_pieces``); a worker reads a piece,
parses its HTML, extracts and canonicalizes its links (:func:`piece_links`,
:func:`piece_rows`) or reads its captures and what cannot be learned of
them (:func:`piece_learning`): module-level functions, shipped by
reference. This process learns the captures in date order, reports what
could not be learned, and merges the pieces' rows in file order.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ._pieces import Piece, pieces, span_records

__all__ = ["PIECE_BYTES", "Piece", "archive_pieces", "learn_captures", "piece_captures", "piece_learning",
           "piece_links", "piece_rows", "pieces", "span_records"]

PIECE_BYTES = 8 << 20
"""The bytes of archive a piece holds, at least (a file smaller than twice this is one piece)."""


def archive_pieces(*names: str, piece_bytes: int | None = None) -> list[Piece]:
    """The pieces of the archives ``names`` name (files, directories, globs), in the command's order."""
    from ._archive import archive_files

    files = [path for name in names for path in archive_files(name)]
    return pieces(files, PIECE_BYTES if piece_bytes is None else piece_bytes)


# --- the work on a piece, in a worker ----------------------------------------------------


@dataclass
class PieceLinks:
    """What a worker makes of a piece: its link rows as the local engine reads them (but for
    ``repeated``), the canonical form or error of each distinct end, the records skipped (by why).

    A valid row whose canonical edge and both original ends came earlier in the piece changes
    nothing but the count of edges read: such rows are only counted, in ``repeated``.
    """

    rows: list[tuple[Any, ...]]
    forms: dict[str, tuple[str | None, str | None]]
    skipped: dict[str, int]
    repeated: int


def piece_links(piece: Piece, redirects: str, options: dict[str, Any], originals: Any = None) -> PieceLinks:
    """The links of ``piece``, read, parsed and canonicalized (with the kernel ``options``: see ``_arrow``);
    ``originals``: where the records its revisits refer to are (:class:`~scrapy_iri.graph._revisits.Originals`
    of the whole input; by default, of the piece's file)."""
    from ._archive import ArchiveRows
    from ._arrow import kernel_of

    one = kernel_of(options)
    reader = ArchiveRows([piece.path], redirects, [piece], originals)
    rows: list[tuple[Any, ...]] = []
    forms: dict[str, Any] = {}
    edges: set[tuple[str, str]] = set()
    ends: set[str] = set()
    repeated = 0
    for row in reader:
        if row[4] is None:
            source, target = row[1], row[2]
            s = forms.get(source) or forms.setdefault(source, one(source))
            t = forms.get(target) or forms.setdefault(target, one(target))
            if s[0] is not None and t[0] is not None:
                edge = (s[0], t[0])
                if edge in edges and source in ends and target in ends:
                    repeated += 1
                    continue
                edges.add(edge)
                ends.add(source)
                ends.add(target)
        rows.append(row)
    return PieceLinks(rows, forms, dict(reader.skipped), repeated)


ROW_COLUMNS = ("source", "target", "path", "date", "source_original", "target_original", "where", "reason")


def piece_rows(
    piece: Piece,
    rung: Any = "scheme",
    *,
    store: Any = None,
    redirects: str = "skip",
    keep_fragment: bool = False,
    lenient: bool = True,
    cache_size: int | None = None,
    originals: Any = None,
) -> Iterator[tuple[str | None, ...]]:
    """Every link row of ``piece``, canonicalized at ``rung`` (columns :data:`ROW_COLUMNS`).

    ``source`` and ``target`` are null and ``reason`` says why in a bad row
    (a bad record, a link that is no IRI reference, an end with no canonical
    form: the reasons of ``--bad-rows``); ``where`` is ``file:offset``.
    Nothing is de-duplicated. The protocol rung takes ``store``: a store URI
    every worker can open, or what :func:`learn_captures` returns. A revisit's links are those of
    the record it refers to, found among the files of ``originals``
    (:class:`~scrapy_iri.graph._revisits.Originals` of the whole input; by default, the piece's file).
    """
    from ._archive import ArchiveRows
    from ._arrow import kernel_of

    one = kernel_of(dict(rung=rung, keep_fragment=keep_fragment, lenient=lenient, store=store), cache_size)
    for where, source, target, _, problem, path, date in ArchiveRows([piece.path], redirects, [piece], originals):
        if problem is not None:
            yield None, None, path, date, source, target, where, problem
            continue
        s, source_error = one(source)
        t, target_error = one(target)
        reason = None
        if source_error is not None or target_error is not None:
            reason = "; ".join(f"{end}: {error}" for end, error in (("source", source_error),
                                                                     ("target", target_error)) if error)
            s = t = None
        yield s, t, path, date, source, target, where, reason


def piece_captures(piece: Piece) -> list[Any]:
    """The HTTP captures of a piece's records (:class:`~scrapy_iri.graph._learn.Capture`), file order."""
    return piece_learning(piece)[0]


def piece_learning(piece: Piece) -> tuple[list[Any], list[tuple[str, str]]]:
    """A piece's captures (:func:`piece_captures`) and what could not be learned: its bad records and
    captures, ``(file:offset, reason)`` in file order, as the local engine reports them."""
    from ._learn import Reading, warc_captures

    reading = Reading()
    captures = list(warc_captures(piece.location, reading, (piece.start, piece.end), piece.path))
    return captures, reading.bad


# --- this process: the protocol rung learned from the pieces' captures ---------------------

_OPENED: dict[tuple[str, float | None], Any] = {}


class LearnedFile:
    """A store learned into a file by this process, as every worker opens it: read only, its clock
    stopped at the archive's last capture (as :class:`~scrapy_iri.graph._learn.LearnedStore`'s)."""

    def __init__(self, uri: str, last: float | None) -> None:
        self.uri, self.last = uri, last
        self.cache_key = ("learned-file", uri, last)

    def store(self) -> Any:
        key = (self.uri, self.last)
        found = _OPENED.get(key)
        if found is None:
            from ..store import open_store

            last = self.last
            found = open_store(self.uri, create=False, clock=None if last is None else (lambda: last))
            _OPENED.clear()
            _OPENED[key] = found
        return found

    def representative(self, url: str) -> str:
        return self.store().representative(url)


def learn_captures(captures: list[Any], uri: str) -> LearnedFile:
    """Learn the store at ``uri`` (a new file every worker can read) from ``captures`` (file order), in date
    order, as the local engine does; the store every worker then opens for the protocol rung."""
    from ..store import Observation, open_store

    ordered = sorted(captures, key=lambda capture: capture.time)
    store = open_store(uri)
    try:
        store.learn(
            Observation(c.url, c.status, c.target, c.context, c.location, c.time, c.max_age) for c in ordered
        )
        last = ordered[-1].time if ordered else None  # the archive's last capture, as on the local engine
    finally:
        if hasattr(store, "close"):
            store.close()
    return LearnedFile(uri, last)


def learned_file(results: Iterator[tuple[Piece, tuple[list[Any], list[tuple[str, str]]]]], total: int,
                 directory: str, progress: Any = None) -> tuple[LearnedFile, list[tuple[str, str]]]:
    """The first pass: the pieces' captures (``results``: each piece with what :func:`piece_learning`
    gave, in order), learned here into a SQLite file; ``progress(0, bytes read, total)`` after each piece.
    Returns the store and what could not be learned, in file order."""
    captures: list[Any] = []
    rejected: list[tuple[str, str]] = []
    done = 0
    for piece, (got, bad) in results:
        captures.extend(got)
        rejected.extend(bad)
        done += piece.end - piece.start
        if progress is not None:
            progress(0, done, total)
    return learn_captures(captures, f"sqlite:///{os.path.join(directory, 'learned.sqlite')}"), rejected


def split_input(results: Iterator[tuple[Piece, PieceLinks]], found: list[Piece], make: Any, on_repeated: Any) -> Any:
    """The second pass: every piece's rows (``results``: each piece with what :func:`piece_links` gave, in
    order) as (row, source node, target node), in the local engine's order; nodes made here by ``make``,
    the rows a piece only counted given to ``on_repeated(count)``."""
    from collections import Counter

    from ._archive import BAD_HEADER, _reject
    from ._source import ARCHIVE_COLUMNS, GraphInput

    skipped: Counter[str] = Counter()
    done = [0]

    def items() -> Iterator[tuple[Any, Any, Any]]:
        for piece, links in results:
            nodes = {value: make(*form) for value, form in links.forms.items()}
            skipped.update(links.skipped)
            done[0] += piece.end - piece.start
            for row in links.rows:
                if row[4] is None:
                    yield row, nodes[row[1]], nodes[row[2]]
                else:
                    yield row, None, None
            on_repeated(links.repeated)

    total = sum(piece.end - piece.start for piece in found)
    return GraphInput(items(), BAD_HEADER, _reject, ARCHIVE_COLUMNS, lambda: done[0], total, skipped, made=True)
