"""The crawl object: what the components of one crawl share, built once per crawler.

:class:`IRICrawl` is made the first time a component asks for it
(:meth:`IRICrawl.of`; the request fingerprinter, built before the engine,
is usually first) and kept on the crawler itself, as Scrapy keeps
``crawler.request_fingerprinter``. It holds:

* ``settings``: the ``IRI_*`` settings, parsed once (:class:`._settings.IRISettings`);
* ``identities``: the request identity function (:class:`._identity.RequestIdentities`);
* ``store``: the equivalence store (``IRI_STORE``), opened on first use,
  closed when the engine stops;
* ``redis``: with a Redis ``IRI_STORE`` (or scrapy-redis's scheduler), the
  crawl's one Redis connection, its timers and outage state
  (:class:`._redis_crawl.CrawlRedis`);
* :meth:`seen_set`: the dupefilter's seen set (in Redis when it is shared);
* ``dropped``: the receiver of the duplicates the dupefilter drops (the
  protocol rung's middleware keeps those a rule merged away), called
  directly instead of through Scrapy's ``request_dropped`` signal;
* :meth:`give_up`: the honest end of a crawl that cannot go on.

Components take their collaborators in ``__init__``; their ``from_crawler``
gets them from here. Redis code is imported only when Redis is used.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

from scrapy import signals
from scrapy.utils.job import job_dir

from scrapy_iri.errors import StoreError
from scrapy_iri.store import REDIS_SCHEMES

from ._identity import RequestIdentities
from ._settings import IRISettings, store_uri

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler

    from scrapy_iri.store import EquivalenceStore

    from ._redis_crawl import CrawlRedis
    from ._seen import SeenSet

logger = logging.getLogger(__name__)

#: the crawler attribute holding its crawl object
ATTRIBUTE = "iri_crawl"


def is_redis_store(uri: str | None) -> bool:
    """Whether a store URI names a Redis server."""
    return isinstance(uri, str) and uri.partition(":")[0].lower() in REDIS_SCHEMES


class IRICrawl:
    """The settings, identity function, store, seen set and Redis client of one crawl (see the module docstring)."""

    def __init__(self, crawler: Crawler, settings: IRISettings | None = None) -> None:
        self.crawler = crawler
        self.settings = settings if settings is not None else IRISettings.from_settings(crawler.settings)
        self.uses_redis = is_redis_store(self.settings.store)
        self.identities = RequestIdentities(self.settings, lambda: self.store)
        #: the reason the crawl gave up (:meth:`give_up`), or ``None``
        self.gave_up: str | None = None
        #: the spider of a crawl that gave up (``crawler.spider`` is unset then)
        self.spider: Any = None
        #: called with each duplicate the crawl's dupefilter drops, when a component needs them
        self.dropped: Callable[[Request], None] | None = None
        self._store: EquivalenceStore | None = None
        self._redis: CrawlRedis | None = None
        self._said: set[str] = set()
        self._early: _EarlyLines | None = None
        self._on_open: Callable[[], None] | None = None

    @classmethod
    def of(cls, crawler: Crawler) -> IRICrawl:
        """The crawler's crawl object, made on first use."""
        crawl = getattr(crawler, ATTRIBUTE, None)
        if not isinstance(crawl, cls):
            crawl = cls(crawler)
            setattr(crawler, ATTRIBUTE, crawl)
        return crawl

    def first_time(self, what: str) -> bool:
        """Whether ``what`` (a warning, say) comes up for the first time in this crawl."""
        if what in self._said:
            return False
        self._said.add(what)
        return True

    @property
    def spider_name(self) -> str | None:
        return getattr(self.crawler.spidercls, "name", None)

    # the equivalence store

    @property
    def store(self) -> EquivalenceStore:
        """The crawl's equivalence store, opened on first use with the crawl's learning policy.

        The request fingerprinter is built before the engine and the spider
        exist, so the store opens lazily. It is closed when the engine
        stops, after pipelines, the dupefilter and middlewares are done with it.
        """
        if self._store is None:
            if self.uses_redis:
                # reached first: the seen set and the queue need Redis too, so one that cannot be
                # reached stops the crawl before it starts; only a store refused at open is stood in for
                self.redis  # noqa: B018
            try:
                self._early = _EarlyLines(self.crawler)  # kept: the signal holds its receivers weakly
                with self._early:
                    store = self._open_store()
            except StoreError as exc:
                self._store = cast("EquivalenceStore", RefusedStore(exc))
                self._refused(exc)
                return self._store
            self._store = store
            self.crawler.signals.connect(store.close, signal=signals.engine_stopped)
        return self._store

    def _open_store(self) -> EquivalenceStore:
        policy = self.settings.learning_policy()
        if self.uses_redis:
            return self.redis.open_store(policy)
        from scrapy_iri.store import open_store, parse_store_uri

        uri = store_uri(self.crawler.settings, self.spider_name, createdir=True)
        memory = parse_store_uri(uri).scheme == "memory"
        options = {} if memory else {"cache_size": self.settings.store_cache_size, "rule_cache": self.settings.store_rule_cache}
        return open_store(uri, policy=policy, **options)

    def _refused(self, error: StoreError) -> None:
        """A store refused at open ends the crawl with the refusal logged as an error, counted in ``log_count/ERROR``.

        The components are built before the spider opens, when Scrapy counts
        no log lines yet (its ``LogCount`` extension starts counting when the
        spider opens): the crawl gives up then, raising ``CloseSpider`` from
        ``spider_opened`` so that no request is scheduled, or at once
        (:meth:`give_up`) when the spider is open already. ``scrapy crawl``
        exits with status 1 either way.
        """
        why = f"the equivalence store was refused at open: {error}"
        if spider_is_open(self.crawler):
            self.give_up("store_refused", why)
            return

        def spider_opened() -> None:
            from scrapy.exceptions import CloseSpider

            if self.gave_up is not None:
                return
            self.gave_up = "store_refused"
            logger.error(
                "scrapy-iri gives up (store_refused): %(why)s. The crawl ends before its first request.", {"why": why}
            )
            self.crawler.stats.set_value("iri/gave_up", "store_refused")
            self.crawler.stats.set_value("iri/left_unfetched", 0)
            # the engine never starts, so it never stops: the crawl's failure is marked when the spider closes
            self.crawler.signals.connect(self._mark_failed, signal=signals.spider_closed)
            raise CloseSpider("store_refused")  # Scrapy closes a spider whose opening asks it to

        self._on_open = spider_opened  # the signal holds its receivers weakly
        self.crawler.signals.connect(spider_opened, signal=signals.spider_opened)

    # Redis

    @property
    def redis(self) -> CrawlRedis:
        """The crawl's Redis connection (made, and checked, on first use)."""
        if self._redis is None:
            from ._redis_config import RedisConfig
            from ._redis_crawl import CrawlRedis

            config = RedisConfig.from_settings(self.crawler.settings, self.spider_name, self.settings)
            self._redis = CrawlRedis(self.crawler, config, self)
        return self._redis

    def seen_set(self, local: SeenSet, *, shared: bool | None = None, managed: bool = True) -> Any:
        """The dupefilter's seen set: ``local``, or around it the set shared through Redis.

        ``shared`` defaults to whether ``IRI_STORE`` is in Redis; ``managed``
        is False when scrapy-redis's scheduler decides when the set is cleared.
        """
        if not (self.uses_redis if shared is None else shared):
            return local
        from ._redis_seen import RedisSeenSet

        seen = RedisSeenSet(self.redis, local, managed=managed, local_max=self.settings.redis_local_max)
        self.redis.seen = seen
        return seen

    # the end

    def give_up(self, reason: str, why: str) -> None:
        """Close the spider with ``reason``: log why, what is left and how to resume; exit non-zero.

        Pending store writes are flushed when the store can take them, else
        kept (JOBDIR, or the project's data directory) by the store's close.
        ``scrapy crawl`` and ``scrapy runspider`` exit with status 1: Scrapy
        reads a crawl's failure from its crawler having no spider when the
        crawl ends, so the crawler's spider is unset once the engine stopped.
        """
        if self.gave_up is not None:
            return
        self.gave_up = reason
        stats = self.crawler.stats
        engine = self.crawler.engine
        scheduler = getattr(engine, "scheduler", None) if engine is not None else None
        try:
            left: Any = len(scheduler) if scheduler is not None else 0  # type: ignore[arg-type]
        except TypeError:
            left = "an unknown number of"
        jobdir = job_dir(self.crawler.settings)
        if left == 0:
            advice = "nothing to resume"
        elif jobdir:
            advice = f"run the job again with JOBDIR={jobdir} to resume them"
        else:
            advice = "they are lost with this process: set JOBDIR (scrapy crawl ... -s JOBDIR=...) to be able to resume a crawl"
        logger.error(
            "scrapy-iri gives up (%(reason)s): %(why)s. %(left)s requests were left unfetched: %(advice)s.",
            {"reason": reason, "why": why, "left": left, "advice": advice},
        )
        stats.set_value("iri/gave_up", reason)
        stats.set_value("iri/left_unfetched", left if isinstance(left, int) else -1)
        if self._store is not None:
            try:
                self._store.flush()
            except Exception as exc:  # noqa: BLE001 -- the store's close keeps what it cannot write
                logger.warning("Could not flush the equivalence store now (%(error)s): its close keeps the writes", {"error": exc})
        self.crawler.signals.connect(self._mark_failed, signal=signals.engine_stopped)
        if engine is None or getattr(engine, "spider", None) is None:
            return
        from scrapy.utils.defer import deferred_from_coro

        closing = deferred_from_coro(engine.close_spider_async(reason=reason))
        closing.addErrback(lambda failure: logger.error("closing the spider failed: %s", failure.value))

    def _mark_failed(self) -> None:
        """Let the crawler process see the failure (``bootstrap_failed``: the exit status); the spider stays in :attr:`spider`."""
        self.spider = self.crawler.spider
        self.crawler.spider = None  # type: ignore[assignment]


