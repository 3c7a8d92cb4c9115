"""A Redis that goes back in time is never served as truth, whoever is alive when it does.

Real ``redis-server`` restarts from an older RDB snapshot or an older
append-only file. The writer runs as a separate process: it learns an
alias, a rule and four aliases into a page, Redis is snapshotted, then it
sees the alias end (its source answers 200), the rule refuted (a
counterexample), the page become a sink (a fifth source) and defers a
request under another rule, and exits. Redis restarts from the snapshot.
Whoever looks next -- a process opened later, a reader that stayed alive,
the writer itself -- must not merge what was ended or suspended.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.redis_helpers import RedisServer

from scrapy_iri.errors import StoreError
from scrapy_iri.store import RuleKey, RuleStatus
from scrapy_iri.store._redis import RedisStore

NS = "rb"
SLASH = RuleKey("http://s.example", "add-slash", "/d#")
DEFERRED_UNDER = RuleKey("http://t.example", "add-slash", "/d#")

WRITER = """
import sys
from scrapy_iri.store import RuleKey
from scrapy_iri.store._redis import RedisStore

url, ledger, phase = sys.argv[1:4]
store = RedisStore(url, "rb", ledger_path=ledger, sync_interval=0.0)
if phase == "learn":
    for host in ("http://s.example", "http://t.example"):
        for i in range(3):
            store.record_redirect(f"{host}/d{i}", 301, f"{host}/d{i}/")
    store.record_redirect("http://e.example/old", 301, "http://e.example/new")
    for i in range(4):
        store.record_redirect(f"http://k.example/p{i}", 301, "http://k.example/login")
else:
    store.record_response("http://e.example/old", 200)  # the alias ends
    store.record_response("http://s.example/d9", 200)  # a counterexample: the rule is suspended
    store.record_redirect("http://k.example/p4", 301, "http://k.example/login")  # a fifth source: a sink
    store.defer("http://t.example/d7", [RuleKey("http://t.example", "add-slash", "/d#")])
