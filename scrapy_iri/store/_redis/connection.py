"""The connection to Redis: client options, reachability, outages, key names.

This module does not import Scrapy.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ...errors import StoreError

try:
    import redis
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError
    from redis.retry import Retry
except ImportError:  # pragma: no cover - exercised only without the extra
    redis = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

#: URI schemes of the Redis backend (``unix://`` is a socket path)
REDIS_SCHEMES = ("redis", "rediss", "unix")
#: the namespace when none is given
DEFAULT_NAMESPACE = "scrapy-iri:default"
#: client options scrapy-iri sets unless the caller does (short timeouts: a
#: lookup must never hang on a dead server; one immediate retry after a
#: connection error, none after a timeout, see client_from_url)
DEFAULT_PARAMS: dict[str, Any] = {"socket_timeout": 5.0, "socket_connect_timeout": 2.0}
#: client options that make no sense here (the store speaks bytes) and are dropped
IGNORED_PARAMS = frozenset({"decode_responses", "encoding", "encoding_errors", "retry_on_timeout"})
#: options of a store URI's query string that are the store's, not the client's
STORE_OPTIONS = ("namespace", "sync_interval", "accept_rollback_risk")

#: errors that mean "Redis is not reachable now" (a restart, a network fault)
if redis is not None:
    from redis.exceptions import ResponseError

    # a full (maxmemory), read-only or refusing Redis (MISCONF after a failed snapshot, BUSY while
    # a script runs) is as good as unreachable for a writer: writes wait, nothing escapes a crawl
    UNAVAILABLE: tuple[type[BaseException], ...] = (RedisConnectionError, RedisTimeoutError, OSError, ResponseError)
else:  # pragma: no cover
    UNAVAILABLE = (OSError,)


class RedisUnavailable(StoreError):
    """Redis cannot be reached (at open: the crawl does not start; later: after retrying)."""

    __module__ = "scrapy_iri.store._redis"  # where users import it from (and what tracebacks show)


# -- connections ----------------------------------------------------------------


def redact(url: str) -> str:
    """``url`` without its password (for messages)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


def split_uri(uri: str) -> tuple[str, dict[str, str]]:
    """``(client URL, store options)``: the store's own query parameters taken out of a store URI."""
    parts = urlsplit(uri)
    query = parse_qsl(parts.query, keep_blank_values=True)
    options = {k: v for k, v in query if k in STORE_OPTIONS}
    rest = [(k, v) for k, v in query if k not in STORE_OPTIONS]
    return urlunsplit(parts._replace(query=urlencode(rest))), options


def client_from_url(url: str, params: Mapping[str, Any] | None = None) -> Any:
    """A ``redis.Redis`` client for ``url``, with scrapy-iri's defaults under ``params``.

    ``params`` are keyword arguments of ``redis.Redis`` (``REDIS_PARAMS`` in
    Scrapy settings); ``redis_cls`` may name another client class. Responses
    are always bytes. Unless ``params`` has a ``retry``, a command that met a
    connection error is retried once at once (a connection a restarted server
    closed is re-opened), a timeout is not retried, and nothing waits with a
    backoff: waiting is the caller's decision, not the client's.
    """
    if redis is None:
        raise StoreError("the Redis backend needs the redis package: pip install 'scrapy-iri[redis]'")
    options = {**DEFAULT_PARAMS, **dict(params or {})}
    for name in IGNORED_PARAMS:
        options.pop(name, None)
    cls = options.pop("redis_cls", None) or redis.Redis
    if isinstance(cls, str):
        from importlib import import_module

        module, _, name = cls.rpartition(".")
        cls = getattr(import_module(module), name)
    options.setdefault("retry", Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)))
    try:
        return cls.from_url(url, decode_responses=False, **options)
    except ValueError as exc:
        raise StoreError(f"{redact(url)}: not a Redis URL: {exc}") from None


def check_reachable(client: Any, where: str) -> None:
    """Raise :class:`RedisUnavailable`, saying where and why, unless Redis answers a PING."""
    try:
        client.ping()
    except UNAVAILABLE as exc:
        raise RedisUnavailable(f"cannot reach Redis at {where}: {exc}") from exc
    except redis.RedisError as exc:
        raise RedisUnavailable(f"Redis at {where} refused the connection: {exc}") from exc
    refuse_cluster(client, where)


