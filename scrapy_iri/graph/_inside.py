"""Records inside one large gzip member (a whole-file gzip WARC), read from inflater checkpoints.

A record inside a gzip member is known by the member's file offset and its
position in the member's inflated bytes (``member+inside``, as
:mod:`._warc` names it). Inflating the member from its start for every
record asked for costs the whole file each time: a revisit per page of a
deduplicated crawl would make reading quadratic. Instead the member is
inflated once, keeping a copy of the inflater every :data:`STEP` inflated
bytes or more (at most :data:`MOST` copies: the step doubles as the member
grows), and a record is read from the nearest copy before it.
"""

from __future__ import annotations

import os
import threading
import zlib
from collections import OrderedDict
from typing import NamedTuple

from ._warc import Record, records

#: inflated bytes between two checkpoints, at least
STEP = 1 << 18
#: checkpoints kept per member (about 40 kB each)
MOST = 256
#: members whose checkpoints a process keeps
KEPT = 2
_FEED = 1 << 16
_PIECE = 1 << 16


class _Point(NamedTuple):
    inside: int  # inflated bytes before this point
    offset: int  # file offset of the next compressed byte
    inflater: zlib._Decompress


class _Inflated:
    """The inflated bytes of a member from a checkpoint on, the first ``skip`` of them left out, read as
    a file of their own (what :func:`._warc.records` reads as an uncompressed WARC); they end with the member."""

    def __init__(self, file: object, point: _Point, skip: int) -> None:
        self.file = file
        self.inflater = point.inflater.copy()
        self.tail = b""
        self.skip = skip
        file.seek(point.offset)  # type: ignore[attr-defined]

    def _more(self, n: int) -> bytes:
        inflater = self.inflater
        while not inflater.eof:
            feed = self.tail or self.file.read(_FEED)  # type: ignore[attr-defined]
            if not feed:
                return b""
            try:
                data = inflater.decompress(feed, n)
            except zlib.error:
                return b""  # a corrupt member ends here, as the record reader ends it
            self.tail = inflater.unconsumed_tail
            if data:
                return data
        return b""

    def read(self, n: int = -1) -> bytes:
        """At most ``n`` bytes, and no more than :data:`_PIECE` at a time: a record is read, not the member."""
        n = _PIECE if n < 0 else min(n, _PIECE)
        while self.skip:
            data = self._more(min(self.skip, _PIECE))
            if not data:
                return b""
            self.skip -= len(data)
        return self._more(n)


class MemberIndex:
    """The checkpoints of the gzip member at file offset ``member`` of ``path``, made by inflating it once."""

    def __init__(self, path: str, member: int) -> None:
        self.path, self.member = path, member
        self.points = self._points()

    def _points(self) -> list[_Point]:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        points = [_Point(0, self.member, inflater.copy())]
        step, inside, offset = STEP, 0, self.member
        with open(self.path, "rb") as file:
            file.seek(offset)
            tail = b""
            while not inflater.eof:
                feed = tail or file.read(_FEED)
                if not feed:
                    break
                try:
                    data = inflater.decompress(feed, _PIECE)  # small pieces: a checkpoint lands near each step
                except zlib.error:
                    break  # a corrupt member: what comes before is indexed, the record reader says the rest
                tail = inflater.unconsumed_tail
                offset += len(feed) - len(tail) - len(inflater.unused_data)
                inside += len(data)
                if inside - points[-1].inside >= step and not inflater.eof:
                    points.append(_Point(inside, offset, inflater.copy()))
                    if len(points) > MOST:
                        points = points[::2]
                        step *= 2
        return points

    def record(self, inside: int) -> Record | None:
        """The record that starts ``inside`` bytes into the member's inflated bytes (None: none starts there)."""
        point = self.points[0]
        for candidate in self.points:
            if candidate.inside > inside:
                break
            point = candidate
        with open(self.path, "rb") as file:
            found = next(iter(records(_Inflated(file, point, inside - point.inside))), None)  # type: ignore[arg-type]
        if not isinstance(found, Record) or found.offset != "0":
            return None
        found.offset = f"{self.member}+{inside}"
        return found


_INDEXES: OrderedDict[tuple[object, ...], MemberIndex] = OrderedDict()
_LOCK = threading.Lock()  # Dask workers may read in threads


def record_inside(path: str, member: int, inside: int) -> Record | None:
    """The record at ``member+inside`` of the archive ``path``, from the member's checkpoints (made once
    per process for the last :data:`KEPT` members asked about)."""
    info = os.stat(path)
    key = (os.path.abspath(path), member, info.st_size, info.st_mtime_ns)
    with _LOCK:
        index = _INDEXES.get(key)
        if index is not None:
            _INDEXES.move_to_end(key)
    if index is None:
        index = MemberIndex(path, member)
        with _LOCK:
            _INDEXES[key] = index
            while len(_INDEXES) > KEPT:
                _INDEXES.popitem(last=False)
    return index.record(inside)
