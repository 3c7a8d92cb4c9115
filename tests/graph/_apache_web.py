"""Debian's Apache on loopback, serving git-doc's HTML with the alias conventions of its stock modules.

Apache runs as a process of the test (its own configuration, pid and logs
in a temporary directory; no system service). Its conventions, each made
by a stock module:

* ``http://docs.test`` answers 301 to ``https://docs.test`` (mod_rewrite ``[R=301]``);
* ``www.docs.test`` answers 301 to ``https://docs.test``, over http and https
  (``RedirectMatch permanent``);
* ``old.docs.test`` answers 302 (temporary) to ``https://docs.test`` (``Redirect temp``);
* a directory without its slash answers 301 to the slash (mod_dir's ``DirectorySlash``),
  and a directory serves its ``index.html`` (``DirectoryIndex``);
* ``DIR/index.html`` answers 301 to ``DIR/`` (mod_rewrite on ``THE_REQUEST``);
* a path in the wrong case answers 301 to the file's real case (mod_speling,
  ``CheckSpelling`` with ``CheckCaseOnly``), when one file matches.

The documents are Debian's git-doc, served unchanged; ``/aliases.html``, a
page of the test, links to alias forms of every page. wget reaches the
named hosts through proxies: Apache itself for ``http://`` (it serves an
absolute URL of its own hosts), a CONNECT tunnel (``_nginx_web``'s) to
Apache's TLS port for ``https://``. :func:`document` is the ground truth.
"""

from __future__ import annotations

import html
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from _nginx_web import _free_port, _Tunnel, start_tunnel, stop_server

DOCS = Path("/usr/share/doc/git-doc")
HOST, WWW, TEMPORARY = "docs.test", "www.docs.test", "old.docs.test"
APACHE = shutil.which("apache2") or ("/usr/sbin/apache2" if Path("/usr/sbin/apache2").exists() else None)
MODULES = Path("/usr/lib/apache2/modules")
PAGE = "/aliases.html"

CONFIG = """\
ServerRoot {tmp}
PidFile {tmp}/apache.pid
ErrorLog {tmp}/error.log
LogLevel warn
{user}
LoadModule mpm_event_module {modules}/mod_mpm_event.so
LoadModule authz_core_module {modules}/mod_authz_core.so
LoadModule mime_module {modules}/mod_mime.so
LoadModule dir_module {modules}/mod_dir.so
LoadModule alias_module {modules}/mod_alias.so
LoadModule rewrite_module {modules}/mod_rewrite.so
LoadModule speling_module {modules}/mod_speling.so
LoadModule ssl_module {modules}/mod_ssl.so
LoadModule socache_shmcb_module {modules}/mod_socache_shmcb.so
StartServers 1
ServerLimit 1
ThreadsPerChild 16
MaxRequestWorkers 16
Mutex file:{tmp} default
SSLSessionCache shmcb:{tmp}/ssl_scache(512000)
TypesConfig /etc/mime.types
AddDefaultCharset utf-8
Listen 127.0.0.1:{http}
Listen 127.0.0.1:{https}
ServerName {host}
<Directory />
    AllowOverride None
    Require all denied
</Directory>
<VirtualHost 127.0.0.1:{http}>
    ServerName http://{host}:80
    UseCanonicalName On
    RewriteEngine on
    RewriteRule ^(.*)$ https://{host}$1 [R=301,L]
</VirtualHost>
<VirtualHost 127.0.0.1:{http}>
    ServerName http://{www}:80
    UseCanonicalName On
    RedirectMatch permanent ^/(.*)$ https://{host}/$1
</VirtualHost>
<VirtualHost 127.0.0.1:{http}>
    ServerName http://{temporary}:80
    UseCanonicalName On
    Redirect temp / https://{host}/
</VirtualHost>
<VirtualHost 127.0.0.1:{https}>
    ServerName https://{www}:443
    UseCanonicalName On
    SSLEngine on
    SSLCertificateFile {tmp}/cert.pem
    SSLCertificateKeyFile {tmp}/key.pem
    RedirectMatch permanent ^/(.*)$ https://{host}/$1
</VirtualHost>
<VirtualHost 127.0.0.1:{https}>
    ServerName https://{host}:443
    UseCanonicalName On
    SSLEngine on
    SSLCertificateFile {tmp}/cert.pem
    SSLCertificateKeyFile {tmp}/key.pem
    DocumentRoot {root}
    Alias {page} {pages}{page}
    RewriteEngine on
    RewriteCond %{{THE_REQUEST}} "^GET /([^? ]*/)?index\\.html(\\?[^ ]*)? "
    RewriteRule ^(.*/)?index\\.html$ https://{host}$1 [R=301,L]
    <Directory {root}>
        Require all granted
        Options -Indexes
        DirectoryIndex index.html
        DirectorySlash On
        CheckSpelling On
        CheckCaseOnly On
    </Directory>
    <Directory {pages}>
        Require all granted
    </Directory>
</VirtualHost>
"""


