"""The Redis backend (``IRI_STORE = "redis://host:port/db"``): one store shared by many processes.

Every process keeps a full image of the store in memory (the in-memory
backend's dictionaries), so a lookup (:meth:`~.EquivalenceStore.representative`)
never waits for Redis. The image and Redis meet in two directions, at most
once per ``sync_interval`` (0.5 s by default):

* **flush** (write-behind): the writes made since the last flush go to Redis
  in one Lua script call, atomically and at most once (a batch id guards
  against a retried call being applied twice). Rule records are *merged*,
  never overwritten: the batch carries how many supports and counterexamples
  this process added, and the script adds them to what other processes
  stored (after the same expiry :meth:`.RuleRecord.expire` applies), so a
  counterexample learned anywhere is never lost to a concurrent writer.
* **sync** (invalidation): every batch increments a version counter and
  appends what it touched (an alias source, a rule origin, a fan-in target)
  to a change log; a process asks for the changes since the version it knows
  and re-reads only those entries, in one pipelined round trip. When it fell
  too far behind (the log keeps the last ``changes_max`` entries) it reloads
  everything.

So something learned by one process serves the others within about two
sync intervals (its flush, then their sync), as long as they use the store
(each lookup checks whether a sync is due; the Scrapy integration also runs
one on a timer).

Faults: a Redis error during a flush or a sync keeps the writes pending (none
is dropped) and lookups go on from the image; attempts are retried with
exponential backoff (:class:`Outage`). When Redis comes back empty (it was
restarted without persistence: the ``epoch`` key is gone), every process
publishes its image again with set-if-absent semantics, so what was learned
is not forgotten and nothing is counted twice.

Key layout, under a namespace ``NS`` (``scrapy-iri:<spider>`` in a crawl):

=================================  ======  ==========================================
key                                type    content
=================================  ======  ==========================================
``NS:store:epoch``                 string  random id of this store's life (gone = data lost)
``NS:store:version``               string  batches' change counter
``NS:store:changes``               list    ``a<source>``, ``r<origin>``, ``f<target>``: what each version touched
``NS:store:aliases``               hash    source -> JSON ``[target, status, time]``
``NS:store:origins``               set     origins that have rule records
``NS:store:rules:<origin>``        hash    ``"kind scope"`` -> JSON ``[support, against, first_seen,
                                           last_support, last_against, example, counterexample]``
``NS:store:fanins``                set     targets with fan-in records
``NS:store:fanin:<target>``        set     sources redirected to target (at most the sink cap)
``NS:store:evidence``              list    JSON ``[time, url, status, target, [context], note]``, newest last
``NS:store:deferreds``             set     rules with deferred URLs
``NS:store:deferred:<rule>``       set     URLs merged away by the rule
``NS:store:batch:<id>``            string  marks a batch as applied (expires after 10 minutes)
``NS:store:taken:<id>``            string  the answer of one take of deferred URLs (10 minutes)
=================================  ======  ==========================================

The seen set of the dupefilter (``NS:seen``, see
:mod:`scrapy_iri.scrapy.redis_seen`) shares the namespace. Only a standalone
Redis (or a primary) is supported: the scripts address keys they build from
the namespace, which Redis Cluster does not allow.

This module does not import Scrapy.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .base import Outcome, Resolution, StoreError
from .evidence import Alias, Evidence
from .memory import MemoryStore
from .rules import BLOCK, LearningPolicy, RuleKey, RuleRecord, RuleStatus

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
SCHEMES = ("redis", "rediss", "unix")
#: the namespace when none is given
DEFAULT_NAMESPACE = "scrapy-iri:default"
#: client options scrapy-iri sets unless the caller does (short timeouts: a
#: lookup must never hang on a dead server; one immediate retry after a
#: connection error, none after a timeout, see client_from_url)
DEFAULT_PARAMS: dict[str, Any] = {"socket_timeout": 5.0, "socket_connect_timeout": 2.0}
#: client options that make no sense here (the store speaks bytes) and are dropped
IGNORED_PARAMS = frozenset({"decode_responses", "encoding", "encoding_errors", "retry_on_timeout"})
#: options of a store URI's query string that are the store's, not the client's
STORE_OPTIONS = ("namespace", "sync_interval")

#: errors that mean "Redis is not reachable now" (a restart, a network fault)
if redis is not None:
    UNAVAILABLE: tuple[type[BaseException], ...] = (RedisConnectionError, RedisTimeoutError, OSError)
else:  # pragma: no cover
    UNAVAILABLE = (OSError,)


class RedisUnavailable(StoreError):
    """Redis cannot be reached (at open: the crawl does not start; later: after retrying)."""


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
        self.count = 0

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
            self.count += 1
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
        self.origins = self.store + "origins"
        self.fanins = self.store + "fanins"
        self.evidence = self.store + "evidence"
        self.deferreds = self.store + "deferreds"

    def rules(self, origin: str) -> str:
        return f"{self.store}rules:{origin}"

    def fanin(self, target: str) -> str:
        return f"{self.store}fanin:{target}"

    def deferred(self, rule: str) -> str:
        return f"{self.store}deferred:{rule}"


# -- the scripts -------------------------------------------------------------------

#: Apply one batch of writes, atomically and at most once.
#: ARGV: prefix, batch id, JSON batch, now, rule TTL, evidence max, changes max.
_BATCH = """
local p = ARGV[1]
if not redis.call('SET', p .. 'batch:' .. ARGV[2], '1', 'NX', 'EX', 600) then
  return {'dup', tonumber(redis.call('GET', p .. 'version') or '0')}
