"""Debian's nginx on loopback, serving python3-doc's HTML with the alias conventions it implements itself.

nginx runs as a process of the test (its own configuration, pid and logs
in a temporary directory; no system service). Its conventions:

* ``http://`` (any host) answers 301 to ``https://docs.test`` (same path);
* ``www.docs.test`` answers 301 to ``https://docs.test`` (same path);
* ``old.docs.test`` answers 302 (temporary) to ``https://docs.test``;
* a directory without its slash answers 301 to the slash (nginx's own);
* ``DIR/index.html`` answers 301 to ``DIR/``;
* HTTPS with a self-signed certificate, on a second port.

nginx's ``sub_filter`` adds to each page a footer of links to the alias
forms of its own URL, so a crawl meets them. wget reaches the named hosts
through proxies: nginx itself for ``http://`` (it reads the absolute URL
of a proxy request), a small CONNECT tunnel to nginx's TLS port for
``https://``. :func:`document` is the ground truth: the file a URL shows.
"""

from __future__ import annotations

import select
import shutil
import socket
import socketserver
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

DOCS = Path("/usr/share/doc/python3-doc/html")
HOST, WWW, TEMPORARY = "docs.test", "www.docs.test", "old.docs.test"
SECTION = "tutorial"
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)

# the footer nginx adds (``$uri``: the path served; ``$directory``: its directory without the slash)
FOOTER = (
    '<p class="aliases"><a href="http://www.docs.test$uri">www</a> <a href="https://www.docs.test$uri">www</a> '
    '<a href="http://old.docs.test$uri">old</a> <a href="http://docs.test$uri">http</a> '
    '<a href="https://docs.test$directory">directory</a></p></body>'
)

CONFIG = """\
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 128; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    types {{ text/html html; text/css css; application/javascript js; image/png png; }}
    default_type application/octet-stream;
    charset utf-8;
    port_in_redirect off;
    ssl_certificate {tmp}/cert.pem;
    ssl_certificate_key {tmp}/key.pem;
    map $uri $directory {{ ~^(?<up>.*)/[^/]*$ $up; }}
    server {{
        listen 127.0.0.1:{http} default_server;
        server_name {host} {www};
        return 301 https://{host}$request_uri;
    }}
    server {{
        listen 127.0.0.1:{http};
        listen 127.0.0.1:{https} ssl;
        server_name {temporary};
        return 302 https://{host}$request_uri;
    }}
    server {{
        listen 127.0.0.1:{https} ssl;
        server_name {www};
        return 301 https://{host}$request_uri;
    }}
    server {{
        listen 127.0.0.1:{https} ssl default_server;
        server_name {host};
        root {root};
        index index.html;
        if ($request_uri ~ "^(?<folder>[^?]*/)index\\.html(?<rest>\\?.*)?$") {{
            return 301 https://{host}$folder$rest;
        }}
        sub_filter '</body>' '{footer}';
    }}
}}
"""


def available() -> str | None:
    """Why the nginx test cannot run here, or None."""
    if NGINX is None:
        return "needs Debian's nginx (scripts/test.sh installs it)"
    if shutil.which("openssl") is None:
        return "needs openssl for the self-signed certificate (scripts/test.sh installs it)"
    if not (DOCS / SECTION / "index.html").is_file():
        return "needs Debian's python3-doc (scripts/test.sh installs it)"
    if shutil.which("wget") is None:
        return "needs GNU wget (scripts/test.sh installs it)"
    return None


def document(url: str) -> Path | None:
    """The file ``url`` shows on this site, after its redirects (ground truth from the served files;
    nginx serves a static file whatever the query)."""
    parts = urlsplit(url)
    if (parts.hostname or "").lower() not in (HOST, WWW, TEMPORARY):
        return None
    path = parts.path or "/"
    if path.endswith("/index.html"):
        path = path[: -len("index.html")]
    found = (DOCS / path.lstrip("/")).resolve()
    if found.is_dir():
        found = found / "index.html"
    return found if found.is_file() and DOCS.resolve() in found.parents else None


def served_uri(url: str) -> str:
    """nginx's ``$uri`` for a page served at ``url`` (a directory's index file named)."""
    path = urlsplit(url).path or "/"
    return path + "index.html" if path.endswith("/") else path


