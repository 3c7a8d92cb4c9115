"""WARC records from a file: gzip per record, whole-file gzip or none; each with its offset, or why it is bad.

A record is read as ISO 28500 frames it: a ``WARC/1.0`` or ``WARC/1.1``
line, header lines, an empty line, ``Content-Length`` bytes of block and
two line breaks. Whatever breaks that frame (a truncated or corrupt gzip
member, a ``Content-Length`` that lies, a record cut off at the end of the
file) is a :class:`BadRecord` with its offset; reading resumes at the next
gzip member, or at the next ``WARC/1.`` line. Blocks larger than
``max_block`` are not kept (the record says how long it was).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

_CHUNK = 1 << 20
_FEED = 1 << 16  # compressed bytes given to zlib at a time (what follows a member is copied out of them)
MAX_HEADER = 1 << 16
MAX_BLOCK = 32 << 20
_VERSION = re.compile(rb"WARC/1\.[01]\r?\n")
_GZIP = b"\x1f\x8b\x08"


@dataclass
class Record:
    """One WARC record: where it starts, its headers (names lowercased), its block (None when too
    large: then ``head`` holds its first bytes)."""

    offset: str
    headers: dict[str, str]
    block: bytes | None
    length: int
    head: bytes = b""

    def header(self, name: str) -> str:
        return self.headers.get(name, "")


@dataclass
class BadRecord:
    offset: str
    reason: str


class _Stream:
    """The decompressed bytes of a file, with the file offset of the gzip member each came from."""

    boundary = False  # a member was abandoned: the record being read ends here

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.raw = file.read(_CHUNK)  # compressed bytes read; raw[pos:] not fed yet
        self.pos = 0
        self.base = 0  # file offset of raw[0]
        self.eof = False
        self.gzip = self.raw[:3] == _GZIP
        self.members: list[tuple[int, int]] = []  # (decompressed position, file offset) of member starts
        self.position = 0  # decompressed bytes given out so far
        self.inflater: zlib._Decompress | None = None
        self.problems: list[BadRecord] = []

    @property
    def offset(self) -> int:
        """The file offset of the next compressed byte to feed."""
        return self.base + self.pos

    def where(self, position: int) -> str:
        """The offset of a decompressed position: its member's file offset (and the position inside)."""
        if not self.gzip:
            return str(position)
        start, offset = 0, 0
        for member_start, member_offset in reversed(self.members):
            if member_start <= position:
                start, offset = member_start, member_offset
                break
        return str(offset) if start == position else f"{offset}+{position - start}"

    def _more_raw(self) -> bool:
        if self.eof:
            return False
        data = self.file.read(_CHUNK)
        if not data:
            self.eof = True
            return False
        self.base += self.pos
        self.raw = self.raw[self.pos :] + data
        self.pos = 0
        return True

    def _left(self) -> int:
        return len(self.raw) - self.pos

    def read(self) -> bytes:
        """The next decompressed bytes (b"" at the end)."""
        if not self.gzip:
            data = self.raw[self.pos :] if self._left() else self.file.read(_CHUNK)
            self.raw, self.pos = b"", 0
            self.position += len(data)
            return data
        while True:
            if self.inflater is None:
                if not self._left() and not self._more_raw():
                    return b""
                if self.raw[self.pos : self.pos + 3] != _GZIP:
                    if self._left() < 3 and self._more_raw():
                        continue
                    self._skip_garbage()
                    continue
                self.inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
                self.members.append((self.position, self.offset))
                del self.members[:-64]
            feed = memoryview(self.raw)[self.pos : self.pos + _FEED]
            try:
                data = self.inflater.decompress(feed, _CHUNK)
            except zlib.error as exc:
                self._corrupt(f"corrupt gzip member: {exc}")
                continue
            if self.inflater.eof:
                self.pos += len(feed) - len(self.inflater.unused_data)
                self.inflater = None
            else:
                self.pos += len(feed) - len(self.inflater.unconsumed_tail)
                if not data and not self._left() and not self._more_raw():
                    member = self.members[-1][1]
                    self.problems.append(BadRecord(str(member), "truncated gzip member (the file ends inside it)"))
                    self.inflater = None
                    return b""
            if data:
                self.position += len(data)
                return data

    def _skip_garbage(self) -> None:
        """Bytes between members that start no gzip member: skipped to the next one, reported."""
        start = self.offset
        while True:
            found = self.raw.find(_GZIP, self.pos + 1)
            if found >= 0:
                self.pos = found
                break
            self.pos = max(self.pos, len(self.raw) - 2)
            if not self._more_raw():
                self.pos = len(self.raw)
                break
        self.problems.append(BadRecord(str(start), f"{self.offset - start} bytes that are no gzip member"))
        self.boundary = True

    def _corrupt(self, reason: str) -> None:
        member = self.members[-1][1]
        self.problems.append(BadRecord(str(member), reason))
        self.inflater = None
        self.file.seek(member + 1)
        self.raw, self.pos, self.base, self.eof = b"", 0, member + 1, False
        self._more_raw()
        if self.raw[self.pos : self.pos + 3] != _GZIP:
            self._skip_garbage()
        self.boundary = True


