"""One Redis connection per crawl, shared by the seen set and the store: timers, outages, giving up.

:class:`CrawlRedis` runs the maintenance timer (the store's sync, the
heartbeat), probes Redis during an outage (with a write: a full or read-only
Redis answers a PING), catches up when it is back (the outage ends only once
that worked), and closes the spider when ``IRI_REDIS_RETRY_TIMEOUT`` is spent.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.utils.job import job_dir

from scrapy_iri.store._redis import Outage, RedisKeys, RedisStore, RedisUnavailable, client_from_url
from scrapy_iri.store._redis.connection import drop_stale_connections

from ._redis_config import RedisConfig

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

    from scrapy_iri.store import LearningPolicy

    from ._crawl import IRICrawl


logger = logging.getLogger("scrapy_iri.scrapy._redis_seen")

#: the spider's close reason when Redis stays unreachable
CLOSE_REASON = "iri_redis_unavailable"
#: seconds between the live-process heartbeats (each lasts redis_seen.LIVE_TTL)
HEARTBEAT = 5.0
#: JOBDIR file of the store's writes Redis did not get at close
STORE_PENDING_FILE = "iri-redis-store-pending.json"
#: the store's ledger in the JOBDIR (see scrapy_iri.store._redis.ledger; else the per-user state directory)
STORE_LEDGER_FILE = "iri-redis-store.ledger"
#: how long the outage probe's key (``NS:probe``) lives
PROBE_TTL_MS = 60_000


class _CrawlOutage(Outage):
    """The crawl's outage: its start is logged and counted once, whoever noticed it."""

    def __init__(self, state: CrawlRedis) -> None:
        super().__init__()
        self.state = state

    def failed(self, exc: BaseException) -> bool:
        started = super().failed(exc)
        if started:
            config = self.state.config
            self.state.crawler.stats.inc_value("iri/redis/outages")
            logger.warning(
                "Redis at %(where)s unreachable or refusing writes (%(error)s): requests are let through unchecked"
                " (fetched rather than lost) while retrying for up to %(timeout).0f s",
                {"where": config.describe(), "error": exc, "timeout": config.retry_timeout},
            )
        return started


