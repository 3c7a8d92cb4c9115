"""Benchmark of the protocol rung on a real server: Debian's nginx serving Debian's HTML docs.

nginx (Debian's ``nginx`` package, started here as an unprivileged process
with a configuration in a temporary directory, on loopback ports) serves
Debian's Python docs (``python3-doc``, as ``https://docs.test/3/``) and, when
installed, git's (``git-doc``, as ``https://docs.test/git/``), the files as
they are, with the stock conventions of such a site, each a permanent
redirect made by nginx itself:

* ``http://`` -> ``https://`` (a self-signed certificate; Scrapy does not
  verify certificates by default);
* ``www.docs.test`` -> ``docs.test``;
* a slash on a directory (nginx's own: ``/3/library`` -> ``/3/library/``);
* ``index.html`` -> its directory (``/3/library/index.html`` -> ``/3/library/``);
* case fixes (``/3/Library/OS.html`` -> ``/3/library/os.html``: a ``map`` of
  case-insensitive patterns, one per file and directory, as a
  case-insensitive server would answer).

Alias-form backlinks seed the crawl: a page on another host
(``http://links.test/``) links to one file in four in an alias form
stacking some of these (chains of one to four hops), and every 25th of those
is also a start URL. Scrapy reaches the ``.test`` hosts through a small
forwarding proxy on loopback (``http_proxy``/``https_proxy`` in the crawl's
environment, Scrapy's own ``HttpProxyMiddleware``): plain requests go to
nginx's HTTP port, ``CONNECT`` tunnels to its HTTPS port.

Four real Scrapy crawls per concurrency, each in a subprocess, following
every link (Scrapy's ``LinkExtractor``; ``allowed_domains`` keeps the crawl
on ``docs.test`` and ``links.test``): Scrapy's defaults, the add-on at the
scheme rung, at the protocol rung cold (an empty SQLite store) and warm (the
store the cold crawl left). What each fetched is read from nginx's access log:
files served (200) against the ground truth (the files Scrapy's defaults
reached, each checked to be a file of the trees), pages missed, duplicate
fetches beyond Scrapy's own, redirect round trips and the share saved; and
the crawling process's CPU time (user + system, ``getrusage`` of the
children: nginx and the proxy are not in it).

    nice .venv/bin/python benchmarks/realserver_bench.py [--concurrency 8 1] [--set NAME=VALUE] [--profile cold]
    nice .venv/bin/python benchmarks/realserver_bench.py --lookups

``--profile CRAWL...`` runs those crawls' children under cProfile, keeps the
profiles in the temporary directory and prints their top functions (the CPU
figures of profiled crawls are not comparable). ``--lookups`` times the
store's answer for a link alone (no crawl, no server), with the learner's
memo of resolutions and without it, and for the links of every HTML file
replayed in page order (each page's own answer recorded first).

Targets (issue 19): zero pages missed, zero duplicate fetches; the protocol
rung's CPU at most 1.10x the scheme rung's; round trips saved cold >= 50%,
warm >= 90%.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import random
import re
import resource
import select
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))  # the simulated web's spider and certificate maker
sys.path.insert(0, str(HERE))

from crawl_table import compare, crawl_settings, over_scrapy, print_crawls, saved  # noqa: E402

RESULTS = HERE / "results" / "realserver.json"
HOST = "docs.test"
SEED_HOST = "links.test"
#: (URL prefix, directory): the trees served, the Python docs first
TREES = (("/3/", Path("/usr/share/doc/python3-doc/html")), ("/git/", Path("/usr/share/doc/git-doc")))
#: Debian's nginx (in /usr/sbin, which a user's PATH may lack)
NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
#: the access log's format: status, the URL asked for, the file served
LOG_FORMAT = "$status $scheme://$host$request_uri $request_filename"


# -- the site ---------------------------------------------------------------------


def trees() -> list[tuple[str, Path]]:
    """The trees installed (the Python docs are required)."""
    found = [(prefix, path.resolve()) for prefix, path in TREES if path.is_dir()]
    if not found or found[0][0] != "/3/":
        raise SystemExit("realserver_bench: python3-doc is not installed (apt-get install python3-doc)")
    return found


def served_files(tree: list[tuple[str, Path]]) -> dict[str, Path]:
    """URL path -> file, for every HTML or text file of the trees (directories as ``prefix/dir/``)."""
    files: dict[str, Path] = {}
    for prefix, root in tree:
        files[prefix] = root
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_dir():
                files[f"{prefix}{rel}/"] = path
            elif path.suffix in (".html", ".txt"):
                files[prefix + rel] = path
    return files


def _case_variant(rng: random.Random, path: str) -> str:
    words = re.split(r"([/._-])", path)
    return "".join(w[:1].upper() + w[1:] if w.isalpha() and rng.random() < 0.6 else w for w in words)


def alias_form(rng: random.Random, path: str, prefixes: tuple[str, ...]) -> str:
    """A URL of ``path`` (a file or a ``dir/``) stacking some of the site's alias conventions."""
    scheme = "http" if rng.random() < 0.6 else "https"
    host = f"www.{HOST}" if rng.random() < 0.6 else HOST
    prefix = next(p for p in prefixes if path.startswith(p))
    if path.endswith("/"):
        roll = rng.random()
        path = path + "index.html" if roll < 0.4 else path.rstrip("/") if roll < 0.8 else path
    if rng.random() < 0.5 and path.startswith(prefix):
        path = prefix + _case_variant(rng, path[len(prefix) :])
    return f"{scheme}://{host}{path}"


