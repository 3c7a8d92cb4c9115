"""The Redis store: the in-memory image, what it records, and its life (open, maintain, close)."""

from __future__ import annotations

import logging
import time
import re
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from .._base import Outcome, Resolution
from .._codec import policy_from_text, policy_text
from .._evidence import Alias, Evidence
from .._forms import scheme_form
from .._memory import MemoryStore
from .._rules import PERMANENT, LearningPolicy, RuleKey, RuleRecord, case_key
from .codec import (
    _alias_tombstone,
    _alias_value,
    _case_value,
    _chunks,
    _evidence,
    _evidence_value,
    _glob_escape,
    _text,
)
from .connection import (
    DEFAULT_NAMESPACE,
    UNAVAILABLE,
    Outage,
    RedisKeys,
    RedisUnavailable,
    _describe,
    check_reachable,
    client_from_url,
    split_uri,
)
from .journal import RedisJournal
from .scripts import BATCH, SYNC, TAKE
from .sync import RedisSync

logger = logging.getLogger("scrapy_iri.store._redis")
#: the id of a batch or a take: a uuid4 hex
_BATCH_ID = re.compile(r"[0-9a-f]{32}")


class RedisStore(RedisSync, RedisJournal, MemoryStore):
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
        pending_path: str | Path | None = None,
        answered_horizon: float = 600.0,
        rollback_memory: int = 100_000,
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
        #: how long Redis remembers that a URL answered for itself (an alias observed earlier and
        #: flushed later is refused); an alias write older than this is refused too (learned again)
        self.answered_horizon = answered_horizon
        self.outage = outage or Outage(monotonic=monotonic)
        self.monotonic = monotonic
        self._batch = client.register_script(BATCH)
        self._sync = client.register_script(SYNC)
        self._take = client.register_script(TAKE)
        self._version = 0
        self._epoch = ""
        self._next_tick = 0.0
        self._closed = False
        # pending writes (the write-behind batch)
        self._alias_ops: dict[str, tuple[str, float, int]] = {}  # source -> (value, time, drop)
        self._case_ops: dict[str, tuple[str, float, int, str]] = {}  # case key -> (value, time, drop, guard)
        self._rule_ops: dict[RuleKey, str] = {}
        self._fanin_ops: list[tuple[str, str, int]] = []
        self._evidence_ops: list[str] = []
        self._deferred_ops: dict[RuleKey, dict[str, None]] = {}
        # rule records as Redis last had them: what this process's additions are counted from
        self._rule_base: dict[RuleKey, RuleRecord] = {}
        # rules active here that a sync found suspended (handed over with the next outcome)
        self._remote_contradicted: set[RuleKey] = set()
        # rules whose deferred URLs could not be taken from Redis (an outage): taken again once it is back
        self._retake: set[RuleKey] = set()
        #: where pending writes are saved when Redis is unreachable at close (a JOBDIR), and read back at open
        self.pending_path = None if pending_path is None else Path(pending_path)
        #: counters of the store's traffic (round trips, reloads, ...)
        self.counters: dict[str, int] = {}
        # what this process can write again if Redis rolls back (see RedisSync._rolled_back): the last
        # batch it applied, its last ``rollback_memory`` alias drops and answers, its deferred URLs
        self.rollback_memory = rollback_memory
        self._last_batch: tuple[str, float] | None = None
        self._ended: OrderedDict[str, tuple[str, float, int]] = OrderedDict()
        self._deferred_here: dict[str, dict[str, None]] = {}
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
            self._replay_saved()
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
            + len(self._case_ops)
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
        if self._retake:  # their URLs could not be taken during the outage: report them contradicted again
            self._remote_contradicted.update(self._retake)
            self._retake.clear()
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
            if self.pending_path is not None:
                self._save_pending()
                fate = f"saved in {self.pending_path} and written to Redis when the job resumes"
            else:
                fate = "lost (what this process learned since its last flush; set JOBDIR to keep them)"
            logger.error(
                "Redis at %(where)s unreachable at close (%(error)s): %(pending)d writes to the"
                " equivalence store are %(fate)s",
                {"where": self.where, "error": exc, "pending": self.pending, "fate": fate},
            )
        if self.owns_client:
            try:
                self.client.close()
            except Exception:  # pragma: no cover - closing a broken pool
                pass

    def clear(self) -> None:
        """Delete the whole store from Redis (every process reloads an empty one) and from memory."""

        def run() -> None:
            keys = [self.keys.epoch, self.keys.version, self.keys.changes, self.keys.aliases, self.keys.cases]
            keys += [self.keys.store + "answered"]
            keys += [self.keys.origins, self.keys.fanins, self.keys.evidence, self.keys.deferreds]
            # Sub-keys by the sets that list them, not by a SCAN pattern: a namespace may
            # extend another one's key names ("a" vs "a:store:rules:x"), never its sets.
            for members, key_of in (
                (self.keys.origins, self.keys.rules),
                (self.keys.fanins, self.keys.fanin),
                (self.keys.deferreds, self.keys.deferred),
            ):
                keys += [key_of(_text(member)) for member in self.client.smembers(members)]
            prefix = _glob_escape(self.keys.store)
            for kind in ("batch:", "taken:"):  # uuid hex ids; they expire on their own anyway
                for key in self.client.scan_iter(match=prefix + kind + "*", count=1000):
                    if _BATCH_ID.fullmatch(_text(key)[len(self.keys.store) + len(kind) :]):
                        keys.append(key)
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
        self._case_ops.clear()
        self._retake.clear()
        self._rule_ops.clear()
        self._fanin_ops.clear()
        self._evidence_ops.clear()
        self._deferred_ops.clear()

    # -- the entry points: keep the image fresh ----------------------------------------

    def resolve(self, url: str) -> Resolution:
        if self.auto_sync:
            self.maintain()
        return super().resolve(url)

    def record_redirect(self, source: str, status: int, target: str, **kwargs: Any) -> Outcome:
        if self.auto_sync:
            self.maintain()
        outcome = super().record_redirect(source, status, target, **kwargs)
        if status not in PERMANENT:  # a temporary redirect ends an alias too
            self._answered(source)
        return self._with_remote(outcome)

    def record_response(self, url: str, status: int, **kwargs: Any) -> Outcome:
        if self.auto_sync:
            self.maintain()
        outcome = super().record_response(url, status, **kwargs)
        if status < 400:
            self._answered(url)
        return self._with_remote(outcome)

    def _answered(self, url: str) -> None:
        """``url`` answered for itself: tell Redis, so that an alias of it another process observed
        earlier, and flushes later, is refused (this process may not know that alias yet)."""
        source = scheme_form(url)
        if source is not None and source not in self._alias_ops:
            now = self.clock()
            self._alias_ops[source] = (_alias_tombstone(now), now, 2)

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
        self._alias_ops[alias.source] = (_alias_value(alias), alias.time, 0)

    def _drop_alias(self, source: str) -> None:
        super()._drop_alias(source)
        now = self.clock()
        self._alias_ops[source] = (_alias_tombstone(now), now, 1)

    def _declare_case(self, url: str) -> None:
        super()._declare_case(url)
        now = self.clock()
        self._case_ops[case_key(url)] = (_case_value(url, now), now, 0, "")

    def _drop_declared_case(self, url: str) -> bool:
        if not super()._drop_declared_case(url):
            return False
        now = self.clock()
        self._case_ops[case_key(url)] = (_case_value("", now), now, 1, url)
        return True

    def _iter_declared_cases(self) -> Iterator[str]:
        if self.auto_sync:
            self.maintain()
        return super()._iter_declared_cases()

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
            self._deferred_here.pop(str(rule), None)
        except UNAVAILABLE as exc:
            self.outage.failed(exc)
            self._deferred_ops.pop(rule, None)
            self._retake.add(rule)
            logger.warning(
                "Redis at %(where)s unreachable: only this process's %(n)d URLs deferred under %(rule)s"
                " are re-scheduled now; those in Redis are taken once it is back",
                {"where": self.where, "n": len(mine), "rule": str(rule)},
            )
            return mine
        return sorted({*(_text(u) for u in urls), *mine})

    def _load_policy(self) -> LearningPolicy | None:
        try:
            raw = self.client.get(self.keys.policy)
        except UNAVAILABLE:
            return None
        return None if raw is None else policy_from_text(raw)

    def _save_policy(self, policy: LearningPolicy) -> None:
        try:
            self.client.set(self.keys.policy, policy_text(policy))
        except UNAVAILABLE as exc:
            logger.warning("Redis at %s: could not record the learning policy: %s", self.where, exc)

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
