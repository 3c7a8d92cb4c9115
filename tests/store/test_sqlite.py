"""The SQLite backend: persistence, batched writes, WAL, schema version, and surviving SIGKILL."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fixtures.stores import as_unprivileged

from scrapy_iri.store import Alias, LearningPolicy, RuleKey, StoreError, open_store
from scrapy_iri.store._sqlite import SCHEMA_VERSION


def uri(path: Path) -> str:
    return f"sqlite:///{path}"


def writer(script: str, path: Path, *args: str) -> subprocess.Popen[str]:
    """A process running ``script`` on the store at ``path`` (what it prints is read line by line)."""
    return subprocess.Popen(
        [sys.executable, "-c", script, uri(path), *args],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )


def teach(store, host: str = "a.example") -> None:  # type: ignore[no-untyped-def]
    for i in range(1, 4):
        store.record_redirect(f"http://{host}/topic-{i}", 301, f"http://{host}/topic-{i}/")


def test_everything_survives_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    rule = RuleKey("http://a.example", "add-slash", "/topic-#")
    with open_store(uri(path)) as store:
        teach(store)
        for i in range(5):
            store.record_redirect(f"http://s.example/p{i}", 302, "http://s.example/login")
        store.defer("http://a.example/topic-9", [rule])
    with open_store(uri(path), create=False) as store:
        assert store.representative("http://a.example/topic-9") == "http://a.example/topic-9/"
        assert store.representative("http://a.example/topic-1") == "http://a.example/topic-1/"
        stats = store.stats()
        assert stats["aliases"] == 3 and stats["rules/active"] == 1 and stats["sinks"] == 1
        assert stats["evidence"] == 8 and stats["deferred"] == 1
        assert store.take_deferred(rule) == ["http://a.example/topic-9"]
    with open_store(uri(path)) as store:
        assert store.stats()["deferred"] == 0


def test_wal_and_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    open_store(uri(path)).close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(StoreError, match="newer"):
        open_store(uri(path))


def test_not_a_store(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t (x)")
    db.close()
    with pytest.raises(StoreError, match="not a scrapy-iri store"):
        open_store(uri(path))
    (tmp_path / "junk.db").write_bytes(b"not a database at all, not even close" * 100)
    with pytest.raises(StoreError):
        open_store(uri(tmp_path / "junk.db"))


def _rows(path: Path, table: str) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        db.close()


def test_writes_are_batched_and_flushed_on_size_and_close(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = open_store(uri(path), batch_size=10_000, flush_interval=1e9)
    teach(store)
    assert _rows(path, "alias") == 0  # still in the batch
    assert store.representative("http://a.example/topic-9") == "http://a.example/topic-9/"  # yet visible
    store.flush()
    assert _rows(path, "alias") == 3
    store.record_redirect("http://a.example/old", 301, "http://a.example/new")
    store.close()
    assert _rows(path, "alias") == 4

    small = open_store(uri(tmp_path / "small.db"), batch_size=2, flush_interval=1e9)
    small.record_redirect("http://a.example/old", 301, "http://a.example/new")
    assert _rows(tmp_path / "small.db", "alias") == 1
    small.close()


def test_writes_are_flushed_on_time(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = open_store(uri(path), batch_size=10_000, flush_interval=0.0)
    store.record_redirect("http://a.example/old", 301, "http://a.example/new")
    assert _rows(path, "alias") == 1
    store.close()


WRITER = textwrap.dedent(
    """
    import sys
    from scrapy_iri.store import open_store

    store = open_store(sys.argv[1], batch_size=10**9, flush_interval=1e9)
    # announce each transaction as it starts, so that the parent can kill inside it
    store.storage._db.set_trace_callback(lambda sql: sql.startswith("BEGIN") and print("begin", flush=True))
    i = 0
    while True:
        for _ in range({batch}):
            store.record_redirect(f"http://a.example/p{{i}}", 301, f"http://a.example/q{{i}}")
            i += 1
        store.flush()
        print("flushed", i, flush=True)
    """
)


@pytest.mark.parametrize("batches_before_kill", [0, 3])
def test_sigkill_mid_write_loses_at_most_the_unflushed_batch(tmp_path: Path, batches_before_kill: int) -> None:
    """A crawl killed with SIGKILL inside a write transaction leaves a store that reopens.

    Batches are written in one transaction each: after the kill the store
    holds every batch flushed before it, and never part of a batch.
    """
    batch = 2000
    path = tmp_path / "store.db"
    child = writer(WRITER.format(batch=batch), path)
    assert child.stdout is not None
    flushed = 0
    while True:
        line = child.stdout.readline().split()
        if line[0] == "flushed":
            flushed = int(line[1])
        elif flushed >= batches_before_kill * batch:
            os.kill(child.pid, signal.SIGKILL)  # the batch after `flushed` is being written
            break
    child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL

    with open_store(uri(path)) as store:
        aliases = store.stats()["aliases"]
        assert flushed <= aliases <= flushed + batch
        assert aliases % batch == 0, "a batch was committed in part"
        if flushed:
            assert store.representative(f"http://a.example/p{flushed - 1}") == f"http://a.example/q{flushed - 1}"
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()


def test_declared_cases_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with open_store(uri(path)) as store:
        for i in range(1, 4):
            store.record_redirect(f"http://iis.example/docs/page-{i}", 301, f"http://iis.example/Docs/Page-{i}")
        store.record_response("http://iis.example/Docs/Page-7", 200)
    assert _rows(path, "declared_case") == 1
    with open_store(uri(path), create=False) as store:
        assert store.representative("http://iis.example/DOCS/PAGE-7") == "http://iis.example/Docs/Page-7"


_V3_SCHEMA = """
CREATE TABLE alias (source TEXT PRIMARY KEY, target TEXT NOT NULL, status INTEGER NOT NULL, time REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE rule (
    origin TEXT NOT NULL, kind TEXT NOT NULL, scope TEXT NOT NULL, support INTEGER NOT NULL, against INTEGER NOT NULL,
    first_seen REAL NOT NULL, last_support REAL NOT NULL, last_against REAL NOT NULL,
    example TEXT NOT NULL, counterexample TEXT NOT NULL, PRIMARY KEY (origin, kind, scope)) WITHOUT ROWID;
CREATE TABLE fanin (target TEXT NOT NULL, source TEXT NOT NULL, PRIMARY KEY (target, source)) WITHOUT ROWID;
CREATE TABLE deferred (rule TEXT NOT NULL, url TEXT NOT NULL, PRIMARY KEY (rule, url)) WITHOUT ROWID;
CREATE TABLE declared_case (url TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE evidence (id INTEGER PRIMARY KEY, time REAL NOT NULL, url TEXT NOT NULL, status INTEGER NOT NULL,
    target TEXT, context TEXT NOT NULL, note TEXT NOT NULL, location TEXT);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
PRAGMA user_version = 3;
"""


@pytest.mark.parametrize("version", [1, 3])
def test_an_old_layout_store_is_migrated(tmp_path: Path, version: int) -> None:
    """Schema 3 kept no case keys (every open recomputed them), schema 1 no declared cases: opening migrates."""
    import time

    path = tmp_path / "store.db"
    now = time.time()
    db = sqlite3.connect(path)
    db.executescript(_V3_SCHEMA)
    rows = [(f"http://iis.example/docs/page-{i}", f"http://iis.example/Docs/Page-{i}", 301, now) for i in (1, 2, 3)]
    rows.append(("http://a.example/old", "http://a.example/new", 301, now))
    db.executemany("INSERT INTO alias VALUES (?, ?, ?, ?)", rows)
    db.execute("INSERT INTO rule VALUES ('http://iis.example', 'case', '', 3, 0, ?, ?, 0, '', '')", (now, now))
    if version == 1:
        db.executescript("DROP TABLE declared_case; DROP TABLE meta; PRAGMA user_version = 1;")
    else:
        db.execute("INSERT INTO declared_case VALUES ('http://iis.example/Docs/Page-7')")
    db.commit()
    db.close()
    with open_store(uri(path), create=False) as store:
        assert store.representative("http://a.example/old") == "http://a.example/new"
        # the case a case-only alias declared is found by its stored key
        assert store.storage.case_target("http://iis.example/docs/page-2") == "http://iis.example/Docs/Page-2"  # type: ignore[attr-defined]
        if version == 3:
            assert store.storage.case_target("http://iis.example/docs/page-7") == "http://iis.example/Docs/Page-7"  # type: ignore[attr-defined]
        assert store.stats()["aliases"] == 4
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 6
    keys = dict(db.execute("SELECT source, case_key FROM alias"))
    db.close()
    assert keys["http://iis.example/docs/page-1"] == "http://iis.example/docs/page-1"
    assert keys["http://a.example/old"] is None


def test_a_counterexample_written_by_another_process_is_never_overwritten(tmp_path: Path) -> None:
    """Two crawls share one file: B records a counterexample, A (opened before) learns and flushes after."""
    path = tmp_path / "store.db"
    a, b = open_store(uri(path)), open_store(uri(path))
    b.record_response("http://h.example/both-1", 200)
    b.flush()
    for k in (2, 3, 4):
        a.record_redirect(f"http://h.example/both-{k}", 301, f"http://h.example/both-{k}/")
    a.flush()
    assert a.representative("http://h.example/both-9") == "http://h.example/both-9"  # A sees B's counterexample
    a.close()
    b.close()
    with open_store(uri(path), create=False) as c:
        rule = next(r for r in c.rules() if r.key.kind == "add-slash")
        assert (rule.support, rule.against) == (3, 1)
        assert c.representative("http://h.example/both-9") == "http://h.example/both-9"


def test_support_from_two_processes_adds_up(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    a, b = open_store(uri(path)), open_store(uri(path))
    teach(a)
    a.flush()
    for i in range(4, 6):
        b.record_redirect(f"http://a.example/topic-{i}", 301, f"http://a.example/topic-{i}/")
    b.close()
    a.close()
    with open_store(uri(path), create=False) as c:
        assert next(iter(c.rules())).support == 5


_OPEN = """
import sys, time
import scrapy_iri.store._sqlite
from scrapy_iri.store import open_store
start = float(sys.argv[2])
while time.time() < start:
    pass
open_store("sqlite:///" + sys.argv[1]).close()
"""


def test_concurrent_first_opens_of_a_new_store(tmp_path: Path) -> None:
    import time

    for trial in range(3):
        path = tmp_path / f"s{trial}.db"
        start = time.time() + 1.0
        procs = [
            subprocess.Popen([sys.executable, "-c", _OPEN, str(path), str(start)], stderr=subprocess.PIPE, text=True)
            for _ in range(6)
        ]
        errors = [err for p in procs if (err := p.communicate()[1]) and p.returncode]
        assert all(p.returncode == 0 for p in procs), errors


def test_the_crawl_policy_is_recorded_and_used_by_readers(tmp_path: Path) -> None:
    from scrapy_iri.store import LearningPolicy

    path = tmp_path / "store.db"
    policy = LearningPolicy(min_observations=5, sink_fanin=3, max_chain=4)
    with open_store(uri(path), policy=policy) as store:
        teach(store)
    with open_store(uri(path), create=False) as store:
        assert store.policy == policy
        assert store.representative("http://a.example/topic-9") == "http://a.example/topic-9"
    with open_store(uri(path), create=False, policy=LearningPolicy()) as store:  # an explicit policy wins
        assert store.representative("http://a.example/topic-9") == "http://a.example/topic-9/"
    with open_store(uri(path), create=False) as store:  # and is not recorded by a reader
        assert store.policy == policy


def test_a_locked_database_does_not_escape_from_record(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = open_store(uri(path), batch_size=2)
    store.storage._db.execute("PRAGMA busy_timeout = 0")  # type: ignore[attr-defined]
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    teach(store)  # batches are due: the flush fails, the writes are kept
    assert store.representative("http://a.example/topic-9") == "http://a.example/topic-9/"
    other.execute("COMMIT")
    other.close()
    store.close()
    with open_store(uri(path), create=False) as store:
        assert store.representative("http://a.example/topic-9") == "http://a.example/topic-9/"


# -- at scale: on-demand reads, sharing, whole observations, locks, pruning -------------------


def test_an_alias_dropped_by_one_process_is_dropped_in_the_others_and_after_reopen(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    a = open_store(uri(path), sync_interval=0.0)
    b = open_store(uri(path), sync_interval=0.0)
    a.record_redirect("http://a.example/old", 301, "http://a.example/new")
    a.flush()
    assert b.representative("http://a.example/old") == "http://a.example/new"  # b caches it now
    a.record_response("http://a.example/old", 200)  # the source answers for itself: no longer an alias
    a.flush()
    assert b.representative("http://a.example/old") == "http://a.example/old"
    b.record_redirect("http://a.example/x", 301, "http://a.example/y")  # b commits something else
    b.close()
    a.close()
    with open_store(uri(path), create=False) as c:
        assert c.representative("http://a.example/old") == "http://a.example/old"
        assert c.representative("http://a.example/x") == "http://a.example/y"


def test_a_rule_suspended_by_another_process_stops_here_without_a_write(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    a = open_store(uri(path), sync_interval=0.0)
    teach(a)
    a.flush()
    b = open_store(uri(path), sync_interval=0.0)
    assert b.representative("http://a.example/topic-9") == "http://a.example/topic-9/"
    a.record_response("http://a.example/topic-5", 200)  # a counterexample
    a.flush()
    assert b.representative("http://a.example/topic-9") == "http://a.example/topic-9"
    a.close()
    b.close()


def test_the_alias_cache_is_bounded_and_remembers_misses(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with open_store(uri(path)) as store:
        n = store.bulk_aliases(Alias(f"http://b.example/p{i}", f"http://b.example/q{i}", 301, time.time()) for i in range(2000))
        assert n == 2000
    with open_store(uri(path), cache_size=100) as store:
        assert store.storage.cached.rules.origins == {}  # type: ignore[attr-defined]  # nothing is loaded at open
        for i in range(2000):
            assert store.representative(f"http://b.example/p{i}") == f"http://b.example/q{i}"
            assert store.representative(f"http://b.example/q{i}") == f"http://b.example/q{i}"
        assert len(store.storage.cached.aliases.data) == 100  # type: ignore[attr-defined]
        assert store.storage.cached.aliases.data.get("http://b.example/q1999", 0) is None  # type: ignore[attr-defined]


WHOLE = textwrap.dedent(
    """
    import sys
    from scrapy_iri.store import open_store

    store = open_store(sys.argv[1], batch_size=7, flush_interval=1e9)
    i = 0
    while True:
        store.record_redirect(f"http://a.example/p{i}", 301, f"http://a.example/q{i}")
        store.record_redirect(f"http://a.example/r{i}", 302, f"http://a.example/s{i}")
        i += 1
        if i == 50:
            print("running", flush=True)
    """
)


@pytest.mark.parametrize("delay", [0.05, 0.3, 0.8])
def test_sigkill_never_splits_an_observation(tmp_path: Path, delay: float) -> None:
    """Each observation (its alias, its evidence, its fan-in) commits in one transaction."""
    import time

    path = tmp_path / "store.db"
    child = writer(WHOLE, path)
    assert child.stdout is not None and child.stdout.readline().strip() == "running"
    time.sleep(delay)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=10)
    db = sqlite3.connect(path)
    aliases = {s for (s,) in db.execute("SELECT source FROM alias")}
    evidenced = {u for (u,) in db.execute("SELECT url FROM evidence WHERE status = 301")}
    fanin = {s for (s,) in db.execute("SELECT source FROM fanin")}
    db.close()
    assert len(aliases) >= 50
    assert aliases == evidenced, "an alias without its evidence, or evidence without its alias"
    assert aliases <= fanin


def test_a_locked_file_never_holds_the_caller_for_long(tmp_path: Path) -> None:
    """Another process holds the write lock for seconds: observations go on, writes wait in memory."""
    import time

    path = tmp_path / "store.db"
    store = open_store(uri(path), flush_interval=0.0)
    store.record_redirect("http://a.example/first", 301, "http://a.example/first/")
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    slowest = 0.0
    started = time.monotonic()
    i = 0
    while time.monotonic() - started < 3.0:
        t = time.monotonic()
        store.record_redirect(f"http://a.example/p{i}", 301, f"http://a.example/p{i}/")
        assert store.representative(f"http://a.example/p{i}") == f"http://a.example/p{i}/"
        assert store.representative("http://a.example/first") == "http://a.example/first/"  # reads go on
        slowest = max(slowest, time.monotonic() - t)
        i += 1
    assert slowest < 1.5
    assert store.pending > 0  # kept, not dropped
    holder.wait(timeout=20)
    store.close()
    with open_store(uri(path), create=False) as again:
        assert again.stats()["aliases"] == i + 1


_HOLD = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(4)
db.execute("COMMIT")
"""


def test_the_evidence_log_is_pruned_by_count_and_age(tmp_path: Path) -> None:
    now = [1_000_000.0]
    path = tmp_path / "store.db"
    store = open_store(uri(path), clock=lambda: now[0], evidence_max=20, evidence_max_age=1000.0, batch_size=1)
    for i in range(100):
        store.record_redirect(f"http://a.example/p{i}", 301, f"http://a.example/q{i}")
    evidence = list(store.evidence())
    assert len(evidence) == 20 and evidence[-1].url == "http://a.example/p99"  # the newest kept
    now[0] += 5000.0  # everything is now older than the age cap
    for i in range(64):
        store.record_redirect(f"http://c.example/p{i}", 301, f"http://c.example/q{i}")
    assert all(e.time == now[0] for e in store.evidence())
    assert store.stats()["aliases"] == 164  # aliases are not evidence: all kept
    store.close()


def test_deferred_requests_are_taken_once_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    rule = RuleKey("http://a.example", "add-slash", "/topic-#")
    a, b = open_store(uri(path)), open_store(uri(path))
    a.defer("http://a.example/topic-8", [rule])
    b.defer("http://a.example/topic-9", [rule])
    b.flush()
    assert a.take_deferred(rule) == ["http://a.example/topic-8", "http://a.example/topic-9"]
    assert b.take_deferred(rule) == []
    a.close()
    b.close()


def test_a_sink_found_by_another_process_stops_aliases_into_it_here(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    a = open_store(uri(path), sync_interval=0.0)
    b = open_store(uri(path), sync_interval=0.0)
    a.record_redirect("http://s.example/old", 301, "http://s.example/login")
    a.flush()
    assert b.representative("http://s.example/old") == "http://s.example/login"
    for i in range(5):  # many sources into one target: a sink (login, consent, error pages)
        b.record_redirect(f"http://s.example/p{i}", 302, "http://s.example/login?next=p{i}")
    b.flush()
    assert a.representative("http://s.example/old") == "http://s.example/old"
    assert a.stats()["sinks"] == 1
    a.close()
    b.close()
    with open_store(uri(path), create=False) as c:
        assert c.representative("http://s.example/old") == "http://s.example/old"


def test_counts_another_process_committed_while_this_one_counted_are_kept(tmp_path: Path) -> None:
    """B reads A's commit (a sync) while B holds uncommitted counts for the same origin: B's commit
    merges with the rows on disk instead of writing its own image over them."""
    path = tmp_path / "store.db"
    a = open_store(uri(path), sync_interval=0.0)
    b = open_store(uri(path), sync_interval=0.0, batch_size=10_000, flush_interval=3600.0)
    b.record_redirect("http://h.example/both-1", 301, "http://h.example/both-1/")  # pending in B
    a.record_redirect("http://h.example/both-2", 301, "http://h.example/both-2/")
    a.record_response("http://h.example/both-3", 200)  # a counterexample, committed by A
    a.flush()
    b.sync()  # B notices A's commit; its own counts for the origin are still pending
    b.record_redirect("http://h.example/both-4", 301, "http://h.example/both-4/")
    b.flush()
    a.close()
    b.close()
    with open_store(uri(path), create=False) as c:
        rule = next(r for r in c.rules() if r.key.kind == "add-slash" and r.key.scope != "*")
        assert (rule.support, rule.against) == (3, 1)
        assert c.representative("http://h.example/both-9") == "http://h.example/both-9"


def test_counts_not_committed_survive_another_process_s_bulk_import(tmp_path: Path) -> None:
    """A bulk import elsewhere makes this process read every rule again: what it counted and has not
    committed yet keeps its times and example, and the commit adds it to the rows on disk."""
    path = tmp_path / "store.db"
    a = open_store(uri(path), sync_interval=0.0, batch_size=10_000, flush_interval=3600.0)
    for i in (1, 2):
        a.record_redirect(f"http://h.example/both-{i}", 301, f"http://h.example/both-{i}/")
    with open_store(uri(path)) as b:
        b.bulk_aliases([Alias("http://other.example/x", "http://other.example/y", 301, 1.0)])
    a.sync()  # the bulk import: everything read again
    a.flush()
    a.close()
    with open_store(uri(path), create=False) as c:
        rule = next(r for r in c.rules() if r.key.kind == "add-slash" and r.key.scope != "*")
        assert rule.support == 2 and rule.last_support > 0 and "both-2" in rule.example

# -- one observation, one transaction; other processes follow through the change log -------------

ONE = textwrap.dedent(
    """
    import sys, time
    from scrapy_iri.store import open_store

    store = open_store(sys.argv[1], batch_size=10**9, flush_interval=1e9)
    store.record_redirect("http://a.example/topic-1", 301, "http://a.example/topic-1/")
    if sys.argv[2] == "flush":
        store.flush()
    print("done", flush=True)
    time.sleep(60)
    """
)


def _table(path: Path, sql: str) -> list[tuple]:  # type: ignore[type-arg]
    db = sqlite3.connect(path)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


@pytest.mark.parametrize("flushed", [True, False])
def test_an_observation_commits_whole_or_not_at_all(tmp_path: Path, flushed: bool) -> None:
    """http://a.example/topic-1 -301-> /topic-1/ writes an alias, an evidence row and the counts of the
    rules that cover the URL: add-slash (template /topic-#) supported; http-to-https and apex-to-www,
    under / and origin-wide, contradicted (the redirect went elsewhere). A SIGKILL after the flush keeps
    all of it; before the flush, none of it."""
    path = tmp_path / "store.db"
    open_store(uri(path)).close()  # the schema exists either way
    child = writer(ONE, path, "flush" if flushed else "keep")
    assert child.stdout is not None and child.stdout.readline().strip() == "done"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=10)
    aliases = _table(path, "SELECT source, target, status FROM alias")
    evidence = _table(path, "SELECT url, status, target FROM evidence")
    rules = dict(((k, s), (n, a)) for k, s, n, a in _table(path, "SELECT kind, scope, support, against FROM rule"))
    changes = _table(path, "SELECT kind, name FROM change")
    if not flushed:
        assert (aliases, evidence, rules, changes) == ([], [], {}, [])
        return
    assert aliases == [("http://a.example/topic-1", "http://a.example/topic-1/", 301)]
    assert evidence == [("http://a.example/topic-1", 301, "http://a.example/topic-1/")]
    assert rules == {
        ("add-slash", "/topic-#"): (1, 0),
        ("http-to-https", "/"): (0, 1),
        ("http-to-https", "*"): (0, 1),
        ("apex-to-www", "/"): (0, 1),
        ("apex-to-www", "*"): (0, 1),
    }
    assert ("a", "http://a.example/topic-1") in changes and ("r", "http://a.example") in changes


MANY = textwrap.dedent(
    """
    import sys
    from scrapy_iri.store import open_store

    store = open_store(sys.argv[1], batch_size=5, flush_interval=1e9)
    i = 0
    while True:
        i += 1
        store.record_redirect(f"http://a.example/topic-{i}", 301, f"http://a.example/topic-{i}/")
        if i == 30:
            print("running", flush=True)
    """
)


@pytest.mark.parametrize("delay", [0.02, 0.4])
def test_sigkill_never_splits_an_observation_from_its_rule_counts(tmp_path: Path, delay: float) -> None:
    """Each slash redirect adds one alias, one evidence row, one support to add-slash and one
    counterexample to http-to-https: after a SIGKILL at any moment the four counts agree."""
    import time

    path = tmp_path / "store.db"
    child = writer(MANY, path)
    assert child.stdout is not None and child.stdout.readline().strip() == "running"
    time.sleep(delay)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=10)
    (aliases,) = _table(path, "SELECT count(*) FROM alias")[0]
    (evidence,) = _table(path, "SELECT count(*) FROM evidence WHERE status = 301")[0]
    rules = dict(((k, s), (n, a)) for k, s, n, a in _table(path, "SELECT kind, scope, support, against FROM rule"))
    assert aliases >= 30
    assert evidence == aliases
    assert rules[("add-slash", "/topic-#")] == (aliases, 0)
    assert rules[("http-to-https", "/")] == (0, aliases)


def test_another_process_reads_a_rule_row_through_the_change_log(tmp_path: Path) -> None:
    """B is open before A writes; after A's commit, B's next lookup reads the change log: it
    re-reads the rules of the origin A touched and forgets only the aliases A wrote (no reload)."""
    path = tmp_path / "store.db"
    a = open_store(uri(path), sync_interval=0.0)
    unrelated = "http://b.example/page"
    a.record_redirect(unrelated, 301, "http://b.example/page2")
    a.flush()
    b = open_store(uri(path), sync_interval=0.0)
    assert b.representative(unrelated) == "http://b.example/page2"  # an alias, cached in b
    assert [r for r in b.rules() if r.key.origin == "http://a.example"] == []
    teach(a)
    assert b.representative("http://a.example/topic-9") == "http://a.example/topic-9"  # not committed yet
    a.flush()
    (last,) = _table(path, "SELECT max(id) FROM change")[0]
    assert ("r", "http://a.example") in _table(path, "SELECT kind, name FROM change")
    assert b.representative("http://a.example/topic-9") == "http://a.example/topic-9/"
    assert b.storage._change_id == last  # type: ignore[attr-defined]
    assert unrelated in b.storage.cached.aliases.data  # type: ignore[attr-defined]  # not a reload: the cache is kept
    record = next(r for r in b.rules() if r.key == RuleKey("http://a.example", "add-slash", "/topic-#"))
    assert (record.support, record.against) == (3, 0)
    a.record_response("http://a.example/topic-5", 200)  # a counterexample, committed by A
    a.flush()
    assert b.representative("http://a.example/topic-9") == "http://a.example/topic-9"
    record = next(r for r in b.rules() if r.key == RuleKey("http://a.example", "add-slash", "/topic-#"))
    assert (record.support, record.against) == (3, 1)
    assert unrelated in b.storage.cached.aliases.data  # type: ignore[attr-defined]
    a.close()
    b.close()


def test_evidence_older_than_the_max_age_is_pruned_at_the_next_commit(tmp_path: Path) -> None:
    now = [1_000_000.0]
    store = open_store(uri(tmp_path / "store.db"), clock=lambda: now[0], evidence_max_age=1000.0, batch_size=1)
    for i in range(5):
        store.record_redirect(f"http://a.example/p{i}", 301, f"http://a.example/q{i}")
    now[0] += 1001.0
    store.record_redirect("http://a.example/new", 301, "http://a.example/newer")
    assert [e.url for e in store.evidence()] == ["http://a.example/new"]
    store.close()


def test_rule_records_whose_evidence_expired_are_compacted(tmp_path: Path) -> None:
    """A record whose every count is older than the TTL is dropped from the file (it meant nothing any
    more); a record with a live count stays, and what lookups answer does not change."""
    from fixtures.stores import Clock

    clock = Clock(1_000_000.0)
    path = tmp_path / "store.db"
    store = open_store(uri(path), policy=LearningPolicy(rule_ttl=1000.0), clock=clock)
    for i in range(3):
        store.record_redirect(f"http://old.example/d{i}", 301, f"http://old.example/d{i}/")
    store.record_response("http://old.example/x", 200)  # counterexamples for the https/www candidates
    store.flush()
    assert {r.key.origin for r in store.rules()} == {"http://old.example"}
    clock.advance(5000.0)  # every count of old.example is past the TTL
    for i in range(3):
        store.record_redirect(f"http://new.example/d{i}", 301, f"http://new.example/d{i}/")
    store.flush()
    store.close()
    with open_store(uri(path), policy=LearningPolicy(rule_ttl=1000.0), clock=clock) as again:
        again.record_redirect("http://new.example/d3", 301, "http://new.example/d3/")
        again.flush()  # the first commit of a process compacts
        origins = {r.key.origin for r in again.rules()}
        assert origins == {"http://new.example"}
        assert again.representative("http://new.example/d7") == "http://new.example/d7/"
        assert again.representative("http://old.example/d7") == "http://old.example/d7"


def test_listings_lay_the_writes_a_locked_file_keeps_over_what_it_holds(tmp_path: Path) -> None:
    """A commit that finds the file locked keeps its writes; the listings, counts and forgetting
    see them over the file (another process's write lock does not stop reads in WAL mode)."""
    path = tmp_path / "store.db"
    store = open_store(uri(path))
    store.record_redirect("http://a.example/kept", 301, "http://a.example/kept/")
    store.record_redirect("http://a.example/gone", 301, "http://a.example/gone/")
    store.flush()
    store.storage._db.execute("PRAGMA busy_timeout = 0")  # type: ignore[attr-defined]
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        store.record_redirect("http://a.example/new", 301, "http://a.example/new/")
        store.record_response("http://a.example/gone", 200)  # ends a stored alias: not committed
        store.flush()
        assert store.pending
        assert sorted(a.source for a in store.aliases()) == ["http://a.example/kept", "http://a.example/new"]
        logged = [(e.url, e.status) for e in store.evidence()]
        assert logged == [
            ("http://a.example/kept", 301),
            ("http://a.example/gone", 301),
            ("http://a.example/new", 301),  # pending, after those stored
            ("http://a.example/gone", 200),  # the alias it dropped
        ]
        assert [e.status for e in store.evidence("http://a.example/new/")] == [301]
        assert store.storage.counts()["evidence"] == 4
        with pytest.raises(StoreError, match=r"store\.db: database is locked"):  # forgetting deletes: it waits for nobody
            store.forget("http://a.example/new")
    finally:
        other.execute("COMMIT")
        other.close()
    assert store.representative("http://a.example/new") == "http://a.example/new"  # dropped before the deletion failed
    assert store.forget("http://a.example/new") == 1  # its evidence, now
    assert [e.url for e in store.evidence()].count("http://a.example/new") == 0
    store.close()
    with open_store(uri(path), create=False) as again:
        assert sorted(a.source for a in again.aliases()) == ["http://a.example/kept"]
        assert [(e.url, e.status) for e in again.evidence()] == [
            ("http://a.example/kept", 301),
            ("http://a.example/gone", 301),
            ("http://a.example/gone", 200),
        ]


def test_a_case_with_writes_pending_follows_what_another_process_committed(tmp_path: Path) -> None:
    """The case of a key with a case-only alias written here and not committed is computed from the
    stored rows read once, the pending write over them: another process's commit of the key, and this
    process's own commit, make it read them again."""
    from scrapy_iri.store._rules import case_key

    uri = f"sqlite:///{tmp_path}/cases.db"
    a = open_store(uri, clock=lambda: 1_700_000_000.0, sync_interval=0.0, flush_interval=3600.0)
    b_now = [1_700_000_010.0]
    b = open_store(uri, clock=lambda: b_now[0], sync_interval=0.0)
    key = case_key("http://a.example/docs/page")
    a.record_redirect("http://a.example/DOCS/PAGE", 301, "http://a.example/Docs/Page")
    assert a.storage.pending and a.storage.case_target(key) == "http://a.example/Docs/Page"
    assert a.storage.case_target(key) == "http://a.example/Docs/Page"
    b.record_redirect("http://a.example/docs/PAGE", 301, "http://a.example/docs/page")
    b.flush()
    a.storage.sync()
    assert a.storage.case_target(key) == "http://a.example/docs/page"  # the newer case-only alias, B's
    a.flush()
    b_now[0] += 10.0
    b.record_redirect("http://a.example/Docs/PAGE", 301, "http://a.example/DOCS/page")  # newer still
    b.flush()
    a.record_redirect("http://a.example/DOCS/PAGE", 301, "http://a.example/Docs/Page")  # pending again
    a.storage.sync()
    assert a.storage.case_target(key) == "http://a.example/DOCS/page"
    a.close()
    b.close()

    c_now = [1_700_000_100.0]
    c = open_store(f"sqlite:///{tmp_path}/own.db", clock=lambda: c_now[0], flush_interval=3600.0)
    c.record_redirect("http://a.example/DOCS/PAGE", 301, "http://a.example/Docs/Page")
    assert c.storage.case_target(key) == "http://a.example/Docs/Page"
    c.flush()  # its own commit: the rows it read of the key are not what is stored any more
    c_now[0] -= 50.0  # an older case-only alias, written after (an archive's capture)
    c.record_redirect("http://a.example/docs/PAGE", 301, "http://a.example/docs/page")
    assert c.storage.case_target(key) == "http://a.example/Docs/Page"  # the newer one, committed
    c.close()


def test_a_store_this_process_may_not_write_is_read_and_learns_in_memory_only(tmp_path):
    """A read-only mount: the stored aliases answer, what the process learns answers for it, nothing is
    written (no error), and closing says how much was not stored."""
    import shutil
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="scrapy-iri-ro-"))  # outside tmp_path: its parents may be closed to others
    try:
        path = directory / "s.db"
        store = open_store(f"sqlite:///{path}")
        store.record_redirect("http://a.test/old", 301, "http://a.test/new")
        store.close()
        before = path.read_bytes()
        directory.chmod(0o555)
        path.chmod(0o444)
        script = textwrap.dedent(f"""
            import logging, sys
            logging.basicConfig(stream=sys.stdout, level=logging.WARNING, format="%(levelname)s %(message)s")
            from scrapy_iri.store import open_store
            s = open_store("sqlite:///{path}", create=False)
            print(s.representative("http://a.test/old"))
            for i in range(3000):
                s.record_redirect(f"http://b.test/{{i}}", 301, f"https://b.test/{{i}}")
            s.flush()
            print(s.representative("http://b.test/7"))
            s.close()
        """)
        command = [sys.executable, "-c", script]
        command = as_unprivileged(command)
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        lines = result.stdout.splitlines()
        assert "http://a.test/new" in lines and "https://b.test/7" in lines, result.stdout
        assert any(line.startswith("WARNING") and "read-only" in line and "nothing learned is stored" in line for line in lines)
        assert any(line.startswith("WARNING") and "are not stored" in line for line in lines)
        assert path.read_bytes() == before and not list(directory.glob("s.db-*"))
    finally:
        directory.chmod(0o755)
        shutil.rmtree(directory)
