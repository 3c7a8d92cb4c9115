"""Bad archive input: each a counted bad record or link, with its file, offset and reason; the run goes on."""

from __future__ import annotations

import csv
import gzip
import json
import zlib
from pathlib import Path

import pytest

from scrapy_iri._cli import main
from scrapy_iri.graph import _warc


def members(archive: Path) -> list[bytes]:
    """The decompressed records of a WARC written with one gzip member per record."""
    data, found = archive.read_bytes(), []
    while data:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        found.append(inflater.decompress(data))
        data = inflater.unused_data
    return found


def record(kind: str, uri: str, block: bytes, date: str = "2024-03-01T12:00:00Z", content_type: str = "",
           *headers: str, record_id: str = "00000000-0000-0000-0000-000000000000") -> bytes:
    head = f"WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Target-URI: {uri}\r\nWARC-Date: {date}\r\n"
    head += f"WARC-Record-ID: <urn:uuid:{record_id}>\r\n" + "".join(f"{line}\r\n" for line in headers)
    if content_type:
        head += f"Content-Type: {content_type}\r\n"
    return f"{head}Content-Length: {len(block)}\r\n\r\n".encode() + block + b"\r\n\r\n"


def http(status: int, body: bytes, *headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status} X", *headers, f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def page(uri: str, html: str, date: str = "2024-03-01T12:00:00Z", kind: str = "text/html; charset=utf-8") -> bytes:
    return record("response", uri, http(200, html.encode("utf-8"), f"Content-Type: {kind}"), date)


def run(capsys, tmp_path: Path, archive: Path, *options: str) -> tuple[int, str, list[dict[str, str]], list[dict]]:
    out, bad = tmp_path / "out.csv", tmp_path / "bad.csv"
    code = main(["graph", str(archive), str(out), "--bad-rows", str(bad), "--max-reported", "1000", *options])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    with open(bad, newline="") as f:
        rows = list(csv.DictReader(f))
    with open(out, newline="") as f:
        edges = list(csv.DictReader(f))
    return code, err, rows, edges


def write(path: Path, records: list[bytes]) -> Path:
    path.write_bytes(b"".join(gzip.compress(r) for r in records))
    return path


def test_a_truncated_gzip_member_in_the_middle(wget_archive, tmp_path, capsys):
    found = members(wget_archive)
    compressed = [gzip.compress(r) for r in found]
    k = next(i for i, r in enumerate(found) if b"WARC-Type: response" in r and b"200 OK" in r and i > 5)
    offset = sum(map(len, compressed[:k]))
    broken = tmp_path / "broken.warc.gz"
    broken.write_bytes(b"".join(compressed[:k]) + compressed[k][:-40] + b"".join(compressed[k + 1 :]))
    code, err, bad, edges = run(capsys, tmp_path, broken)
    _, _, _, reference = run(capsys, tmp_path, wget_archive)
    assert code == 1
    assert bad and all(row["file"] == str(broken) for row in bad)
    assert bad[0]["offset"] == str(offset) and "gzip" in bad[0]["reason"]
    assert "bad rows" in err and len(edges) > 0.8 * len(reference)


@pytest.mark.parametrize("delta", [+50, -50])
def test_a_content_length_that_lies(wget_archive, tmp_path, capsys, delta):
    found = members(wget_archive)
    k = next(i for i, r in enumerate(found) if b"WARC-Type: response" in r and b"200 OK" in r and i > 5)
    head, _, rest = found[k].partition(b"Content-Length: ")
    number, _, tail = rest.partition(b"\r\n")
    found[k] = head + b"Content-Length: " + str(int(number) + delta).encode() + b"\r\n" + tail
    code, err, bad, edges = run(capsys, tmp_path, write(tmp_path / "lie.warc.gz", found))
    assert code == 1 and len(bad) == 1
    assert "Content-Length" in bad[0]["reason"] and "lies" in bad[0]["reason"]
    assert int(bad[0]["offset"].split("+")[0]) > 0
    plain = tmp_path / "lie.warc"
    plain.write_bytes(b"".join(found))  # uncompressed: the next record is found again all the same
    code, _, bad_plain, edges_plain = run(capsys, tmp_path, plain)
    assert code == 1 and len(bad_plain) == 1 and edges_plain == edges


