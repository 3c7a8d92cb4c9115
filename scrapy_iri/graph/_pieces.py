"""Web archives cut into pieces: whole files, or runs of records inside a large file.

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
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ._warc import _GZIP, _VERSION, MAX_HEADER, BadRecord, Record, _headers, records

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


def pieces(files: list[str], piece_bytes: int) -> list[Piece]:
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
