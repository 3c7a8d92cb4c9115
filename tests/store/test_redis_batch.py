"""The Redis store's batch script: a writer's record stored as it is only when nobody else wrote.

A rule entry carries what the writer counted since its last batch and its whole record. The
script stores the record as it is only when the store is exactly as the writer's last batch left
it and the writer knows it (same version, that batch's mark at that version, same epoch); in any
other case (another writer, a store that went back in time, one emptied) it adds the counts to
what is stored, so a concurrent writer's counterexample is never overwritten.
"""

from __future__ import annotations

import json
from pathlib import Path
import time
import uuid
from typing import Any

import pytest
from fixtures.redis_helpers import RedisServer

from scrapy_iri.store import Observation, RuleStatus
from scrapy_iri.store._redis import RedisStore
from scrapy_iri.store._redis.scripts import BATCH

ORIGIN, FIELD = "http://ex.example", "add-slash plain"
#: what is stored: 5 supports and a counterexample (another writer's)
STORED = [5, 1, 10.0, 50.0, 40.0, "http://ex.example/s", "http://ex.example/c"]
#: the writer's record: 3 supports, 2 of them counted since its last batch, no counterexample
HELD = [3, 0, 10.0, 60.0, 0.0, "http://ex.example/h", ""]


def rule_entry(held: list[Any] = HELD, support: int = 2, against: int = 0) -> list[Any]:
    return [ORIGIN, FIELD, "merge", support, against, *held[2:], held[0], held[1]]


class Script:
    """The batch script on a real server, with a store prefix of its own."""

    def __init__(self, server: RedisServer) -> None:
        self.client = server.client()
        self.run = self.client.register_script(BATCH)
        self.prefix = f"t{uuid.uuid4().hex[:8]}:store:"

    def apply(self, entries: list[list[Any]], known: tuple[Any, ...] = ()) -> tuple[str, int]:
        """Apply a batch of rule entries with what the writer knows; its id and the version it left."""
        batch_id = uuid.uuid4().hex
        batch = {"a": [], "c": [], "r": entries, "f": [], "e": [], "d": []}
        args = [self.prefix, batch_id, json.dumps(batch), 100.0, 1e9, 10, 10, 600, 1e9, *known]
        answer = self.run(args=args)
        assert answer[0] == b"ok"
        return batch_id, int(answer[1])

    def stored(self) -> list[Any]:
        return json.loads(self.client.hget(f"{self.prefix}rules:{ORIGIN}", FIELD))

    def epoch(self) -> str:
        self.client.set(self.prefix + "epoch", "e1", nx=True)
        return "e1"


@pytest.fixture
def script(redis_server: RedisServer) -> Script:
    return Script(redis_server)


def _writer_alone(script: Script) -> tuple[str, int]:
    """The writer's last batch (its mark and the version it left), then the stored record set to STORED
    as if by the writer itself (the same version, so nobody else wrote)."""
    epoch = script.epoch()
    last, version = script.apply([["http://other.example", FIELD, "merge", 1, 0, 1.0, 1.0, 0.0, "", ""]], ("", epoch, ""))
    script.client.hset(f"{script.prefix}rules:{ORIGIN}", FIELD, json.dumps(STORED))
    return last, version


def test_the_writer_alone_stores_its_record_as_it_holds_it(script: Script) -> None:
    last, version = _writer_alone(script)
    script.apply([rule_entry()], (version, "e1", last))
    assert script.stored() == HELD
    assert script.client.sismember(script.prefix + "origins", ORIGIN)


