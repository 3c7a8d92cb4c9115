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
from ._storage import MISSING, OriginRules, PendingCases

_NONE_SEEN = (0, 0, 0.0, 0.0)


class WriteBehind:
    """The pending changes of one process over its :class:`._cached.CachedReads` (``cached``, set once made).

    ``changes`` takes the writes. A backend whose apply may fail half-known (a lost reply) applies a
    sealed changeset (:meth:`seal`: ``sent``, read under ``changes`` until :meth:`committed`) and
    retries that same one; a transactional backend applies ``changes`` itself (:meth:`changeset`).
    """

    cached: CachedReads

    def __init__(self, batch_size: int, flush_interval: float, monotonic: Callable[[], float]) -> None:
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.monotonic = monotonic
        self.changes = Changeset()
        self.sent: Changeset | None = None
        #: the fan-in sources in ``changes`` (counted as they come: a commit is checked for after every observation)
        self._sources = 0
        #: case-only aliases written and not stored, by case key
        self.pending_cases = PendingCases()
        #: per rule: (support, against, last support, last against) as last counted here or read from the backend
        self.rule_seen: dict[RuleKey, tuple[int, int, float, float]] = {}
        self.last_commit = monotonic()

    def __len__(self) -> int:
        c = self.changes
        n = len(c.aliases) + len(c.answered) + len(c.cases) + len(c.rules) + len(c.dropped_fanins) + self._sources
        n += len(c.sinks) + len(c.evidence) + len(c.deferred)
        return n if self.sent is None else n + len(self.sent)

    def due(self) -> bool:
        """``batch_size`` writes wait, or ``flush_interval`` seconds passed since the last commit."""
        return len(self) >= self.batch_size or self.monotonic() - self.last_commit >= self.flush_interval

    def clear(self) -> None:
        """Drop every pending change (the backend was emptied)."""
        self.changes, self.sent, self._sources = Changeset(), None, 0
        self.pending_cases.clear()
        self.rule_seen.clear()

    # -- writes -------------------------------------------------------------------------

    def alias(self, source: str, old: Alias | None, alias: Alias | None, horizon: bool, time: float) -> None:
        """``source``'s alias went from ``old`` to ``alias`` at ``time`` (``horizon``: refused if the source
        answered for itself since)."""
        changes = self.changes
        changes.aliases.pop(source, None)  # the latest write goes last
        changes.aliases[source] = (alias, horizon, time)
        changes.changes[("a", source)] = None
        for key in self.cached.wrote_alias(source, old, alias):
            changes.changes[("c", key)] = None

    def answered(self, url: str, time: float) -> None:
        self.changes.answered[url] = time

    def declared(self, key: str, url: str | None, time: float) -> None:
        expected = "" if url is not None else self.cached.declared_case(key) or ""
        self.changes.cases.pop(key, None)
        self.changes.cases[key] = (url, time, expected)
        self.cached.cases.pop(key)
        self.changes.changes[("c", key)] = None

    def rule(self, key: RuleKey, record: RuleRecord) -> None:
        """``record`` is the rule's record now: what it counted since it was last seen is added."""
        rules = self.cached.rules
        held = rules.origins.get(key.origin)
        if type(held) is OriginRules and dict.get(held, key) is record:
            held.version += 1  # the record held, counted again: what is in force follows it
        else:
            rules.put(record)
        seen = self.rule_seen.get(key, _NONE_SEEN)
        now = self.rule_seen[key] = (record.support, record.against, record.last_support, record.last_against)
        write = self.changes.rules.get(key)
        if write is None:
            write = self.changes.rules[key] = RuleWrite(record)
        else:
            write.record = record
        if now[0] > seen[0]:  # _added, inline: this runs for every count of a bulk load
            write.support += now[0] - seen[0]
        elif now[0] < seen[0] or now[2] != seen[2]:
            write.support = now[0]
        if now[1] > seen[1]:
            write.against += now[1] - seen[1]
        elif now[1] < seen[1] or now[3] != seen[3]:
            write.against = now[1]

    def drop_rule(self, key: RuleKey) -> None:
        self.cached.rules.drop(key)
        self.rule_seen.pop(key, None)
        self.changes.rules.pop(key, None)
        self.changes.rules[key] = RuleWrite(None, dropped=True)

    def add_fanin(self, target: str, source: str, cap: int) -> list[str]:
        sources, added = self.cached.add_source(target, source, cap)
        if added:
            self.changes.fanins.setdefault(target, {})[source] = cap
            self._sources += 1
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
        self._sources -= len(self.changes.fanins.pop(target, {}))
        self.changes.dropped_fanins.add(target)

    def evidence(self, evidence: Evidence) -> None:
        self.changes.evidence.append(evidence)

    def deferred(self, rule: str, url: str, add: bool) -> None:
        self.changes.deferred.pop((rule, url), None)
        self.changes.deferred[(rule, url)] = add

    def deferred_here(self, rule: str) -> list[str]:
        """The URLs deferred under ``rule`` here and not stored yet."""
        return [url for c in self.layers() for (r, url), add in c.deferred.items() if r == rule and add]

    def must_merge(self) -> None:
        """Another process wrote rules this one holds counts of: the commit merges with what is stored."""
        self.changes.merge = True

    # -- the commit ---------------------------------------------------------------------

    def changeset(self) -> Changeset:
        """What to apply now, in one transaction (left pending until :meth:`committed`)."""
        return self._current(self.changes)

    def seal(self) -> Changeset:
        """The changeset in flight (``sent``), else the pending changes sealed as one: applied whole, once,
        before anything written after (which waits in ``changes`` meanwhile)."""
        if self.sent is None:
            self.sent, self.changes, self._sources = self._current(self.changes), Changeset(), 0
        return self.sent

    def _current(self, changes: Changeset) -> Changeset:
        origins = self.cached.rules.origins
        for key, write in changes.rules.items():  # the record as held now
            if write.record is not None:
                held = origins.get(key.origin)
                write.record = (held is not None and dict.get(held, key)) or write.record
        return changes

    def committed(self, fresh: dict[str, dict[RuleKey, RuleRecord]] | None = None) -> None:
        """The changeset in flight, else the pending one, was applied; ``fresh``: origins the backend read
        back, which the cache now follows."""
        done = self.changes if self.sent is None else self.sent
        self.cached.committed_cases(name for kind, name in done.changes if kind == "c")
        if self.sent is not None:
            self.sent = None
        else:
            self.changes, self._sources = Changeset(), 0
        for origin, records in (fresh or {}).items():
            self.cached.set_rules(origin, records)
        self.cached.rules.trim()  # what was pinned by counts not stored is not any more
        if not any(c.aliases for c in self.layers()):
            for key in self.pending_cases:  # computed over writes the backend may have refused: read again
                self.cached.cases.pop(key)
            self.pending_cases.clear()
        self.last_commit = self.monotonic()

    # -- what the reads find over the backend's (:class:`._cached.Overlay`) --------------------

    def layers(self) -> list[Changeset]:
        """The pending changes, newest first."""
        return [self.changes] if self.sent is None else [self.changes, self.sent]

    def pending_alias(self, source: str) -> Any:
        written = self.changes.aliases.get(source)
        if written is None and self.sent is not None:
            written = self.sent.aliases.get(source)
        return MISSING if written is None else written[0]

    def pending_declared(self, key: str) -> Any:
        written = self.changes.cases.get(key)
        if written is None and self.sent is not None:
            written = self.sent.cases.get(key)
        return MISSING if written is None else written[0]

    def pending_fanin(self, target: str) -> tuple[bool, list[str]]:
        if self.sent is None:  # one layer (the common case): no merging
            return target in self.changes.dropped_fanins, list(self.changes.fanins.get(target, ()))
        added: list[str] = []
        for changes in self.layers():
            added = [s for s in changes.fanins.get(target, ()) if s not in added] + added
            if target in changes.dropped_fanins:
                return True, added
        return False, added

    def pending_sinks(self, cap: int) -> set[str]:
        return {t for c in self.layers() for t in c.fanins if len(self.pending_fanin(t)[1]) >= cap}

    def pinned_origins(self) -> set[str]:
        """Origins whose records hold counts not stored yet: never evicted."""
        return {key.origin for c in self.layers() for key in c.rules}

    def based(self, record: RuleRecord) -> None:
        self.rule_seen[record.key] = (record.support, record.against, record.last_support, record.last_against)

    def forgotten(self, keys: list[RuleKey]) -> None:
        for key in keys:
            self.rule_seen.pop(key, None)


def _added(delta: int, seen: int, seen_last: float, count: int, last: float) -> int:
    """The observations of one kind counted since the last commit, now that the record holds ``count``
    (last at ``last``) and held ``seen`` (last at ``seen_last``) when last seen. A count that went down,
    or that moved its time without growing, was expired (the TTL) first: what it holds now was all counted since."""
    if count > seen:
        return delta + count - seen
    if count < seen or last != seen_last:
        return count
    return delta
