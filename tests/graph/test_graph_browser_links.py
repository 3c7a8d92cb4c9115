"""Links of archived HTML as a browser finds and resolves them: every expected row worked out by hand
from the HTML and URL standards, not from the code's output."""

from __future__ import annotations

import gzip
import zlib

import pytest
from test_graph_archive_faults import http, page, record, run, write

PAGE = "http://docs.test/dir/page.html"


def links(edges: list[dict[str, str]]) -> list[tuple[str, str]]:
    return [(e["path"], e["target_original"]) for e in edges]


def test_srcset_candidates_and_svg_links_are_links(tmp_path, capsys):
    html = (
        '<img src="a.png" srcset="b.png 1x, c,d.png 2x,/e.png 100w,, f.png (a, b) 3x">'
        '<picture><source srcset=" g.webp "></picture><link rel=preload as=image imagesrcset="h.png 2x">'
        '<svg><a xlink:href="svg-x.html"><text>x</text></a><a href="svg-h.html" xlink:href="not-this.html"/>'
        '<image href="i.svg"/></svg><a xlink:href="html-a-has-no-xlink.html">not a link</a>'
    )
    archive = write(tmp_path / "s.warc.gz", [page(PAGE, html)])
    code, err, bad, edges = run(capsys, tmp_path, archive, "--rung", "string")
    assert code == 0 and not bad
    assert links(edges) == [
        ("IMG@/src", "http://docs.test/dir/a.png"),
        ("IMG@/srcset", "http://docs.test/dir/b.png"),
        ("IMG@/srcset", "http://docs.test/dir/c,d.png"),  # a comma inside a URL, not at its end
        ("IMG@/srcset", "http://docs.test/e.png"),
        ("IMG@/srcset", "http://docs.test/dir/f.png"),  # a comma inside parentheses is a descriptor's
        ("SOURCE@/srcset", "http://docs.test/dir/g.webp"),
        ("LINK@/imagesrcset", "http://docs.test/dir/h.png"),
        ("A@/xlink:href", "http://docs.test/dir/svg-x.html"),
        ("A@/href", "http://docs.test/dir/svg-h.html"),  # SVG 2: href wins over xlink:href
        ("IMAGE@/href", "http://docs.test/dir/i.svg"),
    ]


def test_the_charset_a_browser_decodes_with(tmp_path, capsys):
    """A byte-order mark beats the HTTP charset, which beats <meta>; WHATWG labels Python spells otherwise."""
    path = "/dir/caf\u00e9"
    records = [
        # BOM: UTF-8 whatever the header says, so the path is é, not Ã©
        record("response", "http://docs.test/1", http(200, b"\xef\xbb\xbf<a href='" + path.encode() + b"'>x</a>",
                                                       "Content-Type: text/html; charset=iso-8859-1")),
        # the header's windows-1252 wins over the document's <meta charset=utf-8>
        record("response", "http://docs.test/2", http(200, f'<meta charset="utf-8"><a href="{path}">x</a>'.encode("cp1252"),
                                                       "Content-Type: text/html; charset=windows-1252")),
        # EUC-KR (the WHATWG decoder is windows-949) and UTF-16LE documents, read rather than refused
        record("response", "http://docs.test/3", http(200, '<a href="/\ud55c">x</a>'.encode("cp949"),
                                                       "Content-Type: text/html; charset=EUC-KR")),
        record("response", "http://docs.test/4", http(200, '<a href="/\u00e9t\u00e9">x</a>'.encode("utf-16-le"),
                                                       "Content-Type: text/html; charset=utf-16le")),
        # a <meta> that says UTF-16 means UTF-8 (WHATWG "prescan")
        record("response", "http://docs.test/5", http(200, '<meta charset="utf-16"><a href="/\u00fc">x</a>'.encode(),
                                                       "Content-Type: text/html")),
    ]
    archive = write(tmp_path / "c.warc.gz", records)
    code, err, bad, edges = run(capsys, tmp_path, archive)
    assert code == 0 and not bad, err
    assert [(e["source"], e["target"]) for e in edges] == [
        ("http://docs.test/1", "http://docs.test/dir/caf%C3%A9"),
        ("http://docs.test/2", "http://docs.test/dir/caf%C3%A9"),
        ("http://docs.test/3", "http://docs.test/%ED%95%9C"),
        ("http://docs.test/4", "http://docs.test/%C3%A9t%C3%A9"),
        ("http://docs.test/5", "http://docs.test/%C3%BC"),
    ]


