"""A SQLite store file that went back in time (an older copy restored over it) is refused, never served.

The writer runs as processes of their own that exit: it learns an alias and
a rule, the file is copied (a backup), then the alias ends (its source
answers 200) and the rule is refuted. The backup is copied back over the
store. Whoever opens the store next must not merge what was ended or
suspended: the file is refused with an error naming the risk.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scrapy_iri.errors import StoreError
from scrapy_iri.store import open_store
from scrapy_iri.store._sqlite_mark import mark_path

SCRIPT = Path(sys.executable).parent / "scrapy-iri"

WRITER = """
import sys
from scrapy_iri.store import open_store
from scrapy_iri.store._sqlite_mark import mark_path

store = open_store("sqlite:///" + sys.argv[1])
if sys.argv[2] == "learn":
    for i in range(3):
        store.record_redirect(f"http://s.example/d{i}", 301, f"http://s.example/d{i}/")
    store.record_redirect("http://e.example/old", 301, "http://e.example/new")
else:
    store.record_response("http://e.example/old", 200)  # the alias ends
    store.record_response("http://s.example/d9", 200)  # a counterexample: the rule is suspended
store.close()
"""


def write(path: Path, phase: str) -> None:
    subprocess.run([sys.executable, "-c", WRITER, str(path), phase], check=True, timeout=60)


def restore(backup: Path, path: Path) -> None:
    """An operator restores the backup: the crawl's directory as it was (the store, nothing else)."""
    shutil.rmtree(path.parent)
    path.parent.mkdir()
    shutil.copyfile(backup, path)


@pytest.fixture
def rolled_back(tmp_path: Path) -> Path:
    path = tmp_path / "crawl" / "store.sqlite"
    write(path, "learn")
    shutil.copyfile(path, tmp_path / "backup.sqlite")
    write(path, "end")
    restore(tmp_path / "backup.sqlite", path)
    return path


def test_an_older_copy_restored_is_refused_naming_the_risk(rolled_back: Path) -> None:
    with pytest.raises(StoreError, match=r"went back to an older state .* merge pages that differ") as refused:
        open_store(f"sqlite:///{rolled_back}")
    assert str(mark_path(rolled_back)) in str(refused.value)  # how to accept it is named


def test_the_store_commands_refuse_it_without_a_traceback(rolled_back: Path) -> None:
    for args in (("stats",), ("explain", "http://e.example/old"), ("export",)):
        done = subprocess.run([str(SCRIPT), "store", "--store", f"sqlite:///{rolled_back}", *args],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode != 0 and "Traceback" not in done.stderr
        assert "went back to an older state" in done.stderr
        assert "http://e.example/new" not in done.stdout


def test_removing_the_mark_accepts_the_older_file(rolled_back: Path) -> None:
    os.unlink(mark_path(rolled_back))
    store = open_store(f"sqlite:///{rolled_back}")
    assert store.representative("http://e.example/old") == "http://e.example/new"  # the backup's state, as asked
    store.close()


def test_no_refusal_of_a_store_that_only_moved_on(tmp_path: Path) -> None:
    """Traps: processes one after another, two at once, and a new store made at the same path."""
    path = tmp_path / "store.sqlite"
    write(path, "learn")
    write(path, "end")
    first = open_store(f"sqlite:///{path}")
    second = open_store(f"sqlite:///{path}")
    first.record_redirect("http://a.example/x", 301, "http://a.example/y")
    first.flush()
    second.record_redirect("http://b.example/x", 301, "http://b.example/y")
    second.flush()
    first.close()
    second.close()
    again = open_store(f"sqlite:///{path}")
    assert again.representative("http://e.example/old") == "http://e.example/old"
    assert again.representative("http://s.example/d5") == "http://s.example/d5"
    again.close()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{path}{suffix}"):
            os.unlink(f"{path}{suffix}")
    fresh = open_store(f"sqlite:///{path}")  # another store at that path: its mark is not this one's
    assert fresh.representative("http://e.example/old") == "http://e.example/old"
    fresh.close()
