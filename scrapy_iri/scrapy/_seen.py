"""A memory-lean set of request fingerprints.

Scrapy's ``RFPDupeFilter`` keeps a Python ``set`` of 20-byte ``bytes``
objects: about 87-105 bytes per seen request (the object header, the
allocator's rounding and the set's spare slots). :class:`SeenSet` stores each
entry in a 16-byte slot of a flat ``array`` of unsigned 64-bit words: a
96-bit key and a 32-bit tag the caller may use (the dupefilter keeps short
hashes of the lower rungs' forms there). Open addressing with linear probing,
at most 3/4 full; a full table grows by half, so it never drops below 1/2
full: 21 to 32 bytes per entry (about 25 on average).

The table is split into 256 segments by the key's low byte, each growing on
its own, so growing copies 1/256 of the entries at a time, not all of them
(no long pause at ten million entries).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator

KEY_SIZE = 12
"""Bytes of a key: 96 bits."""
TAG_BITS = 32
"""Bits of the tag stored with each key."""
RECORD_SIZE = KEY_SIZE + TAG_BITS // 8
"""Bytes of one key and its tag as :meth:`SeenSet.record` writes them."""
SEEN_ELSEWHERE = -1
"""What a shared seen set's ``add`` returns for a key only another process recorded (its tag is unknown)."""

_SEGMENT_BITS = 8
_SEGMENTS = 1 << _SEGMENT_BITS
_INITIAL_SLOTS = 8
_MAX_LOAD_NUM, _MAX_LOAD_DEN = 3, 4  # grow beyond 3/4 full
_TAG_MASK = (1 << TAG_BITS) - 1


class _Segment:
    """One open-addressing table: slot ``i`` is words ``2i`` (key low) and ``2i+1`` (key high, tag)."""

    __slots__ = ("limit", "slots", "used", "words")

    def __init__(self, slots: int = _INITIAL_SLOTS) -> None:
        self.slots = slots
        self.words = array("Q", bytes(16 * slots))
        self.used = 0
        self.limit = slots * _MAX_LOAD_NUM // _MAX_LOAD_DEN

    def add(self, low: int, high: int, tag: int) -> int | None:
        """Insert; return ``None`` if new, else the tag stored with the key."""
        words = self.words
        slots = self.slots
        i = (low >> _SEGMENT_BITS) % slots
        while True:
            stored_low = words[2 * i]
            stored = words[2 * i + 1]
            if stored_low == 0 and stored == 0:
                break
            if stored_low == low and stored >> TAG_BITS == high:
                return stored & _TAG_MASK
            i += 1
            if i == slots:
                i = 0
        words[2 * i] = low
        words[2 * i + 1] = (high << TAG_BITS) | tag
        self.used += 1
        if self.used > self.limit:
            self._grow()
        return None

    def find(self, low: int, high: int) -> int | None:
        """The tag stored with the key, or ``None``.

        The probe loop repeats ``add``'s on purpose: both run once per request,
        and a shared helper would cost a call on that path.
        """
        words = self.words
        slots = self.slots
        i = (low >> _SEGMENT_BITS) % slots
        while True:
            stored_low = words[2 * i]
            stored = words[2 * i + 1]
            if stored_low == 0 and stored == 0:
                return None
            if stored_low == low and stored >> TAG_BITS == high:
                return stored & _TAG_MASK
            i += 1
            if i == slots:
                i = 0

    def entries(self) -> Iterator[tuple[int, int]]:
        """``(low word, high word)`` of every occupied slot."""
        words = self.words
        for i in range(0, 2 * self.slots, 2):
            low, high = words[i], words[i + 1]
            if low or high:
                yield low, high

    def _grow(self) -> None:
        old = list(self.entries())
        slots = self.slots + self.slots // 2
        words = array("Q", bytes(16 * slots))
        for low, packed in old:
            i = (low >> _SEGMENT_BITS) % slots
            while words[2 * i] or words[2 * i + 1]:
                i += 1
                if i == slots:
                    i = 0
            words[2 * i] = low
            words[2 * i + 1] = packed
        self.slots = slots
        self.words = words
        self.limit = slots * _MAX_LOAD_NUM // _MAX_LOAD_DEN


def _split(key: bytes) -> tuple[int, int]:
    """The two words of a key; the all-zero key (the empty-slot mark) is moved to 1."""
    low = int.from_bytes(key[:8], "little")
    high = int.from_bytes(key[8:KEY_SIZE], "little")
    if low == 0 and high == 0:
        low = 1
    return low, high


class SeenSet:
    """A set of 96-bit keys, each with a 32-bit tag, in about 25 bytes per key.

    Keys must be uniformly distributed (slices of a cryptographic hash): the
    table is indexed by their bits directly. Only the first :data:`KEY_SIZE`
    bytes of a longer key are used.
    """

    __slots__ = ("_count", "_segments")

    def __init__(self) -> None:
        self._segments = [_Segment() for _ in range(_SEGMENTS)]
        self._count = 0

    def add(self, key: bytes, tag: int = 0) -> int | None:
        """Add ``key`` with ``tag``; return ``None`` if it was new, else the tag it was added with."""
        low, high = _split(key)
        found = self._segments[low & (_SEGMENTS - 1)].add(low, high, tag & _TAG_MASK)
        if found is None:
            self._count += 1
        return found

    def get(self, key: bytes) -> int | None:
        """The tag ``key`` was added with, or ``None``."""
        low, high = _split(key)
        return self._segments[low & (_SEGMENTS - 1)].find(low, high)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, bytes) and self.get(key) is not None

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        """``(key, tag)`` pairs in no particular order."""
        for segment in self._segments:
            for low, packed in segment.entries():
                key = low.to_bytes(8, "little") + (packed >> TAG_BITS).to_bytes(4, "little")
                yield key, packed & _TAG_MASK

    @property
    def nbytes(self) -> int:
        """Bytes held by the tables (the retained memory, give or take a few hundred bytes)."""
        return sum(segment.words.itemsize * len(segment.words) for segment in self._segments)

    @staticmethod
    def record(key: bytes, tag: int) -> bytes:
        """A key and its tag as :data:`RECORD_SIZE` bytes (the persistence format)."""
        return key[:KEY_SIZE] + (tag & _TAG_MASK).to_bytes(4, "little")

    def load(self, data: bytes) -> int:
        """Add the records in ``data``; a truncated last record is ignored. Returns how many were read."""
        count = len(data) // RECORD_SIZE
        view = memoryview(data)
        for start in range(0, count * RECORD_SIZE, RECORD_SIZE):
            self.add(bytes(view[start : start + KEY_SIZE]), int.from_bytes(view[start + KEY_SIZE : start + RECORD_SIZE], "little"))
        return count
