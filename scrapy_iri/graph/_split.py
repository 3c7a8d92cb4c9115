"""Web archives in pieces for Dask and Spark: whole files, or runs of records inside a large file.

A piece is a file and a byte range whose first record starts the range.
A file is cut only where its reader is sure to stand at the start of a
record: in a gzip file of one member per record, at a member that follows
members which each hold exactly one well-framed record (the members are
inflated to find their ends, their output thrown away); in an
uncompressed file, at a record found by walking the records' headers and
``Content-Length`` (seeks, no reading of the blocks). Whole-file gzip, or
anything that breaks the frame, ends the cutting: the rest of the file is
one piece. A piece's records come with the offsets the whole file's
reading gives them, so bad rows and output are the same on every engine.

The work on a piece runs in a worker (:func:`piece_links`,
:func:`piece_captures`: module-level, shipped by reference); this process
plans the pieces, learns the captures in date order and merges the rows.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from ._warc import _GZIP, _VERSION, MAX_HEADER, BadRecord, Record, _headers, records

PIECE_BYTES = 8 << 20
"""The bytes of archive a piece holds, at least (a file smaller than twice this is one piece)."""

_READ = 1 << 20
_OUT = 1 << 20  # decompressed bytes at a time while a member is walked


@dataclass(frozen=True)
class Piece:
    """Bytes ``start`` to ``end`` (exclusive) of the archive file ``path``: whole records.

    ``path`` is the name rows report (as given); ``location`` the absolute
    path a worker opens, whatever its working directory.
    """

    path: str
    start: int
    end: int
    location: str = ""

    def __post_init__(self) -> None:
        if not self.location:
            object.__setattr__(self, "location", os.path.abspath(self.path))


def archive_pieces(*names: str, piece_bytes: int | None = None) -> list[Piece]:
    """The pieces of the archives ``names`` name (files, directories, globs), in the command's order."""
    from ._archive import archive_files

    files = [path for name in names for path in archive_files(name)]
    return pieces(files, PIECE_BYTES if piece_bytes is None else piece_bytes)


def pieces(files: list[str], piece_bytes: int = PIECE_BYTES) -> list[Piece]:
    """The pieces of ``files``, in file and offset order (the order the local engine reads them)."""
    found = []
    for path in files:
        size = os.path.getsize(path)
        cuts = _cuts(path, size, piece_bytes) if size >= 2 * piece_bytes else []
        bounds = [0, *cuts, size]
        found.extend(Piece(path, start, end) for start, end in zip(bounds, bounds[1:]))
    return found


def _cuts(path: str, size: int, piece_bytes: int) -> list[int]:
    with open(path, "rb") as file:
        gzip = file.read(3) == _GZIP
        file.seek(0)
        walk = _members(file) if gzip else _plain_records(file, size)
        cuts: list[int] = []
        last = 0
        for start in walk:
            if start - last >= piece_bytes and size - start >= piece_bytes // 2:
                cuts.append(start)
                last = start
        return cuts


def _framed(head: bytes, total: int, tail: bytes) -> bool:
    """Whether decompressed bytes (their start, length and last four) are exactly one WARC record."""
    if not _VERSION.match(head):
        return False
    end = head.find(b"\r\n\r\n")
    if end < 0:
        return False
    length = _headers(head[:end].decode("utf-8", "replace")).get("content-length", "")
    return length.isdigit() and total == end + 4 + int(length) + 4 and tail == b"\r\n\r\n"


def _members(file: BinaryIO) -> Iterator[int]:
    """The offsets of the gzip members that start a record, each after only well-framed members."""
    data, base, pos = file.read(_READ), 0, 0
    while True:
        if len(data) - pos < _READ // 2:
            more = file.read(_READ)
            data, base, pos = data[pos:] + more, base + pos, 0
        if data[pos : pos + 3] != _GZIP:
            return
        yield base + pos
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        head, total, tail = b"", 0, b""
        while not inflater.eof:
            if pos >= len(data):
                more = file.read(_READ)
                if not more:
                    return  # the file ends inside the member
                data, base, pos = more, base + pos, 0
            feed = memoryview(data)[pos : pos + _READ]
            try:
                out = inflater.decompress(feed, _OUT)
                while True:
                    if len(head) < MAX_HEADER:
                        head += out[: MAX_HEADER - len(head)]
                    total += len(out)
                    tail = (tail + out[-4:])[-4:]
                    if inflater.eof or not inflater.unconsumed_tail:
                        break
                    out = inflater.decompress(inflater.unconsumed_tail, _OUT)
            except zlib.error:
                return
            pos += len(feed) - len(inflater.unused_data) if inflater.eof else len(feed)
        if not _framed(head, total, tail):
            return


