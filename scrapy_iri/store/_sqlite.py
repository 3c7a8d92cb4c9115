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
(:data:`EVIDENCE_MAX`) and none more than ``evidence_max_age`` seconds
(:data:`EVIDENCE_MAX_AGE`) older than the newest entry the store ever held
(``meta`` key ``evidence_newest``; :func:`._storage.evidence_cutoff`), the
oldest first.

The schema version is ``PRAGMA user_version``; a store of an older version
is migrated when opened (once: version 3 stored no case keys, they are
computed then), a newer one is refused. The schema is created or migrated in
one ``BEGIN IMMEDIATE`` transaction, so concurrent first opens of a new file
wait for each other. The ``meta`` table keeps the learning policy of the
crawl that opened the store.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ._evidence import Alias
from ._filter import KeyFilter
from ._layered import LayeredStorage
from ._learner import EquivalenceStore
from ._rules import LearningPolicy, RuleKey
from ._sqlite_mark import check_mark, write_mark
from ._sqlite_port import SQLitePort
from ._sqlite_schema import ALIAS, MIGRATIONS, SCHEMA_VERSION, alias_row, create_schema, locked, missing_tables, transaction
from ._storage import DEFAULT_CACHE_SIZE, DEFAULT_RULE_CACHE, EVIDENCE_MAX, EVIDENCE_MAX_AGE
from ._writes import WriteBehind

logger = logging.getLogger(__name__)

#: bytes of the file read through a memory map (the rest, and the write-ahead log, with read());
#: SQLite lowers it to its compiled maximum (2 GB by default)
MMAP_SIZE = 1 << 31
#: bytes of SQLite's own page cache per process
PAGE_CACHE = 8 << 20
#: commits between two saves of the alias filter (and at close)
FILTER_SAVE_EVERY = 256


