"""`SimulatedWeb`: the declared sites served through one loopback proxy."""

from __future__ import annotations

import ipaddress
import json
import threading
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from .counts import FetchCounts
from .model import Resource, Site
from .router import Router, SimRequest, SimResponse
from .server import ProxyServer
from .tls import ServerTLS
from .urls import normalize_target, u_label_host, wire_host

#: the reserved host of the JSON control endpoint (never a simulated site)
CONTROL_HOST = "simweb.control"


class SimulatedWeb:
    """Many simulated hosts behind one HTTP proxy on 127.0.0.1.

    ``with SimulatedWeb(sites) as web:`` starts the server in a background
    thread; point Scrapy at ``web.proxy_url`` (``web.proxy_env()`` for a
    subprocess, or ``request.meta["proxy"]``). Unknown hosts get a 502 from
    the simulator itself: nothing leaves the machine.
    """

    def __init__(
        self,
        sites: Iterable[Site],
        *,
        address: str = "127.0.0.1",
        port: int = 0,
        max_connections: int = 128,
        idle_timeout: float = 5.0,
    ) -> None:
        if not ipaddress.ip_address(address).is_loopback:
            raise ValueError(f"the simulated web only listens on loopback, not {address}")
        self.router = Router(sites)
        if CONTROL_HOST in self.router.hosts:
            raise ValueError(f"{CONTROL_HOST} is reserved for the control endpoint")
        self.counts = FetchCounts()
        self._address = (address, port)
        self._max_connections = max_connections
        self._idle_timeout = idle_timeout
        self._server: ProxyServer | None = None
        self._thread: threading.Thread | None = None
        self._tls: ServerTLS | None = None
        self._reachable: dict[str, str] | None = None
        self._lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> SimulatedWeb:
        """Bind, generate the certificate and serve in a daemon thread."""
        if self._server is not None:
            return self
        self._tls = ServerTLS(tuple(self.router.hosts))
        self._server = ProxyServer(
            self._address, self, self._tls.context, self._max_connections, self._idle_timeout
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="simweb-accept",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, close every connection, join the threads."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.close_all()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._tls is not None:
            self._tls.close()

    def __enter__(self) -> SimulatedWeb:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- addresses ---------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the simulated web is not running")
        return int(self._server.server_address[1])

    @property
    def proxy_url(self) -> str:
        """``http://127.0.0.1:PORT``: the proxy for both http and https."""
        return f"http://{self._address[0]}:{self.port}"

    @property
    def control_url(self) -> str:
        """Base URL of the JSON control endpoint (reach it through the proxy)."""
        return f"http://{CONTROL_HOST}"

    @property
    def certificate_path(self) -> str:
        """PEM file of the self-signed certificate (a CA file for verifying clients)."""
        if self._tls is None:
            raise RuntimeError("the simulated web is not running")
        return self._tls.certificate_path

    def proxy_env(self) -> dict[str, str]:
        """Environment variables that route a (sub)process through the proxy."""
        proxy = self.proxy_url
        return {
            "http_proxy": proxy,
            "https_proxy": proxy,
            "HTTP_PROXY": proxy,
            "HTTPS_PROXY": proxy,
            "no_proxy": "",
            "NO_PROXY": "",
        }

    # -- the declared web --------------------------------------------------------

    @property
    def sites(self) -> list[Site]:
        return self.router.sites

    def start_urls(self, *sites: str, iri: bool = False) -> list[str]:
        """Start URLs of the named sites (name or host; all when none given).

        ASCII URIs by default; ``iri=True`` shows IDN hosts as Unicode.
        """
        urls = self.router.start_urls(sites)
        if not iri:
            return urls
        return [_unicode_host(url) for url in urls]

    def resource(self, resource_id: str) -> Resource:
        return self.router.resources[resource_id]

    def url_of(self, resource_id: str, scheme: str | None = None) -> str:
        """A URL (ASCII URI) that answers 200 with the resource."""
        resource = self.resource(resource_id)
        host = self.router.resource_hosts[resource_id]
        site = self.router.resource_sites[resource_id]
        https_only = "http" not in site.schemes or any(p.kind == "https" for p in site.policies)
        chosen = scheme or resource.scheme or ("https" if https_only else "http")
        if resource.scheme not in (None, chosen):
            raise ValueError(f"{resource_id} is only served over {resource.scheme}")
        return f"{chosen}://{host}{normalize_target(resource.path)}"

    def reachable(self, start_urls: Iterable[str] | None = None) -> dict[str, str]:
        """Resource id -> URL, for resources a correct crawler reaches."""
        if start_urls is not None:
            return self.router.reachable(start_urls)
        with self._lock:
            if self._reachable is None:
                self._reachable = self.router.reachable()
            return dict(self._reachable)

    def resource_ids(self) -> set[str]:
        """Every resource reachable by following links from the start URLs."""
        return set(self.reachable())

    def traps(self) -> dict[str, set[str]]:
        """Trap name -> ids of its reachable resources."""
        grouped: dict[str, set[str]] = {}
        for resource_id in self.reachable():
            trap = self.resource(resource_id).trap
            if trap:
                grouped.setdefault(trap, set()).add(resource_id)
        return grouped

    def trap_ids(self) -> set[str]:
        """Reachable resources that belong to a trap pair."""
        return {rid for ids in self.traps().values() for rid in ids}

    # -- counters ----------------------------------------------------------------

    def fetches(self, resource_id: str) -> int:
        """How many times the resource was served with status 200."""
        return self.counts.resource(resource_id)

    def fetch_counts(self) -> dict[str, int]:
        """Resource id -> times served (ids never served are absent)."""
        return self.counts.resources()

    def url_counts(self) -> dict[str, int]:
        """Request URL as received (scheme://host[:port]/path?query) -> count."""
        return self.counts.urls()

    def redirects_served(self) -> int:
        return sum(self.counts.redirects().values())

    def redirect_counts(self) -> dict[str, int]:
        """Policy name (``slash``, ``https``, ...) -> redirects it served."""
        return self.counts.redirects()

    def requests_served(self) -> int:
        """Every request answered, errors included (control requests excluded)."""
        return self.counts.requests()

    def status_counts(self) -> dict[int, int]:
        return self.counts.statuses()

    def reset_counts(self) -> None:
        self.counts.reset()

    # -- serving -----------------------------------------------------------------

    def request(
        self, url: str, method: str = "GET", headers: Mapping[str, str] | None = None
    ) -> SimResponse:
        """Answer one request in memory (no socket; counted like a real one)."""
        return self.handle(SimRequest.from_url(url, method, headers))

    def handle(self, request: SimRequest) -> SimResponse:
        """Answer a request as received (the server calls this) and count it."""
        if wire_host(request.host) == CONTROL_HOST:
            return self._control(request)
        response = self.router.route(request)
        self.counts.record(request, response)
        return response

    def accepts_tunnel(self, host: str, port: int) -> bool:
        """Does a ``CONNECT host:port`` reach a simulated HTTPS server?"""
        return self.router.serves(host, "https", None if port == 443 else port)

    def _control(self, request: SimRequest) -> SimResponse:
        target = request.target.decode("latin-1") if isinstance(request.target, bytes) else request.target
        path = target.split("?", 1)[0]
        payload: Any
        if path == "/counts":
            payload = self.counts.snapshot()
        elif path == "/reset":
            self.reset_counts()
            payload = {"ok": True}
        elif path == "/resources":
            payload = {
                "reachable": sorted(self.resource_ids()),
                "traps": {name: sorted(ids) for name, ids in sorted(self.traps().items())},
                "start_urls": self.start_urls(),
            }
        else:
            payload = {"endpoints": ["/counts", "/reset", "/resources"]}
        body = json.dumps(payload, indent=1, sort_keys=True).encode("utf-8")
        return SimResponse(200, [("Content-Type", "application/json")], body)


def _unicode_host(url: str) -> str:
    scheme, _, rest = url.partition("://")
    authority, slash, tail = rest.partition("/")
    host, colon, port = authority.partition(":")
    return f"{scheme}://{u_label_host(host)}{colon}{port}{slash}{tail}"

