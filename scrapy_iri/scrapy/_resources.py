"""What the components of one crawl share, built once per crawler.

:class:`CrawlResources` parses the ``IRI_*`` settings once and owns the
equivalence store (opened on first use, closed when the engine stops) and,
when ``IRI_STORE`` is a Redis URI, the crawl's Redis connection and shared
seen set. The components take plain collaborators; their ``from_crawler``
asks this holder for them. Redis code is imported only when Redis is
configured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from scrapy import signals

from scrapy_iri.store import REDIS_SCHEMES

from ._settings import IRISettings, store_uri

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_iri.store import EquivalenceStore

    from ._seen import SeenSet



def is_redis_store(uri: str | None) -> bool:
    """Whether a store URI names a Redis server."""
    return isinstance(uri, str) and uri.partition(":")[0].lower() in REDIS_SCHEMES


class CrawlResources:
    """The settings, store and seen set of one crawl (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.config = IRISettings.from_settings(crawler.settings)
        self.uses_redis = is_redis_store(self.config.store)
        self._store: EquivalenceStore | None = None

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlResources:
        """The crawler's resources, made on first use."""
        resources = _resources.get(crawler)
        if resources is None:
            resources = _resources[crawler] = cls(crawler)
        return resources

    @property
    def store(self) -> EquivalenceStore:
        """The crawl's equivalence store (``IRI_STORE``), opened on first use with the crawl's learning policy.

        Components find it lazily: the request fingerprinter is built before
        the engine and the spider exist. It is closed when the engine stops,
        after pipelines, the dupefilter and middlewares are done with it.
        """
        if self._store is None:
            policy = self.config.learning_policy()
            if self.uses_redis:
                from ._redis_crawl import open_crawler_store

                store = open_crawler_store(self.crawler)
                store.policy = policy  # before any use: the Redis connection opens it with the default policy
                store.record_policy()  # as every backend does: readers judge rules with it
            else:
                from scrapy_iri.store import open_store, parse_store_uri

                spider_name = getattr(self.crawler.spidercls, "name", None)
                uri = store_uri(self.crawler.settings, spider_name, createdir=True)
                memory = parse_store_uri(uri).scheme == "memory"
                options = {} if memory else {"cache_size": self.config.store_cache_size, "rule_cache": self.config.store_rule_cache}
                store = open_store(uri, policy=policy, **options)
            self._store = store
            self.crawler.signals.connect(store.close, signal=signals.engine_stopped)
        return self._store

    def seen_set(self, local: SeenSet) -> Any:
        """The dupefilter's seen set: ``local``, or around it the set shared through Redis."""
        if not self.uses_redis:
            return local
        from ._redis_seen import redis_seen_set

        return redis_seen_set(self.crawler, local)


def crawler_store(crawler: Crawler) -> EquivalenceStore:
    """The crawler's equivalence store (see :attr:`CrawlResources.store`)."""
    return CrawlResources.of(crawler).store


_resources: WeakKeyDictionary[Crawler, CrawlResources] = WeakKeyDictionary()