def test_a_record_cut_off_at_the_end_of_the_file(wget_archive, tmp_path, capsys):
    raw = b"".join(members(wget_archive))
    cut = raw.rindex(b"WARC-Type: response")
    end = raw.index(b"\r\n\r\n", raw.index(b"\r\n\r\n", cut) + 4)  # inside the HTTP body
    for name, data in (("cut.warc", raw[: end + 100]), ("cut.warc.gz", gzip.compress(raw)[: len(gzip.compress(raw)) // 2])):
        (tmp_path / name).write_bytes(data)
        code, err, bad, edges = run(capsys, tmp_path, tmp_path / name)
        assert code == 1 and edges
        assert any("cut off at the end of the file" in row["reason"] for row in bad), bad


def test_records_that_are_not_http_are_counted(tmp_path, capsys):
    archive = write(tmp_path / "mixed.warc.gz", [
        record("warcinfo", "", b"software: hand\r\n"),
        record("response", "dns:docs.test", b"20240301120000\ndocs.test. 300 IN A 127.0.0.1\n"),
        record("response", "http://docs.test/x", b"this is no HTTP message"),
        page("http://docs.test/", '<a href="/a">a</a>'),
    ])
    code, err, bad, edges = run(capsys, tmp_path, archive)
    assert code == 1 and [e["target"] for e in edges] == ["http://docs.test/a"]
    assert len(bad) == 1 and "not an HTTP response" in bad[0]["reason"] and bad[0]["source"] == "http://docs.test/x"
    assert "responses not over HTTP (dns scheme)" in err and "warcinfo records" in err


def test_binary_huge_and_non_html_bodies(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(_warc, "MAX_BLOCK", 4096)
    noise = bytes(range(256)) * 8
    archive = write(tmp_path / "bodies.warc.gz", [
        record("response", "http://docs.test/img.png", http(200, noise, "Content-Type: image/png")),
        record("response", "http://docs.test/bin", http(200, noise, "Content-Type: text/html")),
        page("http://docs.test/huge", '<a href="/a">a</a>' + "x" * 10000),
        record("response", "http://docs.test/big.png", http(200, noise * 4, "Content-Type: image/png")),
        page("http://docs.test/", '<a href="/b">b</a>'),
    ])
    code, err, bad, edges = run(capsys, tmp_path, archive)
    assert code == 1 and "http://docs.test/b" in [e["target"] for e in edges]
    assert [row["source"] for row in bad] == ["http://docs.test/huge"] and "over the 4,096 bytes" in bad[0]["reason"]
    assert "responses that are not HTML                          2" in err


def test_a_base_that_is_not_a_url(tmp_path, capsys):
    html = '<html><head><base href="http://[oops/"></head><body><a href="x.html">x</a></body></html>'
    archive = write(tmp_path / "base.warc.gz", [page("http://docs.test/dir/page.html", html)])
    code, err, bad, edges = run(capsys, tmp_path, archive)
    assert code == 1 and [e["target"] for e in edges] == ["http://docs.test/dir/x.html"]  # as browsers: the URL
    assert bad[0]["path"] == "BASE@/href" and "is not a URL" in bad[0]["reason"]


def test_links_that_are_not_iris(tmp_path, capsys):
    html = '<a href="http://[::1/">a</a><a href="http://ex ample.test/">b</a><img src="ok.png"><a href="&#0;">c</a>'
    archive = write(tmp_path / "links.warc.gz", [page("http://docs.test/", html)])
    code, err, bad, edges = run(capsys, tmp_path, archive)
    assert code == 1 and "http://docs.test/ok.png" in [e["target"] for e in edges]
    assert len(bad) + len(edges) == 4 and bad and all(row["offset"] == "0" for row in bad)
    assert all(row["path"] in ("A@/href", "") for row in bad)


def test_entities_base_and_a_non_utf8_query_resolve_as_browsers_do(tmp_path, capsys):
    html = (
        '<html><head><meta charset="windows-1252"><base href=" /base/ "></head><body>'
        '<a href="a?x=1&amp;y=2">1</a><a href="b?q=\xe9">2</a><a href="//other.test/p">3</a></body></html>'
    )
    block = http(200, html.encode("cp1252"), "Content-Type: text/html")
    archive = write(tmp_path / "enc.warc.gz", [record("response", "http://docs.test/dir/page.html", block)])
    code, err, bad, edges = run(capsys, tmp_path, archive, "--rung", "string")
    assert code == 0 and [e["target_original"] for e in edges] == [
        "http://docs.test/base/a?x=1&y=2",
        "http://docs.test/base/b?q=%E9",  # the query in the document's charset, as a browser sends it
        "http://other.test/p",
    ]


def wat(uri: str, links: list[dict], status: int = 200, **drop: bool) -> bytes:
    envelope = {
        "Format": "WARC",
        "WARC-Header-Metadata": {"WARC-Type": "response", "WARC-Target-URI": uri, "WARC-Date": "2024-03-01T12:00:00Z"},
        "Payload-Metadata": {
            "Actual-Content-Type": "application/http; msgtype=response",
            "HTTP-Response-Metadata": {
                "Response-Message": {"Version": "HTTP/1.1", "Status": str(status), "Reason": "OK"},
                "Headers": {"Content-Type": "text/html"},
                "HTML-Metadata": {"Head": {"Base": "/b/"}, "Links": links},
            },
        },
    }
    for key in drop:
        envelope.pop(key)
    return record("metadata", uri, json.dumps({"Container": {}, "Envelope": envelope}).encode(),
                  content_type="application/json")


def test_wat_records_and_wat_records_with_missing_keys(tmp_path, capsys):
    archive = write(tmp_path / "x.wat.gz", [
        record("warcinfo", "", b"software: hand\r\n"),
        wat("http://docs.test/p", [{"path": "A@/href", "url": "q.html"}, {"path": "IMG@/src", "url": "/i.png"}]),
        wat("http://docs.test/r", [], **{"Payload-Metadata": True}),
        record("metadata", "http://docs.test/s", b'{"Envelope": [1, 2]}'),
    ])
    code, err, bad, edges = run(capsys, tmp_path, archive)
    assert [(e["path"], e["target"]) for e in edges] == [("A@/href", "http://docs.test/b/q.html"),
                                                          ("IMG@/src", "http://docs.test/i.png")]
    assert code == 1 and len(bad) == 2
    assert "no Envelope.Payload-Metadata" in bad[0]["reason"]
    assert all(row["file"] == str(archive) and row["offset"].isdigit() for row in bad)


def test_a_cdx_line_with_too_few_fields_and_cdxj_as_pywb_writes_it(tmp_path, capsys):
    cdx = tmp_path / "index.cdx"
    cdx.write_text(
        " CDX a b a m s k r M V g u\n"
        "http://www.docs.test/ 20240301120000 http://www.docs.test/ text/html 301 X http%3A//docs.test/ - 1 0 f.warc.gz u\n"
        "http://short.test/ 20240301120000 http://short.test/\n"
    )
    cdxj = tmp_path / "index.cdxj"
    cdxj.write_text(
        'test,docs,www)/a 20240301120000 {"url": "http://www.docs.test/a", "mime": "text/html", "status": "301",'
        ' "digest": "X", "length": "1", "offset": "0", "filename": "f.warc.gz"}\n'
        'test,docs)/a 20240301120001 {"url": "http://docs.test/a", "mime": "text/html", "status": "200",'
        ' "digest": "Y", "length": "1", "offset": "9", "filename": "f.warc.gz"}\n'
    )
    uri = f"sqlite:///{tmp_path / 's.db'}"
    code = main(["store", "--store", uri, "learn", str(cdx), str(cdxj)])
    captured = capsys.readouterr()
    assert code == 1 and "Traceback" not in captured.err
    assert f"{cdx}:3: a CDX line with 3 fields" in captured.err
    assert "captures" in captured.out and "bad records\t1" in captured.out


def redirect(uri: str, status: int, location: str, date: str, *headers: str) -> bytes:
    return record("response", uri, http(status, b"", f"Location: {location}", *headers), date)


def test_captures_are_learned_in_date_order_with_their_context(tmp_path):
    from scrapy_iri import canonicalize
    from scrapy_iri.graph import learn_files
    from scrapy_iri.store import open_store

    # the file holds the later capture first: the 200 of 2024 ends what the 301 of 2021 taught
    later_first = write(tmp_path / "a.warc.gz", [
        page("http://a.test/old", "<p>back</p>", date="2024-01-01T00:00:00Z"),
        redirect("http://a.test/old", 301, "/new", "2021-01-01T00:00:00Z"),
        redirect("http://a.test/moved", 301, "http://a.test/here", "2021-01-01T00:00:00Z"),
        redirect("http://a.test/cookie", 301, "/c2", "2021-01-01T00:00:00Z", "Set-Cookie: s=1"),
        redirect("http://a.test/vary", 301, "/v2", "2021-01-01T00:00:00Z", "Vary: Cookie"),
        redirect("http://a.test/temp", 302, "/t2", "2021-01-01T00:00:00Z"),
        redirect("http://a.test/cached", 301, "/k2", "2021-01-01T00:00:00Z", "Cache-Control: max-age=60"),
    ])
    store = open_store("memory:")
    summary, reading = learn_files(store, [str(later_first)])
    assert reading.bad == [] and summary.observations == 7

    def merged(a: str, b: str) -> bool:
        return canonicalize(a, "protocol", store=store) == canonicalize(b, "protocol", store=store)

    # today, a redirect stated in 2021 with no lifetime of its own is past IRI_ALIAS_TTL: asked again, not merged
    assert not merged("http://a.test/moved", "http://a.test/here")
    # as of the archive's last capture (as graph judges an archive's own store), it holds
    store.clock = lambda: 1704067200.0  # 2024-01-01T00:00:00Z
    assert not merged("http://a.test/moved", "http://a.test/here")  # three years: past the default lifetime too
    store.clock = lambda: 1609459200.0 + 3600  # an hour after the 2021 captures
    assert merged("http://a.test/moved", "http://a.test/here")
    assert not merged("http://a.test/cached", "http://a.test/k2")  # its stated lifetime (60 s) is over
    store.clock = lambda: 1609459200.0 + 30
    assert merged("http://a.test/cached", "http://a.test/k2")  # within its stated lifetime
    assert not merged("http://a.test/old", "http://a.test/new")  # contradicted later
    assert not merged("http://a.test/cookie", "http://a.test/c2")  # Set-Cookie: not clean
    assert not merged("http://a.test/vary", "http://a.test/v2")  # Vary: Cookie: not clean
    assert not merged("http://a.test/temp", "http://a.test/t2")  # 302 never merges


def test_usage_errors_name_the_problem(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "i.cdx").write_text(" CDX a b a m s k r M V g u\n")
    (tmp_path / "index").write_text(" CDX a b a m s k r M V g u\nhttp://a/ 20240101000000 http://a/ text/html 301"
                                    " - http://b/ - - 0 a.warc.gz\n")
    (tmp_path / "index-j").write_text('a,)/ 20240101000000 {"url": "http://a/", "status": "301", "redirect": "http://b/"}\n')
    cases = [
        ([str(tmp_path / "nope.warc.gz")], "no such file"),
        ([str(tmp_path / "*.nothing")], "no file matches it as a glob"),
        ([str(tmp_path / "empty")], "a directory without WARC or WAT files"),
        ([str(tmp_path / "i.cdx")], "an index holds no links"),
        ([str(tmp_path / "index")], "an index holds no links"),  # known by its content, whatever its name
        ([str(tmp_path / "index-j")], "an index holds no links"),
        (["-", "--format", "warc"], "cannot be read from stdin"),
    ]
    for args, message in cases:
        code = main(["graph", args[0], str(tmp_path / "out.csv"), *args[1:]])
        err = capsys.readouterr().err
        assert code == 2 and message in err and "Traceback" not in err, (args, err)
        assert not (tmp_path / "out.csv").exists()


def test_a_missing_parser_is_one_error_naming_the_extra(tmp_path, capsys, monkeypatch):
    import sys

    archive = write(tmp_path / "a.warc.gz", [page("http://docs.test/", '<a href="/a">a</a>')])
    monkeypatch.setitem(sys.modules, "lxml.html", None)  # as if lxml were not installed
    code = main(["graph", str(archive), str(tmp_path / "out.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "pip install 'scrapy-iri[archive]'" in err and "Traceback" not in err


def test_an_empty_file_given_as_an_archive_is_a_bad_record(tmp_path, capsys):
    """Named, or matched by a glob, an empty file is said, as a directory names its files that are not
    archives: a bad record at offset 0, never read as an archive of nothing."""
    archive = write(tmp_path / "a.warc.gz", [page("http://docs.test/", '<a href="/a">a</a>')])
    (tmp_path / "b.warc.gz").write_bytes(b"")  # a crawl that died before writing its first record
    for given in (tmp_path / "*.warc.gz", tmp_path / "b.warc.gz"):
        code, err, bad, edges = run(capsys, tmp_path, given)
        assert code == 1, err
        assert [(row["file"], row["offset"], row["reason"]) for row in bad] == [
            (str(tmp_path / "b.warc.gz"), "0", "an empty file: no WARC or WAT record")]
        assert len(edges) == (1 if given.name.startswith("*") else 0)
    assert archive.exists()
