"""Pages that Debian's nginx sends gzip-compressed and chunked, with a charset header that contradicts the
page's <meta>, archived by wget (``--compression=gzip --warc-file``): the links a browser follows.

Every expected row is worked out by hand from the pages below (HTML: <base>, entities, srcset, SVG;
URL: RFC 3986 resolution; a query in the document's charset), not taken from the code's output."""

from __future__ import annotations

import csv
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from scrapy_iri._cli import main

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)

INDEX = """<!doctype html><html><head><title>t</title><base href="dir/"></head><body>
<a href=" page.html?a=1&amp;b=2 ">p</a>
<img src="../img/a.png" srcset="../img/b.png 2x, ../img/c,d.png 3x">
<svg><a xlink:href="svg.html"><text>s</text></a></svg>
</body></html>
"""
PAGE = '<html><body><a href="../index.html">up</a> <a href="latin.html">latin</a></body></html>'
# windows-1252 bytes (é is E9) under a <meta> that says UTF-8: the header's charset wins
LATIN = b'<html><head><meta charset="utf-8"></head><body><a href="caf\xe9.html?q=\xe9">x</a></body></html>'

CONFIG = """{user}worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
daemon off;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy; fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
    types {{ text/html html; }}
    gzip on; gzip_types text/html; gzip_min_length 1;
    server {{
        listen 127.0.0.1:{port};
        root {tmp}/site;
        location = /dir/latin.html {{ charset windows-1252; }}
    }}
}}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> tuple[Path, str]:
    if NGINX is None or shutil.which("wget") is None:
        pytest.skip("needs Debian's nginx and GNU wget (scripts/test.sh installs them)")
    tmp = tmp_path_factory.mktemp("nginx-codings")
    (tmp / "site" / "dir").mkdir(parents=True)
    (tmp / "site" / "index.html").write_text(INDEX)
    (tmp / "site" / "dir" / "page.html").write_text(PAGE)
    (tmp / "site" / "dir" / "latin.html").write_bytes(LATIN)
    port = _free_port()
    user = "user root;\n" if os.geteuid() == 0 else ""  # workers that can read the test's own directory
    (tmp / "nginx.conf").write_text(CONFIG.format(tmp=tmp, port=port, user=user))
    server = subprocess.Popen([NGINX, "-c", str(tmp / "nginx.conf"), "-p", str(tmp)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        subprocess.run(["wget", "--recursive", "--level=3", "--no-verbose", "--tries=1", "--timeout=10",
                        "-e", "robots=off", "--compression=gzip", f"--warc-file={tmp / 'w'}",
                        "--directory-prefix", str(tmp / "files"), "--delete-after", f"http://127.0.0.1:{port}/"],
                       check=False, capture_output=True, timeout=120)
    finally:
        server.terminate()
        server.wait(timeout=10)
    warc = tmp / "w.warc.gz"
    assert warc.is_file()
    return warc, f"http://127.0.0.1:{port}"


def test_wget_recorded_compressed_chunked_bodies(archive):
    import gzip

    data = gzip.decompress(archive[0].read_bytes())
    assert b"Content-Encoding: gzip" in data and b"Transfer-Encoding: chunked" in data


def test_the_links_a_browser_follows(archive, tmp_path, capsys):
    warc, origin = archive
    out, bad = tmp_path / "out.csv", tmp_path / "bad.csv"
    assert main(["graph", str(warc), str(out), "--rung", "scheme", "--bad-rows", str(bad)]) == 0
    assert "Traceback" not in capsys.readouterr().err
    with open(out, newline="") as f:
        rows = {(r["source"], r["target"], r["path"]) for r in csv.DictReader(f)}
    index = [
        (f"{origin}/dir/page.html?a=1&b=2", "A@/href"),  # <base href="dir/">, &amp; decoded, spaces stripped
        (f"{origin}/img/a.png", "IMG@/src"),
        (f"{origin}/img/b.png", "IMG@/srcset"),
        (f"{origin}/img/c,d.png", "IMG@/srcset"),
        (f"{origin}/dir/svg.html", "A@/xlink:href"),
    ]
    expected = {(f"{origin}/", target, path) for target, path in index}
    expected |= {
        (f"{origin}/dir/page.html?a=1&b=2", f"{origin}/index.html", "A@/href"),
        (f"{origin}/dir/page.html?a=1&b=2", f"{origin}/dir/latin.html", "A@/href"),
        # windows-1252 per the header: é is U+00E9, %C3%A9 in the path (UTF-8), %E9 in the query
        (f"{origin}/dir/latin.html", f"{origin}/dir/caf%C3%A9.html?q=%E9", "A@/href"),
    }
    expected |= {(f"{origin}/index.html", target, path) for target, path in index}  # the same page, reached again
    assert expected <= rows
    assert {source for source, _, _ in rows} == {f"{origin}/", f"{origin}/dir/page.html?a=1&b=2",
                                                 f"{origin}/dir/latin.html", f"{origin}/index.html"}
