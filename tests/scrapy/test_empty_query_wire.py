"""The empty query reaches the server: ``http://h/e?`` is sent as ``GET /e? HTTP/1.1``.

A loopback server written here (it sees the raw request target) serves one
document for ``/e`` and another for ``/e?``. Real crawls with the add-on, by
a ``response.follow`` spider and a ``CrawlSpider``, over http and https, on a
direct connection and through a proxy (for http the server itself, which
then gets absolute targets; for https a ``CONNECT`` tunnel written here):
every document is fetched exactly once, and each callback gets the URL it
asked for.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from scrapy_iri.scrapy._download import has_empty_query, with_question_mark

CHILD = Path(__file__).with_name("wire_child.py")
REPO = Path(__file__).resolve().parents[2]

#: request target -> (document id, the links on it). ``/e`` and ``/e?`` are different documents.
SITE: dict[str, tuple[str, list[str]]] = {
    "/": ("home", ["/e?", "/e", "?", "/f?#top", "/f", "/q?a=1", "/e?"]),
    "/?": ("home-empty", ["/", "/e"]),
    "/e": ("e", ["/e?", "/"]),
    "/e?": ("e-empty", ["/e", "/f?"]),
    "/f": ("f", []),
    "/f?": ("f-empty", ["#top", "?#x"]),
    "/q?a=1": ("q", ["/q?a=1#y"]),
}
#: what a crawl from "/" must send: each target once, except that Scrapy's start requests are
#: ``dont_filter``, so "/" linked back from "/?" and "/e" is fetched once more
WIRE_TRUTH = {target: 1 for target in SITE} | {"/": 2}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        target = self.path
        absolute = target.startswith("http://")  # absolute form: this server is the proxy too
        if absolute:
            target = "/" + target.split("/", 3)[3] if target.count("/") >= 3 else "/"
        with self.server.lock:
            self.server.targets[target] += 1
            self.server.proxied += absolute
        page = SITE.get(target)
        if page is None:
            self.send_error(404)
            return
        doc, links = page
        anchors = "".join(f'<a href="{href}">{doc} {i}</a>' for i, href in enumerate(links))
        body = f"<html><head><title>{doc}</title></head><body>{anchors}</body></html>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.targets: Counter[str] = Counter()
        self.proxied = 0
        self.tunnel: _Tunnel | None = None


class _Tunnel(socketserver.ThreadingTCPServer):
    """An HTTP proxy that only opens ``CONNECT`` tunnels, to ``target`` whatever the request names."""

    daemon_threads = True

    def __init__(self, target: tuple[str, int]) -> None:
        super().__init__(("127.0.0.1", 0), _TunnelHandler)
        self.target = target
        self.connects = 0


class _TunnelHandler(socketserver.StreamRequestHandler):
    server: _Tunnel

    def handle(self) -> None:
        request_line = self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        if not request_line.startswith(b"CONNECT "):
            self.wfile.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        self.server.connects += 1
        upstream = socket.create_connection(self.server.target)
        self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self.wfile.flush()
        pending = self.rfile.peek() if hasattr(self.rfile, "peek") else b""
        if pending:
            upstream.sendall(self.rfile.read(len(pending)))
        threading.Thread(target=_pipe, args=(upstream, self.connection), daemon=True).start()
        _pipe(self.connection, upstream)

def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


@pytest.fixture(scope="module", params=["http", "https"])
def site(request: pytest.FixtureRequest) -> Iterator[tuple[str, _Server]]:
    server = _Server()
    tls = None
    if request.param == "https":
        from simweb.tls import ServerTLS

        tls = ServerTLS(("localhost",))
        server.socket = tls.context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.tunnel = tunnel = _Tunnel(server.server_address)
    threading.Thread(target=tunnel.serve_forever, daemon=True).start()
    server.proxy = (  # type: ignore[attr-defined]
        f"http://127.0.0.1:{tunnel.server_address[1]}" if tls else f"http://127.0.0.1:{server.server_address[1]}"
    )
    try:
        yield f"{request.param}://127.0.0.1:{server.server_address[1]}/", server
    finally:
        tunnel.shutdown()
        tunnel.server_close()
        server.shutdown()
        server.server_close()
        if tls is not None:
            tls.close()


def crawl(server: _Server, spider: str, start: str, *, proxy: bool = False, **settings: Any) -> dict[str, Any]:
    server.targets.clear()
    server.proxied = 0
    assert server.tunnel is not None
    server.tunnel.connects = 0
    with tempfile.TemporaryDirectory(prefix="wire-crawl-") as tmp:
        config = Path(tmp, "config.json")
        config.write_text(
            json.dumps(
                {
                    "spider": spider,
                    "start": start,
                    "settings": {
                        "ADDONS": {"scrapy_iri.Addon": 0},
                        "IRI_STORE": "memory:",
                        "TELNETCONSOLE_ENABLED": False,
                        "REMOTE_CONTROL_ENABLED": False,
                        "LOG_LEVEL": "INFO",
                        "DOWNLOAD_TIMEOUT": 30,
                        **settings,
                    },
                }
            ),
            encoding="utf-8",
        )
        proxies = {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}
        env = {k: v for k, v in os.environ.items() if k.lower() not in proxies}
        if proxy:
            env["http_proxy"] = env["https_proxy"] = server.proxy
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), str(REPO / "tests"), env.get("PYTHONPATH")) if p)
        process = subprocess.run(
            [sys.executable, str(CHILD), str(config)], env=env, capture_output=True, text=True, timeout=120, cwd=tmp
        )
        assert process.returncode == 0, process.stderr[-4000:]
        result = json.loads(Path(tmp, "result.json").read_text(encoding="utf-8"))
    result["log"] = process.stderr
    result["wire"] = dict(server.targets)
    result["through_proxy"] = server.proxied + server.tunnel.connects
    return result


def docs_by_url(result: dict[str, Any], start: str) -> dict[str, str]:
    origin = start.rstrip("/")
    return {page["url"].removeprefix(origin): page["doc"] for page in result["parsed"]}


@pytest.mark.parametrize("route", ["direct", "proxy"])
@pytest.mark.parametrize("spider", ["follow", "rules"])
def test_each_document_is_fetched_once_under_its_own_target(site, spider, route):
    start, server = site
    result = crawl(server, spider, start, proxy=route == "proxy")
    assert bool(result["through_proxy"]) is (route == "proxy")
    assert result["wire"] == WIRE_TRUTH, result["log"][-4000:]
    # each callback got the URL it asked for (the "?" kept, no fragment) and that URL's document
    assert docs_by_url(result, start) == {target: doc for target, (doc, _) in SITE.items()}
    assert len(result["parsed"]) == sum(WIRE_TRUTH.values())
    assert result["stats"].get("iri/download/empty_query") == sum(t.endswith("?") for t in WIRE_TRUTH)
    assert result["stats"].get("log_count/ERROR", 0) == 0, result["log"][-4000:]
    assert "IRIDownloadHandler" not in result["log"]  # no fallback, no handler kept


@pytest.mark.parametrize("handler", ["MismatchedHandler", "LateMismatchHandler"])
def test_on_a_scrapy_it_does_not_know_the_handler_falls_back_with_one_warning(site, handler):
    start, server = site
    handler = f"__main__.{handler}"
    result = crawl(server, "follow", start, DOWNLOAD_HANDLERS={"http": handler, "https": handler})
    assert result["log"].count("cannot keep an empty query on the wire") == 1, result["log"][-4000:]
    # Scrapy's standard way: /e? is sent as /e, the crawl itself is unharmed
    assert result["wire"] == {"/": 3, "/e": 2, "/f": 2, "/q?a=1": 1}, result["log"][-4000:]
    assert result["stats"].get("log_count/ERROR", 0) == 0, result["log"][-4000:]


#: Scrapy's other HTTP handlers -> (the package they need, what the server gets for a crawl from "/")
OTHER_HANDLERS = {
    # yarl drops the "?": /e? is fetched as /e
    "scrapy.core.downloader.handlers._aiohttp.AiohttpDownloadHandler": ("aiohttp", {"/": 3, "/e": 2, "/f": 2, "/q?a=1": 1}),
    # httpx2 keeps it
    "scrapy.core.downloader.handlers._httpx.HttpxDownloadHandler": ("httpx2", WIRE_TRUTH),
}


@pytest.mark.parametrize("handler", list(OTHER_HANDLERS))
def test_a_handler_the_project_chose_is_kept_with_one_warning(site, handler):
    package, wire = OTHER_HANDLERS[handler]
    pytest.importorskip(package)
    start, server = site
    result = crawl(server, "follow", start, DOWNLOAD_HANDLERS={"http": handler, "https": handler})
    assert result["log"].count("so an empty query may not reach the server") == 1, result["log"][-4000:]
    assert result["stats"].get("log_count/ERROR", 0) == 0, result["log"][-4000:]
    assert result["wire"] == wire, result["log"][-4000:]  # what docs/scrapy-plugin.md says of each


@pytest.mark.parametrize(
    ("url", "empty"),
    [
        ("http://h/e?", True),
        ("http://h/e?#f", True),
        ("http://h?", True),
        ("http://h/e", False),
        ("http://h/e#?", False),
        ("http://h/e??", False),
        ("http://h/e?a", False),
        ("http://h/e?#", True),
    ],
)
def test_empty_query_is_a_question_mark_ending_the_url_before_its_fragment(url, empty):
    assert has_empty_query(url) is empty


def test_the_request_target_gets_the_question_mark_once():
    assert with_question_mark(b"/e") == b"/e?"
    assert with_question_mark(b"/e?") == b"/e?"
    assert with_question_mark(b"http://h/e") == b"http://h/e?"


def _handlers_after_addon(caplog: pytest.LogCaptureFixture, **settings: Any) -> dict[str, Any]:
    from scrapy.settings import Settings

    from scrapy_iri import Addon

    configured = Settings()
    configured.setdict({"IRI_RUNG": "scheme", **settings}, priority="project")
    caplog.clear()
    Addon().update_settings(configured)
    handlers = configured.getwithbase("DOWNLOAD_HANDLERS")
    return {scheme: handlers.get(scheme) for scheme in ("http", "https", "ftp")}


OURS = "scrapy_iri.scrapy._download.IRIDownloadHandler"
AIOHTTP = "scrapy.core.downloader.handlers._aiohttp.AiohttpDownloadHandler"
WARNING = "so an empty query may not reach the server"


def test_the_addon_sets_its_handler_for_http_and_https_only(caplog):
    handlers = _handlers_after_addon(caplog)
    assert handlers == {"http": OURS, "https": OURS, "ftp": "scrapy.core.downloader.handlers.ftp.FTPDownloadHandler"}
    assert WARNING not in caplog.text


def test_the_addon_keeps_a_handler_the_project_chose_and_says_so_once(caplog):
    handlers = _handlers_after_addon(caplog, DOWNLOAD_HANDLERS={"https": AIOHTTP})
    assert handlers["http"] == OURS and handlers["https"] == AIOHTTP
    assert caplog.text.count(WARNING) == 1 and "'https'" in caplog.text
    # Scrapy's own handler named explicitly is a choice too
    scrapys = "scrapy.core.downloader.handlers.http11.HTTP11DownloadHandler"
    handlers = _handlers_after_addon(caplog, DOWNLOAD_HANDLERS={"http": scrapys, "https": scrapys})
    assert handlers["http"] == handlers["https"] == scrapys
    assert caplog.text.count(WARNING) == 1


def test_the_addon_leaves_switched_off_schemes_and_its_own_subclasses_alone(caplog):
    mismatched = "wire_child.MismatchedHandler"
    handlers = _handlers_after_addon(caplog, DOWNLOAD_HANDLERS={"http": None, "https": mismatched})
    assert handlers["http"] is None and handlers["https"] == mismatched
    assert WARNING not in caplog.text
