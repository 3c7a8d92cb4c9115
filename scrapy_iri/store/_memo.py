"""Resolutions remembered, each only while nothing it read has changed.

Most links a crawl extracts repeat (a site's navigation on every page) and
have no alias. :class:`ResolutionMemo` keeps the :class:`~._resolution.Resolution`
of such a URL and answers it again while it is certain the learner would
compute the same one now:

* only resolutions that met no alias are kept (an alias brings its lifetime,
  its sink check and the crawl's verification pick, which is made anew each
  time);
* an entry names what it read: the URLs whose alias it found absent, the
  case keys it read, the origins whose records in force it judged (each
  origin's generation then); a write the storage reports
  (:attr:`._storage.Storage.watchers`) drops the entries that read its alias
  source or case key, and a rule write that may change a lookup (a record
  that enters or leaves those in force, or whose status changes) starts a
  new generation of its origin;
* an entry lasts until the first moment a record it judged could change
  status by age (its last support or counterexample leaving the rule TTL,
  one second early), and never answers for a time before it was made;
* everything is dropped when the learner's judgement changes (the policy,
  the prior across sites), when the storage's :attr:`~._storage.Storage.reads_moved`
  moves (what another process changed was followed, a read failed), and
  when more than ``size`` entries are held.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ._resolution import Resolution
from ._rules import BLOCK, LearningPolicy, RuleKey, RuleRecord, RuleStatus, case_key
from ._storage import Storage

#: entries held before all are dropped at once
MEMO_SIZE = 1 << 16
#: seconds before an age boundary from which an entry is computed again (float rounding of times)
_MARGIN = 1.0


class Trace:
    """What one resolution read: alias sources, whether one had an alias, origins' records in force, case keys."""

    __slots__ = ("urls", "aliased", "origins", "cases")

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.aliased = False
        self.origins: dict[str, Mapping[RuleKey, RuleRecord]] = {}
        self.cases: list[str] = []

    def reading(self, known: Callable[[str], str | None]) -> Callable[[str], str | None]:
        """``known`` (the storage's case reads), each key it is asked for noted."""
        cases = self.cases

        def read(key: str) -> str | None:
            cases.append(key)
            return known(key)

        return read


class _Origin:
    """One origin as entries judged it: its generation, its records in force with their status, and until
    when none of them can change status by age (``keys is None``: not judged since the last change)."""

    __slots__ = ("gen", "keys", "until")

    def __init__(self) -> None:
        self.gen = 0
        self.keys: dict[RuleKey, RuleStatus] | None = None
        self.until = math.inf


def _items(records: Mapping[RuleKey, RuleRecord]) -> Any:
    """The records held, without reading more (an :class:`._storage.OriginRules` would read the rest)."""
    return dict.items(records) if isinstance(records, dict) else records.items()


