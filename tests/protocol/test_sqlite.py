"""The SQLite backend: persistence, batched writes, WAL, schema version, and surviving SIGKILL."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scrapy_iri.store import RuleKey, StoreError, open_store
from scrapy_iri.store.sqlite import SCHEMA_VERSION


def uri(path: Path) -> str:
    return f"sqlite:///{path}"


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
    store._db.set_trace_callback(lambda sql: sql == "BEGIN" and print("begin", flush=True))
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
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER.format(batch=batch), uri(path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")},
    )
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


def test_a_version_1_store_is_migrated(tmp_path: Path) -> None:
    """Schema 1 had no declared_case table: opening adds it and keeps everything else."""
    path = tmp_path / "store.db"
    with open_store(uri(path)) as store:
        teach(store)
    db = sqlite3.connect(path)
    db.executescript("DROP TABLE declared_case; PRAGMA user_version = 1;")
    db.close()
    with open_store(uri(path), create=False) as store:
        assert store.representative("http://a.example/topic-9") == "http://a.example/topic-9/"
        for i in range(1, 4):
            store.record_redirect(f"http://iis.example/docs/page-{i}", 301, f"http://iis.example/Docs/Page-{i}")
        store.record_response("http://iis.example/Docs/Page-7", 200)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
    db.close()
    assert _rows(path, "declared_case") == 1