class _Buffer:
    """Decompressed bytes with look-ahead: lines, exact lengths, skips, and where the read is."""

    def __init__(self, stream: _Stream) -> None:
        self.stream = stream
        self.data = b""
        self.start = 0  # decompressed position of data[0]
        self.pos = 0  # read position within data
        self.mark: int | None = None  # a position to come back to: data from there on is kept

    @property
    def position(self) -> int:
        return self.start + self.pos

    def _fill(self) -> bool:
        more = self.stream.read()
        if not more:
            return False
        cut = self.pos if self.mark is None else max(0, min(self.pos, self.mark - self.start))
        if cut:
            self.start += cut
            self.data = self.data[cut:]
            self.pos -= cut
        self.data += more
        return True

    def rewind(self, position: int) -> None:
        """Read again from ``position`` (at or after the mark)."""
        self.pos = position - self.start

    def take_boundary(self) -> bool:
        """Whether the stream abandoned a gzip member since last asked (what was read of it is cut)."""
        found = self.stream.boundary
        self.stream.boundary = False
        return found

    def find(self, needle: bytes, limit: int) -> int:
        """The position (in ``data``) of ``needle`` at or after ``pos``, within ``limit`` bytes; -1."""
        while True:
            found = self.data.find(needle, self.pos, self.pos + limit)
            if found >= 0 or len(self.data) - self.pos >= limit or not self._fill():
                return found

    def take(self, n: int, keep: bool) -> tuple[bytes | None, int]:
        """The next ``n`` bytes (None when not kept) and how many there were before the end."""
        parts = []
        got = 0
        while got < n:
            if self.pos >= len(self.data) and not self._fill():
                break
            piece = self.data[self.pos : self.pos + n - got]
            self.pos += len(piece)
            got += len(piece)
            if keep:
                parts.append(piece)
        return (b"".join(parts) if keep else None), got

    def peek(self, n: int) -> bytes:
        while len(self.data) - self.pos < n and self._fill():
            pass
        return self.data[self.pos : self.pos + n]

    def skip_line_breaks(self) -> None:
        while True:
            head = self.peek(2)
            if head[:2] == b"\r\n":
                self.pos += 2
            elif head[:1] == b"\n":
                self.pos += 1
            else:
                return


def records(file: BinaryIO, max_block: int | None = None) -> Iterator[Record | BadRecord]:
    """Every record of a WARC file, or the bad record in its place, in file order."""
    if max_block is None:
        max_block = MAX_BLOCK
    stream = _Stream(file)
    buffer = _Buffer(stream)
    while True:
        buffer.skip_line_breaks()
        yield from _problems(stream)
        start = buffer.position
        head = buffer.peek(10)
        if not head:
            return
        where = stream.where(start)
        version = _VERSION.match(buffer.peek(11))
        if version is None:
            found = _resync(buffer)
            yield BadRecord(where, f"no WARC/1.0 or WARC/1.1 record here ({found} bytes skipped)")
            continue
        end = buffer.find(b"\r\n\r\n", MAX_HEADER)
        if end < 0:
            _resync(buffer)
            yield BadRecord(where, f"a WARC header without its end within {MAX_HEADER} bytes")
            continue
        text = buffer.data[buffer.pos : end].decode("utf-8", "replace")
        buffer.pos = end + 4
        headers = _headers(text)
        length_text = headers.get("content-length", "")
        if not length_text.isdigit():
            _resync(buffer)
            yield BadRecord(where, f"no valid Content-Length ({length_text or 'missing'!r})")
            continue
        length = int(length_text)
        buffer.take_boundary()
        kept = length <= max_block
        block_start = buffer.position
        buffer.mark = block_start if kept else None
        if kept:
            block, got = buffer.take(length, True)
            head = b""
        else:
            head, got = buffer.take(min(MAX_HEADER, length), True)
            block, rest = buffer.take(length - got, False)
            got += rest
        cut = buffer.take_boundary()
        yield from _problems(stream)
        if got < length:
            buffer.mark = None
            if cut:
                yield BadRecord(where, f"record cut off by a broken gzip member ({got} of {length} bytes)")
            else:
                yield BadRecord(where, f"record cut off at the end of the file ({got} of {length} bytes)")
            continue
        ending = buffer.peek(4)
        if ending != b"\r\n\r\n":
            if ending[:2] == b"\n\n" or not ending:
                pass  # a lenient ending (LF LF), or the file's end right after the block
            else:
                if kept:
                    buffer.rewind(block_start)
                buffer.mark = None
                _resync(buffer)
                yield BadRecord(where, f"Content-Length {length} does not end the record (it lies)")
                continue
        buffer.mark = None
        yield Record(where, headers, block, length, head or b"")


def _problems(stream: _Stream) -> Iterator[BadRecord]:
    while stream.problems:
        yield stream.problems.pop(0)


def _headers(text: str) -> dict[str, str]:
    """WARC header lines (after the version line) by lowercased name: the first value of each name."""
    lines = text.split("\r\n")
    if "\r\n " not in text and "\r\n\t" not in text:  # no continuation lines: the first of each name wins
        pairs = [line.partition(":") for line in lines[1:]]
        return {name.strip().lower(): value.strip() for name, sep, value in reversed(pairs) if sep}
    headers: dict[str, str] = {}
    name = ""
    for line in lines[1:]:
        if line[:1] in (" ", "\t") and name:  # a continuation line
            headers[name] += " " + line.strip()
            continue
        name, sep, value = line.partition(":")
        if sep:
            name = name.strip().lower()
            headers.setdefault(name, value.strip())
        else:
            name = ""
    return headers


def _resync(buffer: _Buffer) -> int:
    """Skip to the next ``WARC/1.`` at the start of a line (or the end): the bytes skipped."""
    start = buffer.position
    buffer.pos += 1
    while True:
        found = buffer.find(b"\nWARC/1.", _CHUNK)
        if found >= 0:
            buffer.pos = found + 1
            return buffer.position - start
        if not buffer.peek(1):
            return buffer.position - start
        buffer.pos = max(buffer.pos, len(buffer.data) - 8)
        if not buffer._fill():
            buffer.pos = len(buffer.data)
            return buffer.position - start