def test_bodies_as_servers_send_them_and_archivers_store_them(tmp_path, capsys):
    def html(name: str) -> bytes:
        return f'<a href="{name}.html">x</a>'.encode()

    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    records = [
        record("response", "http://docs.test/gzip", http(200, gzip.compress(html("gz")), "Content-Type: text/html",
                                                          "Content-Encoding: gzip")),
        record("response", "http://docs.test/zlib", http(200, zlib.compress(html("zl")), "Content-Type: text/html",
                                                          "Content-Encoding: deflate")),
        # raw deflate under "deflate": wrong by RFC 9110, read by every browser
        record("response", "http://docs.test/raw", http(200, raw.compress(html("raw")) + raw.flush(),
                                                         "Content-Type: text/html", "Content-Encoding: deflate")),
        record("response", "http://docs.test/chunked", http(200, b"17\r\n" + html("ch") + b"\r\n0\r\n\r\n",
                                                             "Content-Type: text/html", "Transfer-Encoding: chunked")),
        # a chunked header kept over a body the archiver stored de-chunked (warcio reads it as is)
        record("response", "http://docs.test/dechunked", http(200, html("dc"), "Content-Type: text/html",
                                                               "Transfer-Encoding: chunked")),
        record("response", "http://docs.test/h2", b"HTTP/2 200\r\ncontent-type: text/html\r\n\r\n" + html("h2")),
        # a resource record is the document itself, typed by the record's Content-Type
        record("resource", "http://docs.test/res", html("res"), content_type="text/html; charset=utf-8"),
        record("resource", "http://docs.test/pic", b"\x89PNG\r\n", content_type="image/png"),
        # a revisit of /gzip an hour later: the same links, at its own date (the same edge, merged)
        record("revisit", "http://docs.test/gzip", b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
               b"Content-Encoding: gzip\r\n\r\n", "2024-03-01T13:00:00Z", "",
               "WARC-Refers-To-Target-URI: http://docs.test/gzip", "WARC-Refers-To-Date: 2024-03-01T12:00:00Z"),
    ]
    archive = write(tmp_path / "b.warc.gz", records)
    code, err, bad, edges = run(capsys, tmp_path, archive)
    assert code == 0 and not bad, err
    assert [(e["source"], e["target"]) for e in edges] == [
        ("http://docs.test/gzip", "http://docs.test/gz.html"),
        ("http://docs.test/zlib", "http://docs.test/zl.html"),
        ("http://docs.test/raw", "http://docs.test/raw.html"),
        ("http://docs.test/chunked", "http://docs.test/ch.html"),
        ("http://docs.test/dechunked", "http://docs.test/dc.html"),
        ("http://docs.test/h2", "http://docs.test/h2.html"),
        ("http://docs.test/res", "http://docs.test/res.html"),
    ]
    assert "resources that are not HTML" in err and "revisit" not in err
    assert "duplicate edges merged               1" in err


@pytest.mark.parametrize("whole_file", [False, True])
def test_a_location_is_split_at_line_ends_only_and_read_as_utf8(tmp_path, capsys, whole_file):
    """0x85 (NEL) and 0x0B are no HTTP line ends: a Location holding the UTF-8 of Å (C3 85) stays whole;
    one holding bytes that are not UTF-8 is a counted bad link, never a guess."""
    records = [
        record("response", "http://docs.test/a", b"HTTP/1.1 301 Moved\r\nLocation: /\xc3\x85ngstr\xc3\xb6m\r\n\r\n"),
        record("response", "http://docs.test/b", b"HTTP/1.1 301 Moved\r\nLocation: /x\x0by\r\n\r\n"),
        record("response", "http://docs.test/c", b"HTTP/1.1 301 Moved\r\nLocation: /caf\xe9\r\n\r\n"),
    ]
    archive = tmp_path / "r.warc.gz"
    if whole_file:
        archive.write_bytes(gzip.compress(b"".join(records)))
    else:
        write(archive, records)
    code, err, bad, edges = run(capsys, tmp_path, archive, "--redirects", "edges")
    assert [(e["source"], e["target"]) for e in edges] == [("http://docs.test/a", "http://docs.test/%C3%85ngstr%C3%B6m"),
                                                            ("http://docs.test/b", "http://docs.test/x%0By")]
    assert code == 1 and [row["source"] for row in bad] == ["http://docs.test/c"]
    assert bad[0]["path"] == "REDIRECT@/301" and bad[0]["offset"]


def test_store_learn_reads_the_same_location(tmp_path, capsys):
    from scrapy_iri._cli import main
    from scrapy_iri.store import open_store

    archive = write(tmp_path / "r.warc.gz", [
        record("response", "http://docs.test/a", b"HTTP/1.1 301 Moved\r\nLocation: /\xc3\x85ngstr\xc3\xb6m\r\n\r\n"),
        record("response", "http://docs.test/c", b"HTTP/1.1 301 Moved\r\nLocation: /caf\xe9\r\n\r\n"),
    ])
    uri = f"sqlite:///{tmp_path / 's.db'}"
    assert main(["store", "--store", uri, "learn", str(archive)]) == 1  # /c: a Location that is not UTF-8
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "bad records\t1" in captured.out
    store = open_store(uri, create=False)
    try:
        aliases = [(e["source"], e["target"]) for e in store.export() if e["type"] == "alias"]
    finally:
        store.close()
    assert aliases == [("http://docs.test/a", "http://docs.test/%C3%85ngstr%C3%B6m")]