def _plain_records(file: BinaryIO, size: int) -> Iterator[int]:
    """The offsets of the records of an uncompressed WARC file, by header and ``Content-Length``."""
    position = 0
    while position < size:
        file.seek(position)
        head = file.read(4096)
        end = head.find(b"\r\n\r\n")
        if end < 0 and _VERSION.match(head):
            head += file.read(MAX_HEADER)
            end = head.find(b"\r\n\r\n")
        if end < 0 or not _VERSION.match(head):
            return
        yield position
        length = _headers(head[:end].decode("utf-8", "replace")).get("content-length", "")
        if not length.isdigit():
            return
        after = position + end + 4 + int(length)
        file.seek(after)
        if file.read(4) != b"\r\n\r\n":
            return
        position = after + 4


class _Window:
    """Bytes ``start`` to ``end`` of a file, read as a file of their own."""

    def __init__(self, file: BinaryIO, start: int, end: int) -> None:
        self.file, self.start, self.end = file, start, end
        file.seek(start)

    def read(self, n: int = -1) -> bytes:
        left = self.end - self.file.tell()
        if left <= 0:
            return b""
        return self.file.read(left if n < 0 else min(n, left))

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.file.seek(self.start + offset) - self.start

    def tell(self) -> int:
        return self.file.tell() - self.start

    @property
    def closed(self) -> bool:
        return self.file.closed


def _shifted(offset: str, by: int) -> str:
    member, plus, inside = offset.partition("+")
    return f"{int(member) + by}{plus}{inside}"


def span_records(file: BinaryIO, start: int, end: int) -> Iterator[Record | BadRecord]:
    """The records of bytes ``start`` to ``end`` of ``file``, with their offsets in the whole file."""
    if start == 0 and end >= os.fstat(file.fileno()).st_size:
        yield from records(file)
        return
    for record in records(_Window(file, start, end)):  # type: ignore[arg-type]
        record.offset = _shifted(record.offset, start)
        yield record


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


def piece_links(piece: Piece, redirects: str, options: dict[str, Any]) -> PieceLinks:
    """The links of ``piece``, read, parsed and canonicalized (with the kernel ``options``: see ``_arrow``)."""
    from ._archive import ArchiveRows
    from ._arrow import kernel_of

    one = kernel_of(options)
    reader = ArchiveRows([piece.path], redirects, [piece])
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
) -> Iterator[tuple[str | None, ...]]:
    """Every link row of ``piece``, canonicalized at ``rung`` (columns :data:`ROW_COLUMNS`).

    ``source`` and ``target`` are null and ``reason`` says why in a bad row
    (a bad record, a link that is no IRI reference, an end with no canonical
    form: the reasons of ``--bad-rows``); ``where`` is ``file:offset``.
    Nothing is de-duplicated. The protocol rung takes ``store``: a store URI
    every worker can open, or what :func:`learn_captures` returns.
    """
    from ._archive import ArchiveRows
    from ._arrow import kernel_of

    one = kernel_of(dict(rung=rung, keep_fragment=keep_fragment, lenient=lenient, store=store), cache_size)
    for where, source, target, _, problem, path, date in ArchiveRows([piece.path], redirects, [piece]):
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
    from ._learn import Reading, warc_captures

    return list(warc_captures(piece.location, Reading(), (piece.start, piece.end)))


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
        last = max((evidence.time for evidence in store.evidence()), default=None)
    finally:
        if hasattr(store, "close"):
            store.close()
    return LearnedFile(uri, last)


def learned_file(runner: Any, engine: str, found: list[Piece], directory: str, progress: Any = None) -> LearnedFile:
    """The first pass: the pieces' captures, read on the engine, learned here into a SQLite file;
    ``progress(0, bytes read, bytes in all)`` after each piece."""
    from ._engines import in_order

    captures: list[Any] = []
    done, total = 0, sum(piece.end - piece.start for piece in found)
    for piece, got in in_order(runner, engine, piece_captures, found):
        captures.extend(got)
        done += piece.end - piece.start
        if progress is not None:
            progress(0, done, total)
    return learn_captures(captures, f"sqlite:///{os.path.join(directory, 'learned.sqlite')}")


def split_input(
    runner: Any, engine: str, found: list[Piece], make: Any, *, redirects: str, options: dict[str, Any],
    on_repeated: Any,
) -> Any:
    """The second pass: every piece's rows read, parsed and canonicalized on the engine, as
    (row, source node, target node) in the local engine's order; nodes made here by ``make``,
    the rows a piece only counted given to ``on_repeated(count)``."""
    from collections import Counter

    from ._archive import BAD_HEADER, _reject
    from ._engines import in_order
    from ._source import ARCHIVE_COLUMNS, GraphInput

    skipped: Counter[str] = Counter()
    done = [0]

    def items() -> Iterator[tuple[Any, Any, Any]]:
        for piece, links in in_order(runner, engine, piece_links, found, redirects, options):
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
