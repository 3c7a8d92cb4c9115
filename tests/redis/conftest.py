"""Fixtures of the Redis tests: a real ``redis-server`` on a free loopback port.

The server runs in a temporary directory with an append-only file synced at
every write, so a restart (even after SIGKILL) keeps every acknowledged write,
like a production Redis with ``appendfsync always``. Tests are skipped, with
the reason, only when no ``redis-server`` binary exists (``scripts/test.sh``
installs it with apt when it can).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from redis_helpers import REDIS_SERVER, RedisServer, SharedCrawl, free_port, shared_sites


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


# -- shared crawls of a simulated web ----------------------------------------------


@pytest.fixture(scope="module")
def shared_web() -> Iterator:
    from scrapy_iri.testing import SimulatedWeb

    with SimulatedWeb(shared_sites()) as web:
        yield web


@pytest.fixture
def start_crawl(shared_web, tmp_path: Path):
    """``start_crawl(name, start_urls, **settings)``: launch one process of a shared crawl."""
    crawls: list[SharedCrawl] = []

    def start(name: str, start_urls: list[str], **settings) -> SharedCrawl:
        crawl = SharedCrawl(shared_web, tmp_path / name, start_urls, settings)
        crawls.append(crawl)
        return crawl

    yield start
    for crawl in crawls:
        if crawl.process.poll() is None:
            crawl.process.kill()
            crawl.process.wait()
