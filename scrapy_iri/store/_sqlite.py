"""The SQLite storage (``IRI_STORE = "sqlite:///path"``), the embedded default.

Everything stays on disk and is read on demand: an origin's rule records
when the origin is first used (those of the origins used last are kept,
``rule_cache`` records), the sinks of the crawl's ``sink_fanin`` once, and an alias is
one indexed read (its source is the primary key; its target's alias comes
with it), behind a bounded LRU cache that also remembers misses
(``cache_size`` entries, :data:`DEFAULT_CACHE_SIZE` by default, a few
hundred bytes each); a declared case is one indexed read by its stored case
key; fan-in and deferred requests are read when needed. Opening a store
reads the rules and the policy only, whatever the number of aliases. The
file is read through a memory map (``mmap_size``): its pages are the
operating system's, shared by every process, not each process's own.

Writes wait in memory and are committed in one transaction when
``batch_size`` writes are pending or ``flush_interval`` seconds have
passed, checked after each observation, so one observation (its alias, its
evidence, its rule counts) is always in one transaction. The database is in
WAL mode with ``synchronous=NORMAL``: a process killed at any moment (even
``SIGKILL`` in the middle of a commit) leaves a database that reopens with
every committed observation and no part of another.

A crawl never waits long for a locked file: during the crawl a write waits
at most ``lock_wait`` seconds (0.5 s) for another process's transaction, then
keeps its batch in memory for the next attempt (reads go on from the pending
writes and the cache; a read that finds the file locked answers "unknown",
which merges nothing). :meth:`SQLiteStore.close` waits longer
(``close_wait``, 30 s) before it gives up and says how many writes are lost.

Several processes may share one file. A rule row is never overwritten with
one process's image: each commit adds the observations counted since the
previous one to the row on disk. Every commit also appends what it touched
(an alias source, a case key, a rule origin) to the ``change`` table; the
other processes notice the commit (``PRAGMA data_version``, checked at most
every ``sync_interval`` seconds when the store is used) and forget or re-read
those entries, so an alias one process dropped is dropped everywhere.

The evidence log is pruned at commits: at most ``evidence_max`` entries
(:data:`EVIDENCE_MAX`) and none older than ``evidence_max_age`` seconds
(:data:`EVIDENCE_MAX_AGE`), the oldest first.

The schema version is ``PRAGMA user_version``; a store of an older version
is migrated when opened (once: version 3 stored no case keys, they are
computed then), a newer one is refused. The schema is created or migrated in
one ``BEGIN IMMEDIATE`` transaction, so concurrent first opens of a new file
wait for each other. The ``meta`` table keeps the learning policy of the
crawl that opened the store.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ._cached import CachedReads, CachedStorage
from ._codec import policy_from_text, policy_text, rule_record, rule_values
from ._evidence import Alias, Evidence
from ._filter import KeyFilter
from ._learner import EquivalenceStore
from ._rules import LearningPolicy, RuleKey, RuleRecord
from ._sqlite_port import SQLitePort
from ._sqlite_schema import (
    ALIAS,
    ALIAS_COLUMNS,
    ALIAS_FIELDS,
    EVIDENCE,
    EVIDENCE_COLUMNS,
    MIGRATIONS,
    RULE_COLUMNS,
    SCHEMA_VERSION,
    WRITES,
    alias_of,
    alias_row,
    create_schema,
    evidence_of,
    locked,
    transaction,
)
from ._storage import (
    DEFAULT_CACHE_SIZE,
    DEFAULT_RULE_CACHE,
    EVIDENCE_MAX,
    EVIDENCE_MAX_AGE,
    MISSING,
    PendingCases,
)

logger = logging.getLogger(__name__)

#: bytes of the file read through a memory map (the rest, and the write-ahead log, with read());
#: SQLite lowers it to its compiled maximum (2 GB by default)
MMAP_SIZE = 1 << 31
#: bytes of SQLite's own page cache per process
PAGE_CACHE = 8 << 20
#: entries of the change log kept for processes that fell behind (they reload otherwise)
CHANGES_MAX = 100_000
#: commits between two saves of the alias filter (and at close)
FILTER_SAVE_EVERY = 256

#: the pending write of a rule: its row is read off the image when the batch commits
_WRITTEN: tuple[Any, ...] = ()


class SQLiteStorage(CachedStorage):
    """One SQLite file: rules and sinks in memory, aliases read on demand, writes in batches."""

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Callable[[], float] = time.time,
        create: bool = True,
        batch_size: int = 500,
        flush_interval: float = 2.0,
        cache_size: int = DEFAULT_CACHE_SIZE,
        evidence_max: int = EVIDENCE_MAX,
        evidence_max_age: float = EVIDENCE_MAX_AGE,
        sync_interval: float = 0.5,
        mmap_size: int = MMAP_SIZE,
        answered_horizon: float = 600.0,
        rule_cache: int = DEFAULT_RULE_CACHE,
        page_cache: int = PAGE_CACHE,
        lock_wait: float = 0.5,
        close_wait: float = 30.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        self.path = Path(path)
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.evidence_max = evidence_max
        self.evidence_max_age = evidence_max_age
        #: how long the file remembers that a URL answered for itself: an alias of it another process
        #: observed earlier and commits later is refused (an alias write older than this is refused too)
        self.answered_horizon = answered_horizon
        self.sync_interval = sync_interval
        self.lock_wait = lock_wait
        self.close_wait = close_wait
        self.monotonic = monotonic
        if not create and not self.path.exists():
            raise StoreError(f"no store at {self.path}")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db: sqlite3.Connection | None = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=10.0
            )
            self._db.execute("PRAGMA busy_timeout = 10000")  # opening waits for a concurrent first open
            self._journal_mode()
            self._db.execute("PRAGMA synchronous=NORMAL")
            # reads through a memory map (no copy, no system call; the pages are the file's,
            # shared, not the process's own) and a page cache that holds the upper levels of the B-trees
            self._db.execute(f"PRAGMA mmap_size = {int(mmap_size)}")
            self._db.execute(f"PRAGMA cache_size = -{int(page_cache) // 1024}")
            self._migrate()
            self._db.execute(f"PRAGMA busy_timeout = {int(lock_wait * 1000)}")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: {exc}") from exc
        # the pending batch: (table, key) -> row (None: a delete), latest write last
        self._pending: dict[tuple[str, Any], tuple[Any, ...] | None] = {}
        self._pending_evidence: list[tuple[Any, ...]] = []
        self.pending_cases = PendingCases()
        self._pending_fanin: dict[str, list[str]] = {}
        self._dropped_fanin: set[str] = set()
        self._pending_changes: dict[tuple[str, str], None] = {}
        #: per rule: (support, against) as last written to the image, and the observations
        #: added since the last commit (merged into the row on disk)
        self._rule_seen: dict[RuleKey, tuple[int, int]] = {}
        self._rule_delta: dict[RuleKey, tuple[int, int]] = {}
        #: another process's rule rows were not read into the image (pending counts here): the commit merges
        self._must_merge = False
        self._rule_dropped: set[RuleKey] = set()
        self._last_flush = monotonic()
        self._next_sync = monotonic() + sync_interval
        self._commits = 0
        self._warned_lock = 0.0
        #: after a commit found the file locked: when to try again, and how long the last wait was
        self._retry_at = 0.0
        self._lock_backoff = 0.0
        #: bounded caches of what is on disk, the pending batch read over them
        self.port = SQLitePort(self._read)
        self.cached = CachedReads(self.port, self, cache_size, rule_cache, lambda: self.force_floor)
        try:
            self._data_version = self._db.execute("PRAGMA data_version").fetchone()[0]
            self._change_id = self._db.execute("SELECT coalesce(max(id), 0) FROM change").fetchone()[0]
            #: the change the filter took in every change up to (besides those the syncs read)
            self._filter_change_id = 0
            self.cached.filter = self._load_filter()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: {exc}") from exc

    # -- schema ---------------------------------------------------------------

    def _journal_mode(self) -> None:
        """WAL mode; a concurrent first open may hold the file meanwhile: retry."""
        db = self._connection()
        delay = 0.01
        deadline = time.monotonic() + 10.0
        while True:
            try:
                db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if not locked(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def _check_version(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: store schema version {version} is newer than this scrapy-iri reads ({SCHEMA_VERSION})"
            )

    def _migrate(self) -> None:
        """Create or migrate the schema, in one write transaction (others opening the file wait)."""
        db = self._connection()
        version = db.execute("PRAGMA user_version").fetchone()[0]
        self._check_version(version)
        if version == SCHEMA_VERSION:
            return
        with transaction(db):
            version = db.execute("PRAGMA user_version").fetchone()[0]  # another process may have done it
            self._check_version(version)
            if version == 0:
                tables = db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
                if tables:
                    raise StoreError(f"{self.path}: not a scrapy-iri store (tables but no schema version)")
                create_schema(db)
                version = SCHEMA_VERSION
            if version < SCHEMA_VERSION:
                logger.info("%s: migrating the store from schema version %d to %d", self.path, version, SCHEMA_VERSION)
            while version < SCHEMA_VERSION:
                MIGRATIONS[version](db)
                version += 1
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @property
    def _filter(self) -> KeyFilter:
        """The filter of alias sources (built at open: a SQLite storage always has one)."""
        found = self.cached.filter
        if found is None:
            found = self.cached.filter = self._build_filter()
        return found

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError(f"{self.path}: the store is closed")
        return self._db

    # -- the learning policy the crawl used ------------------------------------

    def load_policy(self) -> LearningPolicy | None:
        row = self._connection().execute("SELECT value FROM meta WHERE key = 'policy'").fetchone()
        return None if row is None else policy_from_text(row[0])

    def save_policy(self, policy: LearningPolicy) -> None:
        try:
            self._connection().execute("INSERT OR REPLACE INTO meta VALUES ('policy', ?)", (policy_text(policy),))
        except sqlite3.OperationalError as exc:  # a read-only file, or held too long: judged by defaults
            logger.warning("%s: could not record the learning policy: %s", self.path, exc)

    # -- the entry points: commit whole observations, notice other processes -------

    def refresh(self) -> None:
        self._sync_if_due()

    def answered(self, url: str) -> None:
        self._write("answered", url, (url, self.clock()))

    def observed(self) -> None:
        self._flush_if_due()

    @property
    def pending(self) -> int:
        """Writes not yet committed."""
        return len(self._pending) + len(self._pending_evidence)

    def _flush_if_due(self) -> None:
        now = self.monotonic()
        if now < self._retry_at:
            return
        if self.pending >= self.batch_size or now - self._last_flush >= self.flush_interval:
            self.flush()

    def flush(self) -> None:
        """Commit the pending batch in one transaction; a file locked longer than ``lock_wait`` keeps it for later."""
        try:
            self._commit()
        except sqlite3.OperationalError as exc:
            if not locked(exc):
                raise StoreError(f"{self.path}: {exc}") from exc
            # the next attempt waits: the file stays locked for a while (a long transaction elsewhere)
            self._lock_backoff = min(max(2 * self._lock_backoff, 1.0), 10.0)
            self._retry_at = self.monotonic() + self._lock_backoff
            self._last_flush = self.monotonic()
            if self._last_flush - self._warned_lock >= 60.0:
                self._warned_lock = self._last_flush
                logger.warning("%s: %s; keeping %d writes for the next attempt", self.path, exc, self.pending)

    def close(self) -> None:
        """Commit (waiting up to ``close_wait`` seconds for a locked file) and close."""
        if self._db is None:
            return
        deadline = self.monotonic() + self.close_wait
        while True:
            try:
                self._commit()
                break
            except sqlite3.OperationalError as exc:
                if not locked(exc) or self.monotonic() >= deadline:
                    logger.error("%s: %s: %d writes to the store are lost", self.path, exc, self.pending)
                    break
        self._save_filter()
        try:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError:  # another process holds the database: it will checkpoint
            pass
        self._db.close()
        self._db = None

    # -- the commit ---------------------------------------------------------------

    def _commit(self) -> None:
        """One transaction: the batch, rules merged with what other processes wrote meanwhile.

        A rule row is never overwritten with this process's image: the
        observations counted since the last commit are added to the row on
        disk (after forgetting what the TTL expired), the latest times and
        notes win, and the rules of the origins written are read back, so a
        counterexample another process recorded is never lost and is seen here.
        """
        if not self._pending and not self._pending_evidence:
            return
        db = self._connection()
        fresh: dict[str, dict[RuleKey, RuleRecord]] = {}
        cutoff = self.clock() - self.answered_horizon
        with transaction(db):
            rules: dict[str, list[tuple[RuleKey, tuple[Any, ...] | None]]] = {}
            # one statement at a time, each table's deletes before its upserts: the pending writes hold
            # one write per entry (the latest), and a fan-in drop took its target's pending sources with it
            runs: dict[str, list[tuple[Any, ...]]] = {}
            for (table, key), row in self._pending.items():
                if table == "rule":
                    rules.setdefault(key[0], []).append((RuleKey(*key), row))
                    continue
                upsert, delete = WRITES[table]
                if row is None:
                    runs.setdefault(delete, []).append(key if isinstance(key, tuple) else (key,))
                elif table == "alias":  # the stored row, then the horizon (its last item: whether it applies)
                    runs.setdefault(upsert, []).append((*row[:-1], cutoff if row[-1] else float("-inf")))
                else:
                    runs.setdefault(upsert, []).append(row)
            for upsert, delete in WRITES.values():
                for statement in (delete, upsert):
                    if statement in runs:
                        db.executemany(statement, runs[statement])
            upsert, delete = WRITES["rule"]
            alone = db.execute("PRAGMA data_version").fetchone()[0] == self._data_version
            touched = sorted(rules)
            if alone and not self._rule_dropped and not self._must_merge:
                # nobody else committed since this process last looked: the rows on disk are
                # what it read or wrote, so its image is the merge (no read back)
                image = [self.cached.held(rule) for written in rules.values() for rule, row in written if row is not None]
                db.executemany(upsert, [(*record.key, *rule_values(record)) for record in image])
                db.executemany(delete, [tuple(rule) for written in rules.values() for rule, row in written if row is None])
                rules = {}
            for origin, written in rules.items():  # one read per origin: the rows as other processes left them
                disk: dict[RuleKey, RuleRecord] = {}
                for row in db.execute(f"SELECT kind, scope, {RULE_COLUMNS} FROM rule WHERE origin = ?", (origin,)):
                    key = RuleKey(origin, row[0], row[1])
                    disk[key] = rule_record(key, row[2:])
                for rule, row in written:
                    if row is None or rule in self._rule_dropped:
                        db.execute(delete, tuple(rule))
                        disk.pop(rule, None)
                    if row is not None:
                        disk[rule] = self._merged_rule(rule, disk.get(rule))
                        db.execute(upsert, (*rule, *rule_values(disk[rule])))
                fresh[origin] = disk
            db.executemany(EVIDENCE, self._pending_evidence)
            db.executemany(
                "INSERT INTO change (kind, name) VALUES (?, ?)",
                [*self._pending_changes, *(("r", origin) for origin in touched)],
            )
            self._commits += 1
            self._prune(db)
        for origin, records in fresh.items():  # the image follows the disk
            self.cached.set_rules(origin, records)
        self._rule_delta.clear()
        self._must_merge = False
        self.cached.rules.trim()  # nothing is pinned now
        self._rule_dropped.clear()
        self._pending, self._pending_evidence = {}, []
        self.pending_cases.clear()
        self._pending_fanin.clear()
        self._dropped_fanin.clear()
        self._pending_changes.clear()
        self._last_flush = self.monotonic()
        self._retry_at = 0.0
        self._lock_backoff = 0.0
        if self._filter.full:
            self.cached.filter = self._build_filter()
            self._save_filter()
        elif self._commits % FILTER_SAVE_EVERY == 0:
            self._save_filter()

    def _prune(self, db: sqlite3.Connection) -> None:
        """Keep the evidence log and the change log within their caps."""
        # two queries: SQLite answers min() and max() alone from the index's ends, together by a scan
        (low,) = db.execute("SELECT min(id) FROM evidence").fetchone()
        (high,) = db.execute("SELECT max(id) FROM evidence").fetchone()
        if high is not None and high - low + 1 > self.evidence_max:
            db.execute("DELETE FROM evidence WHERE id <= ?", (high - self.evidence_max,))
        # by age at every commit: the oldest entry first, so this stops at once when nothing is old
        cutoff = self.clock() - self.evidence_max_age
        first = db.execute("SELECT id FROM evidence WHERE time >= ? ORDER BY id LIMIT 1", (cutoff,)).fetchone()
        db.execute("DELETE FROM evidence WHERE id < ?", (first[0] if first else (high or 0) + 1,))
        if self._commits % 64 == 1:
            db.execute("DELETE FROM change WHERE id <= (SELECT max(id) FROM change) - ?", (CHANGES_MAX,))
            db.execute("DELETE FROM answered WHERE time < ?", (self.clock() - self.answered_horizon,))
            # rule records whose every count is older than the TTL mean nothing any more (a record
            # expires them when next counted): gone, so an origin keeps only what still counts
            stale = self.clock() - self.policy.rule_ttl
            db.execute(
                "DELETE FROM rule WHERE (support = 0 OR last_support < ?) AND (against = 0 OR last_against < ?)",
                (stale, stale),
            )

    def _merged_rule(self, key: RuleKey, on_disk: RuleRecord | None) -> RuleRecord:
        """The row on disk plus what this process observed since its last commit."""
        image = self.cached.held(key) or RuleRecord(key)
        disk = on_disk if on_disk is not None else RuleRecord(key)
        disk.expire(self.policy, self.clock())
        support, against = self._rule_delta.get(key, (0, 0))
        newer_support = image if image.last_support >= disk.last_support else disk
        newer_against = image if image.last_against >= disk.last_against else disk
        firsts = [t for t in (image.first_seen, disk.first_seen) if t]
        return RuleRecord(
            key,
            disk.support + support,
            disk.against + against,
            min(firsts) if firsts else 0.0,
            max(image.last_support, disk.last_support),
            max(image.last_against, disk.last_against),
            newer_support.example or image.example or disk.example,
            newer_against.counterexample or image.counterexample or disk.counterexample,
        )

    # -- what other processes committed -----------------------------------------------

    def _sync_if_due(self) -> None:
        now = self.monotonic()
        if now >= self._next_sync:
            self._next_sync = now + self.sync_interval
            self.sync()

    def sync(self) -> None:
        """Forget or re-read what other processes changed since the last look (cheap when nothing did)."""
        db = self._connection()
        try:
            version = db.execute("PRAGMA data_version").fetchone()[0]
            if version == self._data_version:
                return
            low = db.execute("SELECT min(id) FROM change").fetchone()[0]
            rows = db.execute("SELECT id, kind, name FROM change WHERE id > ? ORDER BY id", (self._change_id,)).fetchall()
        except sqlite3.OperationalError as exc:
            if not locked(exc):
                raise StoreError(f"{self.path}: {exc}") from exc
            return  # the next look will do
        self._data_version = version
        cached = self.cached
        cached.fanins.clear()
        if (low is not None and low > self._change_id + 1) or any(kind == "*" for _, kind, _ in rows):
            # fell behind the log, or a bulk write: start afresh
            self._must_merge = True
            cached.forget_cached()
            cached.filter = self._build_filter()
        else:
            changes = []
            for _, kind, name in rows:
                if kind == "r" and any(key.origin == name for key in self._rule_delta):
                    self._must_merge = True  # rules written here meanwhile are read back at the commit
                elif not (kind == "s" and ("sink", name) in self._pending):
                    changes.append((kind, name))
            again = cached.follow(changes)
            found = self.port.read(again)
            if found is None:  # locked: read again when used
                cached.rules.clear()
                cached.sink_cap = 0
            else:
                cached.refreshed(again, found)
        if rows:
            self._change_id = rows[-1][0]

    # -- what the pending batch holds, read over the file (:class:`._cached.Overlay`) ----------

    def pending_alias(self, source: str) -> Any:
        row = self._pending.get(("alias", source), MISSING) if self._pending else MISSING
        return row if row is MISSING or row is None else _pending_alias(row)

    def pending_declared(self, key: str) -> Any:
        row = self._pending.get(("declared_case", key), MISSING) if self._pending else MISSING
        return row if row is MISSING or row is None else row[1]

    def pending_fanin(self, target: str) -> tuple[bool, list[str]]:
        return target in self._dropped_fanin, self._pending_fanin.get(target, [])

    def pending_sinks(self, cap: int) -> set[str]:
        return {t for t, s in self._pending_fanin.items() if len(s) >= cap}

    def pinned_origins(self) -> set[str]:
        """Origins whose records hold counts not committed yet: never evicted."""
        return {key.origin for key in (*self._rule_delta, *self._rule_dropped)}

    def based(self, record: RuleRecord) -> None:
        self._rule_seen[record.key] = (record.support, record.against)

    def forgotten(self, keys: list[RuleKey]) -> None:
        for key in keys:
            self._rule_seen.pop(key, None)

    # -- the filter of alias sources ------------------------------------------------------

    def _load_filter(self) -> KeyFilter:
        """The filter saved in the file, brought up to date from the change log; else built from the aliases."""
        db = self._connection()
        state = db.execute("SELECT value FROM meta WHERE key = 'alias_filter_state'").fetchone()
        bits = db.execute("SELECT value FROM meta WHERE key = 'alias_filter'").fetchone()
        if state is None or bits is None:
            return self._build_filter()
        try:
            capacity, count, change_id = json.loads(state[0])
            found = KeyFilter.load(int(capacity), int(count), bytes(bits[0]))
        except (ValueError, TypeError):
            return self._build_filter()
        low = db.execute("SELECT min(id) FROM change").fetchone()[0]
        if low is not None and low > change_id + 1:
            return self._build_filter()  # the log no longer holds what changed since it was saved
        for kind, name in db.execute("SELECT kind, name FROM change WHERE id > ?", (change_id,)):
            if kind == "*":
                return self._build_filter()
            if kind == "a":
                found.add(name)
        return found if not found.full else self._build_filter()

    def _build_filter(self) -> KeyFilter:
        """A filter of every alias source in the file (and those pending here), sized for twice as many."""
        db = self._connection()
        (n,) = db.execute("SELECT count(*) FROM alias").fetchone()
        built = KeyFilter(2 * (n + len(self._pending)))
        for (source,) in db.execute("SELECT source FROM alias"):
            built.add(source)
        for (table, key), row in self._pending.items():
            if table == "alias" and row is not None:
                built.add(key)
        return built

    def _save_filter(self) -> None:
        """Write the filter to the file with the change it is up to date with (other processes start from it)."""
        try:
            db = self._connection()
            with transaction(db):  # nobody commits meanwhile: the filter takes in every change up to the last
                known = max(self._change_id, self._filter_change_id)  # what it took in already
                (low,) = db.execute("SELECT min(id) FROM change").fetchone()
                if low is not None and low > known + 1:  # fell behind the log
                    self.cached.filter = self._build_filter()
                for kind, name in db.execute("SELECT kind, name FROM change WHERE id > ?", (known,)):
                    if kind == "a":
                        self._filter.add(name)
                    elif kind == "*":
                        self.cached.filter = self._build_filter()
                (change_id,) = db.execute("SELECT coalesce(max(id), 0) FROM change").fetchone()
                self._filter_change_id = change_id
                capacity, count, bits = self._filter.dump()
                db.execute("INSERT OR REPLACE INTO meta VALUES ('alias_filter', ?)", (bits,))
                db.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('alias_filter_state', ?)",
                    (json.dumps([capacity, count, change_id]),),
                )
        except sqlite3.OperationalError as exc:  # locked or read-only: the next process builds its own
            logger.info("%s: the alias filter was not saved: %s", self.path, exc)

    # -- reads that may find the file locked --------------------------------------------

    def _read(self, sql: str, args: tuple[Any, ...], *, one: bool = False) -> list[tuple[Any, ...]] | None:
        """Rows (at most one with ``one``), or None when the file is locked (the caller answers "unknown")."""
        db = self._db
        if db is None:
            raise StoreError(f"{self.path}: the store is closed")
        try:
            if one:
                row = db.execute(sql, args).fetchone()
                return [] if row is None else [row]
            return db.execute(sql, args).fetchall()
        except sqlite3.OperationalError as exc:
            if not locked(exc):
                raise StoreError(f"{self.path}: {exc}") from exc
            return None

    # -- primitives: aliases ------------------------------------------------------------

    def _write(self, table: str, key: Any, row: tuple[Any, ...] | None) -> None:
        self._pending.pop((table, key), None)  # the latest write goes last: commit order is write order
        self._pending[(table, key)] = row

    def set_alias(self, source: str, alias: Alias | None) -> None:
        old = self.alias(source)
        self._write("alias", source, None if alias is None else (*alias_row(alias), not self.recorded_time))
        self._pending_changes[("a", source)] = None
        for key in self.cached.wrote_alias(source, old, alias):
            self._pending_changes[("c", key)] = None

    def aliases(self) -> Iterator[Alias]:
        self.flush()
        written = {key: row for (table, key), row in self._pending.items() if table == "alias"}
        for row in self._connection().execute(f"SELECT {ALIAS_COLUMNS} FROM alias"):
            if row[0] not in written:
                yield alias_of(row[0], row[1:])
        for row in written.values():
            if row is not None:
                yield _pending_alias(row)

    def bulk_aliases(self, aliases: Iterable[Alias], *, chunk: int = 500_000) -> int:
        """Write many aliases at once (an import; no evidence is logged for them). Returns how many."""
        self.flush()
        db = self._connection()
        count = 0
        rows: list[tuple[Any, ...]] = []
        for alias in aliases:
            rows.append(alias_row(alias))
            if len(rows) >= chunk:
                count += self._bulk(db, rows)
                rows = []
        count += self._bulk(db, rows)
        self.cached.aliases.clear()
        self.cached.cases.clear()
        self._save_filter()  # the import's change ('*'): the filter is built again from the aliases, once
        return count

    def _bulk(self, db: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> int:
        if not rows:
            return 0
        rows.sort()  # in key order: each page of the table is written once per chunk
        with transaction(db):
            db.executemany(ALIAS, rows)
            db.execute("INSERT INTO change (kind, name) VALUES ('*', '')")  # other processes start afresh
        return len(rows)

    # -- primitives: cases ----------------------------------------------------------

    def set_declared_case(self, key: str, url: str | None) -> None:
        self._write("declared_case", key, None if url is None else (key, url))
        self.cached.cases.pop(key)
        self._pending_changes[("c", key)] = None

    def declared_cases(self) -> Iterator[str]:
        self.flush()
        written = {key: row for (table, key), row in self._pending.items() if table == "declared_case"}
        urls = [url for key, url in self._connection().execute("SELECT key, url FROM declared_case") if key not in written]
        return iter(urls + [row[1] for row in written.values() if row is not None])

    # -- primitives: rules (read by origin, the origins used last kept) ----------------

    def set_rule(self, key: RuleKey, record: RuleRecord | None) -> None:
        if record is None:
            self._drop_rule(key)
            return
        self.cached.rules.put(record)
        seen_support, seen_against = self._rule_seen.get(key, (0, 0))
        support, against = self._rule_delta.get(key, (0, 0))
        # what was counted since the image was last written; a count that went down was
        # expired (the TTL): what it holds now was all counted since
        support = support + record.support - seen_support if record.support >= seen_support else record.support
        against = against + record.against - seen_against if record.against >= seen_against else record.against
        self._rule_delta[key] = (support, against)
        self._rule_seen[key] = (record.support, record.against)
        self._write("rule", tuple(key), _WRITTEN)  # the row is the image's at the commit

    def _drop_rule(self, key: RuleKey) -> None:
        self.cached.rules.drop(key)
        self._rule_seen.pop(key, None)
        self._rule_delta.pop(key, None)
        self._rule_dropped.add(key)
        self._write("rule", tuple(key), None)

    def rules(self) -> Iterator[RuleRecord]:
        """Every rule record, from the file (after a commit of what is pending)."""
        self.flush()
        rows = self._connection().execute(f"SELECT origin, kind, scope, {RULE_COLUMNS} FROM rule").fetchall()
        listed = {}
        for row in rows:
            key = RuleKey(*row[:3])
            listed[key] = self.cached.held(key) or rule_record(key, row[3:])
        for key in self._rule_delta:  # not committed (a locked file): what this process holds
            if (image := self.cached.held(key)) is not None:
                listed[key] = image
        return iter(list(listed.values()))

    # -- primitives: fan-in (on disk, read per redirect; sinks resident) -----------------

    def add_fanin(self, target: str, source: str, cap: int) -> list[str]:
        sources, added = self.cached.add_source(target, source, cap)
        if added:
            self._pending_fanin.setdefault(target, []).append(source)
            self._write("fanin", (target, source), (target, source))
        if len(sources) >= 2:  # a sink for any sink_fanin up to its number of sources
            self._write("sink", target, (target, len(sources)))
            self._pending_changes[("s", target)] = None
        return sources

    def drop_fanin(self, target: str) -> None:
        self.cached.dropped_fanin(target)
        self._write("sink", target, None)
        self._pending_changes[("s", target)] = None
        self._pending_fanin.pop(target, None)
        self._dropped_fanin.add(target)
        for key in [k for k in self._pending if k[0] == "fanin" and k[1][0] == target]:
            del self._pending[key]
        self._write("fanin", target, None)

    def fanins(self) -> Iterator[tuple[str, int]]:
        self.flush()
        rows = self._connection().execute("SELECT target, count(*) FROM fanin GROUP BY target").fetchall()
        return iter([(target, int(n)) for target, n in rows])

    # -- primitives: evidence (on disk) -----------------------------------------------

    def add_evidence(self, evidence: Evidence) -> None:
        e = evidence
        self._pending_evidence.append(
            (e.time, e.url, e.status, e.target, ",".join(sorted(e.context)), e.note, e.location)
        )

    def evidence(self, url: str | None = None) -> Iterator[Evidence]:
        self.flush()
        db = self._connection()
        if url is None:
            rows = db.execute(f"SELECT {EVIDENCE_COLUMNS} FROM evidence ORDER BY id")
            return (evidence_of(row) for row in rows)
        rows = db.execute(
            f"SELECT {EVIDENCE_COLUMNS} FROM evidence WHERE url = ? OR target = ? ORDER BY id",
            (url, url),
        )
        return iter([evidence_of(row) for row in rows.fetchall()])

    def drop_evidence(self, url: str) -> int:
        self.flush()
        cursor = self._connection().execute("DELETE FROM evidence WHERE url = ? OR target = ?", (url, url))
        return cursor.rowcount

    def counts(self) -> dict[str, int]:
        db = self._connection()
        deferred = sum(1 for key, row in self._pending.items() if key[0] == "deferred" and row)
        return {
            "evidence": db.execute("SELECT count(*) FROM evidence").fetchone()[0] + len(self._pending_evidence),
            "deferred": db.execute("SELECT count(*) FROM deferred").fetchone()[0] + deferred,
        }

    # -- primitives: deferred requests (on disk) ---------------------------------------

    def add_deferred(self, rule: RuleKey, url: str) -> None:
        self._write("deferred", (str(rule), url), (str(rule), url))

    def take_deferred(self, rule: RuleKey) -> list[str]:
        """The URLs deferred under ``rule`` by any process, taken in one transaction (one taker gets each)."""
        name = str(rule)
        mine = [key[1][1] for key, row in self._pending.items() if key[0] == "deferred" and key[1][0] == name and row]
        db = self._connection()
        try:
            self._commit()
            with transaction(db):
                urls = [url for (url,) in db.execute("DELETE FROM deferred WHERE rule = ? RETURNING url", (name,))]
        except sqlite3.OperationalError as exc:
            if not locked(exc):
                raise StoreError(f"{self.path}: {exc}") from exc
            # locked: take what is known here now, and delete it from the file with the next commit
            rows = self._read("SELECT url FROM deferred WHERE rule = ?", (name,)) or []
            urls = sorted({*mine, *(url for (url,) in rows)})
            for url in urls:
                self._write("deferred", (name, url), None)
        return sorted(set(urls))




def _pending_alias(row: tuple[Any, ...]) -> Alias:
    """The alias of a pending write: :func:`alias_row`'s row (and whether the horizon applies)."""
    return alias_of(row[0], row[1 : 1 + len(ALIAS_FIELDS)])




class SQLiteStore(EquivalenceStore):
    """A store in one SQLite file (:class:`SQLiteStorage`; its options are the storage's)."""

    storage: SQLiteStorage

    def __init__(
        self,
        path: str | Path,
        policy: LearningPolicy | None = None,
        *,
        clock: Callable[[], float] = time.time,
        **options: Any,
    ) -> None:
        super().__init__(SQLiteStorage(path, clock=clock, **options), policy, clock=clock)

    @property
    def path(self) -> Path:
        return self.storage.path

    def bulk_aliases(self, aliases: Iterable[Alias], *, chunk: int = 500_000) -> int:
        """Write many aliases at once (an import; no evidence is logged for them). Returns how many."""
        return self.storage.bulk_aliases(aliases, chunk=chunk)
