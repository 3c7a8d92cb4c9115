"""The storage of a backend reached through a port: the shared layers, composed around it once.

:class:`LayeredStorage` is the :class:`._storage.Storage` of every backend
that keeps its records elsewhere (a file, a server). Its reads are the
bounded caches of :class:`._cached.CachedReads`, its writes wait in the
:class:`._writes.WriteBehind`, and its listings, counts, learning policy
and filter of alias sources are what the :class:`._port.StoragePort`
answers with the pending writes over it. A backend class (:mod:`._sqlite`,
:mod:`._redis.storage`) adds its connection, the checks made at open, when
it commits and how it follows what other processes changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from itertools import chain
from typing import Any

from ._cached import CachedReads
from ._codec import policy_from_text, policy_text
from ._evidence import Alias, Evidence
from ._filter import KeyFilter
from ._observation import Prefetch
from ._port import StoragePort
from ._rules import LearningPolicy, RuleKey, RuleRecord
from ._storage import Storage
from ._writes import WriteBehind

logger = logging.getLogger(__name__)


class LayeredStorage(Storage):
    """Cached reads and a write-behind over ``port`` (set by :meth:`compose`); the backend's life is the subclass's."""

    port: StoragePort
    cached: CachedReads
    writes: WriteBehind
    #: the errors that mean the backend cannot be read or written now (a locked file, an unreachable server)
    unavailable: tuple[type[BaseException], ...] = ()
    #: where the store is, for messages
    where: str = ""
    #: the change up to which the filter saved in the store is this process's (``None``: not known)
    filter_saved_at: int | None = None

    @property
    def named(self) -> str:
        """The store, as messages name it."""
        return self.where

    def compose(self, port: StoragePort, writes: WriteBehind, cached: CachedReads | None = None,
                cache_size: int = 0, rule_cache: int = 0) -> None:  # fmt: skip
        """Put the layers around ``port``: the write-behind over the cached reads (``cached``, else new ones)."""
        self.port = port
        self.writes = writes
        if cached is None:
            cached = CachedReads(port, writes, cache_size, rule_cache, lambda: self.force_floor)
        self.cached = writes.cached = cached

    def _failed(self, exc: BaseException) -> None:
        """The backend could not be reached (an ``unavailable`` error)."""

    def _before_listing(self, lenient: bool = False) -> None:
        """Commit what is pending before the backend lists what it stores (``lenient``: a listing
        that can do with what this process holds, when the backend cannot be reached)."""
        self.flush()

    # -- reads: the caches, the pending writes over them -------------------------------------

    def alias(self, source: str) -> Alias | None:
        return self.cached.alias(source)

    def case_target(self, key: str) -> str | None:
        return self.cached.case_target(key)

    def declared_case(self, key: str) -> str | None:
        return self.cached.declared_case(key)

    def rules_at(self, origin: str) -> Mapping[RuleKey, RuleRecord]:
        return self.cached.rules_at(origin)

    def rules_in_force(self, origin: str) -> Mapping[RuleKey, RuleRecord]:
        return self.cached.rules_in_force(origin)

    def forget_in_force(self) -> None:
        self.cached.in_force.clear()

    @property
    def reads_moved(self) -> int:
        return self.cached.reads_moved

    def is_sink(self, url: str, cap: int) -> bool:
        return self.cached.is_sink(url, cap)

    def prefetch(self, keys: Prefetch) -> None:
        """Read what a chunk of observations needs (aliases, fan-in, cases, rule records) in one port read."""
        self.cached.prefetch(keys, self.policy.sink_fanin)

    # -- writes: into the write-behind ---------------------------------------------------------

    def set_alias(self, source: str, alias: Alias | None) -> None:
        self.writes.alias(source, self.cached.alias(source), alias, not self.recorded_time, self.clock())

    def answered(self, url: str) -> None:
        """Stored with the next commit: an alias of ``url`` another process observed earlier, and commits later, is refused."""
        self.writes.answered(url, self.clock())

    def set_declared_case(self, key: str, url: str | None) -> None:
        self.writes.declared(key, url, self.clock())

    def set_rule(self, key: RuleKey, record: RuleRecord | None) -> None:
        if record is None:
            self.writes.drop_rule(key)
        else:
            self.writes.rule(key, record)

    def add_fanin(self, target: str, source: str, cap: int) -> list[str]:
        return self.writes.add_fanin(target, source, cap)

    def drop_fanin(self, target: str) -> None:
        self.writes.drop_fanin(target)

    def add_evidence(self, evidence: Evidence) -> None:
        self.writes.evidence(evidence)

    def add_deferred(self, rule: RuleKey, url: str) -> None:
        self.writes.deferred(str(rule), url, True)

    @property
    def pending(self) -> int:
        """Writes not yet committed."""
        return len(self.writes)

    # -- listings: what the backend stores, the pending writes over it ----------------------------

    def aliases(self) -> Iterator[Alias]:
        self._before_listing()
        written = self._written_aliases()
        for alias in self.port.scan_aliases():
            if alias.source not in written:
                yield alias
        for alias in written.values():
            if alias is not None:
                yield alias

    def _written_aliases(self) -> dict[str, Alias | None]:
        written: dict[str, Alias | None] = {}
        for changes in reversed(self.writes.layers()):  # the oldest first: the latest write wins
            written.update((source, alias) for source, (alias, _, _) in changes.aliases.items())
        return written

    def rules(self) -> Iterator[RuleRecord]:
        """Every rule record stored, those this process holds (with counts not stored yet) in their place;
        only those it holds when the backend cannot be read."""
        self._before_listing(lenient=True)
        cached = self.cached
        try:
            stored = list(self.port.scan_rules())
        except self.unavailable as exc:
            self._failed(exc)
            logger.warning("%s cannot be read (%s): listing the rules this process holds only", self.named, exc)
            listed = {r.key: r for r in cached.all_rules()}
        else:
            listed = cached.listed(stored)
        for changes in reversed(self.writes.layers()):  # the oldest first: the latest write wins
            for key, write in changes.rules.items():
                if write.record is None:
                    listed.pop(key, None)
                else:
                    listed[key] = cached.held(key) or write.record
        return iter(list(listed.values()))

    def fanins(self) -> Iterator[tuple[str, int]]:
        self._before_listing()
        return iter(list(self.port.scan_fanins()))

    def declared_cases(self) -> Iterator[str]:
        self._before_listing()
        written: dict[str, str | None] = {}
        for changes in reversed(self.writes.layers()):
            written.update((key, url) for key, (url, _, _) in changes.cases.items())
        stored = [url for key, url in self.port.scan_declared() if key not in written]
        return iter(stored + [url for url in written.values() if url is not None])

    def evidence(self, url: str | None = None) -> Iterator[Evidence]:
        self.flush()
        stored = self._stored(lambda: self.port.read_evidence(url))
        pending = [e for c in reversed(self.writes.layers()) for e in c.evidence if url is None or url in (e.url, e.target)]
        return chain(stored, pending) if pending else stored

    def drop_evidence(self, url: str) -> int:
        self.flush()
        removed = int(self._stored(lambda: self.port.delete_evidence(url)))
        for changes in self.writes.layers():
            kept = [e for e in changes.evidence if url not in (e.url, e.target)]
            removed += len(changes.evidence) - len(kept)
            changes.evidence[:] = kept
        return removed

    def counts(self) -> dict[str, int]:
        layers = self.writes.layers()
        try:
            evidence, deferred = self.port.counts()
        except self.unavailable as exc:
            self._failed(exc)
            evidence, deferred = 0, 0
        pending = sum(1 for changes in layers for added in changes.deferred.values() if added)
        return {"evidence": evidence + sum(len(c.evidence) for c in layers), "deferred": deferred + pending}

    def _stored(self, call: Callable[[], Any]) -> Any:
        """A listing's read of the backend (a backend may turn its errors into its own)."""
        return call()

    # -- the learning policy the crawl used -------------------------------------------------------

    def load_policy(self) -> LearningPolicy | None:
        """The policy recorded; a store that cannot be read raises (a default policy could merge what the
        recorded one keeps apart)."""
        text = self._stored(lambda: self.port.read_meta("policy"))
        return None if text is None else policy_from_text(text)

    def save_policy(self, policy: LearningPolicy) -> None:
        try:
            self.port.write_meta("policy", policy_text(policy))
        except self.unavailable as exc:  # read-only, held too long, unreachable: judged by defaults
            logger.warning("%s: could not record the learning policy: %s", self.named, exc)

    # -- the filter of alias sources ---------------------------------------------------------------

    def _load_filter(self) -> KeyFilter:
        """The filter saved in the store, brought up to date from the change log; else built from the aliases."""
        saved = self.port.saved_filter()
        self.filter_saved_at = None
        if saved is not None:
            found, since = saved
            changed = self._aliases_changed_since(since)
            if changed is not None:
                for source in changed:
                    found.add(source)
                if not found.full:
                    if not changed:
                        self.filter_saved_at = since
                    return found
        return self._build_filter()

    def _aliases_changed_since(self, since: int) -> list[str] | None:
        """The alias sources changed since the change ``since`` (``None``: not known, build the filter again)."""
        return None

    def _build_filter(self) -> KeyFilter:
        """A filter of every alias source stored and written here, sized for twice as many."""
        written = [source for source, alias in self._written_aliases().items() if alias is not None]
        built = KeyFilter(2 * (self.port.count_aliases() + len(written)))
        for source in chain(self.port.alias_sources(), written):
            built.add(source)
        self._filter_built(built)
        return built

    def _filter_built(self, built: KeyFilter) -> None:
        """A filter was built from what is stored (a backend may save it at once)."""
