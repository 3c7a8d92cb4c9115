"""The SQLite backend (``IRI_STORE = "sqlite:///path"``), the embedded default.

The whole store except the evidence log is loaded into memory at open, so
lookups never touch the disk. Writes go to a batch that is flushed in one
transaction when it holds ``batch_size`` writes, when ``flush_interval``
seconds have passed since the last flush (checked at each write), and on
:meth:`flush` / :meth:`close`. The database is in WAL mode with
``synchronous=NORMAL``: a process killed at any moment (even ``SIGKILL`` in
the middle of a flush) leaves a database that reopens with every batch
committed before the kill; only the batch not yet flushed is lost. (A power
failure may also lose the last committed transactions, never consistency.)
The schema version is ``PRAGMA user_version``; a store of an older version
is migrated when opened, a newer one is refused. The schema is created or
migrated in one ``BEGIN IMMEDIATE`` transaction, so concurrent first opens
of a new file wait for each other.

Several processes may share one file: a rule row is never overwritten with
one process's image; each flush adds the observations counted since the
previous one to the row on disk and reads back the rules of the origins it
wrote (see :meth:`SQLiteStore._commit`). The ``meta`` table keeps the
learning policy of the crawl that opened the store.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._base import StoreError
from ._evidence import Alias, Evidence
from ._memory import MemoryStore
from ._rules import LearningPolicy, RuleKey, RuleRecord

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS alias (
    source TEXT PRIMARY KEY, target TEXT NOT NULL, status INTEGER NOT NULL, time REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rule (
    origin TEXT NOT NULL, kind TEXT NOT NULL, scope TEXT NOT NULL,
    support INTEGER NOT NULL, against INTEGER NOT NULL,
    first_seen REAL NOT NULL, last_support REAL NOT NULL, last_against REAL NOT NULL,
    example TEXT NOT NULL, counterexample TEXT NOT NULL,
    PRIMARY KEY (origin, kind, scope)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS fanin (target TEXT NOT NULL, source TEXT NOT NULL, PRIMARY KEY (target, source)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS deferred (rule TEXT NOT NULL, url TEXT NOT NULL, PRIMARY KEY (rule, url)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS declared_case (url TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS evidence (
    id INTEGER PRIMARY KEY, time REAL NOT NULL, url TEXT NOT NULL, status INTEGER NOT NULL,
    target TEXT, context TEXT NOT NULL, note TEXT NOT NULL, location TEXT
);
CREATE INDEX IF NOT EXISTS evidence_url ON evidence (url);
CREATE INDEX IF NOT EXISTS evidence_target ON evidence (target);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
"""

#: table -> (upsert, delete) statements of the batched writes
_WRITES = {
    "alias": (
        "INSERT OR REPLACE INTO alias VALUES (?, ?, ?, ?)",
        "DELETE FROM alias WHERE source = ?",
    ),
    "rule": (
        "INSERT OR REPLACE INTO rule VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",  # a merged row (see flush)
        "DELETE FROM rule WHERE origin = ? AND kind = ? AND scope = ?",
    ),
    "fanin": ("INSERT OR IGNORE INTO fanin VALUES (?, ?)", "DELETE FROM fanin WHERE target = ?"),
    "deferred": ("INSERT OR IGNORE INTO deferred VALUES (?, ?)", "DELETE FROM deferred WHERE rule = ? AND url = ?"),
    "declared_case": ("INSERT OR IGNORE INTO declared_case VALUES (?)", "DELETE FROM declared_case WHERE url = ?"),
}
#: schema version -> the statements that bring a store of that version to the next one
_MIGRATIONS = {
    1: "CREATE TABLE IF NOT EXISTS declared_case (url TEXT PRIMARY KEY) WITHOUT ROWID;",  # documents declare a case
    2: "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;",  # the policy
}
#: the columns of a rule row after its key
_RULE_COLUMNS = "support, against, first_seen, last_support, last_against, example, counterexample"
#: attempts at a flush that finds the database locked (each waits the busy timeout)
_FLUSH_ATTEMPTS = 3
_EVIDENCE = "INSERT INTO evidence (time, url, status, target, context, note, location) VALUES (?, ?, ?, ?, ?, ?, ?)"
_EVIDENCE_COLUMNS = "time, url, status, target, context, note, location"


