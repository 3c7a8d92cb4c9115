"""The pending batch of writes, its encoding as deltas, and sending it (or saving it) at most once.

A mixin of :class:`.store.RedisStore` (its state is the store's).
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import replace
from typing import Any

from .._rules import RuleKey
from .codec import (
    _EMPTY_BATCH,
    _ZERO,
    _adds,
    _chunks,
    _rule_field,
)

logger = logging.getLogger("scrapy_iri.store._redis")


class RedisJournal:
    """What this process wrote and Redis has not got yet (see the package docstring: *flush*)."""

    def _flush(self) -> None:
        """Send the pending writes as one batch (several when large).

        A write leaves the pending batch only once a batch holding it was
        applied: after a failure the rest is sent again later, never what
        was already applied (a rule's additions would count twice).
        """
        if not self.pending:
            return
        batch, rule_keys, deferred = self._pending_batch()
        applied = dict.fromkeys(batch, 0)
        try:
            if sum(len(ops) for ops in batch.values()) <= self.batch_size:
                self._apply(batch)
                applied = {name: len(ops) for name, ops in batch.items()}
            else:
                for name, ops in batch.items():
                    for part in _chunks(ops, self.batch_size):
                        self._apply({**{n: [] for n in batch}, name: part})
                        applied[name] += len(part)
        finally:
            self._applied(applied, rule_keys, deferred)

    def _pending_batch(self) -> tuple[dict[str, list[Any]], list[RuleKey], list[tuple[RuleKey, str]]]:
        """The pending writes as one batch, with the rules and deferred URLs in it (in batch order)."""
        rule_keys = list(self._rule_ops)
        deferred = [(rule, url) for rule, urls in self._deferred_ops.items() for url in urls]
        batch: dict[str, list[Any]] = {
            "a": [[source, *op] for source, op in self._alias_ops.items()],
            "c": [[key, *op] for key, op in self._case_ops.items()],
            "r": [self._rule_op(key) for key in rule_keys],
            "f": [list(op) for op in self._fanin_ops],
            "e": list(self._evidence_ops),
            "d": [[str(rule), url] for rule, url in deferred],
        }
        return batch, rule_keys, deferred

    def _save_pending(self) -> None:
        """Redis is unreachable at close: save the pending writes (in batches with their ids) to ``pending_path``."""
        assert self.pending_path is not None
        batch, _, _ = self._pending_batch()
        saved: list[Any] = []
        if self.pending_path.exists():
            try:
                saved = json.loads(self.pending_path.read_text(encoding="utf-8"))["batches"]
            except (OSError, ValueError, KeyError):  # pragma: no cover - a damaged file: keep it aside
                self.pending_path.replace(self.pending_path.with_suffix(".damaged"))
        for name, ops in batch.items():
            for part in _chunks(ops, self.batch_size):
                saved.append([uuid.uuid4().hex, {**_EMPTY_BATCH, name: part}])
        retake = sorted(str(rule) for rule in {*self._retake, *self._remote_contradicted})
        if retake:
            saved.append([uuid.uuid4().hex, {**_EMPTY_BATCH, "retake": retake}])
        self.pending_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.pending_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"batches": saved}, ensure_ascii=False), encoding="utf-8")
        tmp.replace(self.pending_path)

    def _replay_saved(self) -> None:
        """Write the batches a previous run of this job saved at close (Redis was unreachable then)."""
        if self.pending_path is None or not self.pending_path.exists():
            return
        saved = json.loads(self.pending_path.read_text(encoding="utf-8"))["batches"]
        retake: set[RuleKey] = set()
        for batch_id, batch in saved:
            retake.update(RuleKey.parse(rule) for rule in batch.pop("retake", ()))
            self._apply({**_EMPTY_BATCH, **batch}, batch_id)  # the id: applied at most once, even if retried
        self.pending_path.unlink()
        self._load()
        self._remote_contradicted.update(retake)  # their deferred URLs are taken at the next observation
        logger.info(
            "Wrote %(n)d batches of store writes saved by the previous run to Redis", {"n": len(saved)}
        )

    def _remember(self, batch: dict[str, list[Any]]) -> None:
        """Keep what a rollback of Redis would lose and this process can write again: alias drops and
        answers (the last ``rollback_memory``), and the URLs deferred here and not taken yet."""
        for op in batch.get("a", ()):
            if op[3] in (1, 2):  # a drop, or a URL that answered for itself
                self._ended[op[0]] = (op[1], op[2], op[3])
                self._ended.move_to_end(op[0])
                if len(self._ended) > self.rollback_memory:
                    self._ended.popitem(last=False)
        for rule, url in batch.get("d", ()):
            self._deferred_here.setdefault(rule, {})[url] = None

    def _rule_op(self, key: RuleKey) -> list[Any]:
        """The batch entry of one rule: a drop, or what this process added since ``base``."""
        record = self._rules_at(key.origin).get(key)
        if record is None:
            return [key.origin, _rule_field(key), "drop", 0, 0, 0, 0, 0, "", ""]
        base = self._rule_base.get(key, _ZERO)
        support = _adds(base.support, record.support, base.last_support, record.last_support)
        against = _adds(base.against, record.against, base.last_against, record.last_against)
        return [
            key.origin, _rule_field(key), self._rule_ops[key], support, against, record.first_seen,
            record.last_support, record.last_against, record.example, record.counterexample,
        ]  # fmt: skip

    def _applied(self, applied: dict[str, int], rule_keys: list[RuleKey], deferred: list[tuple[RuleKey, str]]) -> None:
        """Take the first ``applied[kind]`` writes of each kind out of the pending batch."""
        for source in list(self._alias_ops)[: applied["a"]]:
            del self._alias_ops[source]
        for key in list(self._case_ops)[: applied["c"]]:
            del self._case_ops[key]
        for key in rule_keys[: applied["r"]]:
            del self._rule_ops[key]
            record = self._rules_at(key.origin).get(key)
            if record is None:
                self._rule_base.pop(key, None)
            else:
                self._rule_base[key] = replace(record)  # its additions are in Redis now
        del self._fanin_ops[: applied["f"]]
        del self._evidence_ops[: applied["e"]]
        for rule, url in deferred[: applied["d"]]:
            urls = self._deferred_ops[rule]
            del urls[url]
            if not urls:
                del self._deferred_ops[rule]

    def _apply(self, batch: dict[str, list[Any]], batch_id: str | None = None) -> None:
        """Run one batch. When nobody else wrote since this process's last sync, the changes
        it made are all its own and already in the image: the known version moves past them
        (no need to read them back), unless Redis kept a newer write than one of them (the next
        sync reads those back)."""
        self._tally("batches")
        batch_id = batch_id or uuid.uuid4().hex
        answer = self._batch(
            args=[
                self.keys.store,
                batch_id,
                json.dumps(batch, ensure_ascii=False),
                self.clock(),
                self.policy.rule_ttl,
                self.evidence_max,
                self.changes_max,
                self.answered_horizon,
            ]
        )
        if answer[0] == b"ok":
            self._last_batch = (batch_id, self.monotonic())
            self._remember(batch)
        if answer[0] == b"ok" and int(answer[1]) - int(answer[2]) == self._version and not int(answer[3]):
            self._version = int(answer[1])
