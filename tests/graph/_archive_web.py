"""A documentation site with alias conventions, on loopback, archived by Debian's wget.

The site serves Debian's python3-doc HTML (the tutorial) at ``docs.test``
through an HTTP proxy on 127.0.0.1 (wget sends absolute URLs to it, so any
host name works without DNS). Its conventions, each an alias of a document:

* ``www.docs.test`` answers 301 to the same path on ``docs.test``;
* ``old.docs.test`` answers 302 (temporary) to the same path on ``docs.test``;
* a directory without its slash answers 301 to the slash;
* ``DIR/index.html`` answers 301 to ``DIR/``;
* a path in the wrong case answers 301 to the file's real case.

Each page gets a footer linking to those alias forms, so a crawl records
them. :meth:`DocsSite.document` is the ground truth: the file a URL shows.
"""

from __future__ import annotations

import html
import shutil
import subprocess
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

DOCS = Path("/usr/share/doc/python3-doc/html")
HOST, WWW, TEMPORARY = "docs.test", "www.docs.test", "old.docs.test"
SECTION = "tutorial"


def available() -> str | None:
    """Why the archive tests cannot run here, or None."""
    if not (DOCS / SECTION / "index.html").is_file():
        return "needs Debian's python3-doc (scripts/test.sh installs it)"
    if shutil.which("wget") is None:
        return "needs GNU wget (scripts/test.sh installs it)"
    return None


@dataclass(frozen=True)
class Answer:
    status: int
    location: str | None = None
    file: Path | None = None


class DocsSite:
    """The site's rules: the answer to every URL, and the document a URL ends at."""

    def __init__(self, root: Path = DOCS, section: str = SECTION, www_serves: bool = False) -> None:
        self.root = root.resolve()
        self.section = section
        self.www_serves = www_serves  # the web changed: www answers for itself (200), no longer 301
        self.lowered = {
            "/" + str(path.relative_to(self.root)).lower(): "/" + str(path.relative_to(self.root))
            for path in (self.root / section).rglob("*")
            if path.suffix == ".html" or path.is_dir()
        }

    def answer(self, url: str) -> Answer:
        parts = urlsplit(url)
        host, path = (parts.hostname or "").lower(), parts.path or "/"
        rest = path + (f"?{parts.query}" if parts.query else "")
        if host == WWW and not self.www_serves:
            return Answer(301, f"http://{HOST}{rest}")
        if host == WWW:
            host = HOST
        if host == TEMPORARY:
            return Answer(302, f"http://{HOST}{rest}")
        if host != HOST or not path.startswith("/"):  # (www serving for itself is read as the apex)
            return Answer(404)
        if path.endswith("/index.html"):
            return Answer(301, f"http://{HOST}{path[: -len('index.html')]}")
        local = (self.root / path.lstrip("/")).resolve()
        area = (self.root / self.section).resolve()
        if not str(local).startswith(str(area).rstrip("/") + "/") and local != area:
            real = self.lowered.get(path.lower().rstrip("/"))
            return Answer(301, f"http://{HOST}{real}") if real is not None else Answer(404)
        if local.is_dir():
            if not path.endswith("/"):
                return Answer(301, f"http://{HOST}{path}/")
            index = local / "index.html"
            return Answer(200, file=index) if index.is_file() else Answer(404)
        if local.is_file() and "/" + str(local.relative_to(self.root)) == path.rstrip("/"):
            return Answer(200, file=local)
        real = self.lowered.get(path.lower().rstrip("/"))
        if real is not None and real != path:
            return Answer(301, f"http://{HOST}{real}")
        return Answer(404)

    def document(self, url: str) -> Path | None:
        """The file ``url`` shows after its redirects (ground truth), or None."""
        for _ in range(10):
            answer = self.answer(url)
            if answer.location is None:
                return answer.file
            url = answer.location
        return None

    def footer(self, path: str) -> bytes:
        """Links to the alias forms of the page at ``path`` (and of its directory)."""
        directory = path[: path.rfind("/") + 1]
        hrefs = [
            f"http://{WWW}{path}",
            f"http://{TEMPORARY}{path}",
            path[:1] + path[1:].upper() if path.endswith(".html") else None,
            directory.rstrip("/"),
            directory + "index.html",
        ]
        links = "".join(f'<a href="{html.escape(h)}">alias</a> ' for h in hrefs if h)
        return f'<p class="aliases">{links}</p>'.encode()


class _Handler(BaseHTTPRequestHandler):
    site: DocsSite
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        url = self.path if "://" in self.path else f"http://{self.headers.get('Host', HOST)}{self.path}"
        answer = self.site.answer(url)
        body = b""
        if answer.file is not None:
            body = answer.file.read_bytes()
            if answer.file.suffix == ".html":
                path = urlsplit(url).path
                body = body.replace(b"</body>", self.site.footer(path) + b"</body>", 1)
        elif answer.status == 404:
            body = b"<html><body>not found</body></html>"
        self.send_response(answer.status)
        if answer.location is not None:
            self.send_header("Location", answer.location)
        kind = "text/html; charset=utf-8"
        if answer.file is not None and answer.file.suffix != ".html":
            kind = {".css": "text/css", ".js": "application/javascript", ".png": "image/png"}.get(
                answer.file.suffix, "application/octet-stream"
            )
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server:
    """The site's proxy on 127.0.0.1, in a thread."""

    def __init__(self, site: DocsSite) -> None:
        handler = type("Handler", (_Handler,), {"site": site})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def crawl(site: DocsSite, directory: Path, name: str, *extra: str) -> Path:
    section = site.section
    """Archive the site with wget (``--warc-file``, ``--warc-cdx``): the path of ``name.warc.gz``."""
    directory.mkdir(parents=True, exist_ok=True)
    with Server(site) as server:
        proxy = f"http://127.0.0.1:{server.port}/"
        command = [
            "wget", "--recursive", "--level=inf", "--no-verbose", "--tries=1", "--timeout=10",
            "-e", "robots=off", "-e", "use_proxy=yes", "-e", f"http_proxy={proxy}", "--no-check-certificate",
            "--span-hosts", f"--domains={HOST},{WWW},{TEMPORARY}",
            "--accept-regex",
            rf"^http://[^/]+/({section}|{section.upper()})(/[^?]*)?$" if section else r"^http://[^/]+/[^?]*$",
            "--reject-regex", r"\.(png|js|css|svg|txt)$",
            f"--warc-file={directory / name}", "--warc-cdx",
            "--directory-prefix", str(directory / "files"), "--delete-after",
            *extra,
            f"http://{HOST}/{section}/" if section else f"http://{HOST}/",
        ]
        subprocess.run(command, check=False, capture_output=True, timeout=3600)
    warc = directory / f"{name}.warc.gz"
    assert warc.is_file(), f"wget wrote no {warc}"
    return warc
