"""The loopback HTTP proxy that plays every simulated host.

A `socketserver.TCPServer` whose connections run on a bounded thread pool.
It accepts absolute-form requests (``GET http://host/path``: plain HTTP
through a proxy), ``CONNECT host:443`` (answered 200, then TLS is
terminated here with the simulator's own certificate and the origin-form
requests inside the tunnel are served as ``https://host/...``), and
origin-form requests with a ``Host`` header (a plain virtual-host server).
Nothing is ever forwarded: the application object answers everything.
"""

from __future__ import annotations

import logging
import socket
import socketserver
import ssl
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from http.server import BaseHTTPRequestHandler
from typing import Protocol

from .router import SimRequest, SimResponse
from .urls import BadTarget, split_authority

logger = logging.getLogger(__name__)


class Application(Protocol):
    """What the server asks of the simulated web."""

    def handle(self, request: SimRequest) -> SimResponse: ...

    def accepts_tunnel(self, host: str, port: int) -> bool: ...


class ProxyServer(socketserver.TCPServer):
    """TCP server with a bounded worker pool and tracked connections."""

    allow_reuse_address = True
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        app: Application,
        tls: ssl.SSLContext,
        max_connections: int,
        idle_timeout: float,
    ) -> None:
        super().__init__(address, _Handler)
        self.app = app
        self.tls = tls
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self.stopping = False
        self._pool = ThreadPoolExecutor(max_connections, thread_name_prefix="simweb")
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._active = 0

    def process_request(  # type: ignore[override]
        self, request: socket.socket, client_address: object
    ) -> None:
        try:
            self._pool.submit(self._work, request, client_address)
        except RuntimeError:  # the pool is shut down
            self.shutdown_request(request)

    def _work(self, request: socket.socket, client_address: object) -> None:
        with self._lock:
            self._active += 1
        try:
            if not self.stopping:
                self.finish_request(request, client_address)
        except Exception:  # a client went away mid-request: not our problem
            logger.debug("simweb: connection error", exc_info=True)
        finally:
            self.shutdown_request(request)
            with self._lock:
                self._active -= 1

    def crowded(self) -> bool:
        """True when keep-alive should be refused to free worker threads."""
        with self._lock:
            return self.stopping or self._active * 4 > self.max_connections * 3

    def track(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.add(sock)

    def untrack(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)

    def close_all(self) -> None:
        """Stop serving: unblock every connection and wait for the workers."""
        self.stopping = True
        with self._lock:
            sockets = list(self._open)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._pool.shutdown(wait=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "simweb/0.1"
    server: ProxyServer

    def setup(self) -> None:
        self.timeout = self.server.idle_timeout
        super().setup()
        self.tunnel: tuple[str, int] | None = None
        self.server.track(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.untrack(self.connection)
            if self.tunnel is not None:
                self.connection.close()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        logger.debug("simweb: " + format, *args)

    # -- plain requests ----------------------------------------------------------

    def _serve(self) -> None:
        if not self._discard_body():
            return
        words = self.raw_requestline.split()
        raw_target = words[1] if len(words) >= 2 else b"/"
        try:
            request = self._sim_request(raw_target)
        except BadTarget as exc:
            self.send_error(400, str(exc))
            return
        try:
            response = self.server.app.handle(request)
        except Exception:  # a bug in a site declaration or a policy: say so
            logger.exception("simweb: error answering %s", request.url)
            self.send_error(500, "simweb: internal error")
            return
        self._send(response)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_OPTIONS = do_PATCH = _serve

    def _sim_request(self, raw_target: bytes) -> SimRequest:
        headers = {k.lower(): v for k, v in self.headers.items()}
        if not raw_target.startswith(b"/"):  # absolute-form
            request = SimRequest.from_url(raw_target.decode("latin-1"), self.command, headers)
            return replace(request, target=str(request.target).encode("latin-1"))
        if "host" in headers:
            host, port = split_authority(headers["host"])
        elif self.tunnel is not None:
            host, port = self.tunnel[0], None
        else:
            raise BadTarget("origin-form request without a Host header")
        scheme = "https" if self.tunnel is not None else "http"
        return SimRequest(scheme, host, raw_target, port, self.command, headers)

    def _discard_body(self) -> bool:
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            self.send_error(411, "send a Content-Length")
            return False
        length = self.headers.get("Content-Length", "0").strip() or "0"
        if not length.isdigit():
            self.send_error(400, "bad Content-Length")
            return False
        self.rfile.read(int(length))
        return True

    def _send(self, response: SimResponse) -> None:
        self.send_response(response.status)
        for name, value in response.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        if self.server.crowded():
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    # -- CONNECT tunnels -------------------------------------------------------

    def do_CONNECT(self) -> None:
        try:
            host, port = split_authority(self.path)
        except BadTarget:
            host, port = "", None
        if self.tunnel is not None or not host:
            self.close_connection = True
            self.send_error(400, "bad CONNECT request")
            return
        port = 443 if port is None else port
        if not self.server.app.accepts_tunnel(host, port):
            self.close_connection = True
            self.send_error(502, f"simweb: no server for {host}:{port}")
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        try:
            tls = self.server.tls.wrap_socket(self.connection, server_side=True)
        except (ssl.SSLError, OSError):
            logger.debug("simweb: TLS handshake failed for %s", host, exc_info=True)
            self.close_connection = True
            return
        self.server.untrack(self.connection)
        self.connection = tls
        self.server.track(tls)
        self.rfile = tls.makefile("rb")
        self.wfile = tls.makefile("wb")
        self.tunnel = (host, port)
        self.close_connection = False
