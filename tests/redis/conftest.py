"""Fixtures of the Redis tests: a real ``redis-server`` on a free loopback port.

The server runs in a temporary directory with an append-only file synced at
every write, so a restart (even after SIGKILL) keeps every acknowledged write,
like a production Redis with ``appendfsync always``. Tests are skipped, with
the reason, only when no ``redis-server`` binary exists (``scripts/test.sh``
installs it with apt when it can).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

redis = pytest.importorskip("redis", reason="the Redis tests need the redis package (pip install -e '.[test]')")

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


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh, persistent redis-server for one test (stopped afterwards)."""
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (scripts/test.sh installs it with apt when run as root)")
    server = RedisServer(tmp_path).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    return redis_server.url


@pytest.fixture
def dead_redis_url() -> str:
    """A loopback URL where nothing listens."""
    return f"redis://127.0.0.1:{free_port()}/0"