def seed_links(files: dict[str, Path], prefixes: tuple[str, ...], seed: int = 19) -> list[str]:
    """Alias-form backlinks to one file or directory in four (HTML files and directories only)."""
    rng = random.Random(seed)
    targets = [p for p, path in files.items() if p.endswith(".html") or (path / "index.html").is_file()]
    return [alias_form(rng, p, prefixes) for p in targets[::4]]


def _regex(text: str) -> str:
    return re.sub(r"([.+*?()\[\]{}|^$\\])", r"\\\1", text)


def case_map(files: dict[str, Path]) -> list[tuple[str, str]]:
    """(case-insensitive pattern, URL path) for every path whose lower-case form is unique."""
    lower = Counter(p.lower().rstrip("/") for p in files)
    entries = []
    for path in files:
        if lower[path.lower().rstrip("/")] != 1:
            continue  # two paths differ only in case: no fix can choose
        if path.endswith("/"):
            entries.append((f"~*^{_regex(path.rstrip('/'))}/?$", path))
        else:
            entries.append((f"~*^{_regex(path)}$", path))
    return entries


NGINX_CONF = """\
daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    log_format bench '{log_format}';
    access_log {tmp}/access.log bench;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    sendfile on;
    keepalive_requests 100000;
    port_in_redirect off;
    server_name_in_redirect off;
    ssl_certificate {tmp}/cert.pem;
    ssl_certificate_key {tmp}/key.pem;
    map $uri $case_fix {{
        default "";
{case_map}
    }}
    server {{
        listen 127.0.0.1:{http_port};
        server_name {host} www.{host};
        return 301 https://$host$request_uri;
    }}
    server {{
        listen 127.0.0.1:{http_port};
        server_name {seed_host};
        root {tmp}/seed;
    }}
    server {{
        listen 127.0.0.1:{https_port} ssl;
        server_name www.{host};
        return 301 https://{host}$request_uri;
    }}
    server {{
        listen 127.0.0.1:{https_port} ssl default_server;
        server_name {host};
        if ($request_uri ~ "^(?<dir>[^?]*/)index\\.html(?<query>\\?.*)?$") {{
            return 301 $dir$query;
        }}
        root {tmp}/empty;
        error_page 404 = @case;
{locations}
        location @case {{
            if ($case_fix) {{
                return 301 $case_fix$is_args$args;
            }}
            return 404;
        }}
    }}
}}
"""


def nginx_conf(tmp: Path, tree: list[tuple[str, Path]], files: dict[str, Path], ports: tuple[int, int]) -> str:
    locations = "\n".join(
        f"        location {prefix} {{\n            alias {root}/;\n        }}"
        for prefix, root in tree
    )
    entries = "\n".join(f'        "{pattern}" "{path}";' for pattern, path in case_map(files))
    return NGINX_CONF.format(
        tmp=tmp,
        log_format=LOG_FORMAT,
        case_map=entries,
        http_port=ports[0],
        https_port=ports[1],
        host=HOST,
        seed_host=SEED_HOST,
        locations=locations,
    )


def _free_ports(n: int) -> list[int]:
    sockets = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


# -- the forwarding proxy ---------------------------------------------------------


