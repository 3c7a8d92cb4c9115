"""Where Redis is and how scrapy-iri uses it: the Redis settings, read once per crawl (see ``docs/redis.md``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scrapy_iri.store._redis import REDIS_SCHEMES, redact
from scrapy_iri.store._redis.connection import split_uri

from ._settings import DEFAULTS, IRISettings

#: the Redis settings of scrapy-iri and their defaults (a view of the one table, :data:`._settings.TABLE`)
SETTINGS: dict[str, Any] = {name: value for name, value in DEFAULTS.items() if name.startswith("IRI_REDIS_")}

_DEFAULT_URL = "redis://localhost:6379/0"


def is_redis_uri(value: Any) -> bool:
    return isinstance(value, str) and value.partition(":")[0].lower() in REDIS_SCHEMES


@dataclass(frozen=True)
class RedisConfig:
    """Where Redis is and how scrapy-iri uses it, read once from the crawler's settings."""

    url: str = _DEFAULT_URL
    source: str = "default"
    params: dict[str, Any] = field(default_factory=dict)
    namespace: str = "scrapy-iri:default"
    persist: bool = False
    flush_on_start: bool = False
    retry_timeout: float = 60.0
    sync_interval: float = 0.5
    accept_rollback_risk: bool = False

    @classmethod
    def from_settings(cls, settings: Any, spider_name: str | None, config: IRISettings | None = None) -> RedisConfig:
        """Where Redis is (``IRI_STORE``, else scrapy-redis's settings) and the parsed ``IRI_REDIS_*`` settings."""
        if config is None:
            config = IRISettings.from_settings(settings)
        url, source = cls._url(settings)
        url, options = split_uri(url)  # a store URI's own options (``?namespace=...``) win over the settings
        return cls(
            url=url,
            source=source,
            params=dict(settings.getdict("REDIS_PARAMS")),
            namespace=options.get("namespace") or config.redis_namespace % {"spider": spider_name or "default"},
            persist=config.redis_persist,
            flush_on_start=config.redis_flush_on_start,
            retry_timeout=config.redis_retry_timeout,
            sync_interval=float(options["sync_interval"]) if options.get("sync_interval") else config.redis_sync_interval,
            accept_rollback_risk=config.redis_accept_rollback_risk
            or options.get("accept_rollback_risk", "").lower() in ("1", "true", "yes"),
        )

    @staticmethod
    def _url(settings: Any) -> tuple[str, str]:
        """The server URL and the setting it came from: IRI_STORE, else scrapy-redis's settings."""
        store = settings.get("IRI_STORE")
        if is_redis_uri(store) and store.partition(":")[2].strip("/"):
            return store, "IRI_STORE"
        if settings.get("REDIS_URL"):
            return str(settings.get("REDIS_URL")), "REDIS_URL"
        host, port, db = settings.get("REDIS_HOST"), settings.get("REDIS_PORT"), settings.get("REDIS_DB")
        if host or port or db:
            return f"redis://{host or 'localhost'}:{port or 6379}/{db or 0}", "REDIS_HOST/REDIS_PORT/REDIS_DB"
        return _DEFAULT_URL, "the default (no IRI_STORE URL, REDIS_URL or REDIS_HOST)"

    def describe(self) -> str:
        return f"{redact(self.url)} (from {self.source})"