class CrawlRedis:
    """The connection, the outage state and the timers shared by a crawl's Redis users."""

    def __init__(self, crawler: Crawler, config: RedisConfig, crawl: IRICrawl) -> None:
        self.crawler = crawler
        self.config = config
        self.crawl = crawl
        self.keys = RedisKeys(config.namespace)
        self.client = client_from_url(config.url, config.params)
        self.outage = _CrawlOutage(self)
        self.seen: Any = None  #: the crawl's RedisSeenSet, once the dupefilter made it
        self.store: RedisStore | None = None
        self._loop: Any = None
        self._probing = False
        self._next_heartbeat = 0.0
        try:
            self.client.ping()
        except Exception as exc:
            raise RedisUnavailable(
                f"cannot reach Redis at {config.describe()}: {str(exc).rstrip('.')}. The crawl does not start:"
                " start Redis, or correct IRI_STORE / REDIS_URL / REDIS_PARAMS."
            ) from exc
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    # timers

    def _spider_opened(self, spider: Spider | None = None) -> None:
        from scrapy.utils.asyncio import create_looping_call

        self._loop = create_looping_call(self.tick)
        self._loop.start(self.config.sync_interval, now=False)

    async def _spider_closed(self, spider: Spider | None = None, reason: str = "") -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None
        if self.seen is not None:
            await self._wait_for_redis()
            self.seen.close(reason)
        if self.store is not None:
            for name, value in self.store.counters.items():
                self.crawler.stats.set_value(f"iri/redis/store/{name}", value)

    def tick(self) -> None:
        """Every sync interval: keep the store fresh and the heartbeat alive, or deal with an outage."""
        try:
            self._tick()
        except Exception:  # a timer must survive anything
            logger.exception("scrapy-iri: error in the Redis maintenance timer")

    def _tick(self) -> None:
        if self.outage.down:
            if self.outage.elapsed() >= self.config.retry_timeout:
                self.give_up()
            elif self.outage.may_try() and not self._probing:
                from scrapy.utils.defer import deferred_from_coro

                deferred_from_coro(self.probe_async())
            return
        if self.store is not None:
            self.store.maintain()
        if self.seen is not None and self.seen.managed and time.monotonic() >= self._next_heartbeat:
            self._next_heartbeat = time.monotonic() + HEARTBEAT
            self.seen.heartbeat()

    async def _wait_for_redis(self) -> None:
        """At close, with requests let through unchecked: keep retrying until IRI_REDIS_RETRY_TIMEOUT is spent."""
        seen = self.seen
        if seen is None or not seen.unchecked or not self.outage.down:
            return
        left = self.config.retry_timeout - self.outage.elapsed()
        if left <= 0:
            return
        logger.info(
            "Waiting up to %(left).1f s for Redis to record the %(n)d requests let through unchecked",
            {"left": left, "n": len(seen.unchecked)},
        )
        while self.outage.down and self.outage.elapsed() < self.config.retry_timeout:
            if self.outage.may_try() and not self._probing and await self.probe_async():
                return
            await _sleep(0.05)

    # faults

    def failed(self, exc: BaseException) -> None:
        self.outage.failed(exc)

    def _probe_write(self) -> None:
        """A write, not a PING: a full (maxmemory) or read-only Redis answers a PING but refuses writes."""
        self.client.set(self.keys.probe, b"1", px=PROBE_TTL_MS)

    def probe(self) -> bool:
        """One attempt to write to Redis again; on success, catch up (the outage ends once that worked)."""
        try:
            self._probe_write()
        except Exception as exc:
            self.failed(exc)
            return False
        return self.recovered()

    async def probe_async(self) -> bool:
        """:meth:`probe`, with the write in a thread (an unresponsive host must not stall the crawl)."""
        from scrapy.utils.asyncio import run_in_thread

        self._probing = True
        try:
            await run_in_thread(self._probe_write)
        except Exception as exc:
            self.failed(exc)
            return False
        finally:
            self._probing = False
        if not self.outage.down:
            return True
        try:
            return self.recovered()
        except Exception as exc:  # a timer's task must not die with an unhandled error
            logger.exception("scrapy-iri: error while catching up with Redis")
            self.failed(exc)
            return False

    def recovered(self) -> bool:
        """Redis takes writes again: replay what it missed; the outage (and its clock) ends only if that worked."""
        lasted = self.outage.elapsed()
        drop_stale_connections(self.client)
        if self.seen is not None:
            self.seen.drop_connection()
        if self.seen is not None and not self.seen.catch_up():
            return False
        if self.store is not None and not self.store.maintain(force=True):
            return False
        self.outage.recovered()
        logger.info(
            "Redis at %(where)s answers again after %(lasted).1f s",
            {"where": self.config.describe(), "lasted": lasted},
        )
        self.crawler.stats.max_value("iri/redis/outage_seconds", round(lasted, 3))
        return True

    def give_up(self) -> None:
        """Redis stayed unreachable for IRI_REDIS_RETRY_TIMEOUT: the crawl gives up (see :meth:`IRICrawl.give_up`)."""
        if self.crawl.gave_up is not None:
            return
        unchecked = self.crawler.stats.get_value("iri/redis/unchecked", 0)
        self.crawler.stats.set_value("iri/redis/unavailable_seconds", round(self.outage.elapsed(), 3))
        why = (
            f"Redis at {self.config.describe()} unreachable for {self.outage.elapsed():.0f} s"
            f" (IRI_REDIS_RETRY_TIMEOUT = {self.config.retry_timeout:g}; last error: {self.outage.last_error});"
            f" {unchecked} requests were let through without the cross-process check (iri/redis/unchecked)"
        )
        self.crawl.give_up(CLOSE_REASON, why)

    def open_store(self, policy: LearningPolicy) -> RedisStore:
        """The crawl's equivalence store in Redis, on this connection and namespace."""
        if self.store is None:
            settings = self.crawl.settings
            self.store = RedisStore(
                self.client,
                self.config.namespace,
                outage=self.outage,
                sync_interval=self.config.sync_interval,
                owns_client=False,
                auto_sync=False,  # the timer syncs, between requests (see tick)
                cache_size=settings.store_cache_size,
                rule_cache=settings.store_rule_cache,
                pending_path=pending_path(self.crawler, STORE_PENDING_FILE, _pending_name(self.config.namespace)),
                ledger_path=Path(jobdir, STORE_LEDGER_FILE) if (jobdir := job_dir(self.crawler.settings)) else None,
                machine_ledger=True,  # what this job ends is known to the machine's other processes too
                accept_rollback_risk=self.config.accept_rollback_risk,
            )
            self.store.policy = policy  # before any use: the connection opened it with the default policy
            self.store.record_policy()  # as every backend does: readers judge rules with it
        return self.store


def _pending_name(namespace: str) -> str:
    """The file of a namespace's pending store writes in the project's data directory."""
    from scrapy_iri.store import spider_store_name

    return spider_store_name(namespace).removesuffix(".sqlite") + "." + STORE_PENDING_FILE


async def _sleep(seconds: float) -> None:
    from scrapy.utils.asyncio import sleep

    await sleep(seconds)


def pending_path(crawler: Crawler, in_jobdir: str, in_data_dir: str) -> Path:
    """Where writes Redis did not get at close are kept (and read back at the next open).

    ``JOBDIR/in_jobdir`` for a job; else ``.scrapy/iri/in_data_dir`` in the
    project's data directory, so a crawl without JOBDIR loses none either.
    """

    jobdir = job_dir(crawler.settings)
    if jobdir:
        return Path(jobdir, in_jobdir)
    from scrapy.utils.project import data_path

    return Path(data_path("iri", createdir=True), in_data_dir)
