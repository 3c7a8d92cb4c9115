"""Where Redis is and how scrapy-iri uses it: the Redis settings, read once per crawl (see ``docs/redis.md``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scrapy_iri.store._redis import REDIS_SCHEMES, redact

from scrapy_iri.errors import IRISettingsError

#: the Redis settings of scrapy-iri and their defaults
SETTINGS: dict[str, Any] = {
    "IRI_REDIS_NAMESPACE": "scrapy-iri:%(spider)s",
    "IRI_REDIS_PERSIST": None,
    "IRI_REDIS_FLUSH_ON_START": None,
    "IRI_REDIS_RETRY_TIMEOUT": 60.0,
    "IRI_REDIS_SYNC_INTERVAL": 0.5,
}

_DEFAULT_URL = "redis://localhost:6379/0"


def is_redis_uri(value: Any) -> bool:
    return isinstance(value, str) and value.partition(":")[0].lower() in REDIS_SCHEMES


def uses_redis(settings: Any) -> bool:
    """Whether ``IRI_STORE`` puts the store and the seen set in Redis."""
    return is_redis_uri(settings.get("IRI_STORE"))


def _optional_bool(settings: Any, name: str, fallback: str) -> bool:
    value = settings.get(name)
    if value is None:
        return settings.getbool(fallback, False)
    try:
        return settings.getbool(name)
    except ValueError as exc:
        raise IRISettingsError(f"{name}: {exc}") from None


def _float(settings: Any, name: str, minimum: float) -> float:
    try:
        value = settings.getfloat(name, SETTINGS[name])
    except ValueError as exc:
        raise IRISettingsError(f"{name}: {exc}") from None
    if value < minimum:
        raise IRISettingsError(f"{name} must be at least {minimum}, got {value}")
    return value


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

    @classmethod
    def from_settings(cls, settings: Any, spider_name: str | None) -> RedisConfig:
        url, source = cls._url(settings)
        template = settings.get("IRI_REDIS_NAMESPACE") or SETTINGS["IRI_REDIS_NAMESPACE"]
        try:
            namespace = str(template) % {"spider": spider_name or "default"}
        except (KeyError, ValueError, TypeError) as exc:
            raise IRISettingsError(f"IRI_REDIS_NAMESPACE: {template!r}: {exc} (use %(spider)s)") from None
        return cls(
            url=url,
            source=source,
            params=dict(settings.getdict("REDIS_PARAMS")),
            namespace=namespace,
            persist=_optional_bool(settings, "IRI_REDIS_PERSIST", "SCHEDULER_PERSIST"),
            flush_on_start=_optional_bool(settings, "IRI_REDIS_FLUSH_ON_START", "SCHEDULER_FLUSH_ON_START"),
            retry_timeout=_float(settings, "IRI_REDIS_RETRY_TIMEOUT", 0.0),
            sync_interval=_float(settings, "IRI_REDIS_SYNC_INTERVAL", 0.01),
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
