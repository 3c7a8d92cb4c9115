"""``scrapy-iri store`` as users fail: files that are not stores, a store a crawl is writing, Redis
servers holding other applications' keys, IDN and huge URLs, a pipe closed early, Ctrl-C.

Every fault is one line on stderr and exit code 2 (130 for Ctrl-C), never a
traceback, and the file or keys given are left as they were.
"""

from __future__ import annotations

import hashlib
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from scrapy_iri._cli import main
from scrapy_iri.store import _cli as store_cli
from scrapy_iri.store import open_store

ACTIONS = [["stats"], ["export", "--evidence"], ["explain", "http://a.example/t-1"], ["forget", "http://a.example/t-1"]]
CLI = [sys.executable, "-c", "import sys; from scrapy_iri._cli import main; sys.exit(main())"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    with open_store(f"sqlite:///{path}") as store:
        for i in range(1, 4):
            store.record_redirect(f"http://a.example/t-{i}", 301, f"http://a.example/t-{i}/")
        store.record_redirect("http://例え.jp/ä", 301, "http://例え.jp/b")
    return path


def other_database(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
        db.execute("INSERT INTO notes VALUES ('mine')")
    return path


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a[0])
@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("empty", "an empty file, not a store"),
        ("other", "not a scrapy-iri store (tables but no schema version)"),
        ("text", "file is not a database"),
        ("directory", "unable to open database file"),
        ("missing", "no store at"),
    ],
)
def test_a_file_that_is_not_a_store_is_one_line_and_left_as_it_was(
    kind: str, expected: str, action: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "given.db"
    if kind == "empty":
        path.touch()
    elif kind == "other":
        other_database(path)
    elif kind == "text":
        path.write_text("a note, not a database\n" * 50)
    elif kind == "directory":
        path.mkdir()
    before = digest(path) if path.is_file() else None
    code, out, err = run(capsys, "store", "--store", f"sqlite:///{path}", *action)
    assert code == 2 and out == ""
    line = one_line(err)
    assert line.startswith("scrapy-iri store: ") and expected in line
    if before is not None:
        assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if kind == "missing" else ["given.db"])  # no WAL left


