"""A Redis that went back in time, then written on by others past everything it keeps of the past.

After the restart from an older snapshot, another machine's processes (their
own ledger) write more batches than Redis keeps marks of
(:data:`scrapy_iri.store._redis.scripts.MARKS`): the version passes the old
high-water mark and the writer's newest mark is older than every mark kept,
as it would be if it had only aged. A process of the writer's machine that
opens the store then, or syncs it, must still tell the rollback.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.redis_helpers import RedisServer
from store.test_redis_rollback import NS, SERVERS, assert_nothing_ended_comes_back, restart_older, write

from scrapy_iri.store._redis import RedisStore
from scrapy_iri.store._redis.scripts import MARKS

SCRIPT = Path(sys.executable).parent / "scrapy-iri"

#: another machine's crawl: many small batches, each writing one alias, through the store's batch script
OTHERS = """
import sys, time
from scrapy_iri.store._evidence import Alias
from scrapy_iri.store._redis import RedisStore
from scrapy_iri.store._redis.codec import EMPTY_BATCH, alias_value

url, ledger, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = RedisStore(url, "rb", ledger_path=ledger, sync_interval=0.0)
storage = store.storage
storage._flushing = True  # one fsync of its ledger at the end, as a flush of many batches does
now = time.time()
for i in range(count):
    alias = Alias(f"http://o.example/x{i}", f"http://o.example/y{i}", 301, now)
    storage._apply({**EMPTY_BATCH, "a": [[alias.source, alias_value(alias), now, 0, ""]]})