@pytest.mark.parametrize(
    "why",
    [
        "another writer since",
        "a version it does not know",
        "writes before its last batch it has not seen",
        "its last batch lost",
        "another epoch",
        "no last batch",
        "no record sent",
    ],
)
def test_otherwise_the_counts_are_added_to_what_is_stored(script: Script, why: str) -> None:
    last, version = _writer_alone(script)
    known: tuple[Any, ...] = (version, "e1", last)
    entry = rule_entry()
    if why == "another writer since":  # its batch moved the version; the writer has not seen it
        script.apply([["http://other.example", FIELD, "merge", 1, 0, 1.0, 1.0, 0.0, "", ""]], ("", "e1", ""))
    elif why == "a version it does not know":  # the writer synced to a later version: its mark is older
        other, version = script.apply([["http://other.example", FIELD, "merge", 1, 0, 1.0, 1.0, 0.0, "", ""]])
        known = (version, "e1", last)
    elif why == "writes before its last batch it has not seen":  # its last batch went on from a later version
        script.apply([["http://other.example", FIELD, "merge", 1, 0, 1.0, 1.0, 0.0, "", ""]])
        last, _ = script.apply([["http://third.example", FIELD, "merge", 1, 0, 1.0, 1.0, 0.0, "", ""]])
        known = (version, "e1", last)
    elif why == "its last batch lost":  # Redis went back to before the writer's batch, then on to that version
        script.client.zrem(script.prefix + "marks", last)
    elif why == "another epoch":  # the store was emptied and started again
        script.client.set(script.prefix + "epoch", "e2")
    elif why == "no last batch":
        known = (version, "e1", "")
    else:  # a write-back or an older writer: counts only
        entry = entry[:10]
    script.apply([entry], known)
    # 5 stored + 2 counted; the stored counterexample is kept (the newer support's example wins)
    assert script.stored() == [7, 1, 10.0, 60.0, 40.0, "http://ex.example/h", "http://ex.example/c"]


def test_a_merged_record_expires_at_the_writers_newest_count(script: Script) -> None:
    """An archive learned late counts at its captures' times, long before now: the stored record is
    expired as of the writer's newest count (as the writer's own record was), so a counterexample
    still in force then is kept; a count a TTL after it ends it."""
    script.client.hset(f"{script.prefix}rules:{ORIGIN}", FIELD, json.dumps([0, 1, 10.0, 0.0, 40.0, "", "http://ex.example/c"]))

    def merge(at: float, example: str) -> None:  # now 10,000, TTL 100
        entry = [ORIGIN, FIELD, "merge", 1, 0, at, at, 0.0, example, ""]
        batch = {"a": [], "c": [], "r": [entry], "f": [], "e": [], "d": []}
        assert script.run(args=[script.prefix, uuid.uuid4().hex, json.dumps(batch), 10_000.0, 100.0, 10, 10, 600, 1e9])[0] == b"ok"

    merge(60.0, "http://ex.example/h")
    assert script.stored() == [1, 1, 10.0, 60.0, 40.0, "http://ex.example/h", "http://ex.example/c"]
    merge(300.0, "http://ex.example/i")
    assert script.stored() == [1, 0, 10.0, 300.0, 40.0, "http://ex.example/i", ""]


def _slash(i: int, status: int = 301) -> Observation:
    url = f"http://ex.example/d{i}"
    return Observation(url, status, f"{url}/" if status == 301 else None, time=time.time())


def test_a_bulk_writer_never_overwrites_a_concurrent_counterexample(redis_url: str) -> None:
    """One process learns in bulk (its batches alone store records as they are); another process sees a
    counterexample meanwhile; the bulk writer, which has not synced, learns more: its counts are added."""
    a = RedisStore(redis_url, "bulk", auto_sync=False)
    b = RedisStore(redis_url, "bulk", auto_sync=False)
    try:
        a.learn([_slash(i) for i in range(4)], chunk=2)
        a.flush()
        a.learn([_slash(i) for i in range(4, 6)])
        a.flush()  # alone: stored as held
        [rule] = [r.key for r in a.rules() if r.key.kind == "add-slash"]
        b.sync()
        assert rule in b.record_response("http://ex.example/d7", 200).contradicted
        b.flush()
        a.learn([_slash(i) for i in range(8, 10)])
        a.flush()  # not alone any more: merged, b's counterexample kept
        for store in (a, b):
            store.sync()
            [record] = [r for r in store.rules() if r.key == rule]
            assert (record.support, record.against) == (8, 1)
            assert store.rule_status(record) is RuleStatus.SUSPENDED
            assert store.representative("http://ex.example/d99") == "http://ex.example/d99"
    finally:
        a.close()
        b.close()


def test_bulk_learning_alone_stores_the_records_it_holds(redis_url: str) -> None:
    """Learned alone, every batch after the first stores the records as held: Redis ends with the records
    the process holds, field for field."""
    store = RedisStore(redis_url, "alone", auto_sync=False)
    try:
        store.learn([_slash(i) for i in range(40)], chunk=8)
        store.flush()
        held = {r.key: r for r in store.storage.image.all_rules()}
        store.sync()
        stored = {r.key: r for r in store.rules()}
        assert held and held == stored
    finally:
        store.close()


