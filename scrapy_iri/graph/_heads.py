"""The heads of WARC records, bodies skipped: what captures are read from, fast, as :mod:`._warc` frames them.

A capture needs a record's WARC headers and the head of its HTTP message
(a metadata record: its whole block), never a response body. In a gzip
file of one member per record each member is inflated once (by ISA-L
when ``isal`` is installed, else zlib), its output thrown away past the
heads; in an uncompressed file the bodies are skipped with a seek. Only records framed exactly (a ``WARC/1.`` line,
headers, ``Content-Length`` bytes, two line breaks, and in a gzip file
nothing else in the member) are read this way; from the first record that
is not, the rest of the file is read by :func:`._warc.records`, which
stands at the same place in the same state (see :mod:`._pieces`), so the
heads, the bad records and their offsets are exactly :func:`._warc.records`'s.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from ._pieces import span_records
from . import _warc
from ._warc import _GZIP, _VERSION, MAX_HEADER, BadRecord, _headers

try:  # ISA-L inflates twice as fast as zlib; a member it cannot inflate is left to the record reader (zlib)
    from isal import isal_zlib as _inflater_module

    _ERRORS: tuple[type[Exception], ...] = (zlib.error, _inflater_module.error)
except ImportError:  # pragma: no cover - isal is in the archive extra
    _inflater_module = zlib  # type: ignore[assignment]
    _ERRORS = (zlib.error,)
_inflate = _inflater_module.decompressobj

_READ = 1 << 20  # compressed bytes read at a time
_FIRST = 2048  # compressed bytes offered to a member first: most redirect records end within them
_FEED = 1 << 16
_OUT = 1 << 20

Head = tuple[int | str, dict[str, str], bytes]
"""A record's offset (``member+inside`` in a whole-file gzip), its WARC headers (names lowercased) and
its block's head: for a response the HTTP message up to its first empty line (the whole block when
there is none), for a metadata record the whole block, for any other nothing."""


def heads(file: BinaryIO, start: int = 0, end: int | None = None) -> Iterator[Head | BadRecord]:
    """The heads of a WARC file's records (of bytes ``start`` to ``end``: whole records, ``start`` a
    record's), or the bad record in their place, in file order, with their offsets in the whole file."""
    if end is None:
        end = os.fstat(file.fileno()).st_size
    file.seek(start)
    magic = file.read(3)
    file.seek(start)
    yield from (_gzip_heads if magic == _GZIP else _plain_heads)(file, start, end)


def _record_head(head: bytes) -> tuple[dict[str, str], int, int] | None:
    """A framed record's WARC headers, where its block starts and its length; None when not framed."""
    if not _VERSION.match(head):
        return None
    end = head.find(b"\r\n\r\n", 0, MAX_HEADER)
    if end < 0:
        return None
    headers = _headers(head[:end].decode("utf-8", "replace"))
    length = headers.get("content-length", "")
    if not length.isdigit():
        return None
    return headers, end + 4, int(length)


def _block_head(headers: dict[str, str], member: bytes, start: int, length: int) -> bytes | None:
    """What a capture reads of the block of ``length`` bytes at ``start`` in ``member`` (:data:`Head`; what
    ``member`` holds of it), or None when :func:`._warc.records` must decide."""
    kind = headers.get("warc-type", "").lower()
    stop = start + length
    if kind in ("response", "revisit"):
        end = member.find(b"\r\n\r\n", start, min(stop, start + MAX_HEADER))
        if end >= 0:
            return member[start : end + 4]
    elif kind != "metadata":
        return b""
    return member[start:stop] if len(member) >= stop and length <= _warc.MAX_BLOCK else None


def _rest(file: BinaryIO, start: int, end: int, skip: int = 0) -> Iterator[Head | BadRecord]:
    """The records from ``start`` (a record's start) to ``end``, framed by :func:`._warc.records`."""
    file.seek(start)
    for record in span_records(file, start, end):
        if skip:
            skip -= 1
            continue
        if isinstance(record, BadRecord):
            yield record
        else:
            yield record.offset, record.headers, record.block if record.block is not None else record.head


