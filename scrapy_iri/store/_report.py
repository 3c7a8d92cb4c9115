"""Reporting on a store: the explanation of a merge, counts, and the JSON export."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from ._codec import RULE_FIELDS, rule_values
from ._resolution import Resolution
from ._rules import ALIAS, BLOCK, LearningPolicy, RuleRecord, RuleStatus
from ._storage import Storage


class EquivalenceStore(Protocol):
    """What a report reads of a store: its storage, its policy and how it judges a rule now."""

    storage: Storage

    @property
    def policy(self) -> LearningPolicy: ...

    def rule_status(self, record: RuleRecord) -> RuleStatus: ...


@dataclass
class Explanation:
    """Why two URLs are (or are not) merged at the protocol rung."""

    a: Resolution
    b: Resolution | None
    lines: list[str]

    @property
    def merged(self) -> bool:
        return self.b is not None and self.a.representative == self.b.representative

    def __str__(self) -> str:
        return "\n".join(self.lines)


def explanation(store: EquivalenceStore, a: Resolution, b: Resolution | None) -> Explanation:
    """The explanation of one resolution, or of two and whether they meet."""
    lines = _explain_one(store, a)
    if b is not None:
        lines += _explain_one(store, b)
        same = a.representative == b.representative
        lines.append("merged: same representative" if same else "not merged: different representatives")
    return Explanation(a, b, lines)


def _explain_one(store: EquivalenceStore, res: Resolution) -> list[str]:
    lines = [f"{res.url}", f"  representative: {res.representative}"]
    for step in res.steps:
        if step.rule is None:
            alias = store.storage.alias(step.source)
            seen = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(alias.time)) if alias else "?"
            status = alias.status if alias else "?"
            lines.append(f"  {step.source} -> {step.target}: exact alias ({status} seen {seen} UTC)")
            continue
        record = store.storage.rules_at(step.rule.origin).get(step.rule)
        if record is None:
            lines.append(f"  {step.source} -> {step.target}: rule {step.rule} (?)")
            continue
        state = store.rule_status(record).value
        detail = f", {record.support} consistent observations, e.g. {record.example}"
        lines.append(f"  {step.source} -> {step.target}: rule {step.rule} ({state}{detail})")
    if res.note:
        lines.append(f"  {res.note}")
    for evidence in store.storage.evidence(res.url.partition("#")[0]):
        lines.append(f"  evidence: {evidence.describe()}")
    return lines


def rule_label(store: EquivalenceStore, record: RuleRecord) -> str:
    """The one word ``stats`` and ``export`` use for a rule record.

    ``candidate``, ``active``, ``suspended`` (a rule a counterexample
    stopped), ``refuted`` (counterexamples only: never a rule); for an
    origin block, ``blocked`` (in force) or ``unblocked`` (expired).
    """
    status = store.rule_status(record)
    if record.key.kind == BLOCK:
        return "blocked" if status is RuleStatus.SUSPENDED else "unblocked"
    if status is RuleStatus.SUSPENDED and not record.support:
        return "refuted"
    return status.value


def stats(store: EquivalenceStore) -> dict[str, int]:
    """Counts of what the store holds."""
    storage = store.storage
    counts = {"aliases": sum(1 for _ in storage.aliases())}
    counts.update(dict.fromkeys(("rules/active", "rules/candidate", "rules/suspended", "rules/refuted"), 0))
    counts["blocked_origins"] = 0
    for record in storage.rules():
        if record.key.kind == ALIAS:
            counts["alias_origins"] = counts.get("alias_origins", 0) + 1
            continue
        label = rule_label(store, record)
        if label == "blocked":
            counts["blocked_origins"] += 1
        elif label != "unblocked":
            counts[f"rules/{label}"] += 1
    counts["sinks"] = sum(1 for _, n in storage.fanins() if n >= store.policy.sink_fanin)
    counts["declared_cases"] = sum(1 for _ in storage.declared_cases())
    counts.update(storage.counts())
    return counts


def export(store: EquivalenceStore, *, evidence: bool = False) -> Iterator[dict[str, Any]]:
    """Everything as JSON-ready dicts, each with a ``"type"``."""
    storage = store.storage
    for alias in storage.aliases():
        yield {"type": "alias", **alias.as_dict()}
    for record in storage.rules():
        if record.key.kind == ALIAS:  # an origin's aliases taken together: confirmed in later crawls, ended
            yield {
                "type": "alias-origin",
                "origin": record.key.origin,
                "confirmations": record.support,
                "ended": record.against,
                "last_confirmed": record.last_support,
                "last_ended": record.last_against,
            }
            continue
        yield {
            "type": "rule",
            "rule": str(record.key),
            "origin": record.key.origin,
            "kind": record.key.kind,
            "scope": record.key.scope,
            "status": rule_label(store, record),
            **dict(zip(RULE_FIELDS, rule_values(record))),
        }
    for target, count in storage.fanins():
        if count >= store.policy.sink_fanin:
            yield {"type": "sink", "target": target, "sources": count}
    for url in storage.declared_cases():
        yield {"type": "case", "url": url}
    if evidence:
        for item in storage.evidence():
            yield {"type": "evidence", **item.as_dict()}
