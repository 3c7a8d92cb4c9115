"""Hostile archives, the way real ones fail: each gives a correct result, or a counted bad record with
its file, offset and reason; never a traceback, and a 1 MB field is named in a report, not copied.

Every case is run through ``scrapy-iri graph`` (``--redirects edges``, so redirects are rows) and
``scrapy-iri store learn``; a directory of several is compared byte for byte on Dask and Spark in
``test_graph_dask.py`` and ``test_graph_spark.py`` (:func:`hostile_directory`).
"""

from __future__ import annotations

import bz2
import csv
import gzip
import json
from pathlib import Path

import pytest

from scrapy_iri._cli import main
from scrapy_iri.graph._learn import Reading, captures_of
from test_graph_archive_faults import http, page, record

MB = 1 << 20
OK = page("http://ok.test/", '<a href="z">z</a>')  # after each hostile record: the reading goes on
OK_EDGE = ("http://ok.test/", "http://ok.test/z")


def _warc(path: Path, *items: bytes) -> Path:
    path.write_bytes(b"".join(gzip.compress(item) for item in items))
    return path


def _moved(*lines: bytes, status: bytes = b"HTTP/1.1 301 Moved") -> bytes:
    return b"\r\n".join([status, *lines]) + b"\r\n\r\n"


def graph(capsys, tmp_path: Path, archive: Path) -> tuple[int, str, list[dict[str, str]], list[tuple[str, ...]]]:
    out, bad = tmp_path / "out.csv", tmp_path / "bad.csv"
    code = main(["graph", str(archive), str(out), "--bad-rows", str(bad), "--redirects", "edges",
                 "--max-reported", "100"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    limit = csv.field_size_limit(1 << 24)  # the rows of a 1 MB URL
    try:
        with open(bad, newline="") as f:
            rows = list(csv.DictReader(f))
        with open(out, newline="") as f:
            edges = [(row["source"], row["target"], row["path"], row["date"]) for row in csv.DictReader(f)]
    finally:
        csv.field_size_limit(limit)
    assert all(row["file"] == str(archive) and row["offset"] for row in rows)
    return code, err, rows, edges


def learn(capsys, tmp_path: Path, archive: Path) -> tuple[int, str, str]:
    store = tmp_path / "learned.db"
    if store.exists():
        store.unlink()
    code = main(["store", "--store", f"sqlite:///{store}", "learn", str(archive)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def test_a_1mb_warc_target_uri_and_a_1mb_header_line_are_bad_records(tmp_path, capsys):
    """A WARC header is read to 64 KiB: beyond, the record is bad (named, not copied) and the next is read."""
    for name, bad_record in [
        ("uri", page("http://a.test/" + "x" * MB, '<a href="y">y</a>')),
        ("line", record("response", "http://a.test/", http(200, b"<a href=q>q</a>", "Content-Type: text/html"),
                        "2024-03-01T12:00:00Z", "", "X-Long: " + "y" * MB)),
    ]:
        archive = _warc(tmp_path / f"{name}.warc.gz", bad_record, OK)
        code, err, bad, edges = graph(capsys, tmp_path, archive)
        assert code == 1 and [e[:2] for e in edges] == [OK_EDGE]
        assert [(row["offset"], row["reason"]) for row in bad] == [("0", "a WARC header without its end within 65536 bytes")]
        assert len(err) < 4000
        code, out, err = learn(capsys, tmp_path, archive)
        assert code == 1 and "learned from 1 files: 1 captures" in out and ":0: a WARC header without its end" in err


def test_a_1mb_location_is_a_redirect_and_a_bad_one_is_named_not_copied(tmp_path, capsys):
    far = "http://b.test/" + "x" * MB
    archive = _warc(tmp_path / "loc.warc.gz", record("response", "http://a.test/", _moved(b"Location: " + far.encode())),
                    record("response", "http://c.test/", _moved(b"Location: http://b.test:x/" + b"\xff" * MB)), OK)
    code, err, bad, edges = graph(capsys, tmp_path, archive)
    assert code == 1 and [e[:3] for e in edges] == [("http://a.test/", far, "REDIRECT@/301"), (*OK_EDGE, "A@/href")]
    assert len(bad) == 1 and bad[0]["reason"].startswith("Location 'http://b.test:x/")
    assert f"({MB + 16:,} characters)" in bad[0]["reason"] and len(bad[0]["reason"]) < 2000 and len(err) < 4000
    code, out, err = learn(capsys, tmp_path, archive)
    assert code == 1 and "aliases_learned\t1" in out and len(err) < 4000


def test_a_page_of_100000_links_and_a_1mb_http_header_line(tmp_path, capsys):
    links = "".join(f'<a href="p{i}">.</a>' for i in range(100_000))
    archive = _warc(tmp_path / "many.warc.gz", page("http://a.test/d/", links),
                    record("response", "http://b.test/", http(200, b'<a href="q">q</a>', "Content-Type: text/html",
                                                              "X-Long: " + "y" * MB)), OK)
    code, err, bad, edges = graph(capsys, tmp_path, archive)
    assert code == 0 and not bad
    assert [e[1] for e in edges[:100_000]] == [f"http://a.test/d/p{i}" for i in range(100_000)]
    assert [e[:2] for e in edges[100_000:]] == [("http://b.test/", "http://b.test/q"), OK_EDGE]


def test_records_of_no_bytes_and_of_every_other_kind_between_responses(tmp_path, capsys):
    archive = _warc(
        tmp_path / "kinds.warc.gz",
        record("response", "http://a.test/", b""),  # Content-Length 0: no HTTP response in it
        record("request", "http://a.test/", b""),
        record("metadata", "http://a.test/", b"outlink: http://x.test/ L a/@href\r\n", content_type="application/warc-fields"),
        record("request", "http://a.test/", b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"),
        record("resource", "http://a.test/r", b"\x00\x01", content_type="application/octet-stream"),
        record("conversion", "http://a.test/", b"a text", content_type="text/plain"),
        OK,
    )
    code, err, bad, edges = graph(capsys, tmp_path, archive)
    assert code == 1 and [e[:2] for e in edges] == [OK_EDGE]
    assert [(row["offset"], row["reason"]) for row in bad] == [("0", "the record's block is not an HTTP response")]
    for counted in ("conversion records", "metadata records", "request records", "resources that are not HTML"):
        assert counted in err
    code, out, err = learn(capsys, tmp_path, archive)
    assert code == 1 and "learned from 1 files: 1 captures" in out


def test_dates_status_lines_and_locations_as_servers_and_archivers_write_them(tmp_path, capsys):
    archive = _warc(
        tmp_path / "odd.warc.gz",
        record("response", "http://a.test/", _moved(b"Location: /b"), "2024-03-01T12:00:00.123456Z"),  # WARC 1.1
        record("response", "http://c.test/", _moved(b"Location: /d"), "2024-03-01T12:00:01"),  # no zone: UTC
        record("response", "http://e.test/", _moved(b"location: /f", status=b"HTTP/2 301")),
        record("response", "http://g.test/", _moved(b"Location: /h", status=b"HTTP/1.1 308")),  # no reason
        record("response", "http://i.test/", _moved(b"Location: /j", b"Location: /j")),  # the same twice
        record("response", "http://k.test/", _moved(b"Location: /a b c")),  # spaces: encoded as browsers do
        record("response", "http://m.test/", _moved(b"Location: /n", b"Location: /o")),  # two that differ
        record("response", "http://p.test/", _moved(b"Location: /caf\xe9")),  # not UTF-8
        record("response", "http://q.test/", _moved(status=b"HTTP/1.1 304 Not Modified")),  # an answer
        OK,
    )
    code, err, bad, edges = graph(capsys, tmp_path, archive)
    assert code == 1
    assert [e[:2] for e in edges] == [
        ("http://a.test/", "http://a.test/b"), ("http://c.test/", "http://c.test/d"),
        ("http://e.test/", "http://e.test/f"), ("http://g.test/", "http://g.test/h"),
        ("http://i.test/", "http://i.test/j"), ("http://k.test/", "http://k.test/a%20b%20c"), OK_EDGE]
    assert [e[3] for e in edges[:2]] == ["2024-03-01T12:00:00.123456Z", "2024-03-01T12:00:01"]
    assert [row["reason"] for row in bad] == [
        "a 301 redirect with 2 different Locations: '/n', '/o'",
        "Location '/caf\\udce9' is not an IRI reference: path: lone surrogate U+DCE9 is not a character at position 4",
    ]
    assert "responses other than 2xx and redirects" in err  # the 304
    reading = Reading()
    captures = list(captures_of([str(archive)], reading))
    assert [(c.url, c.status, c.target) for c in captures] == [
        ("http://a.test/", 301, "http://a.test/b"), ("http://c.test/", 301, "http://c.test/d"),
        ("http://e.test/", 301, "http://e.test/f"), ("http://g.test/", 308, "http://g.test/h"),
        ("http://i.test/", 301, "http://i.test/j"), ("http://k.test/", 301, "http://k.test/a%20b%20c"),
        ("http://q.test/", 304, None), ("http://ok.test/", 200, None)]
    assert abs(captures[1].time - captures[0].time - 0.876544) < 1e-6
    assert [reason for _, reason in reading.bad] == [row["reason"] for row in bad]


def test_a_chunked_body_that_lies_and_a_huge_warcinfo_first(tmp_path, capsys):
    archive = _warc(
        tmp_path / "chunks.warc.gz",
        record("warcinfo", "", b"x" * (40 * MB)),  # over the 32 MiB a block is read to
        record("response", "http://a.test/", http(200, b"FFFFFF\r\n<a href=x>x</a>\r\n0\r\n\r\n",
                                                  "Content-Type: text/html", "Transfer-Encoding: chunked")),
        record("response", "http://b.test/", http(200, b"3\r\n<a href=x>x</a>\r\n0\r\n\r\n",
                                                  "Content-Type: text/html", "Transfer-Encoding: chunked")),
        OK,
    )
    code, err, bad, edges = graph(capsys, tmp_path, archive)
    assert code == 1 and [e[:2] for e in edges] == [OK_EDGE]
    assert [(row["source"], row["reason"]) for row in bad] == [
        ("http://a.test/", "chunked body cut off"), ("http://b.test/", "bad chunk size b'ef=x>x</a>'")]
    assert "warcinfo records" in err
    code, out, err = learn(capsys, tmp_path, archive)
    assert code == 0 and "learned from 1 files: 3 captures" in out


def test_index_lines_as_other_tools_write_them(tmp_path, capsys):
    cdxj = tmp_path / "x.cdxj"
    cdxj.write_text('com,a)/ 20240101000000 {"url": "http://a.test/", "status": "301", "redirect": "http://b.test/"}\n'
                    'com,b)/ 20240101000000 ["url"]\n'
                    'com,c)/ 20240101000000 "http://c.test/"\n')
    code, out, err = learn(capsys, tmp_path, cdxj)
    assert code == 1 and "aliases_learned\t1" in out
    assert f"{cdxj}:2: CDXJ: the JSON block is an array, not an object" in err
    assert f"{cdxj}:3: CDXJ: the JSON block is a string, not an object" in err
    pywb = tmp_path / "pywb.cdxj"  # a 3xx without its target, a revisit without a status: said, not learned
    pywb.write_text('com,a)/ 20240101000000 {"url": "http://a.test/", "status": "301", "mime": "text/html"}\n'
                    'com,a)/ 20240102000000 {"url": "http://a.test/", "mime": "warc/revisit"}\n'
                    'com,b)/ 20240101000000 {"url": "http://b.test/", "status": "200"}\n')
    code, out, err = learn(capsys, tmp_path, pywb)
    assert code == 0 and "learned from 1 files: 1 captures" in out
    assert "skipped: index lines without a status or a redirect's target\t2" in out
    cdx = tmp_path / "x.cdx.bz2"  # the columns of its own header line, Common Crawl's order
    cdx.write_bytes(bz2.compress(b" CDX N b a m s k r M S V g\n"
                                 b"com,a)/ 20240101000000 http://a.test/ text/html 301 AAA http://b.test/ - 10 0 x.warc.gz\n"
                                 b"com,c)/ 20240101000000 http://c.test/ text/html 200 BBB - - 10 0 x.warc.gz\n"))
    code, out, err = learn(capsys, tmp_path, cdx)
    assert code == 0 and "learned from 1 files: 2 captures" in out and "aliases_learned\t1" in out


def test_a_wat_record_with_a_container_and_no_envelope(tmp_path, capsys):
    wat = json.dumps({"Container": {"Filename": "x.warc.gz", "Offset": "0"}}).encode()
    archive = tmp_path / "x.wat"
    archive.write_bytes(record("metadata", "http://a.test/", wat, content_type="application/json") + OK)
    code, err, bad, edges = graph(capsys, tmp_path, archive)
    assert code == 1 and [e[:2] for e in edges] == [OK_EDGE]
    assert [(row["offset"], row["reason"]) for row in bad] == [("0", "WAT: no Envelope")]
    code, out, err = learn(capsys, tmp_path, archive)
    assert code == 1 and f"{archive}:0: WAT: no Envelope" in err


def test_corrupt_bzip2_edges_are_one_error_naming_the_file(tmp_path, capsys):
    """Known by the type of what the reader raises: a bzip2 stream whose later block is damaged."""
    rows = b"source,target\n" + b"".join(b"http://a.test/%d,http://b.test/%d\n" % (i, i * 7919 % 100003)
                                         for i in range(40000))
    data = bytearray(bz2.compress(rows, 1))  # blocks of 100 kB: the first ones read
    data[len(data) * 3 // 4: len(data) * 3 // 4 + 50] = bytes(50)
    edges = tmp_path / "edges.csv.bz2"
    edges.write_bytes(bytes(data))
    code = main(["graph", str(edges), str(tmp_path / "out.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and f"{edges}: corrupt bzip2 data" in err


def hostile_directory(tmp_path: Path) -> Path:
    """Several of the cases above in one directory, for the engines to agree on."""
    directory = tmp_path / "hostile"
    directory.mkdir()
    _warc(directory / "a.warc.gz", page("http://a.test/" + "x" * MB, '<a href="y">y</a>'), OK,
          record("response", "http://c.test/", _moved(b"Location: http://b.test:x/" + b"\xff" * MB)),
          record("response", "http://m.test/", _moved(b"Location: /n", b"Location: /o")),
          record("response", "http://e.test/", _moved(b"location: /f", status=b"HTTP/2 301")),
          record("response", "http://a.test/", b""), record("conversion", "http://a.test/", b"a text"),
          record("response", "http://a.test/", http(200, b"FFFFFF\r\n<a href=x>x</a>\r\n0\r\n\r\n",
                                                    "Content-Type: text/html", "Transfer-Encoding: chunked")))
    (directory / "b.wat").write_bytes(
        record("metadata", "http://a.test/", json.dumps({"Container": {}}).encode(), content_type="application/json")
        + page("http://d.test/", "".join(f'<a href="p{i}">.</a>' for i in range(5000))))
    return directory


@pytest.mark.parametrize("rung", ["scheme", "protocol"])
def test_the_hostile_directory_locally(tmp_path, capsys, rung):
    code = main(["graph", str(hostile_directory(tmp_path)), str(tmp_path / "out.csv"), "--rung", rung,
                 "--bad-rows", str(tmp_path / "bad.csv")])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and len(err) < 20_000
    assert (tmp_path / "out.csv").read_text().count("\n") == 1 + 1 + 5000
