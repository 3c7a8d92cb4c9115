"""The compact seen set: set semantics, tags, growth, persistence records, memory."""

from __future__ import annotations

import hashlib
import tracemalloc

from scrapy_iri.scrapy._seen import KEY_SIZE, RECORD_SIZE, SeenSet


def key(i: int) -> bytes:
    return hashlib.blake2b(i.to_bytes(8, "big"), digest_size=20).digest()


def test_add_reports_new_then_the_stored_tag():
    seen = SeenSet()
    assert seen.add(key(1), 7) is None
    assert seen.add(key(1), 9) == 7  # the first tag is kept
    assert seen.get(key(1)) == 7
    assert seen.get(key(2)) is None
    assert key(1) in seen and key(2) not in seen
    assert len(seen) == 1


def test_only_the_first_96_bits_count():
    seen = SeenSet()
    seen.add(key(1)[:KEY_SIZE] + b"\x00" * 8)
    assert seen.get(key(1)[:KEY_SIZE] + b"\xff" * 8) == 0


def test_all_zero_key_is_a_key_like_any_other():
    seen = SeenSet()
    assert seen.add(bytes(KEY_SIZE), 3) is None
    assert seen.get(bytes(KEY_SIZE)) == 3
    assert len(seen) == 1


def test_growth_keeps_every_key_and_tag():
    seen = SeenSet()
    n = 20_000
    for i in range(n):
        assert seen.add(key(i), i & 0xFFFF) is None
    assert len(seen) == n
    assert all(seen.get(key(i)) == i & 0xFFFF for i in range(n))
    assert seen.get(key(n)) is None
    assert sorted(tag for _, tag in seen) == sorted(i & 0xFFFF for i in range(n))


def test_records_round_trip_and_a_cut_record_is_ignored():
    seen = SeenSet()
    data = b"".join(SeenSet.record(key(i), i) for i in range(100))
    assert len(data) == 100 * RECORD_SIZE
    assert seen.load(data + data[:5]) == 100
    assert len(seen) == 100
    assert seen.get(key(42)) == 42


def test_memory_is_at_most_half_of_a_set_of_fingerprints():
    """The performance target: at most half of RFPDupeFilter's memory per seen request."""
    n = 50_000

    tracemalloc.start()
    scrapy_like: set[bytes] = set()
    for i in range(n):
        scrapy_like.add(key(i))  # a 20-byte digest object per request, as RFPDupeFilter keeps
    scrapy_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del scrapy_like

    tracemalloc.start()
    seen = SeenSet()
    for i in range(n):
        seen.add(key(i), 1)
    ours = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()

    assert ours <= scrapy_bytes / 2, (ours / n, scrapy_bytes / n)
    assert seen.nbytes / n <= 40
