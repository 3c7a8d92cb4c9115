"""A compact filter of the keys a store holds, so that most misses never reach the store.

:class:`KeyFilter` is a Bloom filter: ``key in f`` is ``False`` only for a
key never added, so a lookup it answers "no" is answered in memory, and a
"yes" (a few in a thousand wrongly) asks the store as before. Keys are
hashed with BLAKE2b (the same bits in every process, unlike ``hash()``), so
a filter written to the store by one process serves every other. Ten bits
and seven probes per key of its capacity: about 1% false positives when
full; past its capacity it is rebuilt larger from the store.
"""

from __future__ import annotations

from hashlib import blake2b

BITS_PER_KEY = 10
PROBES = 7
#: the smallest filter built (bits of capacity for this many keys)
MIN_CAPACITY = 1 << 16


class KeyFilter:
    """A Bloom filter of strings (see the module docstring)."""

    def __init__(self, capacity: int, bits: bytes | None = None, count: int = 0) -> None:
        self.capacity = max(MIN_CAPACITY, capacity)
        self.size = self.capacity * BITS_PER_KEY
        self.bits = bytearray(bits) if bits is not None else bytearray((self.size + 7) // 8)
        if len(self.bits) * 8 < self.size:
            raise ValueError("a filter's bits do not fit its capacity")
        #: keys added (an upper bound: one added twice counts twice)
        self.count = count

    def add(self, key: str) -> None:
        digest = blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        h1 = int.from_bytes(digest[:8], "little")
        h2 = int.from_bytes(digest[8:], "little") | 1
        size, bits = self.size, self.bits
        for i in range(PROBES):
            p = (h1 + i * h2) % size
            bits[p >> 3] |= 1 << (p & 7)
        self.count += 1

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        digest = blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        h1 = int.from_bytes(digest[:8], "little")
        h2 = int.from_bytes(digest[8:], "little") | 1
        size, bits = self.size, self.bits
        for i in range(PROBES):  # a key never added fails at its first probes: stop there
            p = (h1 + i * h2) % size
            if not bits[p >> 3] & (1 << (p & 7)):
                return False
        return True

    @property
    def full(self) -> bool:
        """More keys than it was sized for: rebuild it larger."""
        return self.count > self.capacity

    def dump(self) -> tuple[int, int, bytes]:
        """``(capacity, count, bits)``: what :meth:`load` takes back."""
        return self.capacity, self.count, bytes(self.bits)

    @classmethod
    def load(cls, capacity: int, count: int, bits: bytes) -> KeyFilter:
        return cls(capacity, bits, count)