def _rule_row(r: RuleRecord) -> tuple[Any, ...]:
    return (*r.key, r.support, r.against, r.first_seen, r.last_support, r.last_against, r.example, r.counterexample)


def _statements(script: str) -> list[str]:
    return [part.strip() for part in script.split(";") if part.strip()]


def _locked(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))


def _evidence(row: tuple[Any, ...]) -> Evidence:
    time_, url, status, target, context, note, location = row
    return Evidence(time_, url, status, target, frozenset(filter(None, context.split(","))), note, location)


class SQLiteStore(MemoryStore):
    """A store in one SQLite file, loaded at open, written in batches."""

    def __init__(
        self,
        path: str | Path,
        *args: Any,
        create: bool = True,
        batch_size: int = 500,
        flush_interval: float = 2.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.path = Path(path)
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        if not create and not self.path.exists():
            raise StoreError(f"no store at {self.path}")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db: sqlite3.Connection | None = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=10.0
            )
            self._db.execute("PRAGMA busy_timeout = 10000")
            self._journal_mode()
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: {exc}") from exc
        self._pending: dict[tuple[str, Any], tuple[Any, ...] | None] = {}
        self._pending_evidence: list[tuple[Any, ...]] = []
        #: per rule: (support, against) as last written to the memory image, and the
        #: observations added since the last flush (merged into the row on disk)
        self._rule_seen: dict[RuleKey, tuple[int, int]] = {}
        self._rule_delta: dict[RuleKey, tuple[int, int]] = {}
        self._rule_dropped: set[RuleKey] = set()
        self._writes = 0
        self._last_flush = time.monotonic()
        self._load()

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
                if not _locked(exc) or time.monotonic() > deadline:
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
        db.execute("BEGIN IMMEDIATE")
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]  # another process may have done it
            self._check_version(version)
            if version == 0:
                tables = db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
                if tables:
                    raise StoreError(f"{self.path}: not a scrapy-iri store (tables but no schema version)")
                for statement in _statements(_SCHEMA):
                    db.execute(statement)
                version = SCHEMA_VERSION
            while version < SCHEMA_VERSION:
                for statement in _statements(_MIGRATIONS[version]):
                    db.execute(statement)
                version += 1
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    # -- the learning policy the crawl used ------------------------------------

    def _load_policy(self) -> LearningPolicy | None:
        row = self._connection().execute("SELECT value FROM meta WHERE key = 'policy'").fetchone()
        if row is None:
            return None
        try:
            fields = {f.name for f in dataclasses.fields(LearningPolicy)}
            return LearningPolicy(**{k: v for k, v in json.loads(row[0]).items() if k in fields})
        except (ValueError, TypeError):
            return None

    def _save_policy(self, policy: LearningPolicy) -> None:
        value = json.dumps(dataclasses.asdict(policy), sort_keys=True)
        try:
            self._connection().execute("INSERT OR REPLACE INTO meta VALUES ('policy', ?)", (value,))
        except sqlite3.OperationalError as exc:  # a read-only file, or held too long: judged by defaults
            logger.warning("%s: could not record the learning policy: %s", self.path, exc)

    def _load(self) -> None:
        db = self._connection()
        for row in db.execute("SELECT * FROM alias"):
            MemoryStore._put_alias(self, Alias(*row))
        for row in db.execute("SELECT * FROM rule"):
            key = RuleKey(*row[:3])
            MemoryStore._put_rule(self, RuleRecord(key, *row[3:]))
            self._rule_seen[key] = (row[3], row[4])
        for target, source in db.execute("SELECT * FROM fanin"):
            self._fanins.setdefault(target, []).append(source)
        for rule, url in db.execute("SELECT * FROM deferred"):
            self._deferred.setdefault(RuleKey.parse(rule), {})[url] = None
        for (url,) in db.execute("SELECT url FROM declared_case"):
            MemoryStore._declare_case(self, url)

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError(f"{self.path}: the store is closed")
        return self._db

    # -- batched writes ---------------------------------------------------------

    def _write(self, table: str, key: Any, row: tuple[Any, ...] | None) -> None:
        self._pending.pop((table, key), None)  # the latest write goes last: flush order is write order
        self._pending[(table, key)] = row
        self._wrote()

    def _wrote(self) -> None:
        self._writes += 1
        if self._writes >= self.batch_size or time.monotonic() - self._last_flush >= self.flush_interval:
            try:
                self._flush(attempts=_FLUSH_ATTEMPTS)
            except sqlite3.OperationalError as exc:
                if not _locked(exc):
                    raise
                # another process holds the file: keep the batch for the next flush
                logger.warning("%s: %s; keeping %d writes for the next flush", self.path, exc, len(self._pending))
                self._writes = 0
                self._last_flush = time.monotonic()

    def flush(self) -> None:
        """Commit the pending batch in one transaction (retried while another process holds the file)."""
        self._flush(attempts=_FLUSH_ATTEMPTS)

    def _flush(self, *, attempts: int) -> None:
        delay = 0.05
        for attempt in range(attempts):
            try:
                self._commit()
                return
            except sqlite3.OperationalError as exc:
                if not _locked(exc) or attempt == attempts - 1:
                    raise
                time.sleep(delay)
                delay *= 4

    def _commit(self) -> None:
        """One transaction: the batch, rules merged with what other processes wrote meanwhile.

        A rule row is never overwritten with this process's image: the
        observations counted since the last flush are added to the row on
        disk (after forgetting what the TTL expired), the latest times and
        notes win, and the rules of the origins written are read back, so a
        counterexample another process recorded is never lost and is seen here.
        """
        if not self._pending and not self._pending_evidence:
            return
        db = self._connection()
        pending, evidence = self._pending, self._pending_evidence
        merged: set[str] = set()
        fresh: dict[RuleKey, RuleRecord] = {}
        db.execute("BEGIN IMMEDIATE")
        try:
            for (table, key), row in pending.items():
                upsert, delete = _WRITES[table]
                if table == "rule":
                    rule = RuleKey(*key)
                    if row is None or rule in self._rule_dropped:
                        db.execute(delete, key)
                    if row is not None:
                        db.execute(upsert, _rule_row(self._merged_rule(db, rule)))
                    merged.add(rule.origin)
                elif row is None:
                    db.execute(delete, key if isinstance(key, tuple) else (key,))
                else:
                    db.execute(upsert, row)
            db.executemany(_EVIDENCE, evidence)
            for origin in merged:
                for row in db.execute("SELECT * FROM rule WHERE origin = ?", (origin,)):
                    fresh[RuleKey(*row[:3])] = RuleRecord(RuleKey(*row[:3]), *row[3:])
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        for origin in merged:  # the memory image follows the disk
            current = self._rules.get(origin, {})
            for key in [k for k in current if k not in fresh]:
                MemoryStore._drop_rule(self, key)
        for key, record in fresh.items():
            image = self._rules.get(key.origin, {}).get(key)
            if image is None:
                MemoryStore._put_rule(self, record)
            else:
                for name in ("support", "against", "first_seen", "last_support", "last_against", "example", "counterexample"):
                    setattr(image, name, getattr(record, name))
            self._rule_seen[key] = (record.support, record.against)
        self._rule_delta.clear()
        self._rule_dropped.clear()
        self._pending, self._pending_evidence = {}, []
        self._writes = 0
        self._last_flush = time.monotonic()

    def _merged_rule(self, db: sqlite3.Connection, key: RuleKey) -> RuleRecord:
        """The row on disk plus what this process observed since its last flush."""
        image = self._rules.get(key.origin, {}).get(key) or RuleRecord(key)
        row = db.execute(
            f"SELECT {_RULE_COLUMNS} FROM rule WHERE origin = ? AND kind = ? AND scope = ?", tuple(key)
        ).fetchone()
        disk = RuleRecord(key, *row) if row is not None else RuleRecord(key)
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

    def close(self) -> None:
        if self._db is None:
            return
        self.flush()
        try:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError:  # another process holds the database: it will checkpoint
            pass
        self._db.close()
        self._db = None

    # -- primitives: the memory image, plus the journal -------------------------

    def _put_alias(self, alias: Alias) -> None:
        super()._put_alias(alias)
        self._write("alias", alias.source, (alias.source, alias.target, alias.status, alias.time))

    def _drop_alias(self, source: str) -> None:
        super()._drop_alias(source)
        self._write("alias", source, None)

    def _put_rule(self, record: RuleRecord) -> None:
        super()._put_rule(record)
        key = record.key
        seen_support, seen_against = self._rule_seen.get(key, (0, 0))
        support, against = self._rule_delta.get(key, (0, 0))
        # what was counted since the image was last written; a count that went down was
        # expired (the TTL): what it holds now was all counted since
        support = support + record.support - seen_support if record.support >= seen_support else record.support
        against = against + record.against - seen_against if record.against >= seen_against else record.against
        self._rule_delta[key] = (support, against)
        self._rule_seen[key] = (record.support, record.against)
        self._write("rule", tuple(key), _rule_row(record))

    def _drop_rule(self, key: RuleKey) -> None:
        super()._drop_rule(key)
        self._rule_seen.pop(key, None)
        self._rule_delta.pop(key, None)
        self._rule_dropped.add(key)
        self._write("rule", tuple(key), None)

    def _add_fanin(self, target: str, source: str, cap: int) -> list[str]:
        before = self._fanin(target)
        sources = super()._add_fanin(target, source, cap)
        if len(sources) > before:
            self._write("fanin", (target, source), (target, source))
        return sources

    def _drop_fanin(self, target: str) -> None:
        super()._drop_fanin(target)
        self._write("fanin", target, None)

    def _declare_case(self, url: str) -> None:
        super()._declare_case(url)
        self._write("declared_case", url, (url,))

    def _drop_declared_case(self, url: str) -> bool:
        dropped = super()._drop_declared_case(url)
        if dropped:
            self._write("declared_case", url, None)
        return dropped

    def _add_deferred(self, rule: RuleKey, url: str) -> None:
        if url in self._deferred.get(rule, ()):
            return
        super()._add_deferred(rule, url)
        self._write("deferred", (str(rule), url), (str(rule), url))

    def _take_deferred(self, rule: RuleKey) -> list[str]:
        urls = super()._take_deferred(rule)
        for url in urls:
            self._write("deferred", (str(rule), url), None)
        return urls

    # -- the evidence log lives on disk only --------------------------------------

    def _add_evidence(self, evidence: Evidence) -> None:
        e = evidence
        self._pending_evidence.append(
            (e.time, e.url, e.status, e.target, ",".join(sorted(e.context)), e.note, e.location)
        )
        self._wrote()

    def _iter_evidence(self, url: str | None = None) -> Iterator[Evidence]:
        self.flush()
        db = self._connection()
        if url is None:
            rows = db.execute(f"SELECT {_EVIDENCE_COLUMNS} FROM evidence ORDER BY id")
            return (_evidence(row) for row in rows)
        rows = db.execute(
            f"SELECT {_EVIDENCE_COLUMNS} FROM evidence WHERE url = ? OR target = ? ORDER BY id",
            (url, url),
        )
        return iter([_evidence(row) for row in rows.fetchall()])

    def _drop_evidence(self, url: str) -> int:
        self.flush()
        cursor = self._connection().execute("DELETE FROM evidence WHERE url = ? OR target = ?", (url, url))
        return cursor.rowcount

    def _count_evidence(self) -> int:
        return self._connection().execute("SELECT count(*) FROM evidence").fetchone()[0] + len(self._pending_evidence)