def refuse_cluster(client: Any, where: str) -> None:
    """Raise :class:`StoreError` if the server runs in cluster mode (not supported: the store's
    scripts build the keys they touch, which a cluster cannot route)."""
    try:
        info = client.info("cluster")
    except redis.ResponseError:  # INFO refused (some managed services): nothing to tell
        return
    if str(info.get("cluster_enabled", 0)) == "1":
        raise StoreError(
            f"Redis at {where} runs in cluster mode, which scrapy-iri does not support: use a standalone"
            " Redis (or a primary with replicas) for IRI_STORE"
        )


def drop_stale_connections(client: Any) -> None:
    """Close the pool's connections (each opens again on its next use): after an outage, the ones
    opened before it may be dead, and a command on one would fail once more."""
    try:
        client.connection_pool.disconnect()
    except (AttributeError, *UNAVAILABLE):
        pass


class Outage:
    """When to try Redis again while it is unreachable: exponential backoff, and for how long so far.

    One instance is shared by every user of a connection (the store and the
    seen set of a crawl), so they back off together.
    """

    def __init__(self, delay: float = 0.25, max_delay: float = 5.0, monotonic: Callable[[], float] = time.monotonic):
        self.delay = delay
        self.max_delay = max_delay
        self.monotonic = monotonic
        self.since: float | None = None
        self.next_attempt = 0.0
        self.attempts = 0
        self.last_error = ""

    @property
    def down(self) -> bool:
        return self.since is not None

    def elapsed(self) -> float:
        """Seconds since the outage began (0 when Redis is up)."""
        return 0.0 if self.since is None else self.monotonic() - self.since

    def may_try(self) -> bool:
        """Whether an attempt is due (always, when Redis is up)."""
        return self.since is None or self.monotonic() >= self.next_attempt

    def failed(self, exc: BaseException) -> bool:
        """Record a failed attempt; True when it starts an outage."""
        now = self.monotonic()
        started = self.since is None
        if started:
            self.since = now
            self.attempts = 0
        self.attempts += 1
        self.last_error = str(exc) or type(exc).__name__
        self.next_attempt = now + min(self.max_delay, self.delay * 2 ** (self.attempts - 1))
        return started

    def recovered(self) -> float:
        """Record a success; returns how long the outage lasted (0 if there was none)."""
        lasted = self.elapsed()
        self.since = None
        self.attempts = 0
        return lasted


class RedisKeys:
    """The key names of one namespace (see the module docstring)."""

    def __init__(self, namespace: str) -> None:
        if not namespace:
            raise StoreError("the Redis namespace must not be empty")
        self.namespace = namespace
        self.store = f"{namespace}:store:"
        self.seen = f"{namespace}:seen"
        self.seen_epoch = f"{namespace}:seen:epoch"
        self.live = f"{namespace}:live"
        self.epoch = self.store + "epoch"
        self.version = self.store + "version"
        self.changes = self.store + "changes"
        self.aliases = self.store + "aliases"
        self.cases = self.store + "cases"
        self.case_aliases = self.store + "casealiases"
        self.alias_case = self.store + "aliascase"
        self.sinks = self.store + "sinks"
        self.layout = self.store + "layout"
        self.history = self.store + "history"
        self.policy = self.store + "policy"
        self.probe = f"{namespace}:probe"
        self.origins = self.store + "origins"
        self.fanins = self.store + "fanins"
        self.evidence = self.store + "evidence"
        self.deferreds = self.store + "deferreds"
        self.filter = self.store + "filter"
        self.filter_state = self.store + "filterstate"

    def rules(self, origin: str) -> str:
        return f"{self.store}rules:{origin}"

    def fanin(self, target: str) -> str:
        return f"{self.store}fanin:{target}"

    def deferred(self, rule: str) -> str:
        return f"{self.store}deferred:{rule}"


def describe(client: Any) -> str:
    """``redis://host:port/db`` (or the socket path) of a client, for messages."""
    try:
        kwargs = client.connection_pool.connection_kwargs
    except AttributeError:
        return repr(client)
    if "path" in kwargs:
        return f"unix://{kwargs['path']}?db={kwargs.get('db', 0)}"
    scheme = "rediss" if kwargs.get("ssl") or "ssl" in str(client.connection_pool.connection_class).lower() else "redis"
    return f"{scheme}://{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"