def test_reading_commands_leave_the_store_file_as_it_was(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = digest(store_path)
    for action in (["stats"], ["export", "--evidence"], ["explain", "http://a.example/t-1", "http://a.example/t-1/"]):
        code, _, _ = run(capsys, "store", "--store", f"sqlite:///{store_path}", *action)
        assert code == 0
        assert digest(store_path) == before


def test_learn_into_another_applications_database_leaves_it_as_it_was(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = other_database(tmp_path / "notes.db")
    before = digest(path)
    code, _, err = run(capsys, "store", "--store", f"sqlite:///{path}", "learn", str(path))
    assert code == 2 and "scrapy-iri store: " in one_line(err)
    assert digest(path) == before


class Writer:
    """Another process holding the store's write lock mid-transaction (a crawl's commit)."""

    def __init__(self, path: Path) -> None:
        code = (
            "import sqlite3, sys, time\n"
            f"db = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
            "db.execute('BEGIN IMMEDIATE')\n"
            "db.execute(\"INSERT OR REPLACE INTO meta VALUES ('writer', 'busy')\")\n"
            "print('locked', flush=True)\n"
            "sys.stdin.read()\n"
        )
        self.process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None and self.process.stdout.readline().strip() == "locked"

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()  # ends without committing
        self.process.wait(timeout=30)


def test_a_store_another_process_is_writing(store_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading answers; forgetting refuses at once with one line and changes nothing."""
    monkeypatch.setattr(store_cli, "WRITER_WAIT", 0.2)
    uri = f"sqlite:///{store_path}"
    writer = Writer(store_path)
    try:
        code, out, _ = run(capsys, "store", "--store", uri, "stats")
        assert code == 0 and "aliases\t4" in out
        code, out, _ = run(capsys, "store", "--store", uri, "explain", "http://a.example/t-1")
        assert code == 0 and "exact alias" in out
        for forget in (["http://a.example/t-1"], ["--host", "a.example"]):
            started = time.monotonic()
            code, out, err = run(capsys, "store", "--store", uri, "forget", *forget)
            assert code == 2 and out == ""
            assert "is locked by another process writing it" in one_line(err) and "nothing was changed" in err
            assert time.monotonic() - started < 10
    finally:
        writer.stop()
    with open_store(uri, create=False) as store:
        assert store.stats()["aliases"] == 4
    code, out, _ = run(capsys, "store", "--store", uri, "forget", "--host", "a.example")
    assert code == 0 and out.startswith("forgot ")  # done once the writer is gone
    with open_store(uri, create=False) as store:
        assert store.stats()["aliases"] == 1  # the IDN host's


def test_a_lock_taken_after_the_check_is_an_error_not_a_success(store_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer starts between the check and the commit: what could not be written is named, exit 2."""
    uri = f"sqlite:///{store_path}"
    monkeypatch.setattr(store_cli, "COMMIT_WAIT", 1.0)
    writers: list[Writer] = []
    checked = store_cli._check_writable

    def then_locked(store) -> None:
        checked(store)
        writers.append(Writer(store_path))

    monkeypatch.setattr(store_cli, "_check_writable", then_locked)
    try:
        code, out, err = run(capsys, "store", "--store", uri, "forget", "--host", "a.example")
    finally:
        for writer in writers:
            writer.stop()
    assert code == 2 and "changes not written" in one_line(err)
    with open_store(uri, create=False) as store:
        assert store.stats()["aliases"] == 4


def test_a_lock_held_briefly_at_the_end_is_waited_for(store_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A crawl's commit holding the file when the command commits: the command waits, then writes."""
    uri = f"sqlite:///{store_path}"
    writers: list[Writer] = []
    checked = store_cli._check_writable

    def then_locked_for_a_while(store) -> None:
        checked(store)
        writers.append(Writer(store_path))
        threading.Timer(1.5, writers[0].stop).start()

    monkeypatch.setattr(store_cli, "_check_writable", then_locked_for_a_while)
    code, out, err = run(capsys, "store", "--store", uri, "forget", "--host", "a.example")
    assert code == 0 and out.startswith("forgot ")
    with open_store(uri, create=False) as store:
        assert store.stats()["aliases"] == 1


def test_unicode_and_idn_urls_in_explain_and_forget(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    uri = f"sqlite:///{store_path}"
    code, out, _ = run(capsys, "store", "--store", uri, "explain", "http://例え.JP/%C3%A4", "http://xn--r8jz45g.jp/b")
    assert code == 0 and out.rstrip().endswith("merged: same representative")
    code, out, _ = run(capsys, "store", "--store", uri, "forget", "http://xn--r8jz45g.jp/%c3%a4")
    assert code == 0 and out.startswith("forgot ") and out != "forgot 0 entries\n"
    code, out, _ = run(capsys, "store", "--store", uri, "explain", "http://例え.jp/ä", "http://例え.jp/b")
    assert code == 1 and "not merged" in out


def test_a_megabyte_url_is_answered(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    uri = f"sqlite:///{store_path}"
    huge = "http://a.example/" + "é" * 500_000
    for action in (["explain", huge], ["forget", huge], ["forget", "--host", "a" * 1_000_000]):
        started = time.process_time()
        code, out, err = run(capsys, "store", "--store", uri, *action)
        assert code == 0 and "Traceback" not in err
        assert time.process_time() - started < 10
    code, _, err = run(capsys, "store", "--store", uri, "explain", "http://[" + "a" * 1_000_000)
    assert code == 2 and len(one_line(err)) < 2_000  # the URL is not echoed whole


def test_output_to_a_pipe_closed_early(store_path: Path) -> None:
    command = [*CLI, "store", "--store", f"sqlite:///{store_path}", "export", "--evidence"]
    reader = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.readline()
    reader.stdout.close()  # as `| head -1` does
    err = reader.stderr.read().decode()
    assert reader.wait(timeout=60) in (0, 2)
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 1


def test_ctrl_c_is_exit_130_and_the_store_intact(tmp_path: Path) -> None:
    from scrapy_iri.store._evidence import Alias
    from scrapy_iri.store._sqlite import SQLiteStore

    path = tmp_path / "big.db"
    store = SQLiteStore(path)
    store.bulk_aliases(Alias(f"http://h{i % 100}.example/p/{i}", f"http://h{i % 100}.example/q/{i}", 301, 1.7e9) for i in range(100_000))
    store.close()
    command = [*CLI, "store", "--store", f"sqlite:///{path}", "export"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    process.stdout.readline()  # exporting
    process.send_signal(signal.SIGINT)
    process.stdout.read()
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and one_line(err) == "scrapy-iri: interrupted"
    with open_store(f"sqlite:///{path}", create=False) as reopened:
        assert reopened.stats()["aliases"] == 100_000


def test_a_redis_holding_other_applications_keys(redis_url: str, redis_server, capsys: pytest.CaptureFixture[str]) -> None:
    client = redis_server.client()
    client.set("app:session", "1")
    client.hset("app:store:epoch", "not", "ours")  # a key of the store's name, of another type
    for action in ACTIONS:
        code, out, err = run(capsys, "store", "--store", redis_url, *action)
        assert code == 2 and out == "" and "no scrapy-iri store at" in one_line(err)
        code, out, err = run(capsys, "store", "--store", f"{redis_url}?namespace=app", *action)
        assert code == 2 and out == "" and "no store in namespace 'app'" in one_line(err)
    assert sorted(client.keys("*")) == [b"app:session", b"app:store:epoch"]
    assert client.hgetall("app:store:epoch") == {b"not": b"ours"}


def test_unicode_and_idn_urls_on_redis(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    uri = f"{redis_url}?namespace=crawl"
    with open_store(uri) as store:
        store.record_redirect("http://例え.jp/ä", 301, "http://例え.jp/b")
    code, out, _ = run(capsys, "store", "--store", uri, "explain", "http://例え.JP/%C3%A4", "http://xn--r8jz45g.jp/b")
    assert code == 0 and "merged: same representative" in out
    code, out, _ = run(capsys, "store", "--store", uri, "forget", "http://xn--r8jz45g.jp/%C3%A4")
    assert code == 0 and out != "forgot 0 entries\n"
    code, out, _ = run(capsys, "store", "--store", uri, "explain", "http://例え.jp/ä", "http://例え.jp/b")
    assert code == 1
