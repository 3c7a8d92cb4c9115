"""The write-behind: the changes a process made and its backend has not got yet, read over what the port answers.

Written once for every backend reached through a :class:`._port.StoragePort`.
:class:`WriteBehind` takes every write of an observation (an alias, a
declared case, a rule's counts, fan-in, evidence, a deferred request), keeps
the latest write of each entry, and is the :class:`._cached.Overlay` the
cached reads answer from first. When a commit is due (``batch_size`` writes
pending or ``flush_interval`` seconds passed) :meth:`WriteBehind.changeset`
makes a :class:`Changeset` of them, the port applies it at once
(:meth:`._port.StoragePort.apply`), and :meth:`WriteBehind.committed` lets
them go; a changeset the port could not apply stays pending, whole, for the
next attempt.

A rule's write carries the observations counted since the last commit (what
a backend adds to the record it holds, so a record is never overwritten with
one process's image) along with the record as this process holds it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._cached import CachedReads
from ._evidence import Alias, Evidence
from ._port import Changeset, RuleWrite
from ._rules import RuleKey, RuleRecord
from ._storage import MISSING, PendingCases


class WriteBehind:
    """The pending changes of one process over its :class:`._cached.CachedReads` (``cached``, set once made)."""

    cached: CachedReads

    def __init__(self, batch_size: int, flush_interval: float, monotonic: Callable[[], float]) -> None:
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.monotonic = monotonic
        self.changes = Changeset()
        #: case-only aliases written and not stored, by case key
        self.pending_cases = PendingCases()
        #: per rule: (support, against) as last counted here or read from the backend
        self.rule_seen: dict[RuleKey, tuple[int, int]] = {}
        self.last_commit = monotonic()

    def __len__(self) -> int:
        return len(self.changes)

    def due(self) -> bool:
        """``batch_size`` writes wait, or ``flush_interval`` seconds passed since the last commit."""
        return len(self.changes) >= self.batch_size or self.monotonic() - self.last_commit >= self.flush_interval

    # -- writes -------------------------------------------------------------------------

    def alias(self, source: str, old: Alias | None, alias: Alias | None, horizon: bool) -> None:
        """``source``'s alias went from ``old`` to ``alias`` (``horizon``: refused if the source answered since)."""
        changes = self.changes
        changes.aliases.pop(source, None)  # the latest write goes last
        changes.aliases[source] = (alias, horizon)
        changes.changes[("a", source)] = None
        for key in self.cached.wrote_alias(source, old, alias):
            changes.changes[("c", key)] = None

    def answered(self, url: str, time: float) -> None:
        self.changes.answered[url] = time

    def declared(self, key: str, url: str | None) -> None:
        self.changes.cases.pop(key, None)
        self.changes.cases[key] = url
        self.cached.cases.pop(key)
        self.changes.changes[("c", key)] = None

    def rule(self, key: RuleKey, record: RuleRecord) -> None:
        """``record`` is the rule's record now: what it counted since it was last seen is added."""
        self.cached.rules.put(record)
        seen_support, seen_against = self.rule_seen.get(key, (0, 0))
        write = self.changes.rules.pop(key, None) or RuleWrite(record)
        support, against = write.support, write.against
        # a count that went down was expired (the TTL): what it holds now was all counted since
        write.support = support + record.support - seen_support if record.support >= seen_support else record.support
        write.against = against + record.against - seen_against if record.against >= seen_against else record.against
        write.record = record
        self.changes.rules[key] = write
        self.rule_seen[key] = (record.support, record.against)

    def drop_rule(self, key: RuleKey) -> None:
        self.cached.rules.drop(key)
        self.rule_seen.pop(key, None)
        self.changes.rules.pop(key, None)
        self.changes.rules[key] = RuleWrite(None, dropped=True)

    def add_fanin(self, target: str, source: str, cap: int) -> list[str]:
        sources, added = self.cached.add_source(target, source, cap)
        if added:
            self.changes.fanins.setdefault(target, []).append(source)
        if len(sources) >= 2:  # a sink for any sink_fanin up to its number of sources
            self.changes.sinks.pop(target, None)
            self.changes.sinks[target] = len(sources)
            self.changes.changes[("s", target)] = None
        return sources

    def drop_fanin(self, target: str) -> None:
        self.cached.dropped_fanin(target)
        self.changes.sinks.pop(target, None)
        self.changes.sinks[target] = None
        self.changes.changes[("s", target)] = None
        self.changes.fanins.pop(target, None)
        self.changes.dropped_fanins.add(target)

    def evidence(self, evidence: Evidence) -> None:
        self.changes.evidence.append(evidence)

    def deferred(self, rule: str, url: str, add: bool) -> None:
        self.changes.deferred.pop((rule, url), None)
        self.changes.deferred[(rule, url)] = add

    def must_merge(self) -> None:
        """Another process wrote rules this one holds counts of: the commit merges with what is stored."""
        self.changes.merge = True

    # -- the commit ---------------------------------------------------------------------

    def changeset(self) -> Changeset:
        """What to apply now (the pending changes; left pending until :meth:`committed`)."""
        changes = self.changes
        for key, write in changes.rules.items():  # the record as held now (a count may have come since)
            if write.record is not None:
                write.record = self.cached.held(key) or write.record
        return changes

    def committed(self, fresh: dict[str, dict[RuleKey, RuleRecord]]) -> None:
        """The changeset was applied; ``fresh``: origins the backend read back, which the cache now follows."""
        self.changes = Changeset()
        for origin, records in fresh.items():
            self.cached.set_rules(origin, records)
        self.cached.rules.trim()  # nothing is pinned now
        self.pending_cases.clear()
        self.last_commit = self.monotonic()

    # -- what the reads find over the backend's (:class:`._cached.Overlay`) --------------------

    def pending_alias(self, source: str) -> Any:
        written = self.changes.aliases.get(source)
        return MISSING if written is None else written[0]

    def pending_declared(self, key: str) -> Any:
        return self.changes.cases.get(key, MISSING)

    def pending_fanin(self, target: str) -> tuple[bool, list[str]]:
        return target in self.changes.dropped_fanins, self.changes.fanins.get(target, [])

    def pending_sinks(self, cap: int) -> set[str]:
        return {t for t, s in self.changes.fanins.items() if len(s) >= cap}

    def pinned_origins(self) -> set[str]:
        """Origins whose records hold counts not stored yet: never evicted."""
        return {key.origin for key in self.changes.rules}

    def based(self, record: RuleRecord) -> None:
        self.rule_seen[record.key] = (record.support, record.against)

    def forgotten(self, keys: list[RuleKey]) -> None:
        for key in keys:
            self.rule_seen.pop(key, None)