def _gzip_heads(file: BinaryIO, first: int, end: int) -> Iterator[Head | BadRecord]:
    left = [end - first]

    def read() -> bytes:
        data = file.read(min(_READ, left[0]))
        left[0] -= len(data)
        return data

    data = read()
    view = memoryview(data)
    base, pos = first, 0
    eof = not data
    last = -1  # the start of the last member read here
    inflate = _inflate
    while True:
        if len(data) - pos < _FEED and not eof:
            more = read()
            eof = not more
            data, base, pos = data[pos:] + more, base + pos, 0
            view = memoryview(data)
        if pos >= len(data):
            return
        start = base + pos
        if not data.startswith(_GZIP, pos):
            # bytes that start no member: records() reports them as it reads on from the last member
            yield from _rest(file, last, end, 1) if last >= 0 else _rest(file, start, end)
            return
        inflater = inflate(31)
        feed = view[pos : pos + _FIRST]
        try:
            out = inflater.decompress(feed, _OUT)
        except _ERRORS:
            yield from _rest(file, start, end)
            return
        if inflater.eof:
            pos += len(feed) - len(inflater.unused_data)
            member, total, tail, framed = out, len(out), None, None
        else:
            pos += len(feed) - len(inflater.unconsumed_tail)
            member, total, tail, framed, pos, data, base, eof = _long_member(read, inflater, out, data, base, pos,
                                                                             eof)
            view = memoryview(data)
            if member is None:
                yield from _rest(file, start, end)
                return
        if framed is None:
            framed = _record_head(member)
        if framed is None:
            yield from _rest(file, start, end)
            return
        headers, block_start, length = framed
        ending = member.endswith(b"\r\n\r\n") if tail is None else tail == b"\r\n\r\n"
        if total != block_start + length + 4 or not ending:
            yield from _rest(file, start, end)
            return
        found = _block_head(headers, member, block_start, length)
        if found is None:
            yield from _rest(file, start, end)
            return
        last = start
        yield start, headers, found


def _long_member(read: Callable[[], bytes], inflater: Any, out: bytes, data: bytes, base: int, pos: int,
                 eof: bool) -> tuple[bytes | None, int, bytes, Any, int, bytes, int, bool]:
    """A member longer than its first feed, inflated to its end: (what of it is kept, its length, its
    last four bytes, its record's head when it was read on the way (:func:`_record_head`), and where the
    reading is); None kept when it is broken or the file ends in it.
    The member is kept whole when its block is read whole (a metadata record), else its first bytes."""
    parts = [out]
    kept = len(out)
    total = len(out)
    tail = out[-4:]
    whole: bool | None = None
    framed = None
    while not inflater.eof:
        if whole is None:
            framed = _record_head(parts[0] if len(parts) == 1 else b"".join(parts))
            if framed is not None or kept >= MAX_HEADER:
                whole = framed is not None and framed[0].get("warc-type", "").lower() == "metadata"
                whole = whole and framed is not None and framed[2] <= _warc.MAX_BLOCK
        if pos >= len(data):
            if eof:
                return None, total, tail, None, pos, data, base, eof
            more = read()
            eof = not more
            data, base, pos = more, base + pos, 0
            continue
        feed = memoryview(data)[pos : pos + _FEED]
        try:
            piece = inflater.decompress(feed, _OUT)
            while True:
                total += len(piece)
                tail = (tail + piece[-4:])[-4:]
                if whole or kept < 2 * MAX_HEADER:
                    parts.append(piece)
                    kept += len(piece)
                if inflater.eof or not inflater.unconsumed_tail:
                    break
                piece = inflater.decompress(inflater.unconsumed_tail, _OUT)
        except _ERRORS:
            return None, total, tail, None, pos, data, base, eof
        pos += len(feed) - len(inflater.unused_data) if inflater.eof else len(feed)
    return b"".join(parts), total, tail, framed, pos, data, base, eof


def _plain_heads(file: BinaryIO, position: int, size: int) -> Iterator[Head | BadRecord]:
    while position < size:
        file.seek(position)
        head = file.read(8192)
        framed = _record_head(head)
        if framed is None and _VERSION.match(head) and b"\r\n\r\n" not in head:
            head += file.read(MAX_HEADER)
            framed = _record_head(head)
        if framed is None:
            yield from _rest(file, position, size)
            return
        headers, block_start, length = framed
        after = position + block_start + length
        if after + 4 > size:
            yield from _rest(file, position, size)
            return
        kind = headers.get("warc-type", "").lower()
        if len(head) < block_start + length and (kind == "metadata" and length <= _warc.MAX_BLOCK or kind == "response"):
            file.seek(position + block_start)
            head = head[:block_start] + file.read(length if kind == "metadata" else min(length, MAX_HEADER))
        found = _block_head(headers, head, block_start, length)
        file.seek(after)
        if found is None or file.read(4) != b"\r\n\r\n":
            yield from _rest(file, position, size)
            return
        yield position, headers, found
        position = after + 4