def available() -> str | None:
    """Why the Apache tests cannot run here, or None."""
    if APACHE is None or not (MODULES / "mod_speling.so").is_file():
        return "needs Debian's apache2 (scripts/test.sh installs it)"
    if shutil.which("openssl") is None:
        return "needs openssl for the self-signed certificate (scripts/test.sh installs it)"
    if not (DOCS / "index.html").is_file():
        return "needs Debian's git-doc (scripts/test.sh installs it)"
    if shutil.which("wget") is None:
        return "needs GNU wget (scripts/test.sh installs it)"
    return None


def _served() -> dict[str, str]:
    """Every path Apache serves from git-doc, lowered, to its real spelling (mod_speling's choice)."""
    found: dict[str, list[str]] = {}
    for path in DOCS.rglob("*"):
        if path.is_file():
            real = "/" + str(path.relative_to(DOCS))
            found.setdefault(real.lower(), []).append(real)
    return {low: reals[0] for low, reals in found.items() if len(reals) == 1}


SERVED = _served()


def alias_forms(path: str) -> list[str]:
    """The alias forms of the page at ``path`` the test's page links to."""
    forms = [f"http://{WWW}{path}", f"https://{WWW}{path}", f"http://{TEMPORARY}{path}", f"http://{HOST}{path}"]
    if path.endswith(".html"):
        forms.append(f"https://{HOST}{path[:1]}{path[1:].upper()}")
    return forms


def aliases_page(pattern: str) -> str:
    """``/aliases.html``: links to the alias forms of the top directory, of the subdirectories and of the
    pages whose name matches ``pattern`` (a glob, from the top directory)."""
    hrefs = [f"https://{HOST}/", f"https://{HOST}/index.html", f"http://{WWW}/", f"http://{TEMPORARY}/index.html"]
    for directory in sorted(p for p in DOCS.iterdir() if p.is_dir()):
        name = "/" + directory.name
        hrefs += [f"https://{HOST}{name}", f"https://{HOST}{name.upper()}", f"http://{WWW}{name}/"]
    for page in sorted(DOCS.glob(pattern)):
        hrefs += alias_forms("/" + str(page.relative_to(DOCS)))
    links = "\n".join(f'<a href="{html.escape(h)}">{html.escape(h)}</a>' for h in hrefs)
    return f"<!DOCTYPE html><html><head><title>aliases</title></head><body>\n{links}\n</body></html>\n"


def document(url: str) -> Path | str | None:
    """What ``url`` shows on this site after its redirects (ground truth from the served files): a git-doc
    file, ``PAGE`` for the test's page, or None (a 404, a directory without an index: a 403)."""
    parts = urlsplit(url)
    if (parts.hostname or "").lower() not in (HOST, WWW, TEMPORARY) or parts.port not in (None, 80, 443):
        return None
    path = parts.path or "/"
    if path == PAGE:
        return PAGE
    if path.endswith("/index.html"):
        path = path[: -len("index.html")]
    found = (DOCS / path.lstrip("/")).resolve()
    if not found.exists():
        real = SERVED.get(path.lower().rstrip("/"))
        if real is None:
            lowered = {"/" + p.name.lower(): "/" + p.name for p in DOCS.iterdir() if p.is_dir()}
            real = lowered.get(path.lower().rstrip("/"))
        if real is None:
            return None
        found = (DOCS / real.lstrip("/")).resolve()
    if found.is_dir():
        found = found / "index.html"
    return found if found.is_file() and DOCS.resolve() in found.parents else None