def footer(url: str) -> str:
    """The footer nginx adds to the page served at ``url``."""
    uri = served_uri(url)
    return FOOTER.replace("$uri", uri).replace("$directory", uri[: uri.rfind("/")])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Tunnel(socketserver.ThreadingTCPServer):
    """An HTTP CONNECT proxy on 127.0.0.1 that tunnels every ``host:443`` to nginx's TLS port."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, tls_port: int) -> None:
        self.tls_port = tls_port
        super().__init__(("127.0.0.1", 0), _TunnelHandler)


class _TunnelHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        client: socket.socket = self.request
        head = b""
        while b"\r\n\r\n" not in head:
            data = client.recv(4096)
            if not data:
                return
            head += data
        line = head.split(b"\r\n", 1)[0].split()
        if len(line) < 2 or line[0] != b"CONNECT" or not line[1].endswith(b":443"):
            client.sendall(b"HTTP/1.1 405 Not a CONNECT to port 443\r\nContent-Length: 0\r\n\r\n")
            return
        with socket.create_connection(("127.0.0.1", self.server.tls_port)) as upstream:  # type: ignore[attr-defined]
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            ends = [client, upstream]
            while True:
                ready, _, _ = select.select(ends, [], [], 30)
                if not ready:
                    return
                for end in ready:
                    data = end.recv(65536)
                    if not data:
                        return
                    (upstream if end is client else client).sendall(data)


def start_tunnel(https_port: int) -> _Tunnel:
    """The CONNECT tunnel to a server's TLS port, serving in a thread of its own."""
    tunnel = _Tunnel(https_port)
    threading.Thread(target=tunnel.serve_forever, daemon=True).start()
    return tunnel


def stop_server(process: subprocess.Popen[bytes] | None, tunnel: _Tunnel | None) -> None:
    """Stop the tunnel, then the server process (killed if it does not end within 10 s)."""
    if tunnel is not None:
        tunnel.shutdown()
        tunnel.server_close()
    if process is not None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class NginxSite:
    """nginx and the tunnel, started and stopped; ``http_port`` takes proxy requests for ``http://``."""

    def __init__(self, directory: Path) -> None:
        self.tmp = directory
        self.http_port, self.https_port = _free_port(), _free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.tunnel: _Tunnel | None = None

    def __enter__(self) -> NginxSite:
        tmp = self.tmp
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={HOST}",
             "-addext", f"subjectAltName=DNS:{HOST},DNS:{WWW},DNS:{TEMPORARY}",
             "-keyout", str(tmp / "key.pem"), "-out", str(tmp / "cert.pem")],
            check=True, capture_output=True, timeout=60,
        )
        (tmp / "nginx.conf").write_text(CONFIG.format(
            tmp=tmp, http=self.http_port, https=self.https_port, host=HOST, www=WWW, temporary=TEMPORARY,
            root=DOCS, footer=FOOTER,
        ))
        assert NGINX is not None
        self.process = subprocess.Popen(
            [NGINX, "-p", str(tmp), "-e", str(tmp / "error.log"), "-c", str(tmp / "nginx.conf"),
             "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.https_port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    error = self.process.stderr.read().decode() if self.process.stderr else ""
                    raise RuntimeError(f"nginx did not start: {error}")
                time.sleep(0.05)
        self.tunnel = start_tunnel(self.https_port)
        return self

    def __exit__(self, *exc: object) -> None:
        stop_server(self.process, self.tunnel)

    def crawl(self, directory: Path, name: str) -> Path:
        """wget (``--recursive --warc-file --warc-cdx``) from ``http://www.docs.test/tutorial/``."""
        assert self.tunnel is not None
        command = [
            "wget", "--recursive", "--level=inf", "--no-verbose", "--tries=1", "--timeout=10",
            "-e", "robots=off", "-e", "use_proxy=yes",
            "-e", f"http_proxy=http://127.0.0.1:{self.http_port}/",
            "-e", f"https_proxy=http://127.0.0.1:{self.tunnel.server_address[1]}/",
            "--no-check-certificate", "--span-hosts", f"--domains={HOST},{WWW},{TEMPORARY}",
            "--accept-regex", rf"^https?://[^/]+/{SECTION}(/[^?]*)?$",
            "--reject-regex", r"\.(png|js|css|svg|txt)$",
            f"--warc-file={directory / name}", "--warc-cdx",
            "--directory-prefix", str(directory / "files"), "--delete-after",
            f"http://{WWW}/{SECTION}/",
        ]
        subprocess.run(command, check=False, capture_output=True, timeout=600)
        warc = directory / f"{name}.warc.gz"
        assert warc.is_file(), f"wget wrote no {warc}"
        return warc
