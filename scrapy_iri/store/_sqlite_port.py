"""The SQLite backend's reads: :class:`._port.StoragePort` in SQL (a few indexed queries per read)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from typing import Any


from ._codec import rule_record, rule_row
from ._evidence import Alias, Evidence
from ._filter import KeyFilter
from ._port import CaseAliases, Changeset, RuleWrite, StoragePort
from ._rules import BLOCK, LearningPolicy, RuleKey, RuleRecord
from ._sqlite_schema import (
    ALIAS_AND_NEXT,
    ALIAS_COLUMNS,
    ALIAS_FIELDS,
    EVIDENCE,
    EVIDENCE_COLUMNS,
    RULE_COLUMNS,
    WRITES,
    alias_of,
    alias_row,
    evidence_of,
    transaction,
)
from ._storage import EVIDENCE_MAX, EVIDENCE_MAX_AGE, evidence_cutoff

#: entries of the change log kept for processes that fell behind (they reload otherwise)
CHANGES_MAX = 100_000

#: values bound in one query (SQLite's limit is 32,766 since 3.32)
PART = 500

#: a read: rows (at most one with ``one``), or None when the file is locked
Read = Callable[..., "list[tuple[Any, ...]] | None"]


def parts(items: Sequence[Any], size: int = PART) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def marks(part: Sequence[Any]) -> str:
    return ", ".join("?" * len(part))


class SQLitePort(StoragePort):
    """Reads of one SQLite file, through ``read(sql, args, one=False)`` (``None``: the file is locked);
    changesets applied in one transaction on ``connection()``."""

    def __init__(
        self,
        read: Read,
        connection: Callable[[], sqlite3.Connection] | None = None,
        *,
        clock: Callable[[], float] = time.time,
        policy: Callable[[], LearningPolicy] = LearningPolicy,
        answered_horizon: float = 600.0,
        evidence_max: int = EVIDENCE_MAX,
        evidence_max_age: float = EVIDENCE_MAX_AGE,
    ) -> None:
        self._read = read
        self.connection = connection
        self.clock = clock
        self.policy = policy
        #: how long the file remembers that a URL answered for itself: an alias of it another process
        #: observed earlier and commits later is refused (an alias write older than this is refused too)
        self.answered_horizon = answered_horizon
        self.evidence_max = evidence_max
        self.evidence_max_age = evidence_max_age
        #: the file's ``PRAGMA data_version`` when this process last looked (its sync sets it)
        self.data_version = 0
        #: changesets applied by this process
        self.commits = 0

    def read_aliases(self, sources: Sequence[str], follow: bool = False) -> dict[str, Alias | None] | None:
        n = len(ALIAS_FIELDS)
        if follow and len(sources) == 1:  # the alias and its target's own alias in one indexed read
            (source,) = sources
            rows = self._read(ALIAS_AND_NEXT, (source,), one=True)
            if rows is None:
                return None
            if not rows:
                return {source: None}
            row = rows[0]
            alias = alias_of(source, row[:n])
            return {source: alias, alias.target: None if row[n] is None else alias_of(alias.target, row[n:])}
        found: dict[str, Alias | None] = dict.fromkeys(sources)
        for part in parts(sources):
            rows = self._read(f"SELECT {ALIAS_COLUMNS} FROM alias WHERE source IN ({marks(part)})", tuple(part))
            if rows is None:
                return None
            for row in rows:
                found[row[0]] = alias_of(row[0], row[1:])
        return self.with_targets(found) if follow else found

    def read_cases(self, keys: Sequence[str]) -> dict[str, tuple[CaseAliases, str | None]] | None:
        aliases: dict[str, CaseAliases] = {key: {} for key in keys}
        declared: dict[str, str] = {}
        for part in parts(keys):
            args = tuple(part)
            rows = self._read(f"SELECT case_key, source, target, time FROM alias WHERE case_key IN ({marks(part)})", args)
            urls = self._read(f"SELECT key, url FROM declared_case WHERE key IN ({marks(part)})", args)
            if rows is None or urls is None:
                return None
            for key, source, target, time_ in rows:
                aliases[key][source] = (time_, target)
            declared.update(urls)
        return {key: (aliases[key], declared.get(key)) for key in keys}

    def read_fanins(self, targets: Sequence[str], cap: int) -> dict[str, list[str]] | None:
        if len(targets) == 1:
            rows = self._read("SELECT source FROM fanin WHERE target = ? LIMIT ?", (targets[0], cap))
            return None if rows is None else {targets[0]: [source for (source,) in rows]}
        found: dict[str, list[str]] = {target: [] for target in targets}
        for part in parts(targets):
            rows = self._read(f"SELECT target, source FROM fanin WHERE target IN ({marks(part)})", tuple(part))
            if rows is None:
                return None
            for target, source in rows:
                found[target].append(source)
        return found

    def read_sinks(self, cap: int, targets: Sequence[str] | None = None) -> set[str] | None:
        if targets is None:
            rows = self._read("SELECT target FROM sink WHERE sources >= ?", (cap,))
            return None if rows is None else {target for (target,) in rows}
        found: set[str] = set()
        for part in parts(targets):
            rows = self._read(f"SELECT target FROM sink WHERE sources >= ? AND target IN ({marks(part)})", (cap, *part))
            if rows is None:
                return None
            found.update(target for (target,) in rows)
        return found

    def read_rules(self, keys: Sequence[RuleKey]) -> dict[RuleKey, RuleRecord | None] | None:
        found: dict[RuleKey, RuleRecord | None] = dict.fromkeys(keys)
        if len(keys) == 1:
            (key,) = keys
            rows = self._read(f"SELECT {RULE_COLUMNS} FROM rule WHERE origin = ? AND kind = ? AND scope = ?", tuple(key), one=True)
            if rows is None:
                return None
            found[key] = rule_record(key, rows[0]) if rows else None
            return found
        for part in parts(keys, PART // 3):
            values = ", ".join(["(?, ?, ?)"] * len(part))
            rows = self._read(  # each key looked up by the primary key (CROSS JOIN keeps that order)
                f"WITH want(o, k, s) AS (VALUES {values}) SELECT origin, kind, scope, {RULE_COLUMNS}"
                " FROM want CROSS JOIN rule ON origin = o AND kind = k AND scope = s",
                tuple(chain.from_iterable(part)),
            )
            if rows is None:
                return None
            for row in rows:
                key = RuleKey(*row[:3])
                found[key] = rule_record(key, row[3:])
        return found

    def read_origin(self, origin: str) -> dict[RuleKey, RuleRecord] | None:
        rows = self._read(f"SELECT kind, scope, {RULE_COLUMNS} FROM rule WHERE origin = ?", (origin,))
        if rows is None:
            return None
        return {(key := RuleKey(origin, row[0], row[1])): rule_record(key, row[2:]) for row in rows}

    def read_in_force(self, origins: Sequence[str], floor: int) -> dict[str, dict[RuleKey, RuleRecord]] | None:
        found = {}
        for origin in origins:
            rows = self._read(
                f"SELECT kind, scope, {RULE_COLUMNS} FROM rule WHERE origin = ? AND (kind = ? OR support >= ?)",
                (origin, BLOCK, floor),
            )
            if rows is None:
                return None
            found[origin] = {(key := RuleKey(origin, row[0], row[1])): rule_record(key, row[2:]) for row in rows}
        return found

    # -- listings and the store's own records ------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        assert self.connection is not None, "a port without a connection lists nothing"
        return self.connection()

    def scan_aliases(self) -> Iterator[Alias]:
        for row in self._db().execute(f"SELECT {ALIAS_COLUMNS} FROM alias"):
            yield alias_of(row[0], row[1:])

    def scan_rules(self) -> Iterator[RuleRecord]:
        rows = self._db().execute(f"SELECT origin, kind, scope, {RULE_COLUMNS} FROM rule").fetchall()
        return iter([rule_record(RuleKey(*row[:3]), row[3:]) for row in rows])

    def scan_fanins(self) -> Iterator[tuple[str, int]]:
        rows = self._db().execute("SELECT target, count(*) FROM fanin GROUP BY target").fetchall()
        return iter([(target, int(n)) for target, n in rows])

    def scan_declared(self) -> Iterator[tuple[str, str]]:
        return iter(self._db().execute("SELECT key, url FROM declared_case").fetchall())

    def read_evidence(self, url: str | None = None) -> Iterator[Evidence]:
        db = self._db()
        if url is None:
            return (evidence_of(row) for row in db.execute(f"SELECT {EVIDENCE_COLUMNS} FROM evidence ORDER BY id"))
        rows = db.execute(f"SELECT {EVIDENCE_COLUMNS} FROM evidence WHERE url = ? OR target = ? ORDER BY id", (url, url))
        return iter([evidence_of(row) for row in rows.fetchall()])

    def delete_evidence(self, url: str) -> int:
        return int(self._db().execute("DELETE FROM evidence WHERE url = ? OR target = ?", (url, url)).rowcount)

    def counts(self) -> tuple[int, int]:
        db = self._db()
        return db.execute("SELECT count(*) FROM evidence").fetchone()[0], db.execute("SELECT count(*) FROM deferred").fetchone()[0]

    def read_meta(self, name: str) -> str | bytes | None:
        row = self._db().execute("SELECT value FROM meta WHERE key = ?", (name,)).fetchone()
        return None if row is None else row[0]  # type: ignore[no-any-return]

    def write_meta(self, name: str, value: str) -> None:
        self._db().execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, value))

    def count_aliases(self) -> int:
        return int(self._db().execute("SELECT count(*) FROM alias").fetchone()[0])

    def alias_sources(self) -> Iterator[str]:
        return (source for (source,) in self._db().execute("SELECT source FROM alias"))

    def saved_filter(self) -> tuple[KeyFilter, int] | None:
        db = self._db()
        state = db.execute("SELECT value FROM meta WHERE key = 'alias_filter_state'").fetchone()
        bits = db.execute("SELECT value FROM meta WHERE key = 'alias_filter'").fetchone()
        if state is None or bits is None:
            return None
        try:
            capacity, count, change_id = json.loads(state[0])
            return KeyFilter.load(int(capacity), int(count), bytes(bits[0])), int(change_id)
        except (ValueError, TypeError):
            return None

    def save_filter(self, saved: KeyFilter, change_id: int) -> None:
        """Write ``saved``, up to date with ``change_id``, in the transaction under way."""
        capacity, count, bits = saved.dump()
        db = self._db()
        db.execute("INSERT OR REPLACE INTO meta VALUES ('alias_filter', ?)", (bits,))
        db.execute("INSERT OR REPLACE INTO meta VALUES ('alias_filter_state', ?)", (json.dumps([capacity, count, change_id]),))

    # -- writes -------------------------------------------------------------------------------

    def apply(self, changes: Changeset) -> dict[str, dict[RuleKey, RuleRecord]]:
        """One transaction: one statement per table and kind (its deletes before its upserts), the rules
        merged with what other processes stored meanwhile, the evidence, the change log; raises
        ``sqlite3.OperationalError`` when the file stays locked (nothing is written then).

        A rule row is never overwritten with this process's image: the observations counted since the
        last commit are added to the row on disk (after forgetting what the TTL expired), the latest
        times and notes win, and the rules of the origins written are read back, so a counterexample
        another process recorded is never lost and is seen here. When nobody else committed since this
        process last looked (and nothing asks for a merge), its image is the merge: no read back.
        """
        if not len(changes):
            return {}
        assert self.connection is not None, "a port without a connection applies nothing"
        db = self.connection()
        cutoff = self.clock() - self.answered_horizon
        runs = _runs(changes, cutoff)
        origins = sorted({key.origin for key in changes.rules})
        # the rows of this process's images, made before the file is locked (written when nobody else committed)
        images = not changes.merge and not any(w.dropped for w in changes.rules.values())
        rows = sorted([rule_row(k, w.record) for k, w in changes.rules.items() if w.record is not None]) if images else []
        fresh: dict[str, dict[RuleKey, RuleRecord]] = {}
        with transaction(db):
            for upsert, delete in WRITES.values():
                for statement in (delete, upsert):
                    if statement in runs:
                        db.executemany(statement, runs[statement])
            upsert, delete = WRITES["rule"]
            alone = db.execute("PRAGMA data_version").fetchone()[0] == self.data_version
            if alone and images:
                db.executemany(upsert, rows)
                db.executemany(delete, [tuple(key) for key, w in changes.rules.items() if w.record is None])
            else:
                by_origin: dict[str, list[tuple[RuleKey, RuleWrite]]] = {}
                for key, write in changes.rules.items():
                    by_origin.setdefault(key.origin, []).append((key, write))
                for origin, written in by_origin.items():  # one read per origin: the rows as other processes left them
                    disk: dict[RuleKey, RuleRecord] = {}
                    for row in db.execute(f"SELECT kind, scope, {RULE_COLUMNS} FROM rule WHERE origin = ?", (origin,)):
                        key = RuleKey(origin, row[0], row[1])
                        disk[key] = rule_record(key, row[2:])
                    for key, write in written:
                        if write.record is None or write.dropped:
                            db.execute(delete, tuple(key))
                            disk.pop(key, None)
                        if write.record is not None:
                            disk[key] = self._merged(write, disk.get(key))
                            db.execute(upsert, rule_row(key, disk[key]))
                    fresh[origin] = disk
            db.executemany(EVIDENCE, [
                (e.time, e.url, e.status, e.target, ",".join(sorted(e.context)), e.note, e.location) for e in changes.evidence
            ])  # fmt: skip
            db.executemany(
                "INSERT INTO change (kind, name) VALUES (?, ?)",
                [*changes.changes, *(("r", origin) for origin in origins)],
            )
            self.commits += 1
            self._prune(db, max((e.time for e in changes.evidence), default=None))
        return fresh

    def _merged(self, write: RuleWrite, on_disk: RuleRecord | None) -> RuleRecord:
        """The row on disk plus what this process observed since its last commit."""
        assert write.record is not None
        image, key = write.record, write.record.key
        disk = on_disk if on_disk is not None else RuleRecord(key)
        # expired at the time of the writer's newest count (an archive learned late counts at its
        # captures' times, as the writer did), never later than now: as the Redis store merges
        now = self.clock()
        at = max(image.last_support, image.last_against)
        disk.expire(self.policy(), at if 0 < at <= now else now)
        newer_support = image if image.last_support >= disk.last_support else disk
        newer_against = image if image.last_against >= disk.last_against else disk
        firsts = [t for t in (image.first_seen, disk.first_seen) if t]
        return RuleRecord(
            key,
            disk.support + write.support,
            disk.against + write.against,
            min(firsts) if firsts else 0.0,
            max(image.last_support, disk.last_support),
            max(image.last_against, disk.last_against),
            newer_support.example or image.example or disk.example,
            newer_against.counterexample or image.counterexample or disk.counterexample,
        )

    def _prune(self, db: sqlite3.Connection, written: float | None) -> None:
        """Keep the evidence log and the change log within their caps (``written``: the newest time
        of the evidence this commit added)."""
        # two queries: SQLite answers min() and max() alone from the index's ends, together by a scan
        (low,) = db.execute("SELECT min(id) FROM evidence").fetchone()
        (high,) = db.execute("SELECT max(id) FROM evidence").fetchone()
        if high is not None and high - low + 1 > self.evidence_max:
            db.execute("DELETE FROM evidence WHERE id <= ?", (high - self.evidence_max,))
        # by age at every commit, before the newest entry ever held: the oldest entry first, so this
        # stops at once when nothing is old
        newest = self._evidence_newest(db, written)
        if newest is None:
            return self._prune_changes(db, self.clock())
        cutoff = evidence_cutoff(newest, self.clock(), self.evidence_max_age)
        first = db.execute("SELECT id FROM evidence WHERE time >= ? ORDER BY id LIMIT 1", (cutoff,)).fetchone()
        db.execute("DELETE FROM evidence WHERE id < ?", (first[0] if first else (high or 0) + 1,))
        self._prune_changes(db, min(newest, self.clock()))

    def _evidence_newest(self, db: sqlite3.Connection, written: float | None) -> float | None:
        """The newest evidence time the store ever held, ``written`` included (kept in ``meta``; a
        store written without it reads its evidence once)."""
        row = db.execute("SELECT value FROM meta WHERE key = 'evidence_newest'").fetchone()
        if row is not None:
            newest: float | None = float(row[0])
        else:
            (newest,) = db.execute("SELECT max(time) FROM evidence").fetchone()
        if written is not None and (newest is None or written > newest):
            newest = written
        if newest is not None and (row is None or newest != float(row[0])):
            db.execute("INSERT OR REPLACE INTO meta VALUES ('evidence_newest', ?)", (repr(newest),))
        return newest

    def _prune_changes(self, db: sqlite3.Connection, learned: float) -> None:
        """Every 64 commits: the change log, the answered sources and the rule records past use at
        ``learned``, the store's newest learning time (an archive learned late keeps what still
        counted when its captures were made)."""
        if self.commits % 64 == 1:
            db.execute("DELETE FROM change WHERE id <= (SELECT max(id) FROM change) - ?", (CHANGES_MAX,))
            db.execute("DELETE FROM answered WHERE time < ?", (self.clock() - self.answered_horizon,))
            # rule records whose every count is older than the TTL mean nothing any more (a record
            # expires them when next counted): gone, so an origin keeps only what still counts
            stale = learned - self.policy().rule_ttl
            db.execute(
                "DELETE FROM rule WHERE (support = 0 OR last_support < ?) AND (against = 0 OR last_against < ?)",
                (stale, stale),
            )


def _runs(changes: Changeset, cutoff: float) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of each statement (but the rules'): a write per entry, the latest, sorted by key (each
    page of a table is written once)."""
    runs: dict[str, list[tuple[Any, ...]]] = {}

    def add(table: str, rows: list[tuple[Any, ...]], keys: list[tuple[Any, ...]]) -> None:
        upsert, delete = WRITES[table]
        if rows:
            runs[upsert] = sorted(rows)
        if keys:
            runs[delete] = sorted(keys)

    horizon = float("-inf")
    aliases = changes.aliases.items()  # the stored row, then the horizon if it applies
    add("alias", [(*alias_row(a), cutoff if h else horizon) for _, (a, h, _) in aliases if a is not None],
        [(source,) for source, (a, _, _) in aliases if a is None])  # fmt: skip
    add("answered", list(changes.answered.items()), [])
    add("fanin", [(t, s) for t, sources in changes.fanins.items() for s in sources], [(t,) for t in changes.dropped_fanins])
    deferred = changes.deferred.items()
    add("deferred", [entry for entry, added in deferred if added], [entry for entry, added in deferred if not added])
    cases = changes.cases.items()
    add("declared_case", [(k, url) for k, (url, _, _) in cases if url is not None], [(k,) for k, (url, _, _) in cases if url is None])
    sinks = changes.sinks.items()
    add("sink", [(t, n) for t, n in sinks if n is not None], [(t,) for t, n in sinks if n is None])
    return runs
