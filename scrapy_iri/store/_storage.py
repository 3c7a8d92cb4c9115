"""What a store keeps, and where: the storage interface the learner is written against.

:class:`~._learner.EquivalenceStore` decides what evidence means; a
:class:`Storage` only keeps it. There are three: :mod:`._memory` (dicts),
:mod:`._sqlite` (one file, several processes) and :mod:`._redis` (one
server, many processes). The SQLite and Redis storages keep what grows with
the crawl where it is and read it on demand: aliases and cases behind a
bounded :class:`LRU`, an origin's rules when it is first used (a
:class:`RuleCache` of the origins used last), the sinks of the crawl's
cap once; fan-in, evidence and deferred URLs when needed.

Every URL a storage sees is a scheme-rung form without a fragment.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ._evidence import Alias, Evidence
from ._observation import Prefetch
from ._rules import BLOCK, LearningPolicy, RuleKey, RuleRecord, alias_case_key

#: aliases (and misses) a process keeps in memory by default: a few hundred bytes each
DEFAULT_CACHE_SIZE = 65_536
#: evidence entries a store keeps (the oldest go first)
EVIDENCE_MAX = 1_000_000
#: seconds an evidence entry is kept before the newest one (90 days)
EVIDENCE_MAX_AGE = 90 * 86400.0


def evidence_cutoff(newest: float, now: float, max_age: float) -> float:
    """The time before which evidence entries are pruned: ``max_age`` before the newest entry the
    store holds (a date in the future counts as ``now``).

    The store's own time, not the clock's: an archive learned years after its captures keeps the
    evidence of what it taught, and a crawl (its entries dated now) prunes as the clock goes.
    """
    return min(newest, now) - max_age

MISSING: Any = object()


class LRU:
    """A bounded map that forgets the least recently used entry first; ``get`` answers :data:`MISSING`."""

    def __init__(self, size: int) -> None:
        self.size = max(0, size)
        self.data: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any) -> Any:
        value = self.data.get(key, MISSING)
        if value is not MISSING:
            self.data.move_to_end(key)
        return value

    def put(self, key: Any, value: Any) -> None:
        if not self.size:
            return
        self.data[key] = value
        self.data.move_to_end(key)
        if len(self.data) > self.size:
            self.data.popitem(last=False)

    def at_least(self, size: int) -> None:
        """Hold ``size`` entries or more from now on (what many observations read ahead, until they use it)."""
        if size > self.size:
            self.size = size

    def pop(self, key: Any) -> None:
        self.data.pop(key, None)

    def clear(self) -> None:
        self.data.clear()

    def __len__(self) -> int:
        return len(self.data)


#: the writes after which a lookup may read differently, and what each names for :attr:`Storage.watchers`:
#: ``a`` an alias source, ``c`` a case key, ``r`` a rule key (with its record), ``*`` anything
WATCHED = {"set_alias": "a", "answered": "a", "set_declared_case": "c", "set_rule": "r", "forget_in_force": "*", "bulk_aliases": "*"}


def _watched(method: Callable[..., Any], kind: str) -> Callable[..., Any]:
    def write(self: Storage, *args: Any, **kwargs: Any) -> Any:
        result = method(self, *args, **kwargs)
        for watcher in self.watchers:
            watcher(kind, args[0] if args else None, args[1] if len(args) > 1 else None)
        return result

    write.__doc__, write.__name__, write.watched = method.__doc__, method.__name__, True  # type: ignore[attr-defined]
    return write


class Storage(ABC):
    """Aliases, cases, rules, fan-in, evidence and deferred URLs, kept somewhere.

    Reads answer from what is known *now*; a storage that cannot read (a
    locked file, an unreachable server) answers "unknown" (``None``, empty),
    which merges nothing. Writes may be buffered; :meth:`flush` makes them
    durable. Each write of :data:`WATCHED` is told to the :attr:`watchers`
    (every backend's, without its help: see :meth:`__init_subclass__`).
    """

    #: called as ``watcher(kind, name, record)`` after each write of :data:`WATCHED`
    watchers: tuple[Callable[[str, Any, Any], None], ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, kind in WATCHED.items():
            method = getattr(cls, name, None)
            if method is not None and not getattr(method, "watched", False):
                setattr(cls, name, _watched(method, kind))

    @property
    def reads_moved(self) -> int:
        """Changes whenever a read may answer otherwise than before for a reason other than this
        process's writes: what another process changed was followed, the caches were dropped, a read
        could not be made. (A storage kept in this process alone: never.)"""
        return 0

    #: the learner's policy (set by the learner): what expiry a merge of counts applies
    policy: LearningPolicy = LearningPolicy()
    #: the support from which a record may be active, when the learner lowered it below the
    #: policy's ``min_observations`` (a prior across sites: see :meth:`lower_force_floor`)
    lowered_floor: int | None = None
    #: the time writes are stamped with (while learning recorded observations: each one's own)
    clock: Callable[[], float] = staticmethod(time.time)
    #: whether :meth:`prefetch` reads anything (a storage in memory has nothing to read ahead)
    reads_ahead: bool = True
    #: whether each read is a round trip: one observation's reads are then made at once, too
    round_trips: bool = False
    #: writes carry the times of recorded observations (an archive's): an alias older than the
    #: horizon on late writes is what was recorded, not a write that waited too long
    recorded_time: bool = False

    # -- what a lookup reads ---------------------------------------------------

    @abstractmethod
    def alias(self, source: str) -> Alias | None: ...

    @abstractmethod
    def case_target(self, key: str) -> str | None:
        """The case known for :func:`._rules.case_key` ``key``: the newest case-only alias's target, else a declared case."""

    @abstractmethod
    def rules_at(self, origin: str) -> Mapping[RuleKey, RuleRecord]:
        """The rule records of one origin (an empty mapping when none); the learner updates them and calls :meth:`set_rule`."""

    def rules_in_force(self, origin: str) -> Mapping[RuleKey, RuleRecord]:
        """The records of ``origin`` a lookup may need: every one that could be active (support of
        ``min_observations`` or more) and the origin's block; the same objects :meth:`rules_at` gives
        while the origin is held. A storage may keep these for many more origins than whole ones."""
        return self.rules_at(origin)

    @property
    def force_floor(self) -> int:
        """The support from which a rule record may be active (what :meth:`rules_in_force` holds)."""
        floor = self.policy.min_observations
        return floor if self.lowered_floor is None else min(floor, self.lowered_floor)

    def lower_force_floor(self, support: int) -> None:
        """Let records with ``support`` or more be active; views read with a higher floor are read again."""
        if support < self.force_floor:
            self.lowered_floor = support
            self.forget_in_force()

    def forget_in_force(self) -> None:
        """Drop the views of records in force held for origins not held whole."""

    @abstractmethod
    def is_sink(self, url: str, cap: int) -> bool:
        """Whether the page ``url`` lands on (its :func:`._forms.sink_key`) has ``cap`` sources (the policy's ``sink_fanin``)."""

    # -- what an observation writes ------------------------------------------

    @abstractmethod
    def set_alias(self, source: str, alias: Alias | None) -> None:
        """Make ``alias`` the alias of ``source``, or drop it (``None``)."""

    @abstractmethod
    def declared_case(self, key: str) -> str | None:
        """The URL of the document that declared the case of ``key``, if any."""

    @abstractmethod
    def set_declared_case(self, key: str, url: str | None) -> None:
        """Remember that a document answered at ``url`` (the case of ``key``), or forget it (``None``)."""

    @abstractmethod
    def set_rule(self, key: RuleKey, record: RuleRecord | None) -> None:
        """Store a rule record (counted since it was read), or drop it."""

    @abstractmethod
    def add_fanin(self, target: str, source: str, cap: int) -> list[str]:
        """Remember that ``source`` redirected to ``target`` (up to ``cap`` sources); the sources known."""

    @abstractmethod
    def drop_fanin(self, target: str) -> None: ...

    @abstractmethod
    def add_evidence(self, evidence: Evidence) -> None: ...

    @abstractmethod
    def add_deferred(self, rule: RuleKey, url: str) -> None: ...

    @abstractmethod
    def take_deferred(self, rule: RuleKey) -> list[str]:
        """The URLs deferred under ``rule`` by any process, removed (one taker gets each)."""

    # -- listing (reports, exports, forgetting) -----------------------------

    @abstractmethod
    def aliases(self) -> Iterator[Alias]: ...

    @abstractmethod
    def rules(self) -> Iterator[RuleRecord]: ...

    @abstractmethod
    def fanins(self) -> Iterator[tuple[str, int]]:
        """``(target, number of sources)`` for every fan-in record."""

    @abstractmethod
    def declared_cases(self) -> Iterator[str]: ...

    @abstractmethod
    def evidence(self, url: str | None = None) -> Iterator[Evidence]:
        """The evidence about ``url`` (as source or target), or all of it, oldest first."""

    @abstractmethod
    def drop_evidence(self, url: str) -> int: ...

    @abstractmethod
    def counts(self) -> dict[str, int]:
        """``{"evidence": n, "deferred": n}``."""

    # -- the crawl's policy, and the storage's life (defaults: a volatile storage) ---

    def load_policy(self) -> LearningPolicy | None:
        """The learning policy a crawl recorded, if any."""
        return None

    def save_policy(self, policy: LearningPolicy) -> None:
        """Record the learning policy a crawl judges rules with."""

    def refresh(self) -> None:
        """Before a lookup or an observation: read what other processes changed, when due."""

    def prefetch(self, keys: Prefetch) -> None:
        """Before many observations: read what they will need in a few round trips (a hint; nothing changes)."""

    def observed(self) -> None:
        """After an observation: commit the pending writes, when due."""

    def answered(self, url: str) -> None:
        """``url`` answered for itself: any alias of it, known here or not, ends."""

    def contradicted_elsewhere(self) -> set[RuleKey]:
        """Rules another process contradicted since the last call (each reported once)."""
        return set()

    @property
    def pending(self) -> int:
        """Writes not yet durable."""
        return 0

    def flush(self) -> None:
        """Make everything written so far durable."""

    def sync(self) -> None:
        """Read what other processes changed, now."""

    def close(self) -> None:
        """Flush and release resources."""
        self.flush()


class PendingCases(dict):  # type: ignore[type-arg]
    """The case-only aliases written and not yet stored, by case key: what a read of a case must add
    to what the store answers (case key -> source -> the alias written, ``None``: dropped)."""

    def wrote(self, source: str, old: Alias | None, new: Alias | None) -> list[str]:
        """Note a write of ``source``'s alias (``old`` -> ``new``); the case keys it touches."""
        keys = []
        for written in (old, new):
            key = None if written is None else alias_case_key(written.source, written.target)
            if key is not None:
                self.setdefault(key, {})[source] = new
                keys.append(key)
        return keys

    def case(self, key: str, stored: dict[str, tuple[float, str]]) -> str | None:
        """The case of ``key``: the newest case-only alias, ``stored`` (source -> (time, target)) with the pending writes over it."""
        candidates = dict(stored)
        for source, alias in self.get(key, {}).items():
            if alias is None or alias_case_key(alias.source, alias.target) != key:
                candidates.pop(source, None)
            else:
                candidates[source] = (alias.time, alias.target)
        return max(candidates.values())[1] if candidates else None


#: rule records a process keeps by default (the origins used last; a few hundred bytes each)
DEFAULT_RULE_CACHE = 50_000


class OriginRules(dict):  # type: ignore[type-arg]
    """One origin's rule records, read one key at a time as they are asked for.

    ``get(key)`` answers from what is held, else reads that record alone
    (``read_one``: the record, ``None`` when there is none, :data:`MISSING`
    when the store cannot be read now: unknown, nothing is kept). Listing
    (iteration, ``len``, ``values``, ``items``) reads the rest first
    (``read_all``), once; :meth:`held` lists what is held without reading.
    So the records a process holds are those it used, not every candidate
    an origin ever had.
    """

    def __init__(
        self,
        origin: str,
        read_one: Callable[[RuleKey], RuleRecord | None],
        read_all: Callable[[str], dict[RuleKey, RuleRecord] | None],
        grew: Callable[[int], None] = lambda n: None,
        loaded: Callable[[RuleRecord], None] = lambda record: None,
    ) -> None:
        super().__init__()
        self.origin = origin
        self.complete = False
        #: keys known to have no record (read, or dropped here)
        self.absent: set[RuleKey] = set()
        self._read_one = read_one
        self._read_all = read_all
        self._grew = grew
        self._loaded = loaded
        #: every record that could be in force is held (read by :meth:`Storage.rules_in_force`)
        self.forced = False
        #: changes with every record held, dropped or replaced: the view of those in force follows it
        self.version = 0
        self._view: tuple[int, int, dict[RuleKey, RuleRecord]] | None = None

    def in_force(self, min_observations: int) -> dict[RuleKey, RuleRecord]:
        """The held records a lookup may need (support enough to be active, or the origin's block):
        computed again only after a change, so a lookup costs dictionary reads, not a scan."""
        view = self._view
        if view is None or view[0] != self.version or view[1] != min_observations:
            records = {
                key: record
                for key, record in dict.items(self)
                if key.kind == BLOCK or record.support >= min_observations
            }
            view = self._view = (self.version, min_observations, records)
        return view[2]

    def changed(self) -> None:
        self.version += 1

    @property
    def weight(self) -> int:
        """What this origin costs a cache: records and known absences."""
        return dict.__len__(self) + len(self.absent)

    def held(self) -> list[RuleKey]:
        return list(dict.keys(self))

    def learned(self, records: dict[RuleKey, RuleRecord | None]) -> None:
        """Hold records read elsewhere (``None``: the key has none); those held already stay."""
        for key, record in records.items():
            if dict.__contains__(self, key) or key in self.absent or self.complete:
                continue
            if record is None:
                self.absent.add(key)
            else:
                dict.__setitem__(self, key, record)
                self._loaded(record)
            self._grew(1)
        self.version += 1

    def wanted(self, keys: Iterable[RuleKey]) -> list[RuleKey]:
        """The keys of ``keys`` that a ``get`` would read."""
        if self.complete:
            return []
        return [k for k in keys if not dict.__contains__(self, k) and k not in self.absent]

    def held_records(self) -> list[RuleRecord]:
        return list(dict.values(self))

    def get(self, key: RuleKey, default: Any = None) -> Any:  # type: ignore[override]
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        if self.complete or key in self.absent:
            return default
        found = self._read_one(key)
        if found is MISSING:
            return default
        if found is None:
            self.absent.add(key)
            self._grew(1)
            return default
        dict.__setitem__(self, key, found)
        self._grew(1)
        self._loaded(found)
        self.version += 1
        return found

    def __getitem__(self, key: RuleKey) -> RuleRecord:
        found = self.get(key, MISSING)
        if found is MISSING:
            raise KeyError(key)
        return found  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
        return self.get(key, MISSING) is not MISSING  # type: ignore[arg-type]

    def __setitem__(self, key: RuleKey, record: RuleRecord) -> None:
        if not dict.__contains__(self, key):
            self._grew(1 - (key in self.absent))
        self.absent.discard(key)
        dict.__setitem__(self, key, record)
        self.version += 1

    def pop(self, key: RuleKey, default: Any = None) -> Any:  # type: ignore[override]
        found = dict.pop(self, key, MISSING)
        if found is MISSING:
            return default
        self.absent.add(key)
        self.version += 1
        return found

    def __bool__(self) -> bool:
        return True

    def detach(self) -> None:
        """No longer held by a cache: what it reads now is counted nowhere."""
        self._grew = _ignore

    def fill(self, rows: dict[RuleKey, RuleRecord] | None = None) -> None:
        """Read every record not held yet, or take them from ``rows`` (every record stored, read
        elsewhere); those held stay: they may hold counts not written yet."""
        if self.complete:
            return
        if rows is None:
            rows = self._read_all(self.origin)
        if rows is None:
            return
        before = self.weight
        for key, record in rows.items():
            if not dict.__contains__(self, key) and key not in self.absent:
                dict.__setitem__(self, key, record)
                self._loaded(record)
        self.absent.clear()
        self.complete = True
        self.version += 1
        self._grew(self.weight - before)

    def __iter__(self) -> Iterator[RuleKey]:
        self.fill()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self.fill()
        return dict.__len__(self)

    def keys(self) -> Any:
        self.fill()
        return dict.keys(self)

    def values(self) -> Any:
        self.fill()
        return dict.values(self)

    def items(self) -> Any:
        self.fill()
        return dict.items(self)


def _ignore(n: int) -> None:
    pass


def _evict(records: Mapping[RuleKey, RuleRecord]) -> list[RuleKey]:
    if isinstance(records, OriginRules):
        records.detach()
    return held_keys(records)


def held_keys(records: Mapping[RuleKey, RuleRecord]) -> list[RuleKey]:
    """The keys of the records held (an :class:`OriginRules` reads nothing for it)."""
    return records.held() if isinstance(records, OriginRules) else list(records)


def held_record(records: Mapping[RuleKey, RuleRecord], key: RuleKey) -> RuleRecord | None:
    """The record of ``key`` if held (no read)."""
    return dict.get(records, key) if isinstance(records, dict) else records.get(key)  # type: ignore[arg-type]


def _weight(records: dict[RuleKey, RuleRecord]) -> int:
    return records.weight if isinstance(records, OriginRules) else dict.__len__(records)


class RuleCache:
    """The rule records of the origins used last, about ``size`` records in all, read by origin on demand.

    ``load(origin)`` reads one origin's records (``None``: could not read; nothing is cached then);
    with ``lazy(origin)``, an origin is an :class:`OriginRules` that reads its records one at a
    time instead. An origin in ``pinned()`` (counts not written yet) is never evicted;
    ``evicted(origin, keys)`` hears of each eviction, with the keys it held.
    """

    def __init__(
        self,
        size: int,
        load: Callable[[str], dict[RuleKey, RuleRecord] | None],
        pinned: Callable[[], set[str]] = set,
        evicted: Callable[[str, list[RuleKey]], None] = lambda origin, keys: None,
        lazy: Callable[[str, Callable[[int], None]], OriginRules] | None = None,
    ) -> None:
        self.size = max(1, size)
        self.load = load
        self.pinned = pinned
        self.evicted = evicted
        self.lazy = lazy
        self.origins: OrderedDict[str, dict[RuleKey, RuleRecord]] = OrderedDict()
        self.count = 0

    def _grew(self, n: int) -> None:
        self.count += n

    def get(self, origin: str) -> dict[RuleKey, RuleRecord]:
        """The records of ``origin`` (read if not cached; an empty dict when it has none)."""
        records = self.origins.get(origin)
        if records is not None:
            self.origins.move_to_end(origin)
            return records
        if self.lazy is not None:
            lazy = self.lazy(origin, self._grew)
            self.origins[origin] = lazy
            self.trim()
            return lazy
        loaded = self.load(origin)
        if loaded is None:
            return {}
        self.origins[origin] = loaded
        self.count += len(loaded)
        self.trim()
        return loaded

    def add(self, origin: str, records: dict[RuleKey, RuleRecord]) -> None:
        """Hold ``origin``'s records, read elsewhere (it was not held)."""
        if origin in self.origins:
            return
        self.origins[origin] = records
        self.count += _weight(records)
        self.trim()

    def peek(self, origin: str) -> dict[RuleKey, RuleRecord] | None:
        """The records of ``origin`` if cached (no read)."""
        return self.origins.get(origin)

    def put(self, record: RuleRecord) -> None:
        records = self.origins.get(record.key.origin)
        if records is None:
            records = self.origins[record.key.origin] = self.lazy(record.key.origin, self._grew) if self.lazy else {}
        if isinstance(records, OriginRules):
            records[record.key] = record  # counted by the origin
            return
        if record.key not in records:
            self.count += 1
        records[record.key] = record

    def drop(self, key: RuleKey) -> None:
        records = self.origins.get(key.origin)
        if records is None:
            return
        if isinstance(records, OriginRules):
            was = records.weight
            records.pop(key, None)
            self.count += records.weight - was
        elif records.pop(key, None) is not None:
            self.count -= 1

    def replace(self, origin: str, fresh: dict[RuleKey, RuleRecord], copy: Callable[[RuleRecord, RuleRecord], None]) -> None:
        """Make a cached origin's records what ``fresh`` says, every one of them (record objects kept where they exist)."""
        current = self.origins.get(origin)
        if current is None:
            return
        self.count -= _weight(current)
        for key in [k for k in held_keys(current) if k not in fresh]:
            dict.__delitem__(current, key)
        for key, record in fresh.items():
            image = dict.get(current, key)
            if image is None:
                dict.__setitem__(current, key, record)
            else:
                copy(image, record)
        if isinstance(current, OriginRules):
            current.absent.clear()
            current.complete = True
            current.changed()
        self.count += _weight(current)

    def clear(self) -> None:
        """Forget every origin but the pinned ones."""
        keep = self.pinned()
        for origin in [o for o in self.origins if o not in keep]:
            self.evicted(origin, _evict(self.origins.pop(origin)))
        self.count = sum(_weight(records) for records in self.origins.values())

    def records(self) -> list[RuleRecord]:
        return [r for records in self.origins.values() for r in records.values()]

    def trim(self) -> None:
        """Evict the origins used least lately, pinned ones aside, until about ``size`` records are held."""
        if self.count <= self.size:
            return
        keep = self.pinned()
        for origin in list(self.origins):
            if self.count <= self.size:
                break
            if origin in keep:
                continue
            records = self.origins.pop(origin)
            self.count -= _weight(records)
            self.evicted(origin, _evict(records))
