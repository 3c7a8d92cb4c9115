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
is migrated when opened, a newer one is refused.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .base import StoreError
from .evidence import Alias, Evidence
from .memory import MemoryStore
from .rules import RuleKey, RuleRecord

SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE alias (
    source TEXT PRIMARY KEY, target TEXT NOT NULL, status INTEGER NOT NULL, time REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE rule (
    origin TEXT NOT NULL, kind TEXT NOT NULL, scope TEXT NOT NULL,
    support INTEGER NOT NULL, against INTEGER NOT NULL,
    first_seen REAL NOT NULL, last_support REAL NOT NULL, last_against REAL NOT NULL,
    example TEXT NOT NULL, counterexample TEXT NOT NULL,
    PRIMARY KEY (origin, kind, scope)
) WITHOUT ROWID;
CREATE TABLE fanin (target TEXT NOT NULL, source TEXT NOT NULL, PRIMARY KEY (target, source)) WITHOUT ROWID;
CREATE TABLE deferred (rule TEXT NOT NULL, url TEXT NOT NULL, PRIMARY KEY (rule, url)) WITHOUT ROWID;
CREATE TABLE declared_case (url TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE evidence (
    id INTEGER PRIMARY KEY, time REAL NOT NULL, url TEXT NOT NULL, status INTEGER NOT NULL,
    target TEXT, context TEXT NOT NULL, note TEXT NOT NULL, location TEXT
);
CREATE INDEX evidence_url ON evidence (url);
CREATE INDEX evidence_target ON evidence (target);
"""

#: table -> (upsert, delete) statements of the batched writes
_WRITES = {
    "alias": (
        "INSERT OR REPLACE INTO alias VALUES (?, ?, ?, ?)",
        "DELETE FROM alias WHERE source = ?",
    ),
    "rule": (
        "INSERT OR REPLACE INTO rule VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "DELETE FROM rule WHERE origin = ? AND kind = ? AND scope = ?",
    ),
    "fanin": ("INSERT OR IGNORE INTO fanin VALUES (?, ?)", "DELETE FROM fanin WHERE target = ?"),
    "deferred": ("INSERT OR IGNORE INTO deferred VALUES (?, ?)", "DELETE FROM deferred WHERE rule = ? AND url = ?"),
    "declared_case": ("INSERT OR IGNORE INTO declared_case VALUES (?)", "DELETE FROM declared_case WHERE url = ?"),
}
#: schema version -> the statements that bring a store of that version to the next one
_MIGRATIONS = {
    1: "CREATE TABLE IF NOT EXISTS declared_case (url TEXT PRIMARY KEY) WITHOUT ROWID;",  # documents declare a case
}
_EVIDENCE = "INSERT INTO evidence (time, url, status, target, context, note, location) VALUES (?, ?, ?, ?, ?, ?, ?)"
_EVIDENCE_COLUMNS = "time, url, status, target, context, note, location"


def _rule_row(r: RuleRecord) -> tuple[Any, ...]:
    return (*r.key, r.support, r.against, r.first_seen, r.last_support, r.last_against, r.example, r.counterexample)


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
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: {exc}") from exc
        self._pending: dict[tuple[str, Any], tuple[Any, ...] | None] = {}
        self._pending_evidence: list[tuple[Any, ...]] = []
        self._writes = 0
        self._last_flush = time.monotonic()
        self._load()

    # -- schema ---------------------------------------------------------------

    def _migrate(self) -> None:
        db = self._connection()
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: store schema version {version} is newer than this scrapy-iri reads ({SCHEMA_VERSION})"
            )
        if version == 0:
            tables = db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
            if tables:
                raise StoreError(f"{self.path}: not a scrapy-iri store (tables but no schema version)")
            db.executescript(f"BEGIN; {_SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;")
            return
        while version < SCHEMA_VERSION:
            db.executescript(f"BEGIN IMMEDIATE; {_MIGRATIONS[version]} PRAGMA user_version = {version + 1}; COMMIT;")
            version += 1

    def _load(self) -> None:
        db = self._connection()
        for row in db.execute("SELECT * FROM alias"):
            MemoryStore._put_alias(self, Alias(*row))
        for row in db.execute("SELECT * FROM rule"):
            key = RuleKey(*row[:3])
            MemoryStore._put_rule(self, RuleRecord(key, *row[3:]))
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
            self.flush()

    def flush(self) -> None:
        """Commit the pending batch in one transaction."""
        if not self._pending and not self._pending_evidence:
            return
        db = self._connection()
        pending, evidence = self._pending, self._pending_evidence
        db.execute("BEGIN")
        try:
            for (table, key), row in pending.items():
                upsert, delete = _WRITES[table]
                if row is None:
                    db.execute(delete, key if isinstance(key, tuple) else (key,))
                else:
                    db.execute(upsert, row)
            db.executemany(_EVIDENCE, evidence)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._pending, self._pending_evidence = {}, []
        self._writes = 0
        self._last_flush = time.monotonic()

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
        self._write("rule", tuple(record.key), _rule_row(record))

    def _drop_rule(self, key: RuleKey) -> None:
        super()._drop_rule(key)
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
