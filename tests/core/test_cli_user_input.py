"""The command line against what users feed it: bytes that are not UTF-8, Ctrl-C, damaged or mistyped
stores, compressed edge files. Every input gets an answer, one line on stderr, never a traceback."""

from __future__ import annotations

import bz2
import lzma
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest
from fixtures.stores import as_unprivileged
from test_canon_cli import SCRIPT, run

from scrapy_iri._cli import main


def run_bytes(*args: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    assert SCRIPT is not None
    return subprocess.run([SCRIPT, *args], input=stdin, capture_output=True, timeout=60)


@pytest.mark.parametrize("command", ["canon", "display"])
def test_a_byte_that_is_not_utf8_is_named_as_a_byte(command):
    result = run_bytes(command, "-", stdin=b"http://a.test/\xff\nhttp://b.test/\nhttp://\xe9.test/\n")
    err = result.stderr.decode()
    assert result.returncode == 1 and result.stdout.decode().splitlines() == ["http://b.test/"]
    assert "line 1: path: byte 0xFF at position 14 is not UTF-8" in err
    assert "line 3: host: byte 0xE9 at position 7 is not UTF-8" in err
    assert "U+DC" not in err and "Traceback" not in err


def test_compare_names_the_argument_that_is_not_an_iri(capsys):
    assert main(["compare", "http://a.test/", "http://a.test:99999/"]) == 2
    assert capsys.readouterr().err.startswith("scrapy-iri: B: port:")
    assert main(["compare", "http://a b/", "http://a.test/"]) == 2
    assert capsys.readouterr().err.startswith("scrapy-iri: A: host:")


def test_ctrl_c_mid_run_exits_130_without_traceback_or_output(tmp_path):
    edges = tmp_path / "big.csv"
    with open(edges, "w") as f:
        f.write("source,target\n")
        f.writelines(f"http://h{i % 997}.test/p{i},http://h{i % 991}.test/q{i}\n" for i in range(400_000))
    out = tmp_path / "out.csv"
    assert SCRIPT is not None
    bad = tmp_path / "bad.csv"
    bad.write_text("kept\n")  # a file from an earlier run: an interrupted run leaves it as it was
    # SIGINT as a terminal's foreground job gets it, also when the tests run as a background job (SIGINT ignored)
    process = subprocess.Popen([SCRIPT, "graph", str(edges), str(out), "--progress", "--bad-rows", str(bad)],
                               stderr=subprocess.PIPE, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert process.stderr is not None
    first = process.stderr.readline()  # the first progress line: the run is under way
    process.send_signal(signal.SIGINT)
    err = (first + process.stderr.read()).decode()
    assert process.wait(timeout=60) == 130, err
    assert "scrapy-iri: interrupted" in err and "Traceback" not in err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "big.csv"]  # no temporary
    assert bad.read_text() == "kept\n"


def _damaged_store(path: Path) -> str:
    uri = f"sqlite:///{path}"
    assert main(["store", "--store", uri, "learn", str(path.parent / "none.cdx")]) == 0
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE alias")
    return uri


def test_a_damaged_store_is_one_line_not_a_traceback(tmp_path, capsys):
    (tmp_path / "none.cdx").write_text(" CDX N b a m s k r M S V g\n")
    uri = _damaged_store(tmp_path / "s.db")
    capsys.readouterr()
    for action in (["stats"], ["export"]):
        assert main(["store", "--store", uri, *action]) == 2
        err = capsys.readouterr().err
        assert "s.db: a damaged store (missing table: alias)" in err
        assert "Traceback" not in err and len(err.splitlines()) == 1
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    (tmp_path / "g.csv").write_text("source,target\nhttp://a.test/,http://b.test/\n")
    assert main(["graph", str(tmp_path / "g.csv"), str(tmp_path / "o.csv"), "--store", f"sqlite:///{tmp_path / 'junk.db'}"]) == 2
    err = capsys.readouterr().err
    assert "--store" in err and "not a database" in err and not (tmp_path / "o.csv").exists()


def test_learning_into_a_missing_directory_creates_nothing(tmp_path, capsys):
    (tmp_path / "none.cdx").write_text(" CDX N b a m s k r M S V g\n")
    missing = tmp_path / "typo" / "dir" / "x.db"
    assert main(["store", "--store", f"sqlite:///{missing}", "learn", str(tmp_path / "none.cdx")]) == 2
    err = capsys.readouterr().err
    assert f"no directory {missing.parent}" in err and not (tmp_path / "typo").exists()
    new = tmp_path / "new.db"
    assert main(["store", "--store", f"sqlite:///{new}", "learn", str(tmp_path / "none.cdx")]) == 0
    assert f"a new store at {new}" in capsys.readouterr().err and new.exists()


def test_store_learn_refuses_a_negative_report_count(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["store", "--store", "memory:", "learn", "--max-reported", "-1", str(tmp_path)])
    assert exit_.value.code == 2 and "at least 0" in capsys.readouterr().err


def test_a_mistyped_redis_namespace_is_an_error_not_an_empty_store(redis_url, tmp_path, capsys):
    (tmp_path / "i.cdx").write_text(" CDX N b a m s k r M S V g\n"
                                    "test)/a 20240301120000 http://a.test/a text/html 301 X http://a.test/b - - 0 w.warc.gz\n")
    assert main(["store", "--store", f"{redis_url}?namespace=crawl1", "learn", str(tmp_path / "i.cdx")]) == 0
    capsys.readouterr()
    (tmp_path / "g.csv").write_text("source,target\nhttp://a.test/,http://b.test/\n")
    for args in (["store", "--store", f"{redis_url}?namespace=crawl2", "stats"],
                 ["graph", str(tmp_path / "g.csv"), str(tmp_path / "o.csv"), "--store", f"{redis_url}?namespace=crawl2"]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "no store in namespace 'crawl2'" in err and "'crawl1'" in err and "Traceback" not in err
    assert not (tmp_path / "o.csv").exists()
    assert main(["store", "--store", f"{redis_url}?namespace=crawl2", "stats"]) == 2  # the look created nothing
    capsys.readouterr()
    assert main(["graph", str(tmp_path / "g.csv"), str(tmp_path / "o.csv"), "--store", redis_url, "-q"]) == 0
    assert "using namespace 'crawl1'" in capsys.readouterr().err  # the only store there, as 'store' finds it


@pytest.mark.parametrize(("suffix", "codec"), [(".bz2", bz2), (".xz", lzma)])
def test_bzip2_and_xz_edge_files_in_and_out(tmp_path, suffix, codec):
    edges = tmp_path / f"g.csv{suffix}"
    edges.write_bytes(codec.compress(b"source,target\nHTTP://A.test:80/,http://b.test/#x\n"))
    out = tmp_path / f"o.csv{suffix}"
    result = run("graph", str(edges), str(out), "-q")
    assert result.returncode == 0, result.stderr
    assert codec.decompress(out.read_bytes()) == b"source,target\nhttp://a.test/,http://b.test/\n"
    cut = tmp_path / f"cut.csv{suffix}"
    cut.write_bytes(edges.read_bytes()[:-8])
    result = run("graph", str(cut), str(tmp_path / "o2.csv"), "-q")
    assert result.returncode == 2 and str(cut) in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "o2.csv").exists()


def test_out_in_the_directory_or_glob_read_is_refused(tmp_path, capsys):
    import gzip

    crawl = tmp_path / "crawl"
    crawl.mkdir()
    block = b'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<a href="x">x</a>'
    head = ("WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://docs.test/\r\n"
            f"WARC-Date: 2024-03-01T12:00:00Z\r\nContent-Length: {len(block)}\r\n\r\n")
    archive = crawl / "a.warc.gz"
    archive.write_bytes(gzip.compress(head.encode() + block + b"\r\n\r\n"))
    before = archive.read_bytes()
    (tmp_path / "link.gz").symlink_to(archive)
    for args in ([str(crawl), str(archive)], [str(crawl / "*.gz"), str(archive)],
                 [str(crawl), str(tmp_path / "link.gz")], [str(crawl), str(tmp_path / "o.csv"), "--bad-rows", str(archive)]):
        assert main(["graph", *args]) == 2
        err = capsys.readouterr().err
        assert "is the input file" in err and "would be overwritten" in err, args
    assert archive.read_bytes() == before
    assert main(["graph", str(crawl), str(crawl / "links.csv"), "-q"]) == 0  # a new file there is fine
    assert "not WARC or WAT" not in capsys.readouterr().err  # and is no input of this run


def test_a_store_in_a_read_only_directory_can_still_be_read():
    import shutil
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="scrapy-iri-ro-"))
    try:
        store = directory / "s.db"
        cdx = directory / "none.cdx"
        cdx.write_text(" CDX N b a m s k r M S V g\n")
        assert main(["store", "--store", f"sqlite:///{store}", "learn", str(cdx)]) == 0
        for leftover in directory.glob("s.db-*"):
            leftover.unlink()
        directory.chmod(0o555)
        store.chmod(0o444)
        command = [SCRIPT, "store", "--store", f"sqlite:///{store}", "stats"]
        command = as_unprivileged(command)
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert "Traceback" not in result.stderr
        assert "readonly" in result.stderr or result.returncode == 0, result.stderr  # the failure is the store's
        assert result.returncode == 0, result.stderr
    finally:
        directory.chmod(0o755)
        shutil.rmtree(directory)


