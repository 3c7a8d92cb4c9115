"""The in-memory storage (``IRI_STORE = "memory:"``): dictionaries, lost at exit."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType

from ._codec import policy_from_text, policy_text
from ._evidence import Alias, Evidence
from ._forms import sink_key
from ._learner import EquivalenceStore
from ._port import CaseAliases, StoragePort
from ._rules import LearningPolicy, RuleKey, RuleRecord, case_key, is_case_change
from ._storage import EVIDENCE_MAX_AGE, Storage, evidence_cutoff

_EMPTY: Mapping[RuleKey, RuleRecord] = MappingProxyType({})


class MemoryStorage(Storage):
    """Everything in dictionaries; the policy too.

    The evidence log keeps no entry more than ``evidence_max_age`` seconds
    older than the newest one (:func:`._storage.evidence_cutoff`, ``now``
    the clock given), as the other backends do.
    """

    reads_ahead = False

    def __init__(self, *, now: Callable[[], float] = time.time, evidence_max_age: float = EVIDENCE_MAX_AGE) -> None:
        self._aliases: dict[str, Alias] = {}
        #: case key -> source -> (time, target) of its case-only aliases (the newest declares the case)
        self._case_aliases: dict[str, dict[str, tuple[float, str]]] = {}
        self._declared: dict[str, str] = {}
        self._rules: dict[str, dict[RuleKey, RuleRecord]] = {}
        self._fanins: dict[str, list[str]] = {}
        self._log: deque[Evidence] = deque()
        self._newest: float | None = None
        self._now = now
        self.evidence_max_age = evidence_max_age
        self._deferred: dict[RuleKey, dict[str, None]] = {}
        self._policy: LearningPolicy | None = None
        #: the port's reads of these dictionaries (what a cached layer over it would read)
        self.port = MemoryPort(self)

    # lookups
    def alias(self, source: str) -> Alias | None:
        return self._aliases.get(source)

    def case_target(self, key: str) -> str | None:
        found = self._case_aliases.get(key)
        return max(found.values())[1] if found else self._declared.get(key)

    def rules_at(self, origin: str) -> Mapping[RuleKey, RuleRecord]:
        return self._rules.get(origin, _EMPTY)

    def is_sink(self, url: str, cap: int) -> bool:
        sources = self._fanins.get(sink_key(url)) if self._fanins else None
        return sources is not None and len(sources) >= cap

    # writes
    def set_alias(self, source: str, alias: Alias | None) -> None:
        old = self._aliases.pop(source, None)
        if old is not None and is_case_change(old.source, old.target):
            key = case_key(old.target)
            found = self._case_aliases[key]
            del found[source]
            if not found:
                del self._case_aliases[key]
        if alias is None:
            return
        self._aliases[source] = alias
        if is_case_change(alias.source, alias.target):
            self._case_aliases.setdefault(case_key(alias.target), {})[source] = (alias.time, alias.target)

    def declared_case(self, key: str) -> str | None:
        return self._declared.get(key)

    def set_declared_case(self, key: str, url: str | None) -> None:
        if url is None:
            self._declared.pop(key, None)
        else:
            self._declared[key] = url

    def set_rule(self, key: RuleKey, record: RuleRecord | None) -> None:
        if record is not None:
            self._rules.setdefault(key.origin, {})[key] = record
            return
        records = self._rules.get(key.origin)
        if records is not None:
            records.pop(key, None)
            if not records:
                del self._rules[key.origin]

    def add_fanin(self, target: str, source: str, cap: int) -> list[str]:
        sources = self._fanins.setdefault(target, [])
        if source not in sources and len(sources) < cap:
            sources.append(source)
        return list(sources)

    def drop_fanin(self, target: str) -> None:
        self._fanins.pop(target, None)

    def add_evidence(self, evidence: Evidence) -> None:
        log = self._log
        log.append(evidence)
        if self._newest is None or evidence.time > self._newest:
            self._newest = evidence.time
        cutoff = evidence_cutoff(self._newest, self._now(), self.evidence_max_age)
        while log and log[0].time < cutoff:  # the oldest first, as the other backends prune
            log.popleft()

    def add_deferred(self, rule: RuleKey, url: str) -> None:
        self._deferred.setdefault(rule, {})[url] = None

    def take_deferred(self, rule: RuleKey) -> list[str]:
        return list(self._deferred.pop(rule, {}))

    # listing
    def aliases(self) -> Iterator[Alias]:
        return iter(list(self._aliases.values()))

    def rules(self) -> Iterator[RuleRecord]:
        return iter([r for records in self._rules.values() for r in records.values()])

    def fanins(self) -> Iterator[tuple[str, int]]:
        return iter([(t, len(s)) for t, s in self._fanins.items()])

    def declared_cases(self) -> Iterator[str]:
        return iter(list(self._declared.values()))

    def evidence(self, url: str | None = None) -> Iterator[Evidence]:
        if url is None:
            return iter(list(self._log))
        return iter([e for e in self._log if url in (e.url, e.target)])

    def drop_evidence(self, url: str) -> int:
        kept = [e for e in self._log if url not in (e.url, e.target)]
        removed = len(self._log) - len(kept)
        self._log = deque(kept)
        return removed

    def counts(self) -> dict[str, int]:
        return {"evidence": len(self._log), "deferred": sum(len(urls) for urls in self._deferred.values())}

    # the policy
    def load_policy(self) -> LearningPolicy | None:
        return self._policy

    def save_policy(self, policy: LearningPolicy) -> None:
        self._policy = policy


class MemoryPort(StoragePort):
    """:class:`._port.StoragePort` over a :class:`MemoryStorage`'s dictionaries (always readable)."""

    def __init__(self, storage: MemoryStorage) -> None:
        self.storage = storage

    def read_aliases(self, sources: Sequence[str], follow: bool = False) -> dict[str, Alias | None] | None:
        aliases = self.storage._aliases
        found = {source: aliases.get(source) for source in sources}
        return self.with_targets(found) if follow else found

    def read_cases(self, keys: Sequence[str]) -> dict[str, tuple[CaseAliases, str | None]] | None:
        storage = self.storage
        return {key: (dict(storage._case_aliases.get(key, {})), storage._declared.get(key)) for key in keys}

    def read_fanins(self, targets: Sequence[str], cap: int) -> dict[str, list[str]] | None:
        return {target: list(self.storage._fanins.get(target, []))[:cap] for target in targets}

    def read_sinks(self, cap: int, targets: Sequence[str] | None = None) -> set[str] | None:
        fanins = self.storage._fanins
        among = fanins if targets is None else [t for t in targets if t in fanins]
        return {target for target in among if len(fanins[target]) >= cap}

    def read_rules(self, keys: Sequence[RuleKey]) -> dict[RuleKey, RuleRecord | None] | None:
        rules = self.storage._rules
        return {key: rules.get(key.origin, {}).get(key) for key in keys}

    def read_origin(self, origin: str) -> dict[RuleKey, RuleRecord] | None:
        return dict(self.storage._rules.get(origin, {}))

    def scan_aliases(self) -> Iterator[Alias]:
        return self.storage.aliases()

    def scan_rules(self) -> Iterator[RuleRecord]:
        return self.storage.rules()

    def scan_fanins(self) -> Iterator[tuple[str, int]]:
        return self.storage.fanins()

    def scan_declared(self) -> Iterator[tuple[str, str]]:
        return iter(list(self.storage._declared.items()))

    def read_evidence(self, url: str | None = None) -> Iterator[Evidence]:
        return self.storage.evidence(url)

    def delete_evidence(self, url: str) -> int:
        return self.storage.drop_evidence(url)

    def counts(self) -> tuple[int, int]:
        found = self.storage.counts()
        return found["evidence"], found["deferred"]

    def read_meta(self, name: str) -> str | bytes | None:
        policy = self.storage._policy
        return policy_text(policy) if name == "policy" and policy is not None else None

    def write_meta(self, name: str, value: str) -> None:
        if name == "policy":
            self.storage._policy = policy_from_text(value)

    def count_aliases(self) -> int:
        return len(self.storage._aliases)

    def alias_sources(self) -> Iterator[str]:
        return iter(list(self.storage._aliases))


class MemoryStore(EquivalenceStore):
    """A store in memory (:class:`MemoryStorage`)."""

    def __init__(self, policy: LearningPolicy | None = None, *, clock: Callable[[], float] = time.time) -> None:
        super().__init__(MemoryStorage(now=clock), policy, clock=clock)
