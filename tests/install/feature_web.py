"""A small web of named hosts behind one loopback proxy, for crawls of Scrapy's features.

``FeatureWeb(routes)`` answers every request itself through simweb's proxy
server (absolute-form http, ``CONNECT`` tunnels for https with a self-signed
certificate), so hosts may be IDN names, carry ports and use both schemes.
``routes`` maps an absolute URL, exactly as it arrives on the wire
(``http://xn--bcher-kva.example/robots.txt``), to a page (``str`` or
``bytes``: 200 ``text/html``) or to an :class:`Answer`. Everything else is a
404. A host is served whatever its letter case, and with or without its
scheme's default port, as real servers serve it. Every request is counted by method and URL as received; ``routes`` may
be changed between two crawls (a site that changed).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from simweb import SimRequest, SimResponse
from simweb.server import ProxyServer
from simweb.tls import ServerTLS


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: bytes | str = b""
    headers: tuple[tuple[str, str], ...] = ()
    content_type: str = "text/html; charset=utf-8"

    def response(self) -> SimResponse:
        body = self.body.encode("utf-8") if isinstance(self.body, str) else self.body
        return SimResponse(self.status, [("Content-Type", self.content_type), *self.headers], body)


def moved(location: str, status: int = 301) -> Answer:
    return Answer(status, b"", (("Location", location),))


def page(*links: str, head: str = "") -> str:
    """An HTML page linking ``links`` (raw ``href`` values)."""
    anchors = " ".join(f'<a href="{href}">{i}</a>' for i, href in enumerate(links))
    return f"<html><head><meta charset=utf-8>{head}</head><body>{anchors}</body></html>"


@dataclass
class FeatureWeb:
    routes: dict[str, str | bytes | Answer]
    hosts: tuple[str, ...] = ()
    counts: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        names = {url.split("://", 1)[1].split("/", 1)[0].split(":", 1)[0] for url in self.routes}
        self._tls = ServerTLS(tuple(sorted(names | set(self.hosts))))
        self._server = ProxyServer(("127.0.0.1", 0), self, self._tls.context, 64, 5.0)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.close_all()
        self._server.server_close()
        self._thread.join(5)
        self._tls.close()

    def proxy_env(self) -> dict[str, str]:
        proxy = f"http://127.0.0.1:{self._server.server_address[1]}"
        return {"http_proxy": proxy, "https_proxy": proxy, "HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "no_proxy": "", "NO_PROXY": ""}

    def reset(self, routes: Mapping[str, str | bytes | Answer] | None = None) -> None:
        with self._lock:
            self.counts.clear()
            if routes is not None:
                self.routes = dict(routes)

    def fetched(self) -> dict[str, int]:
        """URL as received -> times fetched with GET."""
        with self._lock:
            return {url: n for (method, url), n in self.counts.items() if method == "GET"}

    # -- the proxy server's application

    def handle(self, request: SimRequest) -> SimResponse:
        url = request.url
        default = {"http": 80, "https": 443}.get(request.scheme)
        port = "" if request.port in (None, default) else f":{request.port}"
        target = request.target.decode("latin-1") if isinstance(request.target, bytes) else request.target
        served_as = f"{request.scheme}://{request.host.lower()}{port}{target}"  # a host is served whatever its case
        with self._lock:
            self.counts[(request.method, url)] += 1
            answer = self.routes.get(served_as)
        if answer is None:
            return Answer(404, "<html><body>not here</body></html>").response()
        return (answer if isinstance(answer, Answer) else Answer(200, answer)).response()

    def accepts_tunnel(self, host: str, port: int) -> bool:
        return True