end
local b = cjson.decode(ARGV[3])
local now, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local changed, touched = {}, {}
local function change(c)
  if not touched[c] then touched[c] = true; changed[#changed + 1] = c end
end
for _, a in ipairs(b.a) do
  if a[2] == '' then redis.call('HDEL', p .. 'aliases', a[1])
  elseif a[3] == 1 then redis.call('HSETNX', p .. 'aliases', a[1], a[2])
  else redis.call('HSET', p .. 'aliases', a[1], a[2]) end
  change('a' .. a[1])
end
for _, r in ipairs(b.r) do
  local key, mode = p .. 'rules:' .. r[1], r[3]
  if mode == 'drop' or mode == 'dropmerge' then redis.call('HDEL', key, r[2]) end
  if mode ~= 'drop' then
    local raw = redis.call('HGET', key, r[2])
    if not (raw and mode == 'setnx') then
      local s = {0, 0, 0, 0, 0, '', ''}
      if raw then s = cjson.decode(raw) end
      if mode == 'setnx' then
        s = {r[4], r[5], r[6], r[7], r[8], r[9], r[10]}
      else
        if s[2] > 0 and now - s[5] > ttl then s[1] = 0; s[2] = 0; s[6] = ''; s[7] = '' end
        if s[1] > 0 and now - s[4] > ttl then s[1] = 0; s[6] = '' end
        if r[6] > 0 and (s[3] == 0 or r[6] < s[3]) then s[3] = r[6] end
        if r[4] > 0 then s[1] = s[1] + r[4]; if r[7] >= s[4] then s[4] = r[7]; s[6] = r[9] end end
        if r[5] > 0 then s[2] = s[2] + r[5]; if r[8] >= s[5] then s[5] = r[8]; s[7] = r[10] end end
      end
      redis.call('HSET', key, r[2], cjson.encode(s))
      redis.call('SADD', p .. 'origins', r[1])
    end
  end
  if mode == 'drop' and redis.call('EXISTS', key) == 0 then redis.call('SREM', p .. 'origins', r[1]) end
  change('r' .. r[1])
end
for _, f in ipairs(b.f) do
  local key = p .. 'fanin:' .. f[1]
  if f[2] == '' then
    redis.call('DEL', key); redis.call('SREM', p .. 'fanins', f[1])
  elseif redis.call('SCARD', key) < f[3] then
    redis.call('SADD', key, f[2]); redis.call('SADD', p .. 'fanins', f[1])
  end
  change('f' .. f[1])
end
for _, e in ipairs(b.e) do redis.call('RPUSH', p .. 'evidence', e) end
if #b.e > 0 then redis.call('LTRIM', p .. 'evidence', -tonumber(ARGV[6]), -1) end
for _, d in ipairs(b.d) do
  redis.call('SADD', p .. 'deferred:' .. d[1], d[2]); redis.call('SADD', p .. 'deferreds', d[1])
end
local v = tonumber(redis.call('GET', p .. 'version') or '0')
if #changed > 0 then
  v = redis.call('INCRBY', p .. 'version', #changed)
  for i = 1, #changed do redis.call('RPUSH', p .. 'changes', changed[i]) end
  redis.call('LTRIM', p .. 'changes', -tonumber(ARGV[7]), -1)
end
return {'ok', v, #changed}
"""

#: What changed since a version. ARGV: prefix, known version, known epoch.
#: Returns {epoch, version} (nothing new), {epoch, version, '*'} (reload) or
#: {epoch, version, change...}.
_SYNC = """
local p = ARGV[1]
local epoch = redis.call('GET', p .. 'epoch') or ''
local v = tonumber(redis.call('GET', p .. 'version') or '0')
local known = tonumber(ARGV[2])
if epoch ~= ARGV[3] then return {epoch, v, '*'} end
if v == known then return {epoch, v} end
local gap = v - known
if gap < 0 or gap > redis.call('LLEN', p .. 'changes') then return {epoch, v, '*'} end
local out = {epoch, v}
for _, c in ipairs(redis.call('LRANGE', p .. 'changes', -gap, -1)) do out[#out + 1] = c end
return out
"""

#: Take the URLs deferred under a rule, atomically and idempotently (a retried call gets the
#: same answer, not an empty one). KEYS: deferred:<rule>, deferreds, taken:<token>. ARGV: rule.
_TAKE = """
local done = redis.call('GET', KEYS[3])
if done then return cjson.decode(done) end
local urls = redis.call('SMEMBERS', KEYS[1])
redis.call('DEL', KEYS[1]); redis.call('SREM', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], cjson.encode(urls), 'EX', 600)
return urls
"""


# -- encoding ----------------------------------------------------------------------


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def _alias_value(alias: Alias) -> str:
    return json.dumps([alias.target, alias.status, alias.time], ensure_ascii=False)


def _alias(source: str, raw: bytes | str) -> Alias:
    target, status, time_ = json.loads(raw)
    return Alias(source, target, int(status), float(time_))


def _rule_field(key: RuleKey) -> str:
    return f"{key.kind} {key.scope}"


def _rule(origin: str, field: bytes | str, raw: bytes | str) -> RuleRecord:
    kind, _, scope = _text(field).partition(" ")
    support, against, first, last_support, last_against, example, counterexample = json.loads(raw)
    return RuleRecord(
        RuleKey(origin, kind, scope),
        int(support),
        int(against),
        float(first),
        float(last_support),
        float(last_against),
        example,
        counterexample,
    )


def _evidence_value(e: Evidence) -> str:
    return json.dumps([e.time, e.url, e.status, e.target, sorted(e.context), e.note], ensure_ascii=False)


def _evidence(raw: bytes | str) -> Evidence:
    time_, url, status, target, context, note = json.loads(raw)
    return Evidence(time_, url, status, target, frozenset(context), note)


def _adds(base_count: int, count: int, base_last: float, last: float) -> int:
    """How many observations of one kind were added to a record since ``base`` (expiry may have reset it)."""
    if count > base_count:
        return count - base_count
    if count < base_count or last != base_last:
        return count  # expired locally, then ``count`` added
    return 0


_ZERO = RuleRecord(RuleKey("", ""))


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class RedisStore(MemoryStore):
    """A store in Redis, shared by every process that opens the same namespace.

    ``client`` is a ``redis.Redis`` (see :func:`client_from_url`) or a URL.
    Opening checks that Redis answers (:class:`RedisUnavailable` otherwise) and
    loads the image. ``outage`` may be shared with other users of the client.

    With ``auto_sync`` (the default) lookups and observations run
    :meth:`maintain` when it is due. Without it the image changes only when
    the owner calls :meth:`maintain` (the Scrapy integration does, on a
    timer): two lookups made while handling one request always agree.
    """

    def __init__(
        self,
        client: Any,
        namespace: str = DEFAULT_NAMESPACE,
        policy: LearningPolicy | None = None,
        *,
        clock: Callable[[], float] = time.time,
        sync_interval: float = 0.5,
        evidence_max: int = 100_000,
        changes_max: int = 10_000,
        batch_size: int = 1000,
        outage: Outage | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        owns_client: bool = True,
        auto_sync: bool = True,
    ) -> None:
        super().__init__(policy, clock=clock)
        if isinstance(client, str):
            client = client_from_url(client)
        self.client = client
        self.owns_client = owns_client
        self.auto_sync = auto_sync
        self.keys = RedisKeys(namespace)
        self.where = _describe(client)
        self.sync_interval = sync_interval
        self.evidence_max = evidence_max
        self.changes_max = changes_max
        self.batch_size = batch_size
        self.outage = outage or Outage(monotonic=monotonic)
        self.monotonic = monotonic
        self._batch = client.register_script(_BATCH)
        self._sync = client.register_script(_SYNC)
        self._take = client.register_script(_TAKE)
        self._version = 0
        self._epoch = ""
        self._next_tick = 0.0
        self._closed = False
        # pending writes (the write-behind batch)
        self._alias_ops: dict[str, Alias | None] = {}
        self._rule_ops: dict[RuleKey, str] = {}
        self._fanin_ops: list[tuple[str, str, int]] = []
        self._evidence_ops: list[str] = []
        self._deferred_ops: dict[RuleKey, dict[str, None]] = {}
        # rule records as Redis last had them: what this process's additions are counted from
        self._rule_base: dict[RuleKey, RuleRecord] = {}
        # rules active here that a sync found suspended (handed over with the next outcome)
        self._remote_contradicted: set[RuleKey] = set()
        #: counters of the store's traffic (round trips, reloads, ...)
        self.counters: dict[str, int] = {}
        check_reachable(client, self.where)
        self._open()

    @classmethod
    def from_uri(cls, uri: str, *, params: Mapping[str, Any] | None = None, **kwargs: Any) -> RedisStore:
        """Open ``redis://host:port/db?namespace=NS&sync_interval=S`` (other query options go to the client)."""
        url, options = split_uri(uri)
        if "namespace" in options:
            kwargs.setdefault("namespace", options["namespace"])
        if "sync_interval" in options:
            kwargs.setdefault("sync_interval", float(options["sync_interval"]))
        return cls(client_from_url(url, params), **kwargs)

    # -- life ----------------------------------------------------------------------

    def _open(self) -> None:
        try:
            self.client.set(self.keys.epoch, uuid.uuid4().hex, nx=True)
            self._load()
        except UNAVAILABLE as exc:
            raise RedisUnavailable(f"cannot reach Redis at {self.where}: {exc}") from exc
        self._next_tick = self.monotonic() + self.sync_interval

    def _tally(self, name: str, n: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + n

    @property
    def pending(self) -> int:
        """Writes not yet in Redis."""
        return (
            len(self._alias_ops)
            + len(self._rule_ops)
            + len(self._fanin_ops)
            + len(self._evidence_ops)
            + sum(len(urls) for urls in self._deferred_ops.values())
        )

    def maintain(self, *, force: bool = False) -> bool:
        """Flush and sync if an interval has passed (or ``force``); False when Redis could not be reached.

        Never raises for an unreachable Redis: the writes stay pending and
        the next attempt waits for the outage's backoff.
        """
        now = self.monotonic()
        if not force and now < self._next_tick:
            return not self.outage.down
        self._next_tick = now + self.sync_interval
        if not force and not self.outage.may_try():
            return False
        try:
            self._flush()
            self._pull()
        except UNAVAILABLE as exc:
            if self.outage.failed(exc):
                logger.warning(
                    "Redis at %(where)s unreachable (%(error)s): the equivalence store keeps %(pending)d"
                    " writes pending and answers from memory until it is back",
                    {"where": self.where, "error": exc, "pending": self.pending},
                )
            return False
        if self.outage.down:
            lasted = self.outage.recovered()
            logger.info("Redis at %(where)s is back after %(lasted).1f s", {"where": self.where, "lasted": lasted})
        return True

    def flush(self) -> None:
        """Write the pending batch to Redis now; if it cannot, keep the writes pending and log a warning."""
        try:
            self._flush()
        except UNAVAILABLE as exc:
            self.outage.failed(exc)
            logger.warning(
                "Redis at %(where)s unreachable (%(error)s): %(pending)d writes to the equivalence store"
                " stay pending",
                {"where": self.where, "error": exc, "pending": self.pending},
            )

    def sync(self) -> None:
        """Flush, then read what other processes changed; raises :class:`RedisUnavailable` if it cannot."""
        self._checked(self._flush)
        self._checked(self._pull)

    def close(self) -> None:
        """Flush (logging, not raising, if Redis is gone) and release the connections."""
        if self._closed:
            return
        self._closed = True
        try:
            self._flush()
        except UNAVAILABLE as exc:
            logger.error(
                "Redis at %(where)s unreachable at close (%(error)s): %(pending)d writes to the"
                " equivalence store are lost (what this process learned since its last flush)",
                {"where": self.where, "error": exc, "pending": self.pending},
            )
        if self.owns_client:
            try:
                self.client.close()
            except Exception:  # pragma: no cover - closing a broken pool
                pass

    def clear(self) -> None:
        """Delete the whole store from Redis (every process reloads an empty one) and from memory."""

        def run() -> None:
            keys = [self.keys.epoch, self.keys.version, self.keys.changes, self.keys.aliases]
            keys += [self.keys.origins, self.keys.fanins, self.keys.evidence, self.keys.deferreds]
            for pattern in ("rules:*", "fanin:*", "deferred:*", "batch:*", "taken:*"):
                keys += list(self.client.scan_iter(match=self.keys.store + pattern, count=1000))
            for chunk in _chunks(keys, 500):
                self.client.delete(*chunk)
            self.client.set(self.keys.epoch, uuid.uuid4().hex)

        self._checked(run)
        self._discard_pending()
        self._checked(self._load)

    def _checked(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except UNAVAILABLE as exc:
            self.outage.failed(exc)
            raise RedisUnavailable(f"cannot reach Redis at {self.where}: {exc}") from exc

    def _discard_pending(self) -> None:
        self._alias_ops.clear()
        self._rule_ops.clear()
        self._fanin_ops.clear()
        self._evidence_ops.clear()
        self._deferred_ops.clear()

    # -- reading Redis ---------------------------------------------------------------

    def _load(self) -> None:
        """Replace the image with what Redis holds."""
        c, k = self.client, self.keys
        self._tally("reloads")
        epoch, version = c.mget(k.epoch, k.version)
        aliases: dict[str, Alias] = {}
        for field, raw in c.hscan_iter(k.aliases, count=1000):
            source = _text(field)
            aliases[source] = _alias(source, raw)
        rules: dict[str, dict[RuleKey, RuleRecord]] = {}
        origins = sorted(_text(o) for o in c.smembers(k.origins))
        for chunk in _chunks(origins, 500):
            pipe = c.pipeline(transaction=False)
            for origin in chunk:
                pipe.hgetall(k.rules(origin))
            for origin, fields in zip(chunk, pipe.execute()):
                records = {}
                for field, raw in fields.items():
                    record = _rule(origin, field, raw)
                    records[record.key] = record
                if records:
                    rules[origin] = records
        fanins: dict[str, list[str]] = {}
        targets = sorted(_text(t) for t in c.smembers(k.fanins))
        for chunk in _chunks(targets, 500):
            pipe = c.pipeline(transaction=False)
            for target in chunk:
                pipe.smembers(k.fanin(target))
            for target, sources in zip(chunk, pipe.execute()):
                if sources:
                    fanins[target] = sorted(_text(s) for s in sources)
        # rebuild the image through the in-memory backend, so that its indexes follow
        MemoryStore.__init__(self, self.policy, clock=self.clock)
        for alias in aliases.values():
            MemoryStore._put_alias(self, alias)
        for records in rules.values():
            for record in records.values():
                MemoryStore._put_rule(self, record)
        for target, sources in fanins.items():
            for source in sources:
                MemoryStore._add_fanin(self, target, source, len(sources))
        self._rule_base = {key: replace(r) for records in rules.values() for key, r in records.items()}
        self._epoch = _text(epoch or b"")
        self._version = int(version or 0)

    def _pull(self) -> None:
        """Read the entries other processes changed since the known version (one or two round trips)."""
        self._tally("syncs")
        answer = self._sync(args=[self.keys.store, self._version, self._epoch])
        epoch, version, changes = _text(answer[0]), int(answer[1]), [_text(c) for c in answer[2:]]
        if changes == ["*"]:
            if not epoch:
                self._republish()
            before = self._active_rules(self._origins())
            self._load()
            self._remote_contradicted.update(before - self._active_rules(self._origins()))
            return
        if not changes:
            return
        origins = {change[1:] for change in changes if change[0] == "r"}
        before = self._active_rules(origins)
        self._refresh(changes)
        self._version = version
        self._remote_contradicted.update(before - self._active_rules(origins))

    def _origins(self) -> set[str]:
        return {record.key.origin for record in MemoryStore._iter_rules(self)}

    def _active_rules(self, origins: Iterable[str]) -> set[RuleKey]:
        """The rules of ``origins`` that apply now."""
        return {
            key
            for origin in origins
            for key, record in self._rules_at(origin).items()
            if key.kind != BLOCK and self.rule_status(record) is RuleStatus.ACTIVE
        }

    def _refresh(self, changes: Iterable[str]) -> None:
        c, k = self.client, self.keys
        wanted = sorted(set(changes))
        pipe = c.pipeline(transaction=False)
        for change in wanted:
            kind, name = change[0], change[1:]
            if kind == "a":
                pipe.hget(k.aliases, name)
            elif kind == "r":
                pipe.hgetall(k.rules(name))
            else:
                pipe.smembers(k.fanin(name))
        self._tally("refreshed", len(wanted))
        for change, value in zip(wanted, pipe.execute()):
            kind, name = change[0], change[1:]
            if kind == "a":
                if value is None:
                    MemoryStore._drop_alias(self, name)
                else:
                    MemoryStore._put_alias(self, _alias(name, value))
            elif kind == "r":
                records = [_rule(name, field, raw) for field, raw in value.items()]
                for key in set(self._rules_at(name)) - {record.key for record in records}:
                    MemoryStore._drop_rule(self, key)
                    self._rule_base.pop(key, None)
                for record in records:
                    MemoryStore._put_rule(self, record)
                    self._rule_base[record.key] = replace(record)
            else:
                MemoryStore._drop_fanin(self, name)
                for source in sorted(_text(s) for s in value):
                    MemoryStore._add_fanin(self, name, source, len(value))

    def _republish(self) -> None:
        """Redis lost the store (restarted empty): write the image back, without overwriting anything."""
        logger.warning(
            "Redis at %(where)s lost the equivalence store (restarted without persistence?):"
            " publishing this process's copy again",
            {"where": self.where},
        )
        self._tally("republished")
        aliases = [[a.source, _alias_value(a), 1] for a in MemoryStore._iter_aliases(self)]
        rules = [
            [r.key.origin, _rule_field(r.key), "setnx", r.support, r.against, r.first_seen,
             r.last_support, r.last_against, r.example, r.counterexample]
            for r in MemoryStore._iter_rules(self)
        ]
        fanins = [[t, s, self.policy.sink_fanin] for t, sources in self._fanins.items() for s in sources]
        for part in _chunks(aliases, self.batch_size):
            self._apply({"a": part, "r": [], "f": [], "e": [], "d": []})
        for part in _chunks(rules, self.batch_size):
            self._apply({"a": [], "r": part, "f": [], "e": [], "d": []})
        for part in _chunks(fanins, self.batch_size):
            self._apply({"a": [], "r": [], "f": part, "e": [], "d": []})
        self.client.set(self.keys.epoch, uuid.uuid4().hex, nx=True)

    # -- writing Redis ---------------------------------------------------------------

    def _flush(self) -> None:
        """Send the pending writes as one batch (several when large).

        A write leaves the pending batch only once a batch holding it was
        applied: after a failure the rest is sent again later, never what
        was already applied (a rule's additions would count twice).
        """
        if not self.pending:
            return
        rule_keys = list(self._rule_ops)
        deferred = [(rule, url) for rule, urls in self._deferred_ops.items() for url in urls]
        batch: dict[str, list[Any]] = {
            "a": [[source, "" if a is None else _alias_value(a), 0] for source, a in self._alias_ops.items()],
            "r": [self._rule_op(key) for key in rule_keys],
            "f": [list(op) for op in self._fanin_ops],
            "e": list(self._evidence_ops),
            "d": [[str(rule), url] for rule, url in deferred],
        }
        applied = dict.fromkeys(batch, 0)
        try:
            if sum(len(ops) for ops in batch.values()) <= self.batch_size:
                self._apply(batch)
                applied = {name: len(ops) for name, ops in batch.items()}
            else:
                for name, ops in batch.items():
                    for part in _chunks(ops, self.batch_size):
                        self._apply({**{n: [] for n in batch}, name: part})
                        applied[name] += len(part)
        finally:
            self._applied(applied, rule_keys, deferred)

    def _rule_op(self, key: RuleKey) -> list[Any]:
        """The batch entry of one rule: a drop, or what this process added since ``base``."""
        record = self._rules_at(key.origin).get(key)
        if record is None:
            return [key.origin, _rule_field(key), "drop", 0, 0, 0, 0, 0, "", ""]
        base = self._rule_base.get(key, _ZERO)
        support = _adds(base.support, record.support, base.last_support, record.last_support)
        against = _adds(base.against, record.against, base.last_against, record.last_against)
        return [
            key.origin, _rule_field(key), self._rule_ops[key], support, against, record.first_seen,
            record.last_support, record.last_against, record.example, record.counterexample,
        ]  # fmt: skip

    def _applied(self, applied: dict[str, int], rule_keys: list[RuleKey], deferred: list[tuple[RuleKey, str]]) -> None:
        """Take the first ``applied[kind]`` writes of each kind out of the pending batch."""
        for source in list(self._alias_ops)[: applied["a"]]:
            del self._alias_ops[source]
        for key in rule_keys[: applied["r"]]:
            del self._rule_ops[key]
            record = self._rules_at(key.origin).get(key)
            if record is None:
                self._rule_base.pop(key, None)
            else:
                self._rule_base[key] = replace(record)  # its additions are in Redis now
        del self._fanin_ops[: applied["f"]]
        del self._evidence_ops[: applied["e"]]
        for rule, url in deferred[: applied["d"]]:
            urls = self._deferred_ops[rule]
            del urls[url]
            if not urls:
                del self._deferred_ops[rule]

    def _apply(self, batch: dict[str, list[Any]]) -> None:
        """Run one batch. When nobody else wrote since this process's last sync, the changes
        it made are all its own and already in the image: the known version moves past them
        (no need to read them back)."""
        self._tally("batches")
        answer = self._batch(
            args=[
                self.keys.store,
                uuid.uuid4().hex,
                json.dumps(batch, ensure_ascii=False),
                self.clock(),
                self.policy.rule_ttl,
                self.evidence_max,
                self.changes_max,
            ]
        )
        if answer[0] == b"ok" and int(answer[1]) - int(answer[2]) == self._version:
            self._version = int(answer[1])

    # -- the entry points: keep the image fresh ----------------------------------------

    def resolve(self, url: str) -> Resolution:
        if self.auto_sync:
            self.maintain()
        return super().resolve(url)

    def record_redirect(self, *args: Any, **kwargs: Any) -> Outcome:
        if self.auto_sync:
            self.maintain()
        return self._with_remote(super().record_redirect(*args, **kwargs))

    def record_response(self, *args: Any, **kwargs: Any) -> Outcome:
        if self.auto_sync:
            self.maintain()
        return self._with_remote(super().record_response(*args, **kwargs))

    def _with_remote(self, outcome: Outcome) -> Outcome:
        """Report rules other processes contradicted as contradicted here too (once per process).

        A process re-schedules the requests a rule merged away when an outcome
        says the rule was contradicted; rules suspended by another process's
        observation reach this process through a sync, and are handed over
        with the next outcome, so that every process that deferred requests
        under the rule takes them back (its own pending ones included).
        """
        if self._remote_contradicted:
            outcome.contradicted = sorted({*outcome.contradicted, *self._remote_contradicted})
            self._remote_contradicted.clear()
        return outcome

    # -- primitives: the image, plus the pending batch ---------------------------------

    def _put_alias(self, alias: Alias) -> None:
        super()._put_alias(alias)
        self._alias_ops[alias.source] = alias

    def _drop_alias(self, source: str) -> None:
        super()._drop_alias(source)
        self._alias_ops[source] = None

    def _iter_aliases(self) -> Iterator[Alias]:
        if self.auto_sync:
            self.maintain()
        return super()._iter_aliases()

    def _put_rule(self, record: RuleRecord) -> None:
        super()._put_rule(record)
        self._rule_ops[record.key] = "dropmerge" if self._rule_ops.get(record.key, "").startswith("drop") else "merge"

    def _drop_rule(self, key: RuleKey) -> None:
        super()._drop_rule(key)
        self._rule_ops[key] = "drop"
        self._rule_base.pop(key, None)

    def _iter_rules(self) -> Iterator[RuleRecord]:
        if self.auto_sync:
            self.maintain()
        return super()._iter_rules()

    def _add_fanin(self, target: str, source: str, cap: int) -> list[str]:
        before = self._fanin(target)
        sources = super()._add_fanin(target, source, cap)
        if len(sources) > before:
            self._fanin_ops.append((target, source, cap))
        return sources

    def _drop_fanin(self, target: str) -> None:
        super()._drop_fanin(target)
        self._fanin_ops.append((target, "", 0))

    def _iter_fanin(self) -> Iterator[tuple[str, int]]:
        if self.auto_sync:
            self.maintain()
        return super()._iter_fanin()

    def _add_evidence(self, evidence: Evidence) -> None:
        self._evidence_ops.append(_evidence_value(evidence))

    def _iter_evidence(self, url: str | None = None) -> Iterator[Evidence]:
        self.flush()
        raw = self._checked(lambda: self.client.lrange(self.keys.evidence, 0, -1))
        entries = [_evidence(item) for item in raw]
        if url is not None:
            entries = [e for e in entries if url in (e.url, e.target)]
        return iter(entries)

    def _drop_evidence(self, url: str) -> int:
        self.flush()

        def run() -> int:
            removed = 0
            for item in self.client.lrange(self.keys.evidence, 0, -1):
                e = _evidence(item)
                if url in (e.url, e.target):
                    removed += int(self.client.lrem(self.keys.evidence, 1, item))
            return removed

        return int(self._checked(run))

    def _count_evidence(self) -> int:
        pending = len(self._evidence_ops)
        try:
            return int(self.client.llen(self.keys.evidence)) + pending
        except UNAVAILABLE:
            return pending

    def _add_deferred(self, rule: RuleKey, url: str) -> None:
        self._deferred_ops.setdefault(rule, {})[url] = None

    def _take_deferred(self, rule: RuleKey) -> list[str]:
        """Take the URLs every process deferred under ``rule`` (atomically: one taker gets them)."""
        mine = list(self._deferred_ops.get(rule, {}))
        try:
            self._flush()
            token = f"{self.keys.store}taken:{uuid.uuid4().hex}"
            urls = self._take(keys=[self.keys.deferred(str(rule)), self.keys.deferreds, token], args=[str(rule)])
        except UNAVAILABLE as exc:
            self.outage.failed(exc)
            self._deferred_ops.pop(rule, None)
            logger.warning(
                "Redis at %(where)s unreachable: only this process's %(n)d URLs deferred under %(rule)s"
                " are re-scheduled; other processes' stay in Redis",
                {"where": self.where, "n": len(mine), "rule": str(rule)},
            )
            return mine
        return sorted({*(_text(u) for u in urls), *mine})

    def _count_deferred(self) -> int:
        def run() -> int:
            rules = list(self.client.smembers(self.keys.deferreds))
            if not rules:
                return 0
            pipe = self.client.pipeline(transaction=False)
            for rule in rules:
                pipe.scard(self.keys.deferred(_text(rule)))
            return int(sum(pipe.execute()))

        pending = sum(len(urls) for urls in self._deferred_ops.values())
        try:
            return int(run()) + pending
        except UNAVAILABLE:
            return pending


def _describe(client: Any) -> str:
    """``redis://host:port/db`` (or the socket path) of a client, for messages."""
    try:
        kwargs = client.connection_pool.connection_kwargs
    except AttributeError:
        return repr(client)
    if "path" in kwargs:
        return f"unix://{kwargs['path']}?db={kwargs.get('db', 0)}"
    scheme = "rediss" if kwargs.get("ssl") or "ssl" in str(client.connection_pool.connection_class).lower() else "redis"
    return f"{scheme}://{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"