storage._flushing = False
storage.ledger.sync()
store.close()
"""


def others_write(server: RedisServer, ledger: Path, count: int) -> None:
    subprocess.run([sys.executable, "-c", OTHERS, server.url, str(ledger), str(count)], check=True, timeout=300)


def overtaken(server: RedisServer, ledger: Path) -> None:
    """The writer's newest mark is gone and older than every mark Redis keeps; the version passed it."""
    from scrapy_iri.store._redis.ledger import Ledger

    _, version, batch_id = Ledger(ledger).newest_mark()  # type: ignore[misc]
    client = server.client()
    assert client.zscore(f"{NS}:store:marks", batch_id) is None
    assert client.zrange(f"{NS}:store:marks", 0, 0, withscores=True)[0][1] > version
    assert int(client.get(f"{NS}:store:version")) > version


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_a_process_opened_after_others_overtook_the_old_marks_repairs(
    kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server, snapshot, restore = SERVERS[kind](tmp_path)
    ledger = tmp_path / "job" / "store.ledger"
    try:
        write(server, ledger, "learn")
        snapshot()  # type: ignore[operator]
        write(server, ledger, "end")
        restart_older(server, restore)
        others_write(server, tmp_path / "other.ledger", MARKS + 50)
        overtaken(server, ledger)
        with caplog.at_level(logging.ERROR, logger="scrapy_iri.store._redis"):
            later = RedisStore(server.url, NS, ledger_path=ledger, sync_interval=0.0)
        assert "went back to an older state" in caplog.text
        assert_nothing_ended_comes_back(later)
        fresh = RedisStore(server.url, NS, ledger_path=tmp_path / "fresh.ledger", sync_interval=0.0)
        assert_nothing_ended_comes_back(fresh)
        later.close()
        fresh.close()
    finally:
        server.stop()


def test_a_reader_alive_when_others_overtook_the_old_marks_repairs(tmp_path: Path) -> None:
    server, snapshot, restore = SERVERS["rdb"](tmp_path)
    ledger = tmp_path / "job" / "store.ledger"
    try:
        write(server, ledger, "learn")
        reader = RedisStore(server.url, NS, ledger_path=ledger, sync_interval=0.0)
        snapshot()  # type: ignore[operator]
        write(server, ledger, "end")
        restart_older(server, restore)
        others_write(server, tmp_path / "other.ledger", MARKS + 50)
        overtaken(server, ledger)
        for _ in range(20):
            if reader.maintain(force=True):
                break
            time.sleep(0.1)
        assert reader.counters.get("rollbacks") == 1
        assert_nothing_ended_comes_back(reader)
        reader.close()
    finally:
        server.stop()


def test_a_mark_that_only_aged_out_is_no_rollback(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The trap: no restart, others wrote past the kept marks; reopening must not cry rollback."""
    server = RedisServer(tmp_path).start()
    ledger = tmp_path / "job" / "store.ledger"
    try:
        write(server, ledger, "learn")
        write(server, ledger, "end")
        others_write(server, tmp_path / "other.ledger", MARKS + 50)
        overtaken(server, ledger)
        with caplog.at_level(logging.ERROR, logger="scrapy_iri.store._redis"):
            later = RedisStore(server.url, NS, ledger_path=ledger, sync_interval=0.0)
            assert later.maintain(force=True) is not None
        assert "went back" not in caplog.text
        assert later.counters.get("rollbacks", 0) == 0
        assert_nothing_ended_comes_back(later)
        later.close()
    finally:
        server.stop()


def test_the_ledger_id_is_its_first_line_kept_by_compaction_and_given_to_an_older_file(tmp_path: Path) -> None:
    from scrapy_iri.store._redis.ledger import Ledger

    older = tmp_path / "older.ledger"  # a ledger written before ledgers had ids
    older.write_text('{"a": ["http://e.example/old", 5.0]}\n{"m": ["E", 7, "b7"]}\n')
    ledger = Ledger(older)
    before = ledger.write_back()
    given = ledger.id
    assert given and older.read_text().startswith('{"i": ')
    assert Ledger(older).id == given  # another process of the machine reads the same id
    assert ledger.write_back() == before and ledger.newest_mark() == ("E", 7, "b7")
    ledger.compact(limit=0)
    assert Ledger(older).id == given and ledger.write_back() == before
    fresh = Ledger(tmp_path / "dir" / "fresh.ledger")
    assert fresh.id != given and Ledger(tmp_path / "dir" / "fresh.ledger").id == fresh.id


CLI_WRITER = """
import sys
from scrapy_iri.store import open_store

store = open_store(sys.argv[1])
if sys.argv[2] == "learn":
    store.record_redirect("http://e.example/old", 301, "http://e.example/new")
else:
    store.record_response("http://e.example/old", 200)
store.close()
"""


def test_the_store_commands_on_a_rolled_back_store(tmp_path: Path) -> None:
    """The writer and the commands share the machine's default ledger (the state directory); the first
    command after the restart says Redis went back, without a traceback, and answers from the repaired store."""
    import os

    env = dict(os.environ, SCRAPY_IRI_STATE_DIR=str(tmp_path / "state"))
    server = RedisServer(tmp_path, persistent=False).start()
    try:
        uri = f"{server.url}?namespace={NS}"
        subprocess.run([sys.executable, "-c", CLI_WRITER, uri, "learn"], env=env, check=True, timeout=60)
        server.client().save()
        subprocess.run([sys.executable, "-c", CLI_WRITER, uri, "end"], env=env, check=True, timeout=60)
        server.kill()
        server.start()
        assert server.client().hget(f"{NS}:store:aliases", "http://e.example/old") is not None  # it went back

        def command(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [str(SCRIPT), "store", "--store", uri, *args],
                env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip

        stats = command("stats")
        assert stats.returncode == 0, stats.stderr
        assert "went back to an older state" in stats.stderr and "Traceback" not in stats.stderr
        assert dict(line.split("\t") for line in stats.stdout.splitlines())["aliases"] == "0"
        for args in (("explain", "http://e.example/old"), ("export",), ("forget", "http://x.example/")):
            done = command(*args)
            assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
            assert "went back" not in done.stderr  # repaired once, by the first
        assert "representative: http://e.example/old" in command("explain", "http://e.example/old").stdout
    finally:
        server.stop()


def test_the_store_commands_refuse_rdb_only_persistence_naming_the_setting(tmp_path: Path) -> None:
    import os

    env = dict(os.environ, SCRAPY_IRI_STATE_DIR=str(tmp_path / "state"))
    server = RedisServer(tmp_path, persistent=False, args=("--save", "900 1")).start()
    try:
        uri = f"{server.url}?namespace={NS}"
        subprocess.run([sys.executable, "-c", CLI_WRITER, uri + "&accept_rollback_risk=1", "learn"], env=env, check=True, timeout=60)
        refused = subprocess.run([str(SCRIPT), "store", "--store", uri, "stats"],
                                 env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert refused.returncode != 0 and "Traceback" not in refused.stderr
        assert "RDB snapshots only" in refused.stderr and "?accept_rollback_risk=1" in refused.stderr
        accepted = subprocess.run([str(SCRIPT), "store", "--store", uri + "&accept_rollback_risk=1", "stats"],
                                  env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert accepted.returncode == 0 and "Traceback" not in accepted.stderr, accepted.stderr
    finally:
        server.stop()


def test_what_a_jobdir_crawl_ended_is_known_to_the_machines_other_processes(tmp_path: Path) -> None:
    """A crawl's ledger is in its JOBDIR and mirrored in the machine's: a process of another job, or the
    store commands (the machine's ledger), tells the rollback and keeps the alias ended."""
    server, snapshot, restore = SERVERS["rdb"](tmp_path)
    try:
        job = RedisStore(server.url, NS, ledger_path=tmp_path / "job1" / "iri-redis-store.ledger",
                         machine_ledger=True, sync_interval=0.0)  # fmt: skip
        job.record_redirect("http://e.example/old", 301, "http://e.example/new")
        job.flush()
        snapshot()  # type: ignore[operator]
        job.record_response("http://e.example/old", 200)
        job.close()
        restart_older(server, restore)
        other_job = RedisStore(server.url, NS, ledger_path=tmp_path / "job2" / "iri-redis-store.ledger",
                               machine_ledger=True, sync_interval=0.0)  # fmt: skip
        assert other_job.counters.get("rollbacks") == 1
        assert other_job.representative("http://e.example/old") == "http://e.example/old"
        other_job.close()
        command = RedisStore(server.url, NS, sync_interval=0.0)  # the machine's ledger: no rollback left to see
        assert command.representative("http://e.example/old") == "http://e.example/old"
        command.close()
    finally:
        server.stop()