class ApacheSite:
    """Apache and the tunnel, started and stopped; ``http_port`` takes proxy requests for ``http://``."""

    def __init__(self, directory: Path, pattern: str = "git-c*.html") -> None:
        self.tmp, self.pattern = directory, pattern
        self.http_port, self.https_port = _free_port(), _free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.tunnel: _Tunnel | None = None
        self.pages = ""

    def __enter__(self) -> ApacheSite:
        tmp = self.tmp
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={HOST}",
             "-addext", f"subjectAltName=DNS:{HOST},DNS:{WWW},DNS:{TEMPORARY}",
             "-keyout", str(tmp / "key.pem"), "-out", str(tmp / "cert.pem")],
            check=True, capture_output=True, timeout=60,
        )
        # Apache's workers run as www-data when started by root: the test's page lives where they can read it
        self.pages = tempfile.mkdtemp(prefix="scrapy-iri-apache-")
        os.chmod(self.pages, 0o755)
        Path(self.pages, PAGE.lstrip("/")).write_text(aliases_page(self.pattern))
        os.chmod(Path(self.pages, PAGE.lstrip("/")), 0o644)
        user = "User www-data\nGroup www-data" if os.geteuid() == 0 else ""
        (tmp / "apache.conf").write_text(CONFIG.format(
            tmp=tmp, http=self.http_port, https=self.https_port, host=HOST, www=WWW, temporary=TEMPORARY,
            root=DOCS, modules=MODULES, user=user, page=PAGE, pages=self.pages,
        ))
        assert APACHE is not None
        self.process = subprocess.Popen(
            [APACHE, "-d", str(tmp), "-f", str(tmp / "apache.conf"), "-DFOREGROUND"],
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
                    log = (tmp / "error.log").read_text() if (tmp / "error.log").exists() else ""
                    raise RuntimeError(f"apache2 did not start: {error} {log}")
                time.sleep(0.05)
        self.tunnel = start_tunnel(self.https_port)
        return self

    def __exit__(self, *exc: object) -> None:
        stop_server(self.process, self.tunnel)
        if self.pages:
            shutil.rmtree(self.pages, ignore_errors=True)

    def crawl(self, directory: Path, name: str, *extra: str) -> list[Path]:
        """wget (``--recursive --level=1 --warc-file --warc-cdx``) from the test's page: the page, the alias
        forms it links to, their redirects and the pages they end at; the WARC files it wrote, in name order
        (several with ``--warc-max-size``)."""
        assert self.tunnel is not None
        command = [
            "wget", "--recursive", "--level=1", "--no-verbose", "--tries=1", "--timeout=10",
            "-e", "robots=off", "-e", "use_proxy=yes",
            "-e", f"http_proxy=http://127.0.0.1:{self.http_port}/",
            "-e", f"https_proxy=http://127.0.0.1:{self.tunnel.server_address[1]}/",
            "--no-check-certificate", "--span-hosts", f"--domains={HOST},{WWW},{TEMPORARY}",
            "--reject-regex", r"\.(png|js|css|svg|txt)$",
            f"--warc-file={directory / name}", "--warc-cdx",
            "--directory-prefix", str(directory / "files"), "--delete-after",
            *extra,
            f"https://{HOST}{PAGE}",
        ]
        subprocess.run(command, check=False, capture_output=True, timeout=900)
        found = sorted(p for p in directory.iterdir() if p.name.startswith(name) and ".warc" in p.name)
        assert found, f"wget wrote no WARC in {directory}"
        return found
