"""Helpers of the Redis tests: a real redis-server, the shared simulated web, one crawl process."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import redis

REDIS_SERVER = os.environ.get("REDIS_SERVER") or shutil.which("redis-server")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One ``redis-server`` process on 127.0.0.1 that a test can stop, kill and restart."""

    def __init__(self, directory: Path, *, persistent: bool = True) -> None:
        if REDIS_SERVER is None:
            raise RuntimeError("no redis-server binary")
        self.directory = directory
        self.persistent = persistent
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log = directory / "redis.log"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)

    def start(self) -> RedisServer:
        """Start (again, on the same port and data directory) and wait until it answers."""
        args = [
            str(REDIS_SERVER),
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(self.directory),
            "--save", "",
            "--appendonly", "yes" if self.persistent else "no",
            "--appendfsync", "always",
            "--protected-mode", "yes",
            "--daemonize", "no",
            "--logfile", str(self.log),
        ]  # fmt: skip
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}: {self.log.read_text()[-2000:]}")
            try:
                if self.client().ping():
                    return self
            except redis.ConnectionError:
                time.sleep(0.02)
        raise RuntimeError(f"redis-server did not answer on port {self.port}")

    def kill(self) -> None:
        """Stop at once (SIGKILL): what a crash or a lost machine looks like to clients."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None

    def stop(self) -> None:
        """Stop cleanly (SIGTERM)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None

    def restart(self, downtime: float = 0.0) -> None:
        self.kill()
        time.sleep(downtime)
        self.start()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


CHILD = Path(__file__).with_name("crawl_child.py")
HOSTS = ("alpha.example", "beta.example", "gamma.example")
PAGES = 40


def shared_sites(pages: int = PAGES) -> list:
    """Three hosts of ``pages`` documents each, linked across hosts, in alias and canonical forms.

    ``/doc-N`` answers 301 to ``/doc-N/`` (the resource), and links use both
    forms and spellings that only the scheme rung merges (upper-case host,
    explicit default port), so redirect targets and aliases have to be
    deduplicated across processes too.
    """
    from scrapy_iri.testing import Site, SlashRedirect
    from scrapy_iri.testing.sites.builders import numbered, series

    sites = []
    for host in HOSTS:
        key = host.partition(".")[0]
        site = Site(host, policies=[SlashRedirect()], name=key)
        entry = series(site, key, numbered("/doc-{}/", pages), alias=lambda t: t.rstrip("/"))
        others = [f"http://{other}/" for other in HOSTS if other != host]
        site.page(f"{key}:home", "/", *entry, *others, "/doc-10", f"http://{host.upper()}:80/doc-20/")
        sites.append(site)
    return sites


class SharedCrawl:
    """A Scrapy process of a shared crawl, started in the background (see crawl_child.py)."""

    def __init__(self, web, workdir: Path, start_urls: list[str], settings: dict) -> None:
        import json
        import sys

        from scrapy_iri.testing.crawl import BASE_SETTINGS, subprocess_env

        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        config = {
            "start_urls": start_urls,
            "settings": {**BASE_SETTINGS, "ADDONS": {"scrapy_iri.Addon": 0}, **settings},
            "out": str(workdir),
        }
        path = workdir / "config.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        self.log_path = workdir / "crawl.log"
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, str(CHILD), str(path)],
            env=subprocess_env(web),
            cwd=workdir,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
        )
        self.stats: dict = {}
        self.pages: list = []

    def wait(self, timeout: float = 60.0) -> SharedCrawl:
        import json

        try:
            self.returncode = self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self._log.close()
        for name in ("stats", "pages"):
            file = self.workdir / f"{name}.json"
            if file.exists():
                setattr(self, name, json.loads(file.read_text(encoding="utf-8")))
        return self

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stat(self, key: str) -> int:
        return int(self.stats.get(key, 0) or 0)
