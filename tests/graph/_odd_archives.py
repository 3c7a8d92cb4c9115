"""A directory of archives with what the engines must agree on: every record kind that gives links or is
skipped, bad records, an empty WARC, a file that is no archive, a whole-file gzip and a plain WARC."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from test_graph_archive_faults import http, page, record


def odd_archive_directory(tmp_path: Path) -> Path:
    directory = tmp_path / "odd"
    directory.mkdir()
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    records = [
        record("warcinfo", "", b"software: hand\r\n"),
        page("http://docs.test/", '<a href="a.html">a</a><img srcset="i.png 1x, j,k.png 2x"><svg><a xlink:href="s"/></svg>'),
        record("response", "http://docs.test/gz", http(200, gzip.compress(b'<a href="/">h</a>'), "Content-Type: text/html",
                                                        "Content-Encoding: gzip")),
        record("response", "http://docs.test/raw", http(200, raw.compress(b'<a href="/r">r</a>') + raw.flush(),
                                                         "Content-Type: text/html", "Content-Encoding: deflate")),
        record("response", "http://docs.test/kr", http(200, '<a href="/\ud55c?q=\ud55c">x</a>'.encode("cp949"),
                                                        "Content-Type: text/html; charset=euc-kr")),
        record("response", "http://www.docs.test/", b"HTTP/1.1 301 Moved\r\nLocation: http://docs.test/\r\n\r\n"),
        record("response", "http://docs.test/loc", b"HTTP/1.1 301 Moved\r\nLocation: /caf\xe9\r\n\r\n"),
        record("resource", "http://docs.test/res", b'<a href="a.html">a</a>', content_type="text/html"),
        record("revisit", "http://docs.test/", b"HTTP/1.1 200 OK\r\n\r\n"),  # naming no record: a bad row
        # a revisit at another URI: the links of the page it refers to, resolved against its own URI
        record("revisit", "http://docs.test/again/", b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n",
               "2024-03-02T00:00:00Z", "", "WARC-Refers-To-Target-URI: http://docs.test/",
               "WARC-Refers-To-Date: 2024-03-01T12:00:00Z"),
        page("http://docs.test/bad", '<base href="http://[oops/"><a href="http://a b/">x</a><a href="ok">y</a>'),
    ]
    (directory / "a.warc.gz").write_bytes(b"".join(gzip.compress(r) for r in records))
    (directory / "b.warc.gz").write_bytes(gzip.compress(b"".join(reversed(records))))
    (directory / "c.warc").write_bytes(b"".join(records[:5]) + records[5][:-40])  # cut off at the end
    (directory / "d.warc").write_bytes(b"")
    (directory / "e.cdx").write_text(" CDX N b a m s k r M S V g\n")
    return directory
