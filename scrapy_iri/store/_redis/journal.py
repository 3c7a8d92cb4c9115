"""The writes a process made and Redis has not got yet, as batches, and what a rollback would lose.

:class:`Journal` holds no connection: the storage sends its batches (see
:data:`.scripts.BATCH`) and tells it which were applied.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .._codec import rule_values
from .._rules import LearningPolicy, RuleKey, RuleRecord
from .codec import EMPTY_BATCH, chunks, rule_field

#: alias write modes: a put, a drop, "answered for itself", a put written back (set-if-older)
PUT, DROP, ANSWERED, REPUBLISHED = 0, 1, 2, 3


class Journal:
    """Pending writes by kind, in the order they were made."""

    def __init__(self, memory: int) -> None:
        #: source -> (JSON value, time, mode, case key or "")
        self.aliases: dict[str, tuple[str, float, int, str]] = {}
        #: case key -> (JSON value, time, mode, guard: the URL a drop expects)
        self.cases: dict[str, tuple[str, float, int, str]] = {}
        #: rule -> "merge", "drop" or "dropmerge"
        self.rules: dict[RuleKey, str] = {}
        self.fanins: list[tuple[str, str, int]] = []
        self.evidence: list[str] = []
        self.deferred: dict[RuleKey, dict[str, None]] = {}
        #: rules whose deferred URLs could not be taken (an outage): taken again once Redis is back
        self.retake: set[RuleKey] = set()
        # what a rollback of Redis would lose and this process can write again (the last
        # ``memory`` alias writes and ends, and the URLs deferred here and not taken yet)
        self.memory = memory
        self.written: OrderedDict[str, tuple[str, float, int, str]] = OrderedDict()
        self.deferred_here: dict[str, dict[str, None]] = {}

    def __len__(self) -> int:
        return (
            len(self.aliases) + len(self.cases) + len(self.rules) + len(self.fanins) + len(self.evidence)
            + sum(len(urls) for urls in self.deferred.values())
        )  # fmt: skip

    def clear(self) -> None:
        self.aliases.clear()
        self.cases.clear()
        self.rules.clear()
        self.fanins.clear()
        self.evidence.clear()
        self.deferred.clear()
        self.retake.clear()

    def batch(self, rule_op: Callable[[RuleKey, str], list[Any]]) -> tuple[dict[str, list[Any]], list[RuleKey], list[tuple[RuleKey, str]]]:
        """The pending writes as one batch, with the rules and deferred URLs in it (in batch order)."""
        rule_keys = list(self.rules)
        deferred = [(rule, url) for rule, urls in self.deferred.items() for url in urls]
        batch: dict[str, list[Any]] = {
            "a": [[source, *op] for source, op in self.aliases.items()],
            "c": [[key, *op] for key, op in self.cases.items()],
            "r": [rule_op(key, self.rules[key]) for key in rule_keys],
            "f": [list(op) for op in self.fanins],
            "e": list(self.evidence),
            "d": [[str(rule), url] for rule, url in deferred],
        }
        return batch, rule_keys, deferred

    def acknowledged(self, part: dict[str, list[Any]]) -> list[tuple[RuleKey, str]]:
        """Take the writes of an applied batch out (a write made since to the same entry stays pending);
        returns the rules it held, with the mode sent."""
        for source, *op in part.get("a", ()):
            if self.aliases.get(source) == tuple(op):
                del self.aliases[source]
        for key, *op in part.get("c", ()):
            if self.cases.get(key) == tuple(op):
                del self.cases[key]
        del self.fanins[: len(part.get("f", ()))]  # lists only grow at the end: what was sent is first
        del self.evidence[: len(part.get("e", ()))]
        by_name = {str(rule): rule for rule in self.deferred}
        for name, url in part.get("d", ()):
            rule = by_name.get(name)
            if rule is not None:
                self.deferred[rule].pop(url, None)
                if not self.deferred[rule]:
                    del self.deferred[rule]
                    del by_name[name]
        rules = []
        for origin, field, mode, *_ in part.get("r", ()):
            kind, _, scope = field.partition(" ")
            rules.append((RuleKey(origin, kind, scope), mode))
        return rules

    def remember(self, batch: dict[str, list[Any]]) -> None:
        """Keep what a rollback would lose from an applied batch (bounded by ``memory``)."""
        for source, value, time_, mode, case in batch.get("a", ()):
            self.written[source] = (value, time_, mode, case)
            self.written.move_to_end(source)
            if len(self.written) > self.memory:
                self.written.popitem(last=False)
        for rule, url in batch.get("d", ()):
            self.deferred_here.setdefault(rule, {})[url] = None

    # -- pending writes kept on disk when Redis is gone at close ----------------------

    def save(
        self,
        path: Path,
        rule_op: Callable[[RuleKey, str], list[Any]],
        size: int,
        retake: Iterable[RuleKey],
        unacked: tuple[str, dict[str, list[Any]]] | None = None,
    ) -> None:
        """Append the pending writes (in batches with their ids; a batch sent without a reply keeps its id) to ``path``."""
        batch, _, _ = self.batch(rule_op)
        saved: list[Any] = []
        if path.exists():
            try:
                saved = json.loads(path.read_text(encoding="utf-8"))["batches"]
            except (OSError, ValueError, KeyError):  # a damaged file: keep it aside
                path.replace(path.with_suffix(".damaged"))
        if unacked is not None:
            saved.append([unacked[0], unacked[1]])
        for name, ops in batch.items():
            for part in chunks(ops, size):
                saved.append([uuid.uuid4().hex, {**EMPTY_BATCH, name: part}])
        rules = sorted(str(rule) for rule in retake)
        if rules:
            saved.append([uuid.uuid4().hex, {**EMPTY_BATCH, "retake": rules}])
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"batches": saved}, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)


def saved_batches(path: Path) -> tuple[list[tuple[str, dict[str, list[Any]]]], set[RuleKey]]:
    """The batches a previous run saved at ``path`` (with their ids), and the rules to take again."""
    saved = json.loads(path.read_text(encoding="utf-8"))["batches"]
    retake: set[RuleKey] = set()
    batches = []
    for batch_id, batch in saved:
        retake.update(RuleKey.parse(rule) for rule in batch.pop("retake", ()))
        # a put written back later may be older than the horizon: it is what Redis never got
        batch["a"] = [[*op[:3], REPUBLISHED if op[3] == PUT else op[3], *op[4:]] for op in batch.get("a", ())]
        batches.append((batch_id, {**EMPTY_BATCH, **batch}))
    return batches, retake


def adds(base_count: int, count: int, base_last: float, last: float) -> int:
    """How many observations of one kind were added to a record since ``base`` (expiry may have reset it)."""
    if count > base_count:
        return count - base_count
    if count < base_count or last != base_last:
        return count  # expired locally, then ``count`` added
    return 0


def rule_op(
    key: RuleKey, mode: str, record: RuleRecord | None, base: RuleRecord | None, policy: LearningPolicy
) -> list[Any]:
    """The batch entry of one rule: a drop, or what this process added to it since ``base``.

    When ``base`` had expired by the time of the last count here, everything the record holds was
    counted since (Redis expires its copy the same way before adding).
    """
    if record is None:
        return [key.origin, rule_field(key), "drop", 0, 0, 0, 0, 0, "", ""]
    base = replace(base) if base is not None else RuleRecord(key)
    base.expire(policy, max(record.last_support, record.last_against))
    support = adds(base.support, record.support, base.last_support, record.last_support)
    against = adds(base.against, record.against, base.last_against, record.last_against)
    return rule_entry(record, mode, support, against)


def rule_entry(record: RuleRecord, mode: str, support: int | None = None, against: int | None = None) -> list[Any]:
    """A rule's entry in a batch: its key, the mode, then its :data:`.._codec.RULE_FIELDS`
    (``support`` and ``against`` replaced by what a merge adds, when given)."""
    values = list(rule_values(record))
    if support is not None:
        values[0] = support
    if against is not None:
        values[1] = against
    return [record.key.origin, rule_field(record.key), mode, *values]