def test_graph_on_a_store_that_lost_a_table_fails_rather_than_merging_nothing(tmp_path, capsys):
    (tmp_path / "none.cdx").write_text(" CDX N b a m s k r M S V g\n")
    uri = _damaged_store(tmp_path / "s.db")
    (tmp_path / "g.csv").write_text("source,target\nhttp://a.test/,http://b.test/\n")
    capsys.readouterr()
    code = main(["graph", str(tmp_path / "g.csv"), str(tmp_path / "o.csv"), "--store", uri, "-q"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code == 2 and "alias" in err


def test_store_learn_names_the_files_of_a_directory_it_does_not_read(tmp_path, capsys):
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    (crawl / "i.cdx").write_text(" CDX N b a m s k r M S V g\n"
                                 "test)/a 20240301120000 http://a.test/a text/html 301 X http://a.test/b - - 0 w.warc.gz\n")
    (crawl / "notes.txt").write_text("not an archive\n")
    assert main(["store", "--store", "memory:", "learn", str(crawl)]) == 0
    captured = capsys.readouterr()
    assert "1 files in" in captured.err and "notes.txt" in captured.err and "1 captures" in captured.out
    (crawl / "i.cdx").unlink()
    for name in (str(crawl), str(tmp_path / "nothing*"), str(tmp_path / "missing.warc")):
        assert main(["store", "--store", "memory:", "learn", name]) == 2
        err = capsys.readouterr().err
        assert err.startswith("scrapy-iri store: ") and "Traceback" not in err, err


def test_graph_with_a_memory_store_says_it_is_empty(tmp_path, capsys):
    (tmp_path / "g.csv").write_text("source,target\nhttp://a.test/,http://b.test/\n")
    assert main(["graph", str(tmp_path / "g.csv"), str(tmp_path / "o.csv"), "--store", "memory:", "-q"]) == 0
    assert "--store memory: is a new, empty store" in capsys.readouterr().err


def test_store_explain_of_something_that_is_no_iri_names_the_fault(capsys):
    assert main(["store", "--store", "memory:", "explain", "http://a.test/", "http://[x/"]) == 2
    err = capsys.readouterr().err
    assert "OTHER 'http://[x/' is not an IRI: host:" in err and "position 7" in err


def test_a_glob_of_edge_files_is_an_error_not_a_pile_of_bad_records(tmp_path, capsys):
    (tmp_path / "a.csv").write_text("source,target\nhttp://a.test/,http://b.test/\n")
    (tmp_path / "b.csv").write_text("source,target\nhttp://b.test/,http://c.test/\n")
    assert main(["graph", str(tmp_path / "*.csv"), str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert "none of the 2 files it matches is a WARC or WAT file" in err and not (tmp_path / "o.csv").exists()


def test_canon_of_a_file_name_says_how_to_read_the_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("urls.txt").write_text("http://a.test/\n")
    assert main(["canon", "urls.txt"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("scrapy-iri: argument 1: scheme:") and "'urls.txt' is a file" in err and "- < urls.txt" in err


def test_store_learn_keeps_every_bad_record_on_request(tmp_path, capsys):
    import csv

    index = tmp_path / "i.cdx"
    index.write_text(" CDX N b a m s k r M S V g\n" + "".join(f"short line {i}\n" for i in range(30)))
    bad = tmp_path / "bad.csv"
    assert main(["store", "--store", "memory:", "learn", "--max-reported", "2", "--bad-records", str(bad), str(index)]) == 1
    err = capsys.readouterr().err
    assert "28 more bad records not shown (all kept in" in err
    with open(bad, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 30 and rows[0]["where"] == f"{index}:2" and "fewer than" in rows[0]["reason"]
    assert main(["store", "--store", "memory:", "learn", "--bad-records", str(index), str(index)]) == 2
    assert "would be overwritten" in capsys.readouterr().err and index.read_text().startswith(" CDX")
