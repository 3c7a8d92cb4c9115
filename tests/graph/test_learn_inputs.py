"""``store learn`` knows an index by its content: a file that is none of WARC, WAT, CDX and CDXJ is one
clear error naming it (exit 2, nothing learned), as ``graph`` refuses an input it cannot read; in a
directory such files are passed over and named, as ``graph`` passes over the files that are not archives."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma

import pytest

from scrapy_iri._cli import main
from scrapy_iri.errors import GraphError
from scrapy_iri.graph import learn_files
from scrapy_iri.graph._learn import capture_kind
from scrapy_iri.store import open_store

from test_graph_archive_faults import http, record

STAMP = "20240301120000"
CDX_LINE = f"test,docs,www)/ {STAMP} http://www.docs.test/ text/html 301 X http://docs.test/ - - 0 w.warc.gz\n"
CDXJ_LINE = (f'test,docs,www)/a {STAMP} {{"url": "http://www.docs.test/a", "status": "301",'
             ' "redirect": "http://docs.test/a", "filename": "w.warc.gz"}\n')
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n" + bytes(range(256)) * 8

NOT_CAPTURES = {
    "links.csv": b"source,target\nhttp://a.test/,http://b.test/\nhttp://b.test/,http://c.test/\n",
    "links.tsv": b"source\ttarget\nhttp://a.test/\thttp://b.test/\n",
    "links.jsonl": b'{"source": "http://a.test/", "target": "http://b.test/"}\n{"source": "x", "target": "y"}\n',
    "page.html": b'<!doctype html>\n<html><body>\n<a href="http://a.test/ 20240301120000">x</a>\n</body></html>\n',
    "paper.pdf": PDF,
    "empty.cdx": b"",
    "blank.cdxj": b"\n\n   \n",
    "links.csv.gz": gzip.compress(b"source,target\nhttp://a.test/,http://b.test/\n"),
    "notes.txt": b"The crawl of 2024 (see http://docs.test/ for more) went well.\n" * 3,
    "broken.gz": b"\x1f\x8b\x08\x00" + b"\x00" * 40,
    "links.csv.bz2": bz2.compress(b"source,target\nhttp://a.test/,http://b.test/\n"),
}


def learn(capsys, tmp_path, *names, store="s.db"):
    uri = f"sqlite:///{tmp_path / store}"
    code = main(["store", "--store", uri, "learn", *map(str, names)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def aliases(tmp_path, store="s.db"):
    when = 1709294400.0 + 60  # a minute after the captures (2024-03-01T12:00:00Z): their aliases hold
    s = open_store(f"sqlite:///{tmp_path / store}", create=False, clock=lambda: when)
    try:
        return {url: s.representative(url) for url in ("http://www.docs.test/", "http://www.docs.test/a")}
    finally:
        s.close()


@pytest.mark.parametrize("name", sorted(NOT_CAPTURES))
def test_a_file_that_is_no_archive_or_index_is_one_error_naming_it(tmp_path, capsys, name):
    path = tmp_path / name
    path.write_bytes(NOT_CAPTURES[name])
    good = tmp_path / "good.cdx"
    good.write_text(" CDX N b a m s k r M S V g\n" + CDX_LINE)
    code, out, err = learn(capsys, tmp_path, good, path)
    errors = [line for line in err.splitlines() if "a new store" not in line]
    assert code == 2 and out == "" and len(errors) == 1, err
    assert errors[0].startswith(f"scrapy-iri store: {path}: not a WARC, WAT, CDX or CDXJ file")
    assert "WARC or WAT archives" in errors[0] and "CDX or CDXJ indexes" in errors[0]
    # the run is refused whole, before any store is made: the good index named with it is not learned either
    assert not (tmp_path / "s.db").exists() and "a new store" not in err
    with pytest.raises(GraphError, match="not a WARC, WAT, CDX or CDXJ file"):
        learn_files(open_store("memory:"), [str(path)])


def test_an_existing_store_is_left_as_it_was(tmp_path, capsys):
    (tmp_path / "i.cdxj").write_text(CDXJ_LINE)
    assert learn(capsys, tmp_path, tmp_path / "i.cdxj")[0] == 0
    before = aliases(tmp_path)
    assert before["http://www.docs.test/a"] == "http://docs.test/a"
    (tmp_path / "links.csv").write_bytes(NOT_CAPTURES["links.csv"])
    assert learn(capsys, tmp_path, tmp_path / "links.csv")[0] == 2
    assert aliases(tmp_path) == before


def test_indexes_are_known_by_their_content_not_their_names(tmp_path, capsys):
    headerless = tmp_path / "index.txt"  # Common Crawl's columns, no header line
    headerless.write_text(CDX_LINE)
    cdxj = tmp_path / "cdx-00000"  # CDXJ gzipped as Common Crawl serves it, no suffix at all
    cdxj.write_bytes(gzip.compress(CDXJ_LINE.encode()))
    assert capture_kind(str(headerless)) == "cdx" and capture_kind(str(cdxj)) == "cdxj"
    code, out, err = learn(capsys, tmp_path, headerless, cdxj)
    assert code == 0, err
    assert "learned from 2 files: 2 captures" in out and "bad records\t0" in out
    assert aliases(tmp_path) == {"http://www.docs.test/": "http://docs.test/",
                                 "http://www.docs.test/a": "http://docs.test/a"}


def test_an_index_with_bad_lines_among_good_ones_keeps_its_bad_records(tmp_path, capsys):
    index = tmp_path / "mixed.cdx"  # its first lines are bad: still an index, each bad line reported
    index.write_text("garbage line\n"
                     "test,docs)/ notastamp http://docs.test/ text/html 200 X - - - 0 w.warc.gz\n"
                     + CDX_LINE +
                     "http://short.test/ 20240301120000 http://short.test/\n")
    code, out, err = learn(capsys, tmp_path, index)
    assert code == 1
    assert f"{index}:1: a CDX line with 2 fields" in err
    assert f"{index}:2: a CDX line without a valid timestamp ('notastamp')" in err
    assert f"{index}:4: a CDX line with 3 fields" in err
    assert "learned from 1 files: 1 captures" in out and "bad records\t3" in out
    assert aliases(tmp_path)["http://www.docs.test/"] == "http://docs.test/"


def test_a_directory_passes_over_what_it_cannot_read_and_names_it(tmp_path, capsys):
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    block = http(301, b"", "Location: http://docs.test/a")
    (crawl / "a.warc.gz").write_bytes(gzip.compress(record("response", "http://www.docs.test/a", block)))
    (crawl / "b.index").write_text(CDX_LINE)  # a CDX by its content, whatever its name
    for name in ("links.csv", "paper.pdf", "links.jsonl"):
        (crawl / name).write_bytes(NOT_CAPTURES[name])
    code, out, err = learn(capsys, tmp_path, crawl)
    assert code == 0, err
    assert "learned from 2 files: 2 captures" in out
    assert f"3 files in {crawl} are not WARC, WAT, CDX or CDXJ, not read" in err
    for name in ("links.csv", "paper.pdf", "links.jsonl"):
        assert str(crawl / name) in err
    assert aliases(tmp_path) == {"http://www.docs.test/": "http://docs.test/",
                                 "http://www.docs.test/a": "http://docs.test/a"}


def test_a_glob_reads_every_file_it_matches_and_one_it_cannot_read_is_a_bad_record(tmp_path, capsys):
    """As ``graph`` reads a glob: every match is read; one that is no archive is a bad record, the rest learned."""
    (tmp_path / "a.cdx").write_text(CDX_LINE)
    (tmp_path / "b.cdx").write_bytes(NOT_CAPTURES["links.csv"])  # named like an index, holds a link list
    code, out, err = learn(capsys, tmp_path, tmp_path / "*.cdx")
    assert code == 1
    assert f"scrapy-iri: {tmp_path / 'b.cdx'}:0: not a WARC, WAT, CDX or CDXJ file (none of its 3 lines" in err
    assert f"{tmp_path / 'b.cdx'}:1" not in err and f"{tmp_path / 'b.cdx'}:2" not in err  # one, not one a line
    assert "learned from 2 files: 1 captures" in out and "bad records\t1" in out
    assert aliases(tmp_path)["http://www.docs.test/"] == "http://docs.test/"


def test_json_lines_that_look_like_cdxj_without_a_key_are_no_index(tmp_path):
    path = tmp_path / "captures.jsonl"
    path.write_text(json.dumps({"url": "http://docs.test/", "timestamp": STAMP, "status": "200"}) + "\n")
    with pytest.raises(GraphError, match="its line is not a CDX or CDXJ line"):
        capture_kind(str(path))


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress], ids=["gzip", "bzip2", "xz"])
def test_a_compressed_index_is_learned_and_one_cut_off_is_a_bad_record_where_it_ends(tmp_path, capsys, compress):
    lines = [" CDX N b a m s k r M S V g\n"] + [
        f"test,docs,www)/p{i} {STAMP} http://www.docs.test/p{i} text/html 301 X http://docs.test/p{i} - - 0 w.warc.gz\n"
        for i in range(20_000)
    ]
    data = compress("".join(lines).encode())
    (tmp_path / "whole").write_bytes(data)
    store = open_store("memory:", clock=lambda: 1709294400.0 + 60)
    summary, reading = learn_files(store, [str(tmp_path / "whole")])
    assert (summary.observations, reading.bad) == (20_000, [])
    assert store.representative("http://www.docs.test/p19999") == "http://docs.test/p19999"
    (tmp_path / "cut").write_bytes(data[: len(data) * 3 // 4])
    code, out, err = learn(capsys, tmp_path, tmp_path / "cut")
    if code == 2:  # nothing of it decompresses (bzip2 gives nothing of a block it does not have whole)
        assert err.startswith(f"scrapy-iri store: {tmp_path / 'cut'}: not a WARC, WAT, CDX or CDXJ file")
        assert "does not decompress" in err
        return
    bad = [line for line in err.splitlines() if "cut off or damaged" in line]
    assert code == 1 and len(bad) == 1, err
    where, _, reason = bad[0].removeprefix("scrapy-iri: ").partition(": ")
    last = int(where.rpartition(":")[2]) - 1  # the last line read whole
    assert reason.startswith(f"the file is cut off or damaged after line {last:,}")
    assert 1 < last < len(lines) and f"learned from 1 files: {last - 1:,} captures" in out