def test_reads_go_on_after_the_server_forgot_its_scripts(redis_url: str, redis_server: RedisServer) -> None:
    """The read-ahead of a chunk is one script call: a server that lost its scripts (a restart, SCRIPT
    FLUSH) gets it again, and what is read is the same."""
    writer = RedisStore(redis_url, "scripts", auto_sync=False)
    try:
        writer.learn([_slash(i) for i in range(4)])
        writer.flush()
    finally:
        writer.close()
    redis_server.client().script_flush()
    reader = RedisStore(redis_url, "scripts", auto_sync=False)
    try:
        reader.learn([_slash(i) for i in range(4, 6)])  # its read-ahead reads the rule the writer stored
        reader.flush()
        [record] = [r for r in reader.rules() if r.key.kind == "add-slash"]
        assert record.support == 6
        assert reader.representative("http://ex.example/d99") == "http://ex.example/d99/"
    finally:
        reader.close()


def test_the_read_ahead_finds_every_record_asked_for(redis_url: str, redis_server: RedisServer) -> None:
    """One script call reads the fan-ins and rule records of a chunk: each key asked for gets what is
    stored, or None, however many fields an origin is asked for (read 500 at a time)."""
    from scrapy_iri.store._port import Reads
    from scrapy_iri.store._rules import RuleKey, RuleRecord

    store = RedisStore(redis_url, "reads", auto_sync=False)
    try:
        client, keys = redis_server.client(), store.storage.keys
        asked = [RuleKey(origin, "add-slash", f"/d{i}/#") for origin in ("http://a.example", "http://b.example") for i in range(1200)]
        stored = {asked[i]: [i, 0, 1.0, 2.0, 0.0, f"e{i}", ""] for i in (0, 499, 500, 1199, 1200, 1700, 2399)}
        for key, values in stored.items():
            client.hset(keys.rules(key.origin), f"{key.kind} {key.scope}", json.dumps(values))
        client.sadd(keys.fanin("http://t.example/1"), "http://t.example/a", "http://t.example/b", "http://t.example/c")
        client.sadd(keys.fanin("http://t.example/3"), "http://t.example/z")
        targets = [f"http://t.example/{i}" for i in range(4)]
        found = store.storage.port.read(Reads(rules=asked, fanins=targets, cap=2))
        assert found is not None
        assert found.rules == {key: None if key not in stored else RuleRecord(key, *stored[key]) for key in asked}
        assert found.fanins == {
            targets[0]: [],
            targets[1]: ["http://t.example/a", "http://t.example/b"],
            targets[2]: [],
            targets[3]: ["http://t.example/z"],
        }
    finally:
        store.close()


def test_a_bulk_writer_across_a_rollback_merges(tmp_path: Path) -> None:
    """Redis restarts from a snapshot taken before the bulk writer's last batch; another process then
    suspends the rule, and the version comes back to the one the writer knows. The writer, which has
    not synced, learns more: its last batch's mark is gone, so its counts are merged, and the other
    process's counterexample stays."""
    server = RedisServer(tmp_path, persistent=False).start()  # no automatic persistence; a SAVE makes dump.rdb
    try:
        a = RedisStore(server.url, "roll", auto_sync=False, ledger_path=tmp_path / "a.ledger")
        a.learn([_slash(i) for i in range(4)], chunk=2)
        a.flush()
        server.client().save()
        a.learn([_slash(i) for i in range(4, 6)])
        a.flush()  # alone: stored as held; its mark is not in the snapshot
        known = a.storage.image.version
        server.kill()
        server.start()
        b = RedisStore(server.url, "roll", auto_sync=False, ledger_path=tmp_path / "b.ledger")
        [rule] = [r.key for r in b.rules() if r.key.kind == "add-slash"]
        b.record_response("http://ex.example/d7", 200)
        b.flush()
        client = server.client()
        version = int(client.get("roll:store:version"))
        assert version <= known
        client.incrby("roll:store:version", known - version)  # other writers: the version the writer knows
        a.learn([_slash(i) for i in range(8, 10)])
        a.flush()
        stored = json.loads(client.hget("roll:store:rules:http://ex.example", f"{rule.kind} {rule.scope}"))
        assert stored[1] == 1  # b's counterexample
        b.close()
        a.close()
    finally:
        server.stop()