store.close()
"""


def write(server: RedisServer, ledger: Path, phase: str) -> None:
    """The writer, as a process of its own that exits when done."""
    subprocess.run([sys.executable, "-c", WRITER, server.url, str(ledger), phase], check=True, timeout=60)


def assert_nothing_ended_comes_back(store: RedisStore) -> None:
    assert store.representative("http://e.example/old") == "http://e.example/old"  # the alias stays ended
    assert store.representative("http://s.example/d5") == "http://s.example/d5"  # the rule stays suspended
    assert store.rule_status(next(r for r in store.rules() if r.key == SLASH)) is RuleStatus.SUSPENDED
    assert store.representative("http://k.example/p0") == "http://k.example/p0"  # the sink stays a sink
    assert store.representative("http://t.example/d5") == "http://t.example/d5/"  # not ended: still merged


def rdb_server(tmp_path: Path) -> tuple[RedisServer, object, object]:
    server = RedisServer(tmp_path, persistent=False).start()  # no automatic persistence; a SAVE makes dump.rdb
    return server, lambda: server.client().save(), lambda: None


def aof_server(tmp_path: Path) -> tuple[RedisServer, object, object]:
    server = RedisServer(tmp_path).start()  # appendonly yes, fsync always
    saved = tmp_path / "aof-backup"

    def snapshot() -> None:
        shutil.copytree(tmp_path / "appendonlydir", saved)

    def restore() -> None:
        shutil.rmtree(tmp_path / "appendonlydir")
        shutil.copytree(saved, tmp_path / "appendonlydir")

    return server, snapshot, restore


SERVERS = {"rdb": rdb_server, "aof": aof_server}


def restart_older(server: RedisServer, restore) -> None:  # type: ignore[no-untyped-def]
    server.kill()
    restore()
    server.start()
    assert server.client().hget(f"{NS}:store:aliases", "http://e.example/old") is not None  # it went back


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_writer_exited_a_later_process_repairs_at_open(kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    server, snapshot, restore = SERVERS[kind](tmp_path)
    ledger = tmp_path / "job" / "store.ledger"
    try:
        write(server, ledger, "learn")
        snapshot()  # type: ignore[operator]
        write(server, ledger, "end")
        restart_older(server, restore)
        # a process of another machine (its own ledger, empty) writes first: the version moves on
        other = RedisStore(server.url, NS, ledger_path=tmp_path / "other.ledger", sync_interval=0.0)
        for i in range(30):
            other.record_redirect(f"http://o.example/x{i}", 301, f"http://o.example/y{i}")
            other.flush()
        with caplog.at_level(logging.ERROR, logger="scrapy_iri.store._redis"):
            later = RedisStore(server.url, NS, ledger_path=ledger, sync_interval=0.0)
        assert "went back to an older state" in caplog.text
        assert_nothing_ended_comes_back(later)
        assert later.take_deferred(DEFERRED_UNDER) == ["http://t.example/d7"]  # the request merged away survives
        # Redis itself was repaired: a process with no ledger of its own is served the truth too
        fresh = RedisStore(server.url, NS, ledger_path=tmp_path / "fresh.ledger", sync_interval=0.0)
        assert_nothing_ended_comes_back(fresh)
        # and the other machine's live process hears of it at its next sync
        assert other.maintain(force=True)
        assert_nothing_ended_comes_back(other)  # type: ignore[arg-type]
        for store in (later, fresh, other):
            store.close()
    finally:
        server.stop()


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_only_a_reader_alive_repairs_at_its_next_sync(kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    server, snapshot, restore = SERVERS[kind](tmp_path)
    ledger = tmp_path / "job" / "store.ledger"
    try:
        write(server, ledger, "learn")
        reader = RedisStore(server.url, NS, ledger_path=ledger, sync_interval=0.0)
        assert reader.representative("http://e.example/old") == "http://e.example/new"  # cached here
        snapshot()  # type: ignore[operator]
        write(server, ledger, "end")
        assert reader.maintain(force=True)
        assert reader.representative("http://e.example/old") == "http://e.example/old"
        restart_older(server, restore)
        with caplog.at_level(logging.ERROR, logger="scrapy_iri.store._redis"):
            for _ in range(20):
                if reader.maintain(force=True):
                    break
                time.sleep(0.1)
        assert "went back to an older state" in caplog.text
        assert_nothing_ended_comes_back(reader)
        later = RedisStore(server.url, NS, ledger_path=tmp_path / "fresh.ledger", sync_interval=0.0)
        assert_nothing_ended_comes_back(later)
        reader.close()
        later.close()
    finally:
        server.stop()


def test_a_reader_behind_the_snapshot_sees_the_rollback_by_the_ledger_mark(tmp_path: Path) -> None:
    """The reader's known version is older than the snapshot's, and others wrote after the restart:
    its version never goes down, and the change log looks continuous; the mark is what tells."""
    server, snapshot, restore = rdb_server(tmp_path)
    ledger = tmp_path / "job" / "store.ledger"
    try:
        reader = RedisStore(server.url, NS, ledger_path=ledger, sync_interval=0.0)
        write(server, ledger, "learn")
        snapshot()  # type: ignore[operator]
        write(server, ledger, "end")
        restart_older(server, restore)
        other = RedisStore(server.url, NS, ledger_path=tmp_path / "other.ledger", sync_interval=0.0)
        for i in range(40):
            other.record_redirect(f"http://o.example/x{i}", 301, f"http://o.example/y{i}")
            other.flush()
        for _ in range(20):
            if reader.maintain(force=True):
                break
            time.sleep(0.1)
        assert reader.counters.get("rollbacks") == 1
        assert_nothing_ended_comes_back(reader)
        reader.close()
        other.close()
    finally:
        server.stop()


def test_writer_alive_repairs_with_its_ledger_beyond_its_memory(tmp_path: Path) -> None:
    """The writer's memory of its last writes is small (``rollback_memory``); its ledger is not."""
    server, snapshot, restore = rdb_server(tmp_path)
    ledger = tmp_path / "job" / "store.ledger"
    try:
        w = RedisStore(server.url, NS, ledger_path=ledger, sync_interval=0.0, rollback_memory=1)
        w.record_redirect("http://e.example/old", 301, "http://e.example/new")
        w.flush()
        snapshot()  # type: ignore[operator]
        w.record_response("http://e.example/old", 200)
        for i in range(5):  # later writes push the end out of the writer's memory
            w.record_redirect(f"http://e.example/n{i}", 301, f"http://e.example/m{i}")
        w.flush()
        restart_older(server, restore)
        for _ in range(20):
            if w.maintain(force=True):
                break
            time.sleep(0.1)
        assert w.counters.get("rollbacks") == 1
        later = RedisStore(server.url, NS, ledger_path=tmp_path / "fresh.ledger", sync_interval=0.0)
        assert later.representative("http://e.example/old") == "http://e.example/old"
        w.close()
        later.close()
    finally:
        server.stop()


