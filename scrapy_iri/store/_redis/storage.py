"""The Redis storage: the shared cached reads and write-behind over its port, batches applied at most once, and its life."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...errors import StoreError
from .._filter import KeyFilter
from .._layered import LayeredStorage
from .._rules import RuleKey, alias_case_key
from .._storage import DEFAULT_CACHE_SIZE, DEFAULT_RULE_CACHE, EVIDENCE_MAX_AGE, MISSING
from .._writes import WriteBehind
from .codec import LAYOUT, alias_of, batch_bytes, chunks, glob_escape, text
from .connection import UNAVAILABLE, Outage, RedisKeys, RedisUnavailable, check_reachable, describe, drop_stale_connections
from .journal import Journal, batch_of, parts, save, saved_batches
from .ledger import Ledger, default_ledger_path
from .scripts import ALIAS, BATCH, COMPACT, SAVE_FILTER, TAKE
from .port import RedisPort
from .sync import Follower, Image

logger = logging.getLogger("scrapy_iri.store._redis")

#: the id of a batch or a take: a uuid4 hex
_BATCH_ID = re.compile(r"[0-9a-f]{32}")
#: batches between two compactions of expired rule records (a process's first batch compacts too)
COMPACT_EVERY = 16
#: origins whose rule records one compaction looks at (in turn: every origin is visited over time)
COMPACT_ORIGINS = 64


class RedisStorage(LayeredStorage):
    """A store in Redis, shared by every process that opens the same namespace.

    ``client`` is a ``redis.Redis``. Opening checks that Redis answers
    (:class:`RedisUnavailable` otherwise) and reads the rules and sinks
    only. With ``auto_sync`` lookups and observations run :meth:`maintain`
    when it is due; without it the owner calls :meth:`maintain` (the Scrapy
    integration does, on a timer).
    """

    round_trips = True
    unavailable = UNAVAILABLE
    port: RedisPort

    def __init__(
        self,
        client: Any,
        namespace: str,
        *,
        clock: Callable[[], float] = time.time,
        sync_interval: float = 0.5,
        cache_size: int = DEFAULT_CACHE_SIZE,
        evidence_max: int = 100_000,
        evidence_max_age: float = EVIDENCE_MAX_AGE,
        changes_max: int = 10_000,
        batch_size: int = 1000,
        outage: Outage | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        owns_client: bool = True,
        auto_sync: bool = True,
        pending_path: str | Path | None = None,
        answered_horizon: float = 600.0,
        rollback_memory: int = 100_000,
        rule_cache: int = DEFAULT_RULE_CACHE,
        ledger_path: str | Path | None = None,
        machine_ledger: bool = False,
        accept_rollback_risk: bool = False,
    ) -> None:
        self.client = client
        self.owns_client = owns_client
        self.auto_sync = auto_sync
        self.keys = RedisKeys(namespace)
        self.where = describe(client)
        self.clock = clock
        self.monotonic = monotonic
        self.sync_interval = sync_interval
        self.evidence_max = evidence_max
        self.evidence_max_age = evidence_max_age
        self.changes_max = changes_max
        self.batch_size = batch_size
        #: how long Redis remembers that a URL answered for itself (an alias observed earlier and
        #: flushed later is refused); an alias write older than this is refused too (learned again)
        self.answered_horizon = answered_horizon
        self.outage = outage or Outage(monotonic=monotonic)
        #: where pending writes are saved when Redis is unreachable at close (a JOBDIR), and read back at open
        self.pending_path = None if pending_path is None else Path(pending_path)
        #: counters of the store's traffic (round trips, reloads, ...)
        self.counters: dict[str, int] = {}
        #: what a rollback would lose (the last batches' writes), and the rules to take again
        self.journal = Journal(rollback_memory)
        self._batch = client.register_script(BATCH)
        self._alias_sha = client.register_script(ALIAS).sha
        self._conn: Any = None
        port = RedisPort(
            client, self.keys, self._read, self._command, lambda: self._alias_sha,
            lambda batch, batch_id: self._apply(batch, batch_id), batch_size,
        )  # fmt: skip
        # the writes Redis has not got yet, read over what it answers
        writes = WriteBehind(batch_size, sync_interval, monotonic)
        self.image = Image(port, writes, cache_size, rule_cache, lambda: self.force_floor)
        self.compose(port, writes, self.image)
        self._take = client.register_script(TAKE)
        self._compact_script = client.register_script(COMPACT)
        self._batches = 0
        #: the time of the newest rule count this process sent (its observations' time, when learned late)
        self._counted_at = 0.0
        #: a flush is sending batches: their ledger records are made durable together, at its end
        self._flushing = False
        self._next_compaction = 1
        self._save_filter_script = client.register_script(SAVE_FILTER)
        #: what this machine's processes ended or suspended, and the newest batch they applied (see :mod:`.ledger`)
        machine = default_ledger_path(self.where, namespace)
        #: with ``ledger_path`` and ``machine_ledger``, its lines are appended to the machine's ledger too
        self.ledger = Ledger(ledger_path if ledger_path is not None else machine, machine if machine_ledger else None)
        self.ledger.compact()
        self.accept_rollback_risk = accept_rollback_risk
        self.follower = Follower(
            client, self.keys, self.image, self.journal, self._apply, self._tally, self.where, self.ledger,
            RedisPort(client, self.keys, _raising, self._command, lambda: self._alias_sha),
        )
        self._next_tick = 0.0
        self._closed = False
        check_reachable(client, self.where)
        try:
            self._check_persistence()
            self.client.set(self.keys.epoch, uuid.uuid4().hex, nx=True)
            self._check_layout()
            self.follower.load()
            self.follower.check_ledger(self.policy, self.clock())
            self._replay_saved()
            self.image.filter = self._load_filter()
        except UNAVAILABLE as exc:
            raise RedisUnavailable(f"cannot reach Redis at {self.where}: {exc}") from exc
        self._next_tick = self.monotonic() + self.sync_interval

    def _tally(self, name: str, n: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + n

    def _read(self, call: Callable[[], Any]) -> Any:
        """A read, or MISSING while Redis is unreachable (the caller answers "unknown": no merge).

        During an outage no read is tried: whoever probes Redis (:meth:`maintain`, or the crawl's
        timer) ends it, so a lookup never waits on a server known to be gone."""
        if self.outage.down:
            return MISSING
        try:
            self._tally("reads")
            return call()
        except UNAVAILABLE as exc:
            self.outage.failed(exc)
            return MISSING

    def _command(self, *args: Any) -> Any:
        """One read on this storage's private connection (about half the client's cost per call).

        A read is asked again once on a new connection if the first one was
        dead (a restarted server); a script the server lost is loaded again.
        """
        import redis

        if self._conn is None:
            pool = self.client.connection_pool
            self._conn = pool.connection_class(**pool.connection_kwargs)
        conn = self._conn
        for attempt in (1, 2):
            try:
                try:
                    conn.send_command(*args)
                    return conn.read_response()
                except redis.exceptions.NoScriptError:
                    self.client.script_load(ALIAS)
                    conn.send_command(*args)
                    return conn.read_response()
            except redis.exceptions.ConnectionError:
                conn.disconnect()
                if attempt == 2:
                    raise
            except BaseException:
                conn.disconnect()
                raise
        raise AssertionError("unreachable")

    # -- what Redis does at once: taking deferred URLs ----------------------------------------

    def add_deferred(self, rule: RuleKey, url: str) -> None:
        self.image.rules.get(rule.origin).get(rule)  # held: a sync then tells this process if the rule falls
        super().add_deferred(rule, url)

    def take_deferred(self, rule: RuleKey) -> list[str]:
        """Take the URLs every process deferred under ``rule`` (atomically: one taker gets them)."""
        mine = self.writes.deferred_here(str(rule))
        try:
            self._flush()
            token = f"{self.keys.store}taken:{uuid.uuid4().hex}"
            urls = self._take(keys=[self.keys.deferred(str(rule)), self.keys.deferreds, token], args=[str(rule)])
            self.journal.deferred_here.pop(str(rule), None)
            self.ledger.taken(str(rule))
        except UNAVAILABLE as exc:
            self.outage.failed(exc)
            for changes in self.writes.layers():
                for entry in [e for e in changes.deferred if e[0] == str(rule)]:
                    del changes.deferred[entry]
            for part, _ in self.port.parts:  # taken here: not to be written to Redis by the batch sent again later
                part["d"] = [entry for entry in part.get("d", ()) if entry[0] != str(rule)]
            self.journal.retake.add(rule)
            logger.warning(
                "Redis at %(where)s unreachable: only this process's %(n)d URLs deferred under %(rule)s"
                " are re-scheduled now; those in Redis are taken once it is back",
                {"where": self.where, "n": len(mine), "rule": str(rule)},
            )
            return mine
        return sorted({*(text(u) for u in urls), *mine})

    # -- listings: from Redis, after a flush -----------------------------------------------

    @property
    def named(self) -> str:
        return f"Redis at {self.where}"

    def load_policy(self) -> Any:
        """The policy recorded; ``None`` while Redis is unreachable (it was reachable at open)."""
        try:
            return super().load_policy()
        except RedisUnavailable:
            return None

    def _before_listing(self, lenient: bool = False) -> None:
        if not lenient:
            self._checked(self._flush)
        elif self.auto_sync:
            self.maintain()

    def _stored(self, call: Callable[[], Any]) -> Any:
        return self._checked(call)

    def _failed(self, exc: BaseException) -> None:
        self.outage.failed(exc)  # type: ignore[arg-type]

    # -- life -----------------------------------------------------------------------------

    def refresh(self) -> None:
        if self.auto_sync:
            self.maintain()

    def contradicted_elsewhere(self) -> set[RuleKey]:
        found = self.follower.contradicted
        self.follower.contradicted = set()
        return found

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
            self.follower.pull(self.policy, self.clock(), self.monotonic())
        except UNAVAILABLE as exc:
            if self.outage.failed(exc):
                logger.warning(
                    "Redis at %(where)s unreachable (%(error)s): the equivalence store keeps %(pending)d"
                    " writes pending and answers from what it knows until it is back",
                    {"where": self.where, "error": exc, "pending": self.pending},
                )
            return False
        if self.image.filter is None:  # started afresh: the filter too
            self.image.filter = self._load_filter()
        elif self.image.filter.full:  # more aliases than it was sized for: built again, twice as large
            self.image.filter = self._build_filter()
        if self.journal.retake:  # their URLs could not be taken during the outage: report them contradicted again
            self.follower.contradicted.update(self.journal.retake)
            self.journal.retake.clear()
        if self.outage.down:
            drop_stale_connections(self.client)
            if self._conn is not None:
                self._conn.disconnect()
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
                "Redis at %(where)s unreachable (%(error)s): %(pending)d writes to the equivalence store stay pending",
                {"where": self.where, "error": exc, "pending": self.pending},
            )

    def sync(self) -> None:
        """Flush, then read what other processes changed; raises :class:`RedisUnavailable` if it cannot."""
        self._checked(self._flush)
        self._checked(lambda: self.follower.pull(self.policy, self.clock(), self.monotonic()))

    def close(self) -> None:
        """Flush (logging, not raising, if Redis is gone) and release the connections."""
        if self._closed:
            return
        self._closed = True
        try:
            self._flush()
            self._save_filter()
        except UNAVAILABLE as exc:
            if self.pending_path is not None:
                retake = {*self.journal.retake, *self.follower.contradicted}
                # the parts in flight with their ids (applied once, whether they were or not), then the rest
                batches = [(batch_id, part) for part, batch_id in self.port.parts]
                batches += [(uuid.uuid4().hex, part) for part in parts(batch_of(self.writes.changes), self.batch_size)]
                save(self.pending_path, [(i, p) for i, p in batches if any(p.values())], retake)
                fate = f"saved in {self.pending_path} and written to Redis when the job resumes"
            else:
                fate = "lost (what this process learned since its last flush; set JOBDIR to keep them)"
            logger.error(
                "Redis at %(where)s unreachable at close (%(error)s): %(pending)d writes to the"
                " equivalence store are %(fate)s",
                {"where": self.where, "error": exc, "pending": self.pending, "fate": fate},
            )
        if self._conn is not None:
            self._conn.disconnect()
        if self.owns_client:
            try:
                self.client.close()
            except Exception:  # closing a broken pool
                pass

    def clear(self) -> None:
        """Delete the whole store from Redis (every process starts afresh) and from memory."""

        def run() -> None:
            k = self.keys
            keys = [k.epoch, k.version, k.changes, k.history, k.aliases, k.cases, k.case_aliases, k.alias_case, k.sinks]
            keys += [k.store + "answered", k.store + "compacted", k.origins, k.fanins, k.evidence, k.store + "evidence_newest", k.deferreds, k.filter, k.filter_state]
            # sub-keys by the sets that list them, not by a SCAN pattern: a namespace may
            # extend another one's key names ("a" vs "a:store:rules:x"), never its sets
            for members, key_of in ((k.origins, k.rules), (k.fanins, k.fanin), (k.deferreds, k.deferred)):
                keys += [key_of(text(member)) for member in self.client.smembers(members)]
            prefix = glob_escape(k.store)
            for kind in ("batch:", "taken:"):  # uuid hex ids; they expire on their own anyway
                for key in self.client.scan_iter(match=prefix + kind + "*", count=1000):
                    if _BATCH_ID.fullmatch(text(key)[len(k.store) + len(kind) :]):
                        keys.append(key)
            for chunk in chunks(keys, 500):
                self.client.delete(*chunk)
            self.client.set(k.epoch, uuid.uuid4().hex)
            self.client.set(k.layout, str(LAYOUT))

        self._checked(run)
        self.image.filter = KeyFilter(0)
        self.ledger.reset()
        self.writes.clear()
        self.journal.retake.clear()
        self.port.applying, self.port.parts = None, []
        self._checked(self.follower.load)

    def _checked(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except UNAVAILABLE as exc:
            self.outage.failed(exc)
            raise RedisUnavailable(f"cannot reach Redis at {self.where}: {exc}") from exc

    # -- the filter of alias sources ------------------------------------------------------

    def _aliases_changed_since(self, since: int) -> list[str] | None:
        c, k = self.client, self.keys
        gap = self.image.version - since
        if not 0 <= gap <= c.llen(k.changes):
            return None
        return [name[1:] for change in (c.lrange(k.changes, -gap, -1) if gap else []) if (name := text(change)).startswith("a")]

    def _filter_built(self, built: KeyFilter) -> None:
        self._save_filter(built)

    def _save_filter(self, saved: KeyFilter | None = None) -> None:
        """Write the filter to Redis (merged with the one there), with the version it is up to date with."""
        saved = saved or self.image.filter
        if saved is None:
            return
        capacity, count, bits = saved.dump()
        self._save_filter_script(keys=[self.keys.filter, self.keys.filter_state], args=[bits, capacity, count, self.image.version])

    def _check_persistence(self) -> None:
        """Refuse a Redis that persists by snapshots only: a restart brings an older state back.

        Unless ``accept_rollback_risk``: the ledger then repairs what this machine's processes
        ended or suspended, but what other machines ended since the snapshot comes back.
        """
        try:
            config = self.client.config_get("appendonly")
            config.update(self.client.config_get("save"))
        except UNAVAILABLE as exc:  # CONFIG renamed or refused (a managed Redis): the ledger still watches
            logger.info("Redis at %(where)s: cannot read its persistence settings (%(error)s)", {"where": self.where, "error": exc})
            return
        appendonly = text(config.get("appendonly", config.get(b"appendonly", b"")) or b"")
        save = text(config.get("save", config.get(b"save", b"")) or b"")
        if appendonly == "yes" or not save.strip():
            return  # an append-only file, or no persistence at all (a restart is an empty store: seen at once)
        risk = (
            f"Redis at {self.where} persists by RDB snapshots only (save {save!r}, appendonly no): a restart brings"
            " back the state of the last snapshot, and aliases ended or rules suspended since would merge pages again"
        )
        if not self.accept_rollback_risk:
            raise StoreError(
                f"{risk}. Run Redis with appendonly yes, or accept the risk: IRI_REDIS_ACCEPT_ROLLBACK_RISK = True"
                " in a crawl's settings, ?accept_rollback_risk=1 in a store URI, accept_rollback_risk=True in code"
            )
        logger.warning("%(risk)s; accepted (only this machine's ledger repairs a rollback)", {"risk": risk})

    def _check_layout(self) -> None:
        """Refuse a newer layout; bring a store of the first layout to this one (once)."""
        raw = self.client.get(self.keys.layout)
        layout = int(raw) if raw is not None else (1 if self.client.exists(self.keys.aliases, self.keys.fanins) else LAYOUT)
        if layout > LAYOUT:
            raise StoreError(
                f"Redis at {self.where}, namespace {self.keys.namespace!r}: store layout {layout} is newer than"
                f" this scrapy-iri reads ({LAYOUT}); upgrade scrapy-iri"
            )
        if layout < LAYOUT:
            self._migrate_once()
        self.client.set(self.keys.layout, str(LAYOUT))

    def _migrate_once(self) -> None:
        """Migrate under a lock: processes opening the store together wait for the one that migrates."""
        lock = self.keys.store + "migrating"
        deadline = self.monotonic() + 600.0
        while not self.client.set(lock, "1", nx=True, ex=600):
            if self.client.get(self.keys.layout) is not None:
                return  # another process did it
            if self.monotonic() > deadline:
                raise StoreError(f"Redis at {self.where}: another process has been migrating the store for 10 minutes")
            time.sleep(0.1)
        try:
            if self.client.get(self.keys.layout) is None:
                self._migrate()
                self.client.set(self.keys.layout, str(LAYOUT))
        finally:
            self.client.delete(lock)

    def _migrate(self) -> None:
        """Layout 1 kept no index of case-only aliases and no set of sinks: build them from the aliases and fan-ins."""
        logger.info("Redis at %s: indexing the case-only aliases and the sinks of a store of layout 1", self.where)
        k, c = self.keys, self.client
        index: dict[str, dict[str, list[Any]]] = {}
        for field, raw in c.hscan_iter(k.aliases, count=1000):
            alias = alias_of(text(field), raw)
            if alias is not None and (key := alias_case_key(alias.source, alias.target)) is not None:
                index.setdefault(key, {})[alias.source] = [alias.target, alias.time]
        pipe = c.pipeline(transaction=False)
        for key, sources in index.items():
            pipe.hset(k.case_aliases, key, json.dumps(sources, ensure_ascii=False))
            for source in sources:
                pipe.hset(k.alias_case, source, key)
        for target in c.smembers(k.fanins):
            n = c.scard(k.fanin(text(target)))
            if n >= 2:  # a sink for any cap up to n
                pipe.zadd(k.sinks, {target: n})
        pipe.execute()

    # -- sending the changes ----------------------------------------------------------------

    def _flush(self) -> None:
        """Send the pending changes: the changeset in flight first (:meth:`.RedisPort.apply`, the same
        batches with the same ids), then the changes written since, sealed as the next one."""
        before = self.port.batches
        self._flushing = True
        try:
            while len(self.writes):
                self.port.apply(self.writes.seal())
                self.writes.committed()
        finally:  # the ledger records of the batches sent, made durable together
            self._flushing = False
            self.ledger.sync()
        if self.port.batches == before:
            return
        self._batches += self.port.batches - before
        if self._batches >= self._next_compaction:
            self._next_compaction = self._batches + COMPACT_EVERY
            self._compact()

    def _compact(self) -> None:
        """Drop the rule records of a few origins whose every count is older than the rule TTL
        (they mean nothing any more), as the SQLite storage does at its commits (see :data:`.scripts.COMPACT`).

        Older than the TTL at the time of the newest count this process sent, when earlier than now: an
        archive learned today counts at its captures' times, and a record that later captures would
        still count (a counterexample) stays."""
        now = self.clock()
        when = min(now, self._counted_at) if self._counted_at else now
        dropped = self._compact_script(args=[self.keys.store, when, self.policy.rule_ttl, COMPACT_ORIGINS])
        if int(dropped):
            self._tally("compacted", int(dropped))

    def _apply(self, batch: dict[str, list[Any]], batch_id: str | None = None) -> None:
        """Run one batch (its ledger record made durable at once, or at the end of the flush sending it).

        When nobody else wrote since this process's last sync, the changes it made are all its own
        and already known here: the known version moves past them, unless Redis kept a newer write
        than one of them (the next sync reads those back)."""
        self._tally("batches")
        batch_id = batch_id or uuid.uuid4().hex
        last = self.follower.last_batch
        answer = self._batch(
            args=[
                self.keys.store,
                batch_id,
                batch_bytes(batch),
                self.clock(),
                self.policy.rule_ttl,
                self.evidence_max,
                self.changes_max,
                self.answered_horizon,
                self.evidence_max_age,
                self.image.version,
                self.image.epoch,
                "" if last is None else last[0],
                self.ledger.ids,
            ]
        )
        if answer[0] == b"ok":
            for op in batch.get("r", ()):
                if len(op) > 7 and (op[6] > self._counted_at or op[7] > self._counted_at):
                    self._counted_at = max(op[6], op[7])
            self.follower.last_batch = (batch_id, self.monotonic())
            self.journal.remember(batch)
            self.ledger.record(batch, answer, batch_id, self.image.epoch, self.image.sinks, self.policy.rule_ttl, not self._flushing)
            if int(answer[1]) - int(answer[2]) == self.image.version and not int(answer[3]):
                self.image.version = int(answer[1])

    def _replay_saved(self) -> None:
        """Write the batches a previous run of this job saved at close (Redis was unreachable then)."""
        if self.pending_path is None or not self.pending_path.exists():
            return
        batches, retake = saved_batches(self.pending_path)
        for batch_id, batch in batches:
            self._apply(batch, batch_id)  # the id: applied at most once, even if retried
        self.pending_path.unlink()
        self.follower.load()
        self.follower.contradicted.update(retake)  # their deferred URLs are taken at the next observation
        logger.info("Wrote %(n)d batches of store writes saved by the previous run to Redis", {"n": len(batches)})


def _raising(call: Callable[[], Any]) -> Any:
    """A read that raises when Redis is unreachable (what a sync needs: all or nothing)."""
    return call()