class ResolutionMemo:
    """Resolutions without an alias, by URL, kept exact (see the module's docstring)."""

    def __init__(self, storage: Storage, status: Callable[[RuleRecord], RuleStatus], size: int = MEMO_SIZE) -> None:
        self.storage = storage
        #: a record's status now, as the learner judges it
        self.status = status
        self.size = size
        #: url -> (resolution, made at, valid until, ((origin, its generation), ...))
        self.entries: dict[str, tuple[Resolution, float, float, tuple[tuple[_Origin, int], ...]]] = {}
        #: an alias source read by entries of other URLs (hops, a fragment) -> those URLs
        self.by_alias: dict[str, set[str]] = {}
        #: a case key -> the URLs whose entries read it
        self.by_case: dict[str, set[str]] = {}
        self.origins: dict[str, _Origin] = {}
        #: changes with every drop of all entries: an entry computed across one is not kept
        self.clears = 0
        #: lookups answered from an entry
        self.hits = 0
        self.moved = storage.reads_moved
        storage.watchers = (*storage.watchers, self.changed)

    def __len__(self) -> int:
        return len(self.entries)

    def clear(self) -> None:
        """Drop every entry (the learner's judgement changed)."""
        self.clears += 1
        self.entries.clear()
        self.by_alias.clear()
        self.by_case.clear()
        if len(self.origins) > self.size:
            self.origins = {}  # no entry refers to them any more
        for state in self.origins.values():
            state.gen += 1
            state.keys = None

    def get(self, url: str, now: float) -> Resolution | None:
        """The resolution of ``url`` kept, if it still holds at ``now``."""
        moved = self.storage.reads_moved
        if moved != self.moved:
            self.moved = moved
            self.clear()
            return None
        entry = self.entries.get(url)
        if entry is None:
            return None
        resolution, made, until, origins = entry
        if made <= now <= until:
            for state, gen in origins:
                if state.gen != gen:
                    break
            else:
                self.hits += 1
                return resolution
        del self.entries[url]
        return None

    def mark(self) -> tuple[int, int]:
        """What a computation starting now must find unchanged at its end to be kept."""
        return self.clears, self.storage.reads_moved

    def put(
        self, url: str, resolution: Resolution, now: float, trace: Trace, mark: tuple[int, int], policy: LearningPolicy
    ) -> None:
        """Keep ``resolution`` of ``url``, computed at ``now`` reading ``trace``, unless it met an alias or
        something changed while it was computed."""
        if trace.aliased or mark != (self.clears, self.storage.reads_moved):
            return
        if len(self.entries) >= self.size or len(self.by_case) + len(self.by_alias) >= self.size:
            self.clear()
        until = math.inf
        deps = []
        for origin, records in trace.origins.items():
            state = self.origins.get(origin)
            if state is None:
                state = self.origins[origin] = _Origin()
            if state.keys is None or state.until < now:
                if state.keys is not None:  # judged before a status may have changed by age: judged again
                    state.gen += 1
                self._judge(state, records, now, policy)
            until = min(until, state.until)
            deps.append((state, state.gen))
        if until < now:
            return
        self.entries[url] = (resolution, now, until, tuple(deps))
        for source in trace.urls:
            if source != url:
                self.by_alias.setdefault(source, set()).add(url)
        for key in trace.cases:
            self.by_case.setdefault(key, set()).add(url)

    def _judge(self, state: _Origin, records: Mapping[RuleKey, RuleRecord], now: float, policy: LearningPolicy) -> None:
        """Note the keys of an origin's records in force and the first time one of them may change status by age."""
        floor = self.storage.force_floor
        ttl = policy.rule_ttl
        keys = {}
        until = math.inf
        for key, record in _items(records):
            if record is None or (key.kind != BLOCK and record.support < floor):
                continue
            keys[key] = self.status(record)
            for count, last in ((record.against, record.last_against), (record.support, record.last_support)):
                if count and now - last <= ttl:
                    until = min(until, last + ttl - _MARGIN)
        state.keys = keys
        state.until = until

    # -- what the storage reports -------------------------------------------------------

    def changed(self, kind: str, name: Any, record: Any) -> None:
        """A write (see :data:`._storage.WATCHED`): drop what read it."""
        if kind == "a":
            self._drop(name, self.by_alias)
            self._drop(case_key(name), self.by_case)
        elif kind == "c":
            self._drop(name, self.by_case)
        elif kind == "r":
            self._rule_changed(name, record)
        else:
            self.clear()

    def _drop(self, name: str, index: dict[str, set[str]]) -> None:
        self.entries.pop(name, None)
        urls = index.pop(name, None)
        if urls:
            for url in urls:
                self.entries.pop(url, None)

    def _rule_changed(self, key: RuleKey, record: RuleRecord | None) -> None:
        state = self.origins.get(key.origin)
        if state is None or state.keys is None:
            return  # no entry judged the origin since its last change
        was = state.keys.get(key)
        held = record is not None and (key.kind == BLOCK or record.support >= self.storage.force_floor)
        if was is None and not held:
            return  # a candidate, before and after: no lookup reads it
        if was is not None and held and self.status(record) is was:  # type: ignore[arg-type]
            return  # counted, its status the same: a later age boundary at most (entries end earlier)
        state.gen += 1
        state.keys = None
