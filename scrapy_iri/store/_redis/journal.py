"""A changeset as Redis batches (see :data:`.scripts.BATCH`), and what a rollback of Redis would lose.

:func:`batch_of` translates a :class:`.._port.Changeset` into one batch;
:class:`Journal` keeps what this process's applied batches wrote that it
can write again after a rollback, and the rules whose deferred URLs are
to be taken again. Neither holds a connection.
"""

from __future__ import annotations

import json
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any

from .._codec import rule_values
from .._port import Changeset, RuleWrite
from .._rules import BLOCK, RuleKey, RuleRecord, alias_case_key
from .codec import EMPTY_BATCH, alias_value, case_value, chunks, evidence_value, rule_field, tombstone

#: alias write modes: a put, a drop, "answered for itself", a put written back (set-if-older)
PUT, DROP, ANSWERED, REPUBLISHED = 0, 1, 2, 3


def batch_of(changes: Changeset) -> dict[str, list[Any]]:
    """The batch of ``changes``: per kind, the entries the script applies in order."""
    aliases = []
    for source, (alias, horizon, time_) in changes.aliases.items():
        if alias is None:
            aliases.append([source, tombstone(time_), time_, DROP, ""])
        else:  # a recorded time: no horizon applies
            case = alias_case_key(alias.source, alias.target) or ""
            aliases.append([source, alias_value(alias), alias.time, PUT if horizon else REPUBLISHED, case])
    for url, time_ in changes.answered.items():
        if url not in changes.aliases:
            aliases.append([url, tombstone(time_), time_, ANSWERED, ""])
    cases = [
        [key, case_value(url, time_), time_, PUT, ""] if url is not None else [key, case_value("", time_), time_, DROP, expected]
        for key, (url, time_, expected) in changes.cases.items()
    ]
    fanins: list[list[Any]] = [[target, "", 0] for target in changes.dropped_fanins]
    fanins += [[target, source, cap] for target, sources in changes.fanins.items() for source, cap in sources.items()]
    return {
        "a": aliases,
        "c": cases,
        "r": [rule_op(key, write) for key, write in changes.rules.items()],
        "f": fanins,
        "e": [evidence_value(e) for e in changes.evidence],
        "d": [[rule, url] for (rule, url), add in changes.deferred.items() if add],
    }


def parts(batch: dict[str, list[Any]], size: int) -> list[dict[str, list[Any]]]:
    """``batch`` whole, or in parts of ``size`` entries of one kind each when larger: first those that
    end or keep apart (alias ends, URLs that answered, dropped cases, counterexamples, blocks, fan-ins),
    then those that merge. Each part is applied atomically; a process reading between two parts then
    merges only what the store before the batch or after it merges."""
    if sum(len(ops) for ops in batch.values()) <= size:
        return [batch]
    ends: dict[str, list[Any]] = {name: [] for name in batch}
    merges: dict[str, list[Any]] = {name: [] for name in batch}
    for name, ops in batch.items():
        split = _ENDS.get(name)
        for op in ops:
            (ends if split is None or split(op) else merges)[name].append(op)
    return [
        {**EMPTY_BATCH, name: part}
        for group in (ends, merges)
        for name, ops in group.items()
        for part in chunks(ops, size)
    ]


#: per kind of entry, whether one ends or keeps apart (the others merge; a kind not named: all end)
_ENDS: dict[str, Any] = {
    "a": lambda op: op[3] in (DROP, ANSWERED),
    "c": lambda op: op[3] == DROP,
    "r": lambda op: op[2] not in ("merge", "setnx") or op[4] > 0 or op[1].startswith(BLOCK + " "),
    "f": lambda op: op[1] != "",
}


def rule_op(key: RuleKey, write: RuleWrite) -> list[Any]:
    """The batch entry of one rule: a drop, or what this process added to it since the last commit
    (``dropmerge``: dropped first), then the record's own support and against (:func:`rule_entry`'s
    fields, the record whole: what the script stores when nobody else wrote)."""
    r = write.record
    if r is None:
        return [key.origin, rule_field(key), "drop", 0, 0, 0, 0, 0, "", ""]
    mode = "dropmerge" if write.dropped else "merge"
    return [key.origin, rule_field(key), mode, write.support, write.against, r.first_seen, r.last_support,
            r.last_against, r.example, r.counterexample, r.support, r.against]  # fmt: skip


class Journal:
    """What this process's applied batches wrote and a rollback of Redis would lose, bounded by ``memory``."""

    def __init__(self, memory: int) -> None:
        #: rules whose deferred URLs could not be taken (an outage): taken again once Redis is back
        self.retake: set[RuleKey] = set()
        # the last ``memory`` alias writes and ends, and the URLs deferred here and not taken yet
        self.memory = memory
        self.written: OrderedDict[str, tuple[str, float, int, str]] = OrderedDict()
        self.deferred_here: dict[str, dict[str, None]] = {}

    def remember(self, batch: dict[str, list[Any]]) -> None:
        """Keep what a rollback would lose from an applied batch (bounded by ``memory``)."""
        for source, value, time_, mode, case in batch.get("a", ()):
            self.written[source] = (value, time_, mode, case)
            self.written.move_to_end(source)
            if len(self.written) > self.memory:
                self.written.popitem(last=False)
        for rule, url in batch.get("d", ()):
            self.deferred_here.setdefault(rule, {})[url] = None


def save(path: Path, batches: list[tuple[str, dict[str, list[Any]]]], retake: set[RuleKey]) -> None:
    """Append ``batches`` (with their ids: a batch sent without a reply keeps its id) and the rules to
    take again to ``path``."""
    saved: list[Any] = []
    if path.exists():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))["batches"]
        except (OSError, ValueError, KeyError):  # a damaged file: keep it aside
            path.replace(path.with_suffix(".damaged"))
    saved += [[batch_id, batch] for batch_id, batch in batches]
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


def rule_entry(record: RuleRecord, mode: str, support: int | None = None, against: int | None = None) -> list[Any]:
    """A rule's entry in a batch: its key, the mode, then its :data:`.._codec.RULE_FIELDS`
    (``support`` and ``against`` replaced by what a merge adds, when given)."""
    values = list(rule_values(record))
    if support is not None:
        values[0] = support
    if against is not None:
        values[1] = against
    return [record.key.origin, rule_field(record.key), mode, *values]