class SQLiteStorage(LayeredStorage):
    """One SQLite file: its connection, schema and commits, the shared layers over its :class:`.SQLitePort`."""

    port: SQLitePort
    unavailable = (sqlite3.OperationalError,)

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
        self.where = str(self.path)
        self.sync_interval = sync_interval
        self.lock_wait = lock_wait
        self.close_wait = close_wait
        self.monotonic = monotonic
        if not create and not self.path.exists():
            raise StoreError(f"no store at {self.path}")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        #: a file this process may not write (or in a directory where it cannot make the WAL's files): read only
        self.read_only = not create and _read_only(self.path)
        try:
            self._db: sqlite3.Connection | None = sqlite3.connect(
                _read_only_uri(self.path) if self.read_only else self.path,
                isolation_level=None, check_same_thread=False, timeout=10.0, uri=self.read_only,
            )
            self._db.execute("PRAGMA busy_timeout = 10000")  # opening waits for a concurrent first open
            self._check_identity(create)  # before WAL mode is set: that writes the file's header
            if self.read_only:
                logger.warning("%s is read-only here: it is read, and nothing learned is stored", self.path)
            else:
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
        self._next_sync = monotonic() + sync_interval
        self._warned_lock = 0.0
        #: after a commit found the file locked: when to try again, and how long the last wait was
        self._retry_at = 0.0
        self._lock_backoff = 0.0
        port = SQLitePort(
            self._read,
            self._connection,
            clock=clock,
            policy=lambda: self.policy,
            answered_horizon=answered_horizon,
            evidence_max=evidence_max,
            evidence_max_age=evidence_max_age,
        )
        # bounded caches of what is on disk, the writes not committed yet read over them
        self.compose(port, WriteBehind(batch_size, flush_interval, monotonic), cache_size=cache_size, rule_cache=rule_cache)
        try:
            port.data_version = self._db.execute("PRAGMA data_version").fetchone()[0]
            self._change_id = self._db.execute("SELECT coalesce(max(id), 0) FROM change").fetchone()[0]
            self._store_id = self._identify()
            if self._store_id:
                check_mark(self.path, self._store_id, self._change_id)
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

    def _check_identity(self, create: bool) -> None:
        """Refuse, before anything is written, a file that is not a store: another application's
        database (tables but no schema version), or an empty file when none is to be made."""
        db = self._connection()
        version, tables = db.execute(  # one statement: one snapshot (another process may be making the schema)
            "SELECT (SELECT user_version FROM pragma_user_version),"
            " (SELECT count(*) FROM sqlite_master WHERE type = 'table')"
        ).fetchone()
        if version:
            return
        if tables:
            raise StoreError(f"{self.path}: not a scrapy-iri store (tables but no schema version)")
        if not create and self.path.stat().st_size == 0:
            raise StoreError(f"{self.path}: an empty file, not a store")

    def _identify(self) -> str:
        """The store's id (``meta`` key ``store_id``), given at the first open that may write (see :mod:`._sqlite_mark`)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()  # type: ignore[union-attr]
        if row is not None or self.read_only:
            return str(row[0]) if row is not None else ""
        try:
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('store_id', ?)", (uuid.uuid4().hex,))  # type: ignore[union-attr]
        except sqlite3.OperationalError:  # locked: given by a later open
            return ""
        return str(self._db.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0])  # type: ignore[union-attr]

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
            self._check_tables()
            return
        if self.read_only:
            raise StoreError(f"{self.path}: schema version {version} needs migrating to {SCHEMA_VERSION}, and the file is read-only")
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
        self._check_tables()

    def _check_tables(self) -> None:
        """A store missing a table of its schema is damaged: refused, never read as holding nothing."""
        missing = missing_tables(self._connection())
        if missing:
            plural = "s" if len(missing) > 1 else ""
            raise StoreError(f"{self.path}: a damaged store (missing table{plural}: {', '.join(missing)})")

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

    # -- the entry points: commit whole observations, notice other processes -------

    def refresh(self) -> None:
        self._sync_if_due()

    def observed(self) -> None:
        self._flush_if_due()

    def _flush_if_due(self) -> None:
        now = self.monotonic()
        if now < self._retry_at:
            return
        if self.writes.due():
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
            now = self.writes.last_commit = self.monotonic()
            if now - self._warned_lock >= 60.0:
                self._warned_lock = now
                logger.warning("%s: %s; keeping %d writes for the next attempt", self.path, exc, self.pending)

    def writable(self, wait: float) -> bool:
        """Whether this process gets the file's write lock within ``wait`` seconds (taken and given back
        at once): ``False`` while another process holds a write transaction open."""
        db = self._connection()
        db.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
        try:
            db.execute("BEGIN IMMEDIATE")
            db.execute("ROLLBACK")
            return True
        except sqlite3.OperationalError as exc:
            if not locked(exc):
                raise StoreError(f"{self.path}: {exc}") from exc
            return False
        finally:
            db.execute(f"PRAGMA busy_timeout = {int(self.lock_wait * 1000)}")

    def close(self) -> None:
        """Commit (waiting up to ``close_wait`` seconds for a locked file) and close."""
        if self._db is None:
            return
        if self.read_only and self.pending:
            logger.warning("%s is read-only here: %d writes learned by this process are not stored", self.path, self.pending)
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
        """Apply the pending writes in one transaction (:meth:`.SQLitePort.apply`); the cache follows the file.
        A read-only file keeps them pending: this process reads what it learned, and nothing is written."""
        if not len(self.writes) or self.read_only:
            return
        self.writes.committed(self.port.apply(self.writes.changeset()))
        if self._store_id:
            write_mark(self.path, self._store_id, self._db.execute("SELECT coalesce(max(id), 0) FROM change").fetchone()[0])
        self._retry_at = 0.0
        self._lock_backoff = 0.0
        if self._filter.full:
            self.cached.filter = self._build_filter()
            self._save_filter()
        elif self.port.commits % FILTER_SAVE_EVERY == 0:
            self._save_filter()

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
            if version == self.port.data_version:
                return
            low = db.execute("SELECT min(id) FROM change").fetchone()[0]
            rows = db.execute("SELECT id, kind, name FROM change WHERE id > ? ORDER BY id", (self._change_id,)).fetchall()
        except sqlite3.OperationalError as exc:
            if not locked(exc):
                raise StoreError(f"{self.path}: {exc}") from exc
            return  # the next look will do
        self.port.data_version = version
        cached = self.cached
        cached.fanins.clear()
        if (low is not None and low > self._change_id + 1) or any(kind == "*" for _, kind, _ in rows):
            # fell behind the log, or a bulk write: start afresh
            self.writes.must_merge()
            cached.forget_cached()
            cached.filter = self._build_filter()
        else:
            changes = []
            for _, kind, name in rows:
                if kind == "r" and any(key.origin == name for key in self.writes.changes.rules):
                    self.writes.must_merge()  # rules written here meanwhile are read back at the commit
                elif not (kind == "s" and name in self.writes.changes.sinks):
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

    # -- the filter of alias sources ------------------------------------------------------

    def _aliases_changed_since(self, since: int) -> list[str] | None:
        db = self._connection()
        low = db.execute("SELECT min(id) FROM change").fetchone()[0]
        if low is not None and low > since + 1:
            return None  # the log no longer holds what changed since
        changed = []
        for kind, name in db.execute("SELECT kind, name FROM change WHERE id > ?", (since,)):
            if kind == "*":
                return None
            if kind == "a":
                changed.append(name)
        return changed

    def _save_filter(self) -> None:
        """Write the filter to the file with the change it is up to date with (other processes start from it);
        nothing when the file's is the one this process read and nothing changed since (a reader)."""
        try:
            db = self._connection()
            if self.filter_saved_at is not None:
                (latest,) = db.execute("SELECT coalesce(max(id), 0) FROM change").fetchone()
                if latest == self.filter_saved_at:
                    return
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
                self.port.save_filter(self._filter, change_id)
            self.filter_saved_at = change_id
        except sqlite3.OperationalError as exc:  # locked or read-only: the next process builds its own
            logger.info("%s: the alias filter was not saved: %s", self.path, exc)

    def _stored(self, call: Callable[[], Any]) -> Any:
        """A listing's read or a deletion: an error of the file is the store's."""
        try:
            return call()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: {exc}") from exc

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

    # -- what SQLite does at once: imports, taking deferred URLs -----------------------------

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
        self.cached.case_rows.clear()
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

    def take_deferred(self, rule: RuleKey) -> list[str]:
        """The URLs deferred under ``rule`` by any process, taken in one transaction (one taker gets each)."""
        name = str(rule)
        mine = [url for (r, url), added in self.writes.changes.deferred.items() if r == name and added]
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
                self.writes.deferred(name, url, False)
        return sorted(set(urls))


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


def _read_only(path: Path) -> bool:
    """Whether this process may not write the store at ``path``, or make its WAL's files beside it."""
    return not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK | os.X_OK)


def _read_only_uri(path: Path) -> str:
    """A read-only URI for ``path``; immutable when no WAL file exists and none can be made (no writer then)."""
    query = "mode=ro"
    wal = path.with_name(path.name + "-wal")
    if not wal.exists() and not os.access(path.parent, os.W_OK):
        query += "&immutable=1"
    return f"{path.resolve().as_uri()}?{query}"
