"""The SQLite backend's reads: :class:`._port.StoragePort` in SQL (a few indexed queries per read)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ._codec import rule_record
from ._evidence import Alias
from ._port import CaseAliases, StoragePort
from ._rules import BLOCK, RuleKey, RuleRecord
from ._sqlite_schema import ALIAS_AND_NEXT, ALIAS_COLUMNS, ALIAS_FIELDS, RULE_COLUMNS, alias_of

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
    """Reads of one SQLite file, through ``read(sql, args, one=False)`` (``None``: the file is locked)."""

    def __init__(self, read: Read) -> None:
        self._read = read

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
        if follow:
            targets = [a.target for a in found.values() if a is not None and a.target not in found]
            more = self.read_aliases(targets) if targets else {}
            if more is None:
                return None
            found.update(more)
        return found

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
                tuple(v for key in part for v in key),
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
