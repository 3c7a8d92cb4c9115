"""Bulk learning into Redis: the batches' encodings, a flush cut short, a concurrent writer.

A flush larger than a batch goes to Redis in several script calls, each
atomic. Between two of them another process may read: what it reads must
merge nothing that the store, before or after the flush, would keep apart.
The parts that end something (an alias ended, a URL that answered, a
counterexample, a sink) therefore go first, those that merge last.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from fixtures.stores import Clock, store_state
from test_learn_bulk import POLICY, T0, record_one_at_a_time, stream, universe

from scrapy_iri.store import MemoryStore, Observation, RuleStatus
from scrapy_iri.store._redis import RedisStore
from scrapy_iri.store._redis import codec


def _cut(store: RedisStore, after: int, reply: bool) -> list[int]:
    """Make the store's batch script fail once, at call ``after`` + 1: before it runs, or (``reply``)
    after it ran, its reply lost. Returns the list the calls are counted in."""
    storage = store.storage
    script, calls = storage._batch, []

    def run(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == after + 1:
            if reply:
                script(*args, **kwargs)
            raise RedisConnectionError("cut short")
        return script(*args, **kwargs)

    storage._batch = run
    return calls


def test_a_reader_between_two_parts_of_a_flush_merges_nothing_apart(redis_url: str) -> None:
    """``b -> c`` was learned; then ``a`` redirects to ``b`` and ``b`` answers for itself, in one flush sent
    in parts of one entry. Cut after the first part, a reader never sends ``a`` to ``c``."""
    a, b, c = "http://ex.example/a", "http://ex.example/b", "http://ex.example/c"
    for reply in (False, True):
        namespace = f"cut-{uuid.uuid4().hex[:8]}"
        writer = RedisStore(redis_url, namespace, auto_sync=False, batch_size=1)
        reader = None
        try:
            writer.record_redirect(b, 301, c)
            writer.flush()
            writer.record_redirect(a, 301, b)
            writer.record_response(b, 200)
            calls = _cut(writer, 1, reply)
            writer.flush()  # the first part applied, the rest kept pending
            assert len(calls) == 2 and writer.pending
            reader = RedisStore(redis_url, namespace, auto_sync=False)
            assert reader.representative(a) in (a, b)
            assert reader.representative(b) in (b, c)
            writer.flush()
            reader.sync()
            assert (reader.representative(a), reader.representative(b)) == (b, b)
        finally:
            writer.close()
            if reader is not None:
                reader.close()


def _reference(observations: list[Observation]) -> tuple[dict[str, Any], float, list[str]]:
    """What recording ``observations`` one at a time, in memory, leaves (see ``test_learn_bulk.state``)."""
    end = observations[-1].time + 1.0  # type: ignore[operator]
    clock = Clock(T0)
    reference = MemoryStore(POLICY, clock=clock)
    record_one_at_a_time(reference, clock, observations)
    clock.now = end
    urls = universe()
    return store_state(reference, end, urls), end, urls


@pytest.mark.parametrize("reply", [False, True], ids=["cut-before-a-part", "reply-lost"])
def test_a_bulk_learn_whose_flushes_are_cut_short_ends_as_one_that_was_not(redis_url: str, reply: bool) -> None:
    """Every flush of a bulk learn loses its connection at its third part (before the part runs, or after,
    its reply lost); the writes stay pending and go at the next sync, each part once: the store ends as
    recording one at a time leaves it."""
    observations = stream(3, 400)
    expected, end, urls = _reference(observations)
    learner = RedisStore(redis_url, f"cut-{uuid.uuid4().hex[:8]}", POLICY, clock=Clock(end), auto_sync=False, batch_size=40)
    try:
        for start in range(0, len(observations), 100):
            learner.learn(observations[start : start + 100], chunk=50)
            calls = _cut(learner, 2, reply)
            learner.flush()
            assert len(calls) == 3 and learner.pending  # cut short: kept
            assert learner.maintain(force=True) and not learner.pending
        learned = store_state(learner, end, urls)
        if reply:
            # its own batches read back at the next sync: a rule record expired at the newest count and
            # compacted away is read as absent, and a later answer then leaves no evidence where the
            # learner holding the expired record notes it (it counts expired support as known)
            assert [e for e in expected["evidence"] if e in learned["evidence"]] == learned["evidence"]
            learned["evidence"] = expected["evidence"]
        assert learned == expected
    finally:
        learner.close()


def test_a_writer_between_the_chunks_of_a_bulk_learn(redis_url: str) -> None:
    """While one process learns in bulk (flushing on its timer), another records a part of the stream
    one at a time between two of its chunks: both end with the store recording the whole stream one
    at a time leaves (the bulk learner's records are merged with the other's, not stored over them)."""
    observations = stream(5, 400)
    expected, end, urls = _reference(observations)
    namespace = f"two-{uuid.uuid4().hex[:8]}"
    bulk = RedisStore(redis_url, namespace, POLICY, clock=Clock(end), auto_sync=True, sync_interval=0.0)
    other_clock = Clock(T0)
    other = RedisStore(redis_url, namespace, POLICY, clock=other_clock, auto_sync=False)
    middle = observations[100:150]

    def between(done: int) -> None:
        if done == 100:
            bulk.flush()  # its timer
            other.sync()
            record_one_at_a_time(other, other_clock, middle)
            other.flush()

    try:
        bulk.learn(observations[:100] + observations[150:], chunk=50, progress=between)
        bulk.sync()
        other.sync()
        assert store_state(bulk, end, urls) == expected
        other_clock.now = end
        seen = store_state(other, end, urls)
        # a rule's status and the merges it makes use the priors a process learned itself: the other
        # process learned a part of the stream only; the store it reads is the same
        for got in (seen, expected):
            got["rules"] = {key: counts for key, (_, *counts) in got["rules"].items()}
            del got["representatives"]
        assert seen == expected
    finally:
        bulk.close()
        other.close()


def test_msgpack_and_json_batches_leave_the_same_store(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch script reads MessagePack (with the ``msgpack`` package) and JSON (without): the same
    stream learned both ways leaves the same keys, value for value."""
    from test_learn_bulk import archive_stream

    pytest.importorskip("msgpack", reason="msgpack (the redis extra) is not installed")
    observations = archive_stream(1, 500)
    end = observations[-1].time + 1.0  # type: ignore[operator]
    stores = {}
    for encoding in ("msgpack", "json"):
        if encoding == "json":
            monkeypatch.setattr(codec, "_packb", None)
        else:
            assert codec._packb is not None
        namespace = f"{encoding}-{uuid.uuid4().hex[:8]}"
        store = RedisStore(redis_url, namespace, POLICY, clock=Clock(end), auto_sync=False, batch_size=200)
        try:
            store.learn(observations, chunk=64)
            store.flush()
            stores[encoding] = _dump(store)
        finally:
            store.close()
    assert stores["msgpack"]["store:aliases"] and stores["msgpack"]["store:origins"]
    assert stores["msgpack"] == stores["json"]