def spider_is_open(crawler: Crawler) -> bool:
    """Whether the crawler's engine runs a spider (``False`` while the engine is being built)."""
    try:
        engine = crawler.engine
    except (AttributeError, RuntimeError):  # Scrapy's late attribute, unset until the crawl starts
        return False
    return engine is not None and getattr(engine, "spider", None) is not None


class _EarlyLines(logging.Handler):
    """Counts what scrapy-iri logs while the store opens before the spider does, into ``log_count/*`` once it opens.

    Scrapy's ``LogCount`` extension counts log lines from ``spider_opened``
    on; the store opens while the engine is built. A line logged then (a
    Redis that went back in time, repaired at open) is added to the crawl's
    counts when the spider opens, so ``log_count/ERROR`` tells the truth.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler.settings.get("LOG_LEVEL") or logging.DEBUG)  # as Scrapy's LogCounterHandler
        self.crawler = crawler
        self.levels: dict[str, int] = {}
        self.early = not spider_is_open(crawler)

    def __enter__(self) -> _EarlyLines:
        if self.early:
            logging.root.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.early:
            return
        logging.root.removeHandler(self)
        if self.levels:
            self.crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith("scrapy_iri"):
            self.levels[record.levelname] = self.levels.get(record.levelname, 0) + 1

    def spider_opened(self) -> None:
        for level, count in self.levels.items():
            self.crawler.stats.inc_value(f"log_count/{level}", count)
        self.levels = {}


class RefusedStore:
    """Stands in for a store refused at open while the crawl gives up: any use raises the refusal again."""

    def __init__(self, error: StoreError) -> None:
        self.error = error

    def __getattr__(self, name: str) -> Any:
        raise StoreError(str(self.error))

    def flush(self) -> None:
        """Nothing to write: the store never opened."""

    def close(self) -> None:
        """Nothing to close: the store never opened."""


def crawler_store(crawler: Crawler) -> EquivalenceStore:
    """The crawler's equivalence store (see :attr:`IRICrawl.store`)."""
    return IRICrawl.of(crawler).store
