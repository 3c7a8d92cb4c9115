"""The SQLite store's schema, its migrations, the row encodings, and the one transaction helper."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from operator import attrgetter
from typing import Any

from ._codec import RULE_FIELDS
from ._evidence import Alias, Evidence
from ._rules import alias_case_key, case_key

SCHEMA_VERSION = 6
_SCHEMA = """
CREATE TABLE IF NOT EXISTS alias (
    source TEXT PRIMARY KEY, target TEXT NOT NULL, status INTEGER NOT NULL, time REAL NOT NULL, case_key TEXT,
    expires REAL, confirmations INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS alias_case ON alias (case_key) WHERE case_key IS NOT NULL;
CREATE TABLE IF NOT EXISTS rule (
    origin TEXT NOT NULL, kind TEXT NOT NULL, scope TEXT NOT NULL,
    support INTEGER NOT NULL, against INTEGER NOT NULL,
    first_seen REAL NOT NULL, last_support REAL NOT NULL, last_against REAL NOT NULL,
    example TEXT NOT NULL, counterexample TEXT NOT NULL,
    PRIMARY KEY (origin, kind, scope)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS fanin (target TEXT NOT NULL, source TEXT NOT NULL, PRIMARY KEY (target, source)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS deferred (rule TEXT NOT NULL, url TEXT NOT NULL, PRIMARY KEY (rule, url)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS declared_case (key TEXT PRIMARY KEY, url TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS evidence (
    id INTEGER PRIMARY KEY, time REAL NOT NULL, url TEXT NOT NULL, status INTEGER NOT NULL,
    target TEXT, context TEXT NOT NULL, note TEXT NOT NULL, location TEXT
);
CREATE INDEX IF NOT EXISTS evidence_url ON evidence (url);
CREATE INDEX IF NOT EXISTS evidence_target ON evidence (target);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS change (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sink (target TEXT PRIMARY KEY, sources INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS answered (source TEXT PRIMARY KEY, time REAL NOT NULL) WITHOUT ROWID;
"""

RULE_COLUMNS = ", ".join(RULE_FIELDS)
EVIDENCE_COLUMNS = "time, url, status, target, context, note, location"
EVIDENCE = f"INSERT INTO evidence ({EVIDENCE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"
#: the alias codec, the one place that names an alias's stored fields: the columns after ``source``
#: (:func:`alias_row` writes them and the case key, :func:`alias_of` reads them back)
ALIAS_FIELDS = ("target", "status", "time", "expires", "confirmations")
ALIAS_COLUMNS = "source, " + ", ".join(ALIAS_FIELDS)
_ROW = ", ".join(f"?{i}" for i in range(1, len(ALIAS_FIELDS) + 3))  # source, fields, case key
_TIME = f"?{2 + ALIAS_FIELDS.index('time')}"
_CUTOFF = f"?{len(ALIAS_FIELDS) + 3}"
ALIAS = f"INSERT OR REPLACE INTO alias ({ALIAS_COLUMNS}, case_key) VALUES ({_ROW})"
#: table -> (upsert, delete) statements of the batched writes
#: an alias observed by this process: refused if the URL answered for itself since (in any process),
#: if a newer alias is on disk, or if it is older than the horizon (the last parameter: now - horizon)
ALIAS_PUT = (
    f"INSERT INTO alias ({ALIAS_COLUMNS}, case_key) SELECT {_ROW}"
    f" WHERE {_TIME} >= {_CUTOFF} AND NOT EXISTS (SELECT 1 FROM answered WHERE source = ?1 AND time >= {_TIME})"
    " ON CONFLICT (source) DO UPDATE SET "
    + ", ".join(f"{name} = excluded.{name}" for name in (*ALIAS_FIELDS, "case_key"))
    + " WHERE excluded.time >= alias.time"
)
WRITES = {
    "alias": (ALIAS_PUT, "DELETE FROM alias WHERE source = ?"),
    "answered": (
        "INSERT INTO answered VALUES (?, ?) ON CONFLICT (source) DO UPDATE SET time = max(time, excluded.time)",
        "DELETE FROM answered WHERE source = ?",
    ),
    "rule": (
        f"INSERT OR REPLACE INTO rule (origin, kind, scope, {RULE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "DELETE FROM rule WHERE origin = ? AND kind = ? AND scope = ?",
    ),
    "fanin": ("INSERT OR IGNORE INTO fanin VALUES (?, ?)", "DELETE FROM fanin WHERE target = ?"),
    "deferred": ("INSERT OR IGNORE INTO deferred VALUES (?, ?)", "DELETE FROM deferred WHERE rule = ? AND url = ?"),
    "declared_case": ("INSERT OR REPLACE INTO declared_case VALUES (?, ?)", "DELETE FROM declared_case WHERE key = ?"),
    "sink": (
        "INSERT INTO sink VALUES (?, ?) ON CONFLICT (target) DO UPDATE SET sources = max(sources, excluded.sources)",
        "DELETE FROM sink WHERE target = ?",
    ),
}
#: an alias and its target's alias in one read: the fields of each, in turn
ALIAS_AND_NEXT = (
    "SELECT " + ", ".join([f"a.{f}" for f in ALIAS_FIELDS] + [f"b.{f}" for f in ALIAS_FIELDS])
    + " FROM alias AS a LEFT JOIN alias AS b ON b.source = a.target WHERE a.source = ?"
)

def _statements(script: str) -> list[str]:
    return [part.strip() for part in script.split(";") if part.strip()]


def locked(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))


def evidence_of(row: tuple[Any, ...]) -> Evidence:
    time_, url, status, target, context, note, location = row
    return Evidence(time_, url, status, target, frozenset(filter(None, context.split(","))), note, location)




_ALIAS_VALUES = attrgetter("source", *ALIAS_FIELDS)


def alias_row(alias: Alias) -> tuple[Any, ...]:
    """An alias as stored: its source, its :data:`ALIAS_FIELDS`, its case key."""
    return (*_ALIAS_VALUES(alias), alias_case_key(alias.source, alias.target))


def alias_of(source: str, values: Sequence[Any]) -> Alias:
    """The alias of ``source`` from its stored :data:`ALIAS_FIELDS` values."""
    return Alias(source, **dict(zip(ALIAS_FIELDS, values)))


# -- migrations: version -> a function bringing a store of that version to the next one


def _to_2(db: sqlite3.Connection) -> None:  # documents declare a case
    db.execute("CREATE TABLE IF NOT EXISTS declared_case (url TEXT PRIMARY KEY) WITHOUT ROWID")


def _to_3(db: sqlite3.Connection) -> None:  # the learning policy
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID")


def _to_4(db: sqlite3.Connection) -> None:
    """Case keys stored with aliases and declared cases (read on demand, never recomputed at open)."""
    db.execute(
        "CREATE TABLE alias4 (source TEXT PRIMARY KEY, target TEXT NOT NULL, status INTEGER NOT NULL,"
        " time REAL NOT NULL, case_key TEXT) WITHOUT ROWID"
    )
    rows = db.execute("SELECT source, target, status, time FROM alias")
    db.executemany(
        "INSERT OR REPLACE INTO alias4 (source, target, status, time, case_key) VALUES (?, ?, ?, ?, ?)",
        ((*row, alias_case_key(row[0], row[1])) for row in rows),
    )
    db.execute("DROP TABLE alias")
    db.execute("ALTER TABLE alias4 RENAME TO alias")
    urls = [url for (url,) in db.execute("SELECT url FROM declared_case")]
    db.execute("DROP TABLE declared_case")
    db.execute("DROP TABLE IF EXISTS sink")
    for statement in _statements(_SCHEMA):
        db.execute(statement)
    db.executemany("INSERT OR REPLACE INTO declared_case VALUES (?, ?)", ((case_key(u), u) for u in urls))


def _to_5(db: sqlite3.Connection) -> None:
    """URLs that answered for themselves (a late alias write from another process must not undo them),
    and the number of sources of every target with two or more (a sink for any ``sink_fanin``)."""
    db.execute("CREATE TABLE IF NOT EXISTS answered (source TEXT PRIMARY KEY, time REAL NOT NULL) WITHOUT ROWID")
    db.execute("DROP TABLE IF EXISTS sink")
    db.execute("CREATE TABLE sink (target TEXT PRIMARY KEY, sources INTEGER NOT NULL) WITHOUT ROWID")
    db.execute("INSERT INTO sink SELECT target, count(*) FROM fanin GROUP BY target HAVING count(*) >= 2")


def _to_6(db: sqlite3.Connection) -> None:
    """An alias's stated lifetime and its confirmations (aliases from before: no lifetime stated, none)."""
    db.execute("ALTER TABLE alias ADD COLUMN expires REAL")
    db.execute("ALTER TABLE alias ADD COLUMN confirmations INTEGER NOT NULL DEFAULT 0")


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _to_2, 2: _to_3, 3: _to_4, 4: _to_5, 5: _to_6}


def create_schema(db: sqlite3.Connection) -> None:
    for statement in _statements(_SCHEMA):
        db.execute(statement)


#: the tables of the current schema
TABLES = tuple(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", _SCHEMA))


def missing_tables(db: sqlite3.Connection) -> list[str]:
    """The tables of the current schema that the file lacks (a damaged store: none, normally)."""
    present = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return [table for table in TABLES if table not in present]


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction (``BEGIN IMMEDIATE``): committed when the block ends, rolled back if it raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