def test_rdb_only_persistence_is_refused_unless_accepted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    server = RedisServer(tmp_path, persistent=False, args=("--save", "900 1")).start()
    try:
        with pytest.raises(StoreError, match=r"RDB snapshots only .* appendonly yes, or accept the risk") as refused:
            RedisStore(server.url, NS, ledger_path=tmp_path / "l")
        for way in ("IRI_REDIS_ACCEPT_ROLLBACK_RISK", "?accept_rollback_risk=1", "accept_rollback_risk=True"):
            assert way in str(refused.value)  # every way a user accepts it is named
        with caplog.at_level(logging.WARNING, logger="scrapy_iri.store._redis"):
            store = RedisStore(server.url, NS, ledger_path=tmp_path / "l", accept_rollback_risk=True)
        assert "accepted" in caplog.text
        store.close()
        from scrapy_iri.store import open_store

        open_store(f"{server.url}?namespace={NS}&accept_rollback_risk=1").close()  # a store URI accepts it too
    finally:
        server.stop()


def test_a_cleared_store_forgets_its_ledger(tmp_path: Path, redis_url: str, caplog: pytest.LogCaptureFixture) -> None:
    ledger = tmp_path / "store.ledger"
    store = RedisStore(redis_url, NS, ledger_path=ledger, sync_interval=0.0)
    store.record_redirect("http://e.example/old", 301, "http://e.example/new")
    store.record_response("http://e.example/old", 200)
    store.flush()
    assert ledger.exists()
    store.clear()
    store.close()
    with caplog.at_level(logging.ERROR, logger="scrapy_iri.store._redis"):
        again = RedisStore(redis_url, NS, ledger_path=ledger, sync_interval=0.0)
    assert "went back" not in caplog.text
    again.close()


def test_a_compacted_ledger_keeps_what_it_must_write_back(tmp_path: Path) -> None:
    from scrapy_iri.store._redis.ledger import Ledger

    ledger = Ledger(tmp_path / "l")
    batch = {"a": [["http://e.example/old", "x", 5.0, 1, ""]], "f": [], "d": [["r1", "http://t.example/a"]]}
    for i in range(200):
        ledger.record(batch, ["ok", i, 1, 0, [b"http://e.example/old"]], f"b{i}", "E", set(), 100.0)
    ledger.taken("r0")
    before = ledger.write_back()
    size = (tmp_path / "l").stat().st_size
    ledger.compact(limit=0)
    assert (tmp_path / "l").stat().st_size < size / 10
    assert ledger.write_back() == before
    assert ledger.newest_mark() == ("E", 199, "b199")
    ledger.taken("r1")  # appends go on after a compaction
    assert all(not batch["d"] for batch in ledger.write_back())