class _Tunnel(socketserver.BaseRequestHandler):
    server: ForwardingProxy

    def handle(self) -> None:
        client = self.request
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(65536)
            if not chunk:
                return
            head += chunk
            if len(head) > 65536:
                return
        line = head.split(b"\r\n", 1)[0].split()
        if len(line) < 2:
            return
        if line[0] == b"CONNECT":
            host = line[1].decode("latin-1").rpartition(":")[0]
            if not self.server.accepts(host):
                client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            upstream = socket.create_connection(("127.0.0.1", self.server.https_port))
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            rest = head.split(b"\r\n\r\n", 1)[1]
        else:
            upstream = socket.create_connection(("127.0.0.1", self.server.http_port))
            rest = head
        with upstream:
            if rest:
                upstream.sendall(rest)
            _splice(client, upstream)


def _splice(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until both sides are done."""
    peers = {a: b, b: a}
    open_ = {a, b}
    while open_:
        readable, _, _ = select.select(list(open_), [], [], 300)
        if not readable:
            return
        for sock in readable:
            try:
                data = sock.recv(262144)
            except OSError:
                data = b""
            if data:
                try:
                    peers[sock].sendall(data)
                except OSError:
                    return
            else:
                open_.discard(sock)
                try:
                    peers[sock].shutdown(socket.SHUT_WR)
                except OSError:
                    pass


class ForwardingProxy(socketserver.ThreadingTCPServer):
    """An HTTP proxy on loopback that forwards requests for the ``.test`` hosts to nginx."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, http_port: int, https_port: int) -> None:
        super().__init__(("127.0.0.1", 0), _Tunnel)
        self.http_port, self.https_port = http_port, https_port

    @staticmethod
    def accepts(host: str) -> bool:
        return host in (HOST, f"www.{HOST}", SEED_HOST)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


# -- nginx --------------------------------------------------------------------------


@dataclass
class Site:
    """nginx and the proxy, running; what they serve; the access log read so far."""

    tmp: Path
    files: dict[str, Path]
    starts: list[str]
    proxy: ForwardingProxy
    nginx: subprocess.Popen[bytes]
    log_offset: int = 0
    by_file: dict[str, str] = field(default_factory=dict)

    def proxy_env(self) -> dict[str, str]:
        url = self.proxy.url
        return {"http_proxy": url, "https_proxy": url, "HTTP_PROXY": url, "HTTPS_PROXY": url, "no_proxy": ""}

    def mark(self) -> None:
        """Start counting: what the access log says from now on is the next crawl's."""
        self.log_offset = (self.tmp / "access.log").stat().st_size

    def counts(self) -> dict[str, Any]:
        """What nginx served since :meth:`mark`: files (200) by URL path, redirects, other answers."""
        time.sleep(0.2)
        with open(self.tmp / "access.log", "rb") as log:
            log.seek(self.log_offset)
            lines = log.read().decode("utf-8", "replace").splitlines()
        files: Counter[str] = Counter()
        redirects = others = 0
        seed = 0
        for line in lines:
            status, url, filename = (line.split(" ", 2) + ["", ""])[:3]
            if url.startswith(f"http://{SEED_HOST}/"):
                seed += 1
            elif status.startswith("3"):
                redirects += 1
            elif status == "200":
                files[self.by_file.get(filename, "?" + filename)] += 1
            else:
                others += 1
        return {"files": files, "redirects": redirects, "others": others, "requests": len(lines), "seed": seed}


@contextmanager
def running_site(seed_every: int = 25) -> Iterator[Site]:
    from simweb.tls import make_certificate

    tree = trees()
    files = served_files(tree)
    prefixes = tuple(prefix for prefix, _ in tree)
    links = seed_links(files, prefixes)
    tmp = Path(tempfile.mkdtemp(prefix="realserver-bench-"))
    try:
        cert, key = make_certificate((HOST, f"www.{HOST}"))
        (tmp / "cert.pem").write_bytes(cert)
        (tmp / "key.pem").write_bytes(key)
        (tmp / "seed").mkdir()
        (tmp / "empty").mkdir()
        body = "\n".join(f'<li><a href="{u}">{u}</a></li>' for u in links)
        (tmp / "seed" / "index.html").write_text(
            f"<!DOCTYPE html><html><head><title>links</title></head><body><ul>\n{body}\n</ul></body></html>\n",
            encoding="utf-8",
        )
        http_port, https_port = _free_ports(2)
        (tmp / "nginx.conf").write_text(nginx_conf(tmp, tree, files, (http_port, https_port)), encoding="utf-8")
        (tmp / "access.log").touch()
        demote = None
        if os.geteuid() == 0:  # run nginx unprivileged all the same
            for path in [tmp, *tmp.rglob("*")]:
                os.chown(path, 65534, 65534)
            demote = _as_nobody
        nginx = subprocess.Popen(
            [NGINX or "nginx", "-p", str(tmp), "-c", str(tmp / "nginx.conf"), "-e", str(tmp / "error.log")],
            preexec_fn=demote,
        )
        try:
            _wait_for_port(https_port, nginx, tmp)
            proxy = ForwardingProxy(http_port, https_port)
            thread = threading.Thread(target=proxy.serve_forever, daemon=True)
            thread.start()
            starts = [f"https://{HOST}{prefix}" for prefix in prefixes] + [f"http://{SEED_HOST}/"] + links[::seed_every]
            site = Site(tmp, files, starts, proxy, nginx)
            site.by_file = {str(path): url for url, path in files.items()}
            site.by_file.update({str(path / "index.html"): url for url, path in files.items() if url.endswith("/")})
            try:
                yield site
            finally:
                proxy.shutdown()
                proxy.server_close()
        finally:
            nginx.send_signal(signal.SIGQUIT)
            try:
                nginx.wait(10)
            except subprocess.TimeoutExpired:
                nginx.kill()
                nginx.wait()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _as_nobody() -> None:
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


def _wait_for_port(port: int, process: subprocess.Popen[bytes], tmp: Path) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"realserver_bench: nginx exited:\n{(tmp / 'error.log').read_text(errors='replace')}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("realserver_bench: nginx did not start")


# -- crawls -------------------------------------------------------------------------


def crawl(site: Site, settings: dict[str, Any], profile: Path | None = None) -> tuple[dict[str, Any], float]:
    """One real Scrapy crawl in a subprocess: (its outcome, its CPU seconds)."""
    with tempfile.TemporaryDirectory(prefix="realserver-crawl-") as workdir:
        config = {"start_urls": site.starts, "settings": settings, "out": workdir}
        config_path = Path(workdir, "config.json")
        config_path.write_text(json.dumps(config), encoding="utf-8")
        command = [sys.executable]
        if profile is not None:
            command += ["-m", "cProfile", "-o", str(profile)]
        command += [str(Path(__file__).resolve()), "--child", str(config_path)]
        env = {**os.environ, **site.proxy_env(), "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
        site.mark()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        process = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600, cwd=workdir)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if process.returncode != 0:
            raise SystemExit(f"realserver_bench: a crawl failed:\n{process.stderr[-3000:]}")
        stats = json.loads(Path(workdir, "stats.json").read_text(encoding="utf-8"))
    return {"stats": stats, "served": site.counts(), "log": process.stderr}, cpu


def child(config_path: str) -> int:
    """The crawl itself (in the subprocess): every link on the two hosts, Scrapy's defaults otherwise."""
    from scrapy.crawler import AsyncCrawlerProcess
    from simweb.spider import FollowAllSpider

    class DocsSpider(FollowAllSpider):
        name = "docs"
        allowed_domains = [HOST, SEED_HOST]

        def parse(self, response: Any, **kwargs: Any) -> Iterator[Any]:
            for item in super().parse(response, **kwargs):
                if not isinstance(item, dict):
                    self.crawler.stats.inc_value("bench/links_followed")
                yield item

    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    process = AsyncCrawlerProcess(config["settings"])
    crawler = process.create_crawler(DocsSpider)
    process.crawl(crawler, start_urls=config["start_urls"], extractor="scrapy")
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    Path(config["out"], "stats.json").write_text(json.dumps(stats, default=str), encoding="utf-8")
    return 0


def rules_of(path: Path) -> list[str]:
    """The rules of the store a crawl left, with their status now."""
    from scrapy_iri.store import open_store

    with open_store(f"sqlite:///{path}") as store:
        store.adopt_recorded_policy()
        return sorted(f"{record.key} {store.rule_status(record).name.lower()}" for record in store.rules())


def measure(outcome: dict[str, Any], cpu: float, truth: set[str], scrapy: Counter[str] | None) -> dict[str, Any]:
    served = outcome["served"]
    files: Counter[str] = served["files"]
    reference = scrapy if scrapy is not None else files
    stats = outcome["stats"]
    return {
        "pages": len(set(files) & truth),
        "missed": sorted(truth - set(files)),
        "not_files": sorted(p for p in files if p.startswith("?")),
        "duplicates_beyond_scrapy": sum(max(0, n - reference.get(p, 1)) for p, n in files.items()),
        "fetches": sum(files.values()),
        "redirects": served["redirects"],
        "other_answers": served["others"],
        "requests": served["requests"],
        "links_followed": int(stats.get("bench/links_followed", 0)),
        "cpu_seconds": round(cpu, 2),
        "errors": int(stats.get("log_count/ERROR", 0)),
        "stats": {k: v for k, v in sorted(stats.items()) if k.startswith("iri/") and "filtered" not in k},
    }


def run_once(site: Site, concurrency: int, extra: dict[str, Any], profile: list[str]) -> dict[str, Any]:
    base = {
        "CONCURRENT_REQUESTS": concurrency,
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
        "DOWNLOAD_TIMEOUT": 60,
    }
    with tempfile.TemporaryDirectory(prefix="realserver-store-") as workdir:
        store = {"IRI_STORE": f"sqlite:///{Path(workdir) / 'store.db'}"}
        crawls = crawl_settings(base, store, extra)
        out: dict[str, Any] = {}
        truth: set[str] = set()
        scrapy: Counter[str] | None = None
        for name, settings in crawls.items():
            prof = Path(tempfile.gettempdir(), f"realserver-{name}.prof") if name in profile else None
            outcome, cpu = crawl(site, settings, prof)
            if scrapy is None:
                scrapy = outcome["served"]["files"]
                truth = {p for p in scrapy if not p.startswith("?")}
            out[name] = measure(outcome, cpu, truth, scrapy)
            if name == "warm":
                out["rules"] = rules_of(Path(workdir) / "store.db")
            if prof is not None:
                print(f"\n== profile of the {name} crawl ({prof}), own time ==")
                pstats.Stats(str(prof)).sort_stats("tottime").print_stats(30)
    out["protocol_cpu_over_scheme"] = compare(out)
    return out


def print_run(run: dict[str, Any]) -> None:
    print_crawls(run, [
        ("files fetched (ground truth)", lambda c: c["pages"]),
        ("pages missed", lambda c: len(c["missed"])),
        ("duplicate fetches beyond Scrapy's", lambda c: c["duplicates_beyond_scrapy"]),
        ("redirect round trips", lambda c: c["redirects"]),
        ("  saved vs Scrapy", saved),
        ("other answers (404...)", lambda c: c["other_answers"]),
        ("requests served", lambda c: c["requests"]),
        ("CPU seconds", lambda c: c["cpu_seconds"]),
        ("  over Scrapy's defaults", over_scrapy),
        ("errors logged", lambda c: c["errors"]),
    ])
    over = run["protocol_cpu_over_scheme"]
    print(f"protocol CPU / scheme CPU: cold {over['cold']:.3f}x, warm {over['warm']:.3f}x")


def lookups(n: int = 100_000) -> dict[str, float]:
    """CPU µs per ``resolve`` of a link, on a SQLite store holding the site's conventions.

    The store learns the site's redirects as a crawl sees them (``http`` ->
    ``https``, ``www.`` -> apex, ``index.html`` -> directory, case fixes and
    the files' own answers, which declare their case), then resolves ``n``
    links to the site's files (each file about 60 times, as pages link
    them) and ``n`` links to 500 hosts with no rule in force.
    """
    from scrapy_iri.store import open_store
    from scrapy_iri.store._forms import SchemeForm

    files = [p for p in served_files(trees()) if p.endswith(".html")]
    dirs = [p for p in served_files(trees()) if p.endswith("/") and p.count("/") == 3]
    with tempfile.TemporaryDirectory(prefix="realserver-lookups-") as tmp, open_store(f"sqlite:///{tmp}/store.db") as store:
        for d in dirs:
            store.record_redirect(f"https://{HOST}{d}index.html", 301, f"https://{HOST}{d}")
            store.record_redirect(f"https://{HOST}{d.rstrip('/')}", 301, f"https://{HOST}{d}")
            store.record_redirect(f"https://{HOST}{d.title()}", 301, f"https://{HOST}{d}")
        for path in files[::20]:
            store.record_redirect(f"http://{HOST}{path}", 301, f"https://{HOST}{path}")
            store.record_redirect(f"https://www.{HOST}{path}", 301, f"https://{HOST}{path}")
        for path in files:
            store.record_response(f"https://{HOST}{path}", 200)
        store.flush()
        site = [SchemeForm(f"https://{HOST}{files[i % len(files)]}") for i in range(n)]
        other = [SchemeForm(f"https://other{i % 500}.test/p/{i % 3000}.html") for i in range(n)]
        out = {"rules in force on the site": float(len([r for r in store.rules() if store.rule_status(r).name == "ACTIVE"]))}
        kept = store.memo
        for label, urls in (("a link to the site", site), ("a link to a host with no rule", other)):
            for memo in (kept, None):
                store.memo = memo
                start = time.process_time()
                for url in urls:
                    store.resolve(url)
                out[label + ("" if memo is not None else ", nothing remembered")] = (time.process_time() - start) / n * 1e6
        pages = page_links(files)
        links = sum(len(found) for _, found in pages)
        out["pages replayed"], out["their links"] = float(len(pages)), float(links)
        for memo in (kept, None):
            store.memo = memo
            spent = 0.0
            for page, found in pages:
                store.record_response(page, 200)
                start = time.process_time()
                for url in found:
                    store.resolve(url)
                spent += time.process_time() - start
            out["a link of a page, in page order" + ("" if memo is not None else ", nothing remembered")] = spent / links * 1e6
    return out


def page_links(files: list[str]) -> list[tuple[str, list[SchemeForm]]]:
    """Each HTML file's URL and the scheme forms of its links (``href`` attributes, fragments cut), as a
    crawl extracts them: what the dupefilter asks the store about, page after page."""
    from scrapy_iri import canonicalize
    from scrapy_iri.store._forms import SchemeForm

    roots = dict(trees())
    found = []
    for path in files:
        prefix = "/" + path.split("/")[1] + "/"
        text = (roots[prefix] / path[len(prefix):]).read_text(encoding="utf-8", errors="replace")
        page = f"https://{HOST}{path}"
        links = []
        for href in re.findall(r"""href\s*=\s*["']([^"']*)["']""", text):
            try:
                form = canonicalize(urllib.parse.urljoin(page, href.strip()), "scheme").partition("#")[0]
            except ValueError:
                continue
            if form.startswith(("http://", "https://")):
                links.append(SchemeForm(form))
        found.append((page, links))
    return found


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--child"]:
        return child(args[1])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 1], metavar="N")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--profile", nargs="+", default=[], choices=("scrapy", "scheme", "cold", "warm"),
        help="run these crawls' children under cProfile (their CPU figures are then not comparable)",
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE",
        help="a setting of the add-on's crawls (JSON value), e.g. --set IRI_VERIFY_SHARE=1",
    )
    parser.add_argument("--lookups", action="store_true", help="time the store's lookups of the site's links only")
    parsed = parser.parse_args(args)
    if parsed.lookups:
        for label, value in lookups().items():
            print(f"{label}: {value:.2f}" + (" µs per resolve" if label.startswith("a link") else ""))
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop nginx and the proxy when stopped
    if NGINX is None:
        raise SystemExit("realserver_bench: nginx is not installed (apt-get install nginx)")
    extra: dict[str, Any] = {}
    for item in parsed.set:
        name, _, value = item.partition("=")
        try:
            extra[name] = json.loads(value)
        except json.JSONDecodeError:
            extra[name] = value
    report: dict[str, Any] = {"benchmark": "protocol rung on nginx serving Debian's HTML docs", "settings": extra, "runs": {}}
    with running_site() as site:
        html = sum(1 for p in site.files if p.endswith(".html"))
        print(f"nginx serving {len(site.files)} paths ({html} HTML files), {len(site.starts)} start URLs")
        report["served_paths"] = len(site.files)
        report["start_urls"] = len(site.starts)
        for concurrency in parsed.concurrency:
            for i in range(parsed.repeat):
                run = run_once(site, concurrency, extra, parsed.profile)
                report["runs"][f"c={concurrency} #{i + 1}"] = run
                print(f"\n== concurrency {concurrency}, run {i + 1} ==")
                print_run(run)
    parsed.out.parent.mkdir(parents=True, exist_ok=True)
    parsed.out.write_text(json.dumps(report, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    print(f"wrote {parsed.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