def test_a_directory_names_and_counts_the_files_it_does_not_read(tmp_path, capsys):
    from scrapy_iri._cli import main

    directory = tmp_path / "crawl"
    directory.mkdir()
    write(directory / "a.warc.gz", [page(PAGE, '<a href="x.html">x</a>')])
    (directory / "a.cdx").write_text(" CDX N b a m s k r M S V g\n")
    (directory / "empty.warc").write_bytes(b"")
    assert main(["graph", str(directory), str(tmp_path / "out.csv")]) == 0
    err = capsys.readouterr().err
    assert "2 files in" in err and "a.cdx" in err and "empty.warc" in err
    assert "files that are not WARC or WAT" in err and "Traceback" not in err


def test_wat_records_as_common_crawl_writes_them(tmp_path, capsys):
    """Common Crawl's WAT writer (ia-web-commons' HTMLMetaData) puts every <link> under Head.Link and every
    <script src> under Head.Scripts, CSS url()s of <style> blocks in Links with an "href" key
    (path STYLE/#text), and leaves out a list that would be empty."""
    import json

    def wat(uri: str, html_metadata: dict) -> bytes:
        envelope = {
            "WARC-Header-Metadata": {"WARC-Type": "response", "WARC-Target-URI": uri, "WARC-Date": "2024-03-01T12:00:00Z"},
            "Payload-Metadata": {"HTTP-Response-Metadata": {
                "Response-Message": {"Status": "200"}, "HTML-Metadata": html_metadata}},
        }
        return record("metadata", uri, json.dumps({"Envelope": envelope}).encode(), content_type="application/json")

    archive = write(tmp_path / "cc.wat.gz", [
        wat("http://docs.test/p", {
            "Head": {"Title": "t", "Base": "/b/",
                     "Link": [{"path": "LINK@/href", "url": "style.css", "rel": "stylesheet"}],
                     "Scripts": [{"path": "SCRIPT@/src", "url": "/app.js", "type": "module"}]},
            "Links": [{"path": "A@/href", "url": "q.html", "text": "q"},
                      {"path": "STYLE/#text", "href": "bg.png"}],
        }),
        wat("http://docs.test/only-head", {"Head": {"Scripts": [{"path": "SCRIPT@/src", "url": "s.js"}]}}),
        wat("http://docs.test/none", {"Head": {"Title": "nothing to follow"}}),
    ])
    code, err, bad, edges = run(capsys, tmp_path, archive)
    assert code == 0 and not bad, err
    assert [(e["source"], e["path"], e["target"]) for e in edges] == [
        ("http://docs.test/p", "LINK@/href", "http://docs.test/b/style.css"),
        ("http://docs.test/p", "SCRIPT@/src", "http://docs.test/app.js"),
        ("http://docs.test/p", "A@/href", "http://docs.test/b/q.html"),
        ("http://docs.test/p", "STYLE/#text", "http://docs.test/b/bg.png"),
        ("http://docs.test/only-head", "SCRIPT@/src", "http://docs.test/s.js"),
    ]


def test_a_redirect_that_cannot_be_learned_is_counted_apart(tmp_path, capsys):
    """Redirects are no links by default; one without a usable Location teaches nothing either: the
    summary says so apart from the others, and the protocol rung's learning pass reports it as a bad row."""
    records = [
        record("response", "http://docs.test/a", b"HTTP/1.1 301 Moved\r\nLocation: /b\r\n\r\n"),
        record("response", "http://docs.test/c", b"HTTP/1.1 301 Moved\r\nLocation: /caf\xe9\r\n\r\n"),
        record("response", "http://docs.test/d", b"HTTP/1.1 308 Moved\r\n\r\n"),
    ]
    archive = write(tmp_path / "r.warc.gz", records)
    code, err, bad, edges = run(capsys, tmp_path, archive, "--rung", "protocol")
    member = [len(gzip.compress(r)) for r in records]  # one gzip member per record: offsets are their sums
    assert code == 1 and not edges
    assert [(row["file"], int(row["offset"])) for row in bad] == [(str(archive), member[0]),
                                                                  (str(archive), member[0] + member[1])]
    assert "Location '/caf\\udce9' is not an IRI reference" in bad[0]["reason"]
    assert bad[1]["reason"] == "a 308 redirect without a Location"
    lines = dict(line.strip().rsplit(None, 1) for line in err.splitlines() if line.startswith("    "))
    lines = {label.strip(): count for label, count in lines.items()}
    assert lines == {"redirects (not links)": "1", "redirects without a usable Location": "2"}


def test_a_record_whose_uri_has_no_scheme_is_bad_and_other_schemes_are_counted_by_scheme(tmp_path, capsys):
    archive = write(tmp_path / "u.warc.gz", [
        record("response", "/relative/x", http(200, b"<a href=x>x</a>", "Content-Type: text/html")),
        record("response", "dns:example.com", b"20240301120000\nexample.com. 300 IN A 127.0.0.1\n"),
        record("resource", "metadata://gnu.org/software/wget/warc/wget.log", b"log", content_type="text/plain"),
    ])
    code, err, bad, edges = run(capsys, tmp_path, archive)
    assert code == 1 and [row["reason"] for row in bad] == [
        "WARC-Target-URI '/relative/x' is not an absolute URI (no scheme)"]
    assert "responses not over HTTP (dns scheme)" in err and "resources not over HTTP (metadata scheme)" in err