def _dump(store: RedisStore) -> dict[str, Any]:
    """Every key of a store's namespace, but those naming batches (random ids), by type."""
    client, prefix = store.client, store.keys.namespace + ":"
    dumped: dict[str, Any] = {}
    for raw in client.scan_iter(match=prefix + "*", count=1000):
        key = raw.decode()
        name = key[len(prefix) :]
        if name.startswith(("store:batch:", "store:marks", "store:ledgers", "store:epoch", "store:filter")):
            continue
        kind = client.type(key).decode()
        if kind == "hash":
            value: Any = client.hgetall(key)
        elif kind == "set":
            value = sorted(client.smembers(key))
        elif kind == "zset":
            value = client.zrange(key, 0, -1, withscores=True)
        elif kind == "list":
            value = client.lrange(key, 0, -1)
        else:
            value = client.get(key)
        dumped[name] = value
    return dumped


def test_an_archive_learned_late_keeps_its_counterexamples(redis_url: str) -> None:
    """The compaction that drops rule records whose every count is older than the TTL counts from the
    newest observation this process sent, not from now: an archive's counterexample, years old today
    but not at the captures' times, stays for the next learner of the archive."""
    namespace = f"late-{uuid.uuid4().hex[:8]}"
    captures = [Observation(f"http://ex.example/d{i}", 301, f"http://ex.example/d{i}/", time=T0 + i) for i in range(3)]
    captures.append(Observation("http://ex.example/d9", 200, None, time=T0 + 10))
    first = RedisStore(redis_url, namespace, POLICY, auto_sync=False)  # now: years after T0
    try:
        first.learn(captures)
        first.flush()  # its first batch: a compaction
        assert first.storage.counters.get("batches") and first.storage._next_compaction > 1
    finally:
        first.close()
    stored = {k.decode(): json.loads(v) for k, v in first.client.hgetall(f"{namespace}:store:rules:http://ex.example").items()}
    assert stored["add-slash /d#"][:2] == [3, 1]
    later_clock = Clock(T0 + 20)
    later = RedisStore(redis_url, namespace, POLICY, clock=later_clock, auto_sync=False)
    try:
        later.learn([Observation("http://ex.example/d5", 301, "http://ex.example/d5/", time=T0 + 20)])
        [record] = [r for r in later.rules() if r.key.kind == "add-slash"]
        assert (record.support, record.against) == (4, 1) and later.rule_status(record) is RuleStatus.SUSPENDED
        assert later.representative("http://ex.example/d7") == "http://ex.example/d7"
    finally:
        later.close()
