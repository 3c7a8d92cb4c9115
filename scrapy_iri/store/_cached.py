"""The cached reads: bounded caches over a :class:`._port.StoragePort`, with the writes not yet stored over them.

Written once for every backend that keeps its records elsewhere (a file, a
server). :class:`CachedReads` answers a lookup from what the write-behind
holds (an :class:`Overlay`), then from its caches, then with one read of
the port: aliases (and misses) behind an :class:`._storage.LRU`, with a
filter of the sources that may have one; cases and fan-in likewise; an
origin's rule records one at a time as they are asked for, those of the
origins used last kept (a :class:`._storage.RuleCache`), and for the
others only the records in force; the sinks of the crawl's cap, read once.
A read the port cannot make answers "unknown" (no alias, no rule, no sink),
which merges nothing, and caches nothing.

What another process changed reaches the caches through the change-log
sync of each backend: it drops the entries named (``aliases.pop`` ...) or
reads an origin's records again (:meth:`CachedReads.set_rules`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Protocol

from ._codec import copy_counts
from ._evidence import Alias
from ._filter import KeyFilter
from ._forms import sink_key
from ._observation import Prefetch
from ._port import CaseAliases, Found, Reads, StoragePort
from ._rules import RuleKey, RuleRecord
from ._storage import LRU, MISSING, OriginRules, PendingCases, RuleCache, held_keys, held_record

_EMPTY: Mapping[RuleKey, RuleRecord] = MappingProxyType({})


class Overlay(Protocol):
    """What the write-behind holds and the backend has not got yet: read over what the port answers."""

    #: case-only aliases written and not stored, by case key
    pending_cases: PendingCases

    def pending_alias(self, source: str) -> Any:
        """The alias written for ``source`` (``None``: dropped), or :data:`._storage.MISSING`."""

    def pending_declared(self, key: str) -> Any:
        """The declared case written for ``key`` (``None``: forgotten), or :data:`._storage.MISSING`."""

    def pending_fanin(self, target: str) -> tuple[bool, list[str]]:
        """Whether the fan-in of ``target`` was dropped, and the sources added since."""

    def pending_sinks(self, cap: int) -> set[str]:
        """The targets that have ``cap`` sources with those not stored."""

    def pinned_origins(self) -> set[str]:
        """Origins whose records hold counts not stored: never evicted."""

    def based(self, record: RuleRecord) -> None:
        """``record`` was read from the backend: what the counts written later are counted from."""

    def forgotten(self, keys: list[RuleKey]) -> None:
        """The records of ``keys`` are no longer held."""


class CachedReads:
    """What a process holds of a store it reads through a port, and the reads that fill it."""

    def __init__(
        self,
        port: StoragePort,
        overlay: Overlay,
        cache_size: int,
        rule_cache: int,
        floor: Callable[[], int],
    ) -> None:
        self.port = port
        self.overlay = overlay
        #: the support from which a record may be active (the records in force are read with it)
        self.floor = floor
        self.rules = RuleCache(rule_cache, self._read_origin, overlay.pinned_origins, self._evicted, self._origin_rules)
        #: for origins not held whole: the records a lookup may need (few), for many more origins
        self.in_force = LRU(max(1024, rule_cache // 4))
        #: the targets with ``sink_cap`` sources or more (read when a lookup first asks with that cap)
        self.sinks: set[str] = set()
        self.sink_cap = 0
        self.aliases = LRU(cache_size)
        self.cases = LRU(cache_size // 4)
        #: case key -> (its stored case-only aliases, its declared case) as read, until this process
        #: commits a write of the key or another one changes it: what a key with writes pending is
        #: computed from again, without a read
        self.case_rows = LRU(cache_size // 4)
        #: target -> (the cap it was read with, its sources)
        self.fanins = LRU(cache_size // 16)
        #: the alias sources the backend may hold (None: not known, every miss is read)
        self.filter: KeyFilter | None = None
        #: changes when a read may answer otherwise for a reason other than this process's writes (see Storage.reads_moved)
        self.reads_moved = 0

    def forget_cached(self) -> None:
        """Start afresh: everything is read again when used (origins with counts not stored stay)."""
        self.reads_moved += 1
        self.filter = None
        self.aliases.clear()
        self.cases.clear()
        self.case_rows.clear()
        self.fanins.clear()
        self.rules.clear()
        self.in_force.clear()
        self.sinks, self.sink_cap = set(), 0

    # -- aliases --------------------------------------------------------------------------

    def alias(self, source: str) -> Alias | None:
        written = self.overlay.pending_alias(source)
        if written is not MISSING:
            return written  # type: ignore[no-any-return]
        cached = self.aliases.get(source)
        if cached is not MISSING:
            return cached  # type: ignore[no-any-return]
        if self.filter is not None and source not in self.filter:
            return None  # never an alias in the backend: answered in memory
        # the alias and its target's own alias in one read: resolving follows the target next
        found = self.port.read_aliases([source], follow=True)
        if found is None:
            self.reads_moved += 1
            return None  # unknown: no merge (a missed merge costs one fetch)
        alias = found.get(source)
        if alias is not None and alias.target in found:
            target = alias.target
            if self.aliases.get(target) is MISSING and self.overlay.pending_alias(target) is MISSING:
                self.aliases.put(target, found[target])
        self.aliases.put(source, alias)
        return alias

    def wrote_alias(self, source: str, old: Alias | None, alias: Alias | None) -> list[str]:
        """``source``'s alias was written (``old`` -> ``alias``; not stored yet): held here, and the case
        keys it touches forgotten (read again over the pending write); returns those keys."""
        if alias is not None and self.filter is not None:
            self.filter.add(source)
        self.aliases.put(source, alias)
        keys = self.overlay.pending_cases.wrote(source, old, alias)
        for key in keys:
            self.cases.pop(key)
        return keys

    # -- cases ----------------------------------------------------------------------------

    def case_target(self, key: str) -> str | None:
        cached = self.cases.get(key)
        if cached is not MISSING and key not in self.overlay.pending_cases:
            return cached  # type: ignore[no-any-return]
        stored = self.case_rows.get(key)
        if stored is MISSING:
            found = self.port.read_cases([key])
            if found is None:
                self.reads_moved += 1
                return None
            stored = found[key]
            self.case_rows.put(key, stored)
        rows, declared = stored
        return self._case_from(key, rows, declared)

    def committed_cases(self, keys: Iterable[str]) -> None:
        """This process committed writes of the case keys ``keys``: what was read of them is read again."""
        for key in keys:
            self.case_rows.pop(key)

    def _case_from(self, key: str, rows: CaseAliases, declared: str | None) -> str | None:
        """The case of ``key`` from its stored case-only aliases and declared case, the writes over them; cached."""
        url = self.overlay.pending_cases.case(key, rows)
        if url is None:
            written = self.overlay.pending_declared(key)
            url = declared if written is MISSING else written
        self.cases.put(key, url)
        return url

    def declared_case(self, key: str) -> str | None:
        written = self.overlay.pending_declared(key)
        if written is not MISSING:
            return written  # type: ignore[no-any-return]
        found = self.port.read_cases([key])
        return None if found is None else found[key][1]

    # -- fan-in and sinks -------------------------------------------------------------------

    def fanin(self, target: str, cap: int) -> list[str] | None:
        """Up to ``cap`` sources of ``target``, the stored ones and those written since (``None``: unknown)."""
        cached = self.fanins.get(target)
        if cached is not MISSING and (cap <= cached[0] or len(cached[1]) < cached[0]):
            return list(cached[1][:cap])
        dropped, added = self.overlay.pending_fanin(target)
        stored: list[str] = []
        if not dropped:
            found = self.port.read_fanins([target], cap)
            if found is None:
                return None
            stored = found[target]
        return self._fanin_from(target, cap, stored, added)

    def _fanin_from(self, target: str, cap: int, stored: list[str], added: list[str]) -> list[str]:
        sources = sorted(stored)[:cap]
        sources += [s for s in added if s not in sources]
        sources = sources[:cap]
        self.fanins.put(target, (cap, sources))
        return list(sources)

    def add_source(self, target: str, source: str, cap: int) -> tuple[list[str], bool]:
        """``source`` redirects to ``target``: the sources known now (up to ``cap``), and whether
        ``source`` is new among them (the caller writes it). A fan-in that cannot be read counts this
        source only, and is not cached (no sink is declared on a guess)."""
        sources = self.fanin(target, cap)
        known = sources is not None
        sources = sources or []
        added = source not in sources and len(sources) < cap
        if added:
            sources.append(source)
            if known:
                cached = self.fanins.get(target)
                self.fanins.put(target, (cap if cached is MISSING else max(cap, cached[0]), list(sources)))
        if len(sources) >= cap:
            self.sinks_for(cap).add(target)
        return sources, added

    def dropped_fanin(self, target: str) -> None:
        self.sinks.discard(target)
        self.fanins.pop(target)

    def is_sink(self, url: str, cap: int) -> bool:
        """Resident: no read once the sinks of ``cap`` are known."""
        sinks = self.sinks_for(cap)
        return bool(sinks) and sink_key(url) in sinks

    def sinks_for(self, cap: int) -> set[str]:
        """The targets with ``cap`` sources or more: read once per cap (the crawl's), kept up to date after."""
        if cap != self.sink_cap:
            found = self.port.read_sinks(cap)
            if found is None:  # unknown: none yet (a lookup merges through an alias; asked again next time)
                return set()
            self.sinks = found | self.overlay.pending_sinks(cap)
            self.sink_cap = cap
        return self.sinks

    # -- rules ------------------------------------------------------------------------------

    def rules_at(self, origin: str) -> Mapping[RuleKey, RuleRecord]:
        return self.rules.get(origin) or _EMPTY

    def rules_in_force(self, origin: str) -> Mapping[RuleKey, RuleRecord]:
        held = self.rules.peek(origin)
        if isinstance(held, OriginRules):
            if not (held.forced or held.complete):
                rows = self._in_force_rows(origin)
                if rows is None:  # unknown: what is held here, no more (read again next time)
                    return held.in_force(self.floor()) or _EMPTY
                held.learned(rows)  # those held here stay: they may hold counts not stored yet
                held.forced = True
            return held.in_force(self.floor()) or _EMPTY
        if held is not None:
            return held
        view = self.in_force.get(origin)
        if view is MISSING:
            view = self._in_force_rows(origin)
            if view is None:
                return _EMPTY  # unknown: no rule applies now (no merge)
            self.in_force.put(origin, view)
        return view or _EMPTY  # type: ignore[no-any-return]

    def _in_force_rows(self, origin: str) -> dict[RuleKey, RuleRecord | None] | None:
        found = self.port.read_in_force([origin], self.floor())
        if found is None:
            self.reads_moved += 1
            return None
        return dict(found[origin])

    def held(self, key: RuleKey) -> RuleRecord | None:
        """The record of ``key`` if held (no read)."""
        records = self.rules.peek(key.origin)
        return None if records is None else held_record(records, key)

    def all_rules(self) -> list[RuleRecord]:
        """The rules this process holds (the origins it used last)."""
        return self.rules.records()

    def listed(self, stored: list[RuleRecord]) -> dict[RuleKey, RuleRecord]:
        """Every record ``stored`` (a listing read them all), the images held here in their place: the
        origins held now hold every record."""
        by_origin: dict[str, dict[RuleKey, RuleRecord]] = {}
        for record in stored:
            by_origin.setdefault(record.key.origin, {})[record.key] = record
        for origin, held in list(self.rules.origins.items()):
            if isinstance(held, OriginRules):
                held.fill(by_origin.get(origin, {}))
        return {r.key: self.held(r.key) or r for r in stored}

    def set_rules(self, origin: str, records: dict[RuleKey, RuleRecord]) -> None:
        """Make a cached origin's records what the backend says (record objects kept where they exist)."""
        current = self.rules.peek(origin)
        if current is None:
            return
        self.reads_moved += 1
        self.overlay.forgotten([k for k in held_keys(current) if k not in records])
        self.rules.replace(origin, records, copy_counts)
        for record in records.values():
            self.overlay.based(record)

    def _read_origin(self, origin: str) -> dict[RuleKey, RuleRecord] | None:
        records = self.port.read_origin(origin)
        if records is None:
            return None
        self.in_force.pop(origin)  # held whole from now on
        for record in records.values():
            self.overlay.based(record)
        return records

    def _origin_rules(self, origin: str, grew: Callable[[int], None]) -> OriginRules:
        """An origin's records, read one at a time as the learner asks for them."""
        self.in_force.pop(origin)  # held from now on
        return OriginRules(origin, self._read_rule, self.port.read_origin, grew, self.overlay.based)

    def _read_rule(self, key: RuleKey) -> RuleRecord | None:
        found = self.port.read_rules([key])
        if found is None:
            self.reads_moved += 1
            return MISSING
        return found[key]

    def _evicted(self, origin: str, keys: list[RuleKey]) -> None:
        self.overlay.forgotten(keys)

    # -- what other processes changed ----------------------------------------------------------

    def follow(self, changes: Iterable[tuple[str, str]]) -> Reads:
        """Forget what other processes changed, from their change log: ``changes`` are (kind, name),
        ``a`` an alias source, ``c`` a case key, ``r`` an origin's rules, ``f`` a target's fan-in, ``s``
        its sink. Returns what to read again (the rules of the origins held here, whether the targets
        are sinks of the cap held): the caller reads it (one port read) and gives it to :meth:`refreshed`."""
        origins: dict[str, None] = {}
        sinks: dict[str, None] = {}
        for kind, name in changes:
            self.reads_moved += 1
            if kind == "a":
                self.aliases.pop(name)
                if self.filter is not None:
                    self.filter.add(name)
            elif kind == "c":
                self.cases.pop(name)
                self.case_rows.pop(name)
            elif kind == "r":
                self.in_force.pop(name)
                if self.rules.peek(name) is not None:
                    origins[name] = None
            elif kind in "fs":
                self.fanins.pop(name)
                if self.sink_cap:
                    sinks[name] = None
        return Reads(cap=self.sink_cap, origins=list(origins), sinks=list(sinks))

    def refreshed(self, reads: Reads, found: Found) -> None:
        """Hold what :meth:`follow` asked to read again."""
        for origin in reads.origins:
            self.set_rules(origin, found.origins.get(origin, {}))
        for target in reads.sinks:
            if target in found.sinks:
                self.sinks.add(target)
            else:
                self.sinks.discard(target)

    # -- reading ahead for many observations ---------------------------------------------------

    def prefetch(self, keys: Prefetch, cap: int) -> None:
        """Read what a chunk of observations needs (aliases, fan-in, cases, rule records) in one port read."""
        overlay, known = self.overlay, self.filter
        # what is read ahead stays held until the chunk uses it (and what it writes, as many again)
        self.aliases.at_least(2 * len(keys.sources))
        self.fanins.at_least(2 * len(keys.sinks))
        self.cases.at_least(2 * len(keys.cases))
        self.case_rows.at_least(2 * len(keys.cases))
        self.rules.size = max(self.rules.size, 2 * len(keys.rules))
        sources = []
        held = self.aliases.data
        for s in keys.sources:
            if s in held or overlay.pending_alias(s) is not MISSING:
                continue
            if known is not None and s not in known:
                self.aliases.put(s, None)  # never an alias in the backend: its miss held, the filter asked once
            else:
                sources.append(s)
        targets = [t for t in keys.sinks if t not in self.fanins.data and not overlay.pending_fanin(t)[0]]
        cases = [k for k in keys.cases if k not in self.cases.data and k not in overlay.pending_cases]
        wanted: list[tuple[OriginRules, list[RuleKey]]] = []
        by_origin: dict[str, list[RuleKey]] = {}
        for key in keys.rules:
            by_origin.setdefault(key.origin, []).append(key)
        for origin, rules in by_origin.items():
            held = self.rules.get(origin)
            if isinstance(held, OriginRules) and (missing := held.wanted(rules)):
                wanted.append((held, missing))
        reads = Reads(sources, False, cases, targets, cap, [key for _, rules in wanted for key in rules])
        found = self.port.read(reads)
        if found is None:
            return  # each observation reads for itself
        for source in sources:
            self.aliases.put(source, found.aliases.get(source))
        for target in targets:
            self._fanin_from(target, cap, found.fanins.get(target, []), overlay.pending_fanin(target)[1])
        for key in cases:
            rows, declared = stored = found.cases.get(key, ({}, None))
            self.case_rows.put(key, stored)
            self._case_from(key, rows, declared)
        for held, rules in wanted:
            held.learned({key: found.rules.get(key) for key in rules})
