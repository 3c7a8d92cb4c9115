"""Reading Redis into the store's image: a full load, the changes since a version, republishing.

A mixin of :class:`.store.RedisStore` (its state is the store's).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from dataclasses import replace

from .._evidence import Alias
from .._memory import MemoryStore
from .._rules import BLOCK, RuleKey, RuleRecord, RuleStatus
from .codec import (
    _EMPTY_BATCH,
    _alias,
    _alias_value,
    _case,
    _case_value,
    _chunks,
    _rule,
    _rule_field,
    _text,
)

logger = logging.getLogger("scrapy_iri.store._redis")

#: seconds a process relies on its last batch's marker to tell a rollback (the marker lasts 600)
BATCH_MEMORY = 500.0


class RedisSync:
    """Keep the in-memory image in step with Redis (see the package docstring: *sync*)."""

    def _load(self) -> None:
        """Replace the image with what Redis holds."""
        c, k = self.client, self.keys
        self._tally("reloads")
        epoch, version = c.mget(k.epoch, k.version)
        aliases: dict[str, Alias] = {}
        for field, raw in c.hscan_iter(k.aliases, count=1000):
            source = _text(field)
            alias = _alias(source, raw)
            if alias is not None:
                aliases[source] = alias
        cases: dict[str, str] = {}
        for field, raw in c.hscan_iter(k.cases, count=1000):
            url = _case(raw)
            if url is not None:
                cases[_text(field)] = url
        rules: dict[str, dict[RuleKey, RuleRecord]] = {}
        origins = sorted(_text(o) for o in c.smembers(k.origins))
        for origin, fields in _read_each(c, origins, lambda pipe, o: pipe.hgetall(k.rules(o))):
            records = {}
            for field, raw in fields.items():
                record = _rule(origin, field, raw)
                records[record.key] = record
            if records:
                rules[origin] = records
        fanins: dict[str, list[str]] = {}
        targets = sorted(_text(t) for t in c.smembers(k.fanins))
        for target, sources in _read_each(c, targets, lambda pipe, t: pipe.smembers(k.fanin(t))):
            if sources:
                fanins[target] = sorted(_text(s) for s in sources)
        # rebuild the image through the in-memory backend, so that its indexes follow
        MemoryStore.__init__(self, self.policy, clock=self.clock)
        for alias in aliases.values():
            MemoryStore._put_alias(self, alias)
        self._declared_cases.update(cases)
        for records in rules.values():
            for record in records.values():
                MemoryStore._put_rule(self, record)
        for target, sources in fanins.items():
            for source in sources:
                MemoryStore._add_fanin(self, target, source, len(sources))
        self._rule_base = {key: replace(r) for records in rules.values() for key, r in records.items()}
        self._epoch = _text(epoch or b"")
        self._version = int(version or 0)

    def _pull(self) -> None:
        """Read the entries other processes changed since the known version (one or two round trips)."""
        self._tally("syncs")
        last = self._last_batch
        recent = last[0] if last is not None and self.monotonic() - last[1] < BATCH_MEMORY else ""
        answer = self._sync(args=[self.keys.store, self._version, self._epoch, recent])
        epoch, version, changes = _text(answer[0]), int(answer[1]), [_text(c) for c in answer[2:]]
        if changes == ["!"]:
            self._rolled_back(version)
            return
        if changes == ["*"]:
            if not epoch:
                self._republish()
            before = self._active_rules(self._origins())
            self._load()
            self._remote_contradicted.update(before - self._active_rules(self._origins()))
            return
        if not changes:
            return
        origins = {change[1:] for change in changes if change[0] == "r"}
        before = self._active_rules(origins)
        self._refresh(changes)
        self._version = version
        self._remote_contradicted.update(before - self._active_rules(origins))

    def _origins(self) -> set[str]:
        return {record.key.origin for record in MemoryStore._iter_rules(self)}

    def _active_rules(self, origins: Iterable[str]) -> set[RuleKey]:
        """The rules of ``origins`` that apply now."""
        return {
            key
            for origin in origins
            for key, record in self._rules_at(origin).items()
            if key.kind != BLOCK and self.rule_status(record) is RuleStatus.ACTIVE
        }

    def _refresh(self, changes: Iterable[str]) -> None:
        c, k = self.client, self.keys
        wanted = sorted(set(changes))
        pipe = c.pipeline(transaction=False)
        for change in wanted:
            kind, name = change[0], change[1:]
            if kind == "a":
                pipe.hget(k.aliases, name)
            elif kind == "c":
                pipe.hget(k.cases, name)
            elif kind == "r":
                pipe.hgetall(k.rules(name))
            else:
                pipe.smembers(k.fanin(name))
        self._tally("refreshed", len(wanted))
        for change, value in zip(wanted, pipe.execute()):
            kind, name = change[0], change[1:]
            if kind == "a":
                alias = None if value is None else _alias(name, value)
                if alias is None:
                    MemoryStore._drop_alias(self, name)
                else:
                    MemoryStore._put_alias(self, alias)
            elif kind == "c":
                url = None if value is None else _case(value)
                if url is None:
                    self._declared_cases.pop(name, None)
                else:
                    self._declared_cases[name] = url
            elif kind == "r":
                records = [_rule(name, field, raw) for field, raw in value.items()]
                for key in set(self._rules_at(name)) - {record.key for record in records}:
                    MemoryStore._drop_rule(self, key)
                    self._rule_base.pop(key, None)
                for record in records:
                    MemoryStore._put_rule(self, record)
                    self._rule_base[record.key] = replace(record)
            else:
                MemoryStore._drop_fanin(self, name)
                for source in sorted(_text(s) for s in value):
                    MemoryStore._add_fanin(self, name, source, len(value))

    def _rolled_back(self, version: int) -> None:
        """Redis went back to an older state (restarted from an older snapshot, or a restored backup).

        Said loudly, then repaired from what this process knows: its rule
        records written back (counts merged by maximum: a suspension it saw
        comes back, nothing is counted twice), its recent alias drops and
        answers again (an alias ended since the snapshot stays ended), the URLs
        it deferred and were not taken yet, and whatever the snapshot lacks of
        its image (set-if-absent). Then the image is reloaded from the
        repaired store. What only another, exited process knew is lost.
        """
        logger.error(
            "Redis at %(where)s went back to an older state (version %(was)d -> %(now)d; restarted from an"
            " older snapshot or backup?): the equivalence store lost what was learned since. Writing back"
            " what this process knows (%(ended)d ended aliases, %(deferred)d deferred requests, its rules"
            " and aliases); run Redis with appendonly yes to avoid this",
            {
                "where": self.where,
                "was": self._version,
                "now": version,
                "ended": len(self._ended),
                "deferred": sum(len(urls) for urls in self._deferred_here.values()),
            },
        )
        self._tally("rollbacks")
        self._last_batch = None
        rules = [
            [r.key.origin, _rule_field(r.key), "max", r.support, r.against, r.first_seen,
             r.last_support, r.last_against, r.example, r.counterexample]
            for r in MemoryStore._iter_rules(self)
        ]  # fmt: skip
        ended = [[source, value, t, mode] for source, (value, t, mode) in self._ended.items()]
        deferred = [[rule, url] for rule, urls in self._deferred_here.items() for url in urls]
        for name, ops in (("r", rules), ("a", ended), ("d", deferred)):
            for part in _chunks(ops, self.batch_size):
                self._apply({**_EMPTY_BATCH, name: part})
        self._republish(quiet=True)
        before = self._active_rules(self._origins())
        self._load()
        self._remote_contradicted.update(before - self._active_rules(self._origins()))

    def _republish(self, *, quiet: bool = False) -> None:
        """Redis lost the store (restarted empty): write the image back, without overwriting anything."""
        if not quiet:
            logger.warning(
                "Redis at %(where)s lost the equivalence store (restarted without persistence?):"
                " publishing this process's copy again",
                {"where": self.where},
            )
        self._tally("republished")
        aliases = [[a.source, _alias_value(a), a.time, 3] for a in MemoryStore._iter_aliases(self)]
        # time 0: set-if-absent (what another process wrote since, a drop included, stays)
        cases = [[key, _case_value(url, 0.0), 0.0, 0, ""] for key, url in self._declared_cases.items()]
        rules = [
            [r.key.origin, _rule_field(r.key), "setnx", r.support, r.against, r.first_seen,
             r.last_support, r.last_against, r.example, r.counterexample]
            for r in MemoryStore._iter_rules(self)
        ]
        fanins = [[t, s, self.policy.sink_fanin] for t, sources in self._fanins.items() for s in sources]
        for name, ops in (("a", aliases), ("c", cases), ("r", rules), ("f", fanins)):
            for part in _chunks(ops, self.batch_size):
                self._apply({**_EMPTY_BATCH, name: part})
        self.client.set(self.keys.epoch, uuid.uuid4().hex, nx=True)


def _read_each(client: Any, names: list[str], command: Callable[[Any, str], Any]) -> Iterator[tuple[str, Any]]:
    """``(name, reply)`` for one read command per name, pipelined 500 names at a time."""
    for chunk in _chunks(names, 500):
        pipe = client.pipeline(transaction=False)
        for name in chunk:
            command(pipe, name)
        yield from zip(chunk, pipe.execute())
