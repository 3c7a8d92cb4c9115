"""The in-memory backend (``IRI_STORE = "memory:"``): everything is lost at exit."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

from ._base import EquivalenceStore
from ._evidence import Alias, Evidence
from ._rules import RuleKey, RuleRecord, case_key, is_case_change

_EMPTY: Mapping[RuleKey, RuleRecord] = MappingProxyType({})


class MemoryStore(EquivalenceStore):
    """Dictionaries; also the in-memory image of the Redis backend."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._aliases: dict[str, Alias] = {}
        self._case_targets: dict[str, str] = {}
        #: case-only aliases per target (a declared case is forgotten with its last alias)
        self._case_refs: dict[str, int] = {}
        self._declared_cases: dict[str, str] = {}
        self._rules: dict[str, dict[RuleKey, RuleRecord]] = {}
        self._fanins: dict[str, list[str]] = {}
        self._log: list[Evidence] = []
        self._deferred: dict[RuleKey, dict[str, None]] = {}

    # aliases
    def _get_alias(self, source: str) -> Alias | None:
        return self._aliases.get(source)

    def _put_alias(self, alias: Alias) -> None:
        old = self._aliases.get(alias.source)
        if old is not None:
            self._unref_case(old)
        self._aliases[alias.source] = alias
        if is_case_change(alias.source, alias.target):
            self._case_targets[case_key(alias.target)] = alias.target
            self._case_refs[alias.target] = self._case_refs.get(alias.target, 0) + 1

    def _drop_alias(self, source: str) -> None:
        old = self._aliases.pop(source, None)
        if old is not None:
            self._unref_case(old)

    def _unref_case(self, alias: Alias) -> None:
        """Forget the case ``alias`` declared once no other case-only alias declares it."""
        if not is_case_change(alias.source, alias.target):
            return
        left = self._case_refs.get(alias.target, 0) - 1
        if left > 0:
            self._case_refs[alias.target] = left
            return
        self._case_refs.pop(alias.target, None)
        key = case_key(alias.target)
        if self._case_targets.get(key) == alias.target:
            del self._case_targets[key]

    def _iter_aliases(self) -> Iterator[Alias]:
        return iter(list(self._aliases.values()))

    def _case_target(self, key: str) -> str | None:
        return self._case_targets.get(key) or self._declared_cases.get(key)

    def _declare_case(self, url: str) -> None:
        self._declared_cases[case_key(url)] = url

    def _drop_declared_case(self, url: str) -> bool:
        key = case_key(url)
        if self._declared_cases.get(key) != url:
            return False
        del self._declared_cases[key]
        return True

    def _iter_declared_cases(self) -> Iterator[str]:
        return iter(list(self._declared_cases.values()))

    # rules
    def _rules_at(self, origin: str) -> Mapping[RuleKey, RuleRecord]:
        return self._rules.get(origin, _EMPTY)

    def _put_rule(self, record: RuleRecord) -> None:
        self._rules.setdefault(record.key.origin, {})[record.key] = record

    def _drop_rule(self, key: RuleKey) -> None:
        records = self._rules.get(key.origin)
        if records is not None:
            records.pop(key, None)
            if not records:
                del self._rules[key.origin]

    def _iter_rules(self) -> Iterator[RuleRecord]:
        return iter([r for records in self._rules.values() for r in records.values()])

    # fan-in
    def _add_fanin(self, target: str, source: str, cap: int) -> list[str]:
        sources = self._fanins.setdefault(target, [])
        if source not in sources and len(sources) < cap:
            sources.append(source)
        return sources

    def _fanin(self, target: str) -> int:
        sources = self._fanins.get(target)
        return len(sources) if sources else 0

    def _drop_fanin(self, target: str) -> None:
        self._fanins.pop(target, None)

    def _iter_fanin(self) -> Iterator[tuple[str, int]]:
        return iter([(t, len(s)) for t, s in self._fanins.items()])

    # evidence
    def _add_evidence(self, evidence: Evidence) -> None:
        self._log.append(evidence)

    def _iter_evidence(self, url: str | None = None) -> Iterator[Evidence]:
        if url is None:
            return iter(list(self._log))
        return iter([e for e in self._log if url in (e.url, e.target)])

    def _drop_evidence(self, url: str) -> int:
        kept = [e for e in self._log if url not in (e.url, e.target)]
        removed = len(self._log) - len(kept)
        self._log = kept
        return removed

    def _count_evidence(self) -> int:
        return len(self._log)

    # deferred
    def _add_deferred(self, rule: RuleKey, url: str) -> None:
        self._deferred.setdefault(rule, {})[url] = None

    def _take_deferred(self, rule: RuleKey) -> list[str]:
        return list(self._deferred.pop(rule, {}))

    def _count_deferred(self) -> int:
        return sum(len(urls) for urls in self._deferred.values())
