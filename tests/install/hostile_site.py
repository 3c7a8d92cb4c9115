"""A hostile little site on 127.0.0.1 for the user crawls: ``python hostile_site.py`` prints its port.

Each answer is chosen to trip a crawler: an empty query beside the same
path without one, fragments, ``data:``/``mailto:``/``javascript:`` links, a
``<base href>``, queries in windows-1251 and Shift_JIS pages, redirects with
relative, space-holding, non-ASCII, scheme-relative and missing ``Location``,
a 301 to itself, a redirect loop, a resource that alternates 301 and 200,
302/307/308 (a POST through 308), two forms posting different bodies to one
URL, a meta refresh, a ``robots.txt`` rule, huge headers, a slow answer, a
1 MB link and IDN links to other hosts. ``GET /__counts`` returns every
request received as ``[method, target, body, times]``; ``GET /__reset``
clears them. ``GET /__pages`` changes the site: from then on every
redirect (``/r/...``) answers 200 with a page of its own, as when a site
removes its redirects between two crawls; ``/__reset`` brings them back.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BIG = "x" * (1 << 20)


def _page(body: str, charset: str = "utf-8", head: str = "") -> bytes:
    return f"<html><head><meta charset={charset}>{head}</head><body>{body}</body></html>".encode(charset)


INDEX = f"""
<a href="/a.html">a</a> <a href="/a.html#frag">a, a fragment</a> <a href="a.html#">a, an empty fragment</a>
<a href="data:text/html,hi">data</a> <a href="mailto:x@example.com">mail</a> <a href="javascript:void(0)">js</a>
<a href="/b.html?">b, an empty query</a> <a href="/b.html">b</a>
<a href="/base/page.html">a page with a base</a> <a href="/cp1251.html">cp1251</a> <a href="/sjis.html">sjis</a>
<a href="/r/rel">relative</a> <a href="/r/space">space</a> <a href="/r/nonascii">non-ASCII</a>
<a href="/r/schemerel">scheme-relative</a> <a href="/r/missing">no Location</a> <a href="/r/self">to itself</a>
<a href="/r/loopa">loop</a> <a href="/r/alt">alternating</a>
<a href="/r/302">302</a> <a href="/r/307">307</a> <a href="/r/308">308</a>
<a href="/forms.html">forms</a> <a href="/refresh.html">refresh</a> <a href="/private/p.html">robots.txt says no</a>
<a href="/bighead.html">huge headers</a> <a href="/slow.html">slow</a> <a href="/long.html?{BIG}">1 MB</a>
<a href="http://xn--bcher-kva.example/">IDN elsewhere</a> <a href="http://bücher.example/x">IDN elsewhere, Unicode</a>
<a href="HTTP://127.0.0.1:{{port}}/A.html">upper-case scheme, upper-case path</a> <a href="/%61.html">a, escaped</a>
"""

PAGES: dict[str, bytes | tuple[int, bytes | None]] = {
    "/a.html": _page("<a href='/'>home</a>"),
    "/A.html": _page("another page than /a.html"),
    "/b.html": _page("b"),
    "/b.html?": _page("b?, another resource"),
    "/base/page.html": _page('<a href="t.html">t</a> <a href="../u.html">u</a>', head='<base href="/other/">'),
    "/other/t.html": _page("t"),
    "/u.html": _page("u"),
    "/cp1251.html": _page('<a href="/q?w=привет">q</a> <a href="/q?w=мир">q2</a>', charset="windows-1251"),
    "/q?w=%EF%F0%E8%E2%E5%F2": _page("privet"),
    "/q?w=%EC%E8%F0": _page("mir"),
    "/sjis.html": _page('<a href="/s?w=日本">s</a>', charset="shift_jis"),
    "/s?w=%93%FA%96%7B": _page("nihon"),
    "/r/rel": (301, b"t1.html"),
    "/r/t1.html": _page("t1"),
    "/r/space": (301, b"/with space.html"),
    "/with%20space.html": _page("space"),
    "/r/nonascii": (301, "/ü.html".encode()),
    "/%C3%BC.html": _page("u-umlaut"),
    "/r/schemerel": (301, b"//127.0.0.1:{port}/t3.html"),
    "/t3.html": _page("t3"),
    "/r/missing": (301, None),
    "/r/self": (301, b"/r/self"),
    "/r/loopa": (301, b"/r/loopb"),
    "/r/loopb": (301, b"/r/loopa"),
    "/r/302": (302, b"/t302.html"),
    "/t302.html": _page("t302"),
    "/r/307": (307, b"/t307.html"),
    "/t307.html": _page("t307"),
    "/r/308": (308, b"/t308.html"),
    "/t308.html": _page("t308"),
    "/t-alt.html": _page("where /r/alt points when it redirects"),
    "/forms.html": _page(
        '<form method=post action="/submit"><input name=k value=1></form>'
        '<form method=post action="/submit"><input name=k value=2></form>'
        '<form method=post action="/submit308"><input name=k value=3></form>'
    ),
    "/submit": _page("posted"),
    "/submit308": (308, b"/submitted"),
    "/submitted": _page("posted through a 308"),
    "/refresh.html": _page("", head='<meta http-equiv="refresh" content="0; url=/refreshed.html">'),
    "/refreshed.html": _page("refreshed"),
    "/private/p.html": _page("private"),
    "/robots.txt": b"User-agent: *\nDisallow: /private/\n",
    "/bighead.html": _page("huge headers"),
    "/slow.html": _page("slow"),
    f"/long.html?{BIG}": _page("1 MB"),
}

#: what each spider style must request, (method, target, body) -> times, robots.txt aside: every resource
#: once; "/" twice (Scrapy's start requests are ``dont_filter``); the 1 MB link is dropped by Scrapy's
#: ``UrlLengthMiddleware``; /private/ by robots.txt; the redirect loops and the 301 without Location stop.
TRUTH = {
    ("GET", path, ""): 1
    for path in [
        "/a.html", "/A.html", "/b.html", "/b.html?", "/base/page.html", "/other/t.html", "/u.html", "/cp1251.html",
        "/q?w=%EF%F0%E8%E2%E5%F2", "/q?w=%EC%E8%F0", "/sjis.html", "/s?w=%93%FA%96%7B", "/r/rel", "/r/t1.html",
        "/r/space", "/with%20space.html", "/r/nonascii", "/%C3%BC.html", "/r/schemerel", "/t3.html", "/r/missing",
        "/r/self", "/r/loopa", "/r/loopb", "/r/alt", "/t-alt.html", "/r/302", "/t302.html", "/r/307", "/t307.html",
        "/r/308", "/t308.html", "/forms.html", "/refresh.html", "/refreshed.html", "/bighead.html", "/slow.html",
    ]
} | {("GET", "/", ""): 2, ("POST", "/submit", "k=1"): 1, ("POST", "/submit", "k=2"): 1,
     ("POST", "/submit308", "k=3"): 1, ("POST", "/submitted", "k=3"): 1}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    counts: Counter = Counter()
    alternations: Counter = Counter()
    changed: set = set()
    lock = threading.Lock()

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path == "/__counts":
            data = [[m, p, b, n] for (m, p, b), n in self.counts.items()]
            return self._send(200, json.dumps(data).encode(), ctype="application/json")
        if self.path == "/__reset":
            with self.lock:
                self.counts.clear()
                self.alternations.clear()
                self.changed.clear()
            return self._send(200, b"ok")
        if self.path == "/__pages":
            self.changed.add("pages")
            return self._send(200, b"ok")
        with self.lock:
            self.counts[(method, self.path, body.decode("latin-1"))] += 1
        port = self.server.server_address[1]
        if self.path == "/":
            return self._send(200, _page(INDEX.replace("{port}", str(port))))
        if self.path == "/slow.html":
            time.sleep(1)
        if self.changed and self.path.startswith("/r/"):
            return self._send(200, _page(f"{self.path}, a page now"))
        if self.path == "/r/alt":
            with self.lock:
                self.alternations[self.path] += 1
                odd = self.alternations[self.path] % 2
            return self._send(301, b"", location=b"/t-alt.html") if odd else self._send(200, _page("alt page"))
        answer = PAGES.get(self.path)
        if answer is None:
            return self._send(404, b"not found")
        if isinstance(answer, tuple):
            status, location = answer
            return self._send(status, b"", location=location.replace(b"{port}", str(port).encode()) if location else None)
        extra = [(f"X-Big-{i}", "y" * 8000) for i in range(40)] if self.path == "/bighead.html" else []
        self._send(200, answer, extra=extra, ctype="text/plain" if self.path == "/robots.txt" else "text/html")

    def _send(self, status: int, body: bytes, location: bytes | None = None, extra=(), ctype: str = "text/html") -> None:
        self.send_response(status)
        if location is not None:
            self.send_header("Location", location.decode("latin-1"))  # the bytes as given
        for name, value in extra:
            self.send_header(name, value)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self._answer("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._answer("POST")


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
