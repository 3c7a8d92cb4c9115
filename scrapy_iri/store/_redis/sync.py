"""What a process holds of the Redis store, and keeping it in step: load, changes, rollback, republish.

:class:`Image` holds the rules of the origins used last, the sinks of the
crawl's cap, and bounded caches of aliases, cases and fan-in. :class:`Follower`
keeps it in step with Redis: the entries other
processes changed since the version it knows, and what to do when Redis
lost the store (restarted empty) or went back to an older state.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from .._cached import CachedReads, Overlay
from .._evidence import Alias
from .._port import StoragePort
from .._rules import BLOCK, LearningPolicy, RuleKey, RuleStatus, alias_case_key
from .._storage import held_keys, held_record
from .codec import EMPTY_BATCH, LAYOUT, alias_value, case_value, chunks, text
from .connection import RedisKeys
from .journal import PUT, REPUBLISHED, Journal, rule_entry
from .ledger import Ledger
from .scripts import SYNC

logger = logging.getLogger("scrapy_iri.store._redis")

#: seconds a process relies on its last batch's marker to tell a rollback (the marker lasts 600)
BATCH_MEMORY = 500.0


class Image(CachedReads):
    """What a process holds of the store (:class:`.._cached.CachedReads`), with the version of
    the store it is up to date with."""

    def __init__(
        self, port: StoragePort, overlay: Overlay, cache_size: int, rule_cache: int, floor: Callable[[], int]
    ) -> None:
        super().__init__(port, overlay, cache_size, rule_cache, floor)
        self.version = 0
        self.epoch = ""
        #: changed by the process that finds Redis went back in time: the others repair too
        self.history = ""


class Follower:
    """Reads Redis into an :class:`Image` (see the package docstring: *sync*)."""

    def __init__(
        self,
        client: Any,
        keys: RedisKeys,
        image: Image,
        journal: Journal,
        apply: Callable[[dict[str, list[Any]]], None],
        tally: Callable[[str, int], None],
        where: str,
        ledger: Ledger,
        port: StoragePort,
    ) -> None:
        #: reads that raise when Redis is unreachable (a sync fails whole, and is tried again)
        self.port = port
        self.client = client
        self.keys = keys
        self.image = image
        self.journal = journal
        self.apply = apply
        self.tally = tally
        self.where = where
        self.ledger = ledger
        self._sync = client.register_script(SYNC)
        #: the id of the last batch this process applied, and when (a rollback loses it)
        self.last_batch: tuple[str, float] | None = None
        #: rules active here that Redis now has suspended (reported once)
        self.contradicted: set[RuleKey] = set()

    def load(self) -> None:
        """Start afresh: forget what is cached (rules, sinks, aliases...: read again when used), one read."""
        c, k, image = self.client, self.keys, self.image
        self.tally("reloads", 1)
        epoch, version, history = c.mget(k.epoch, k.version, k.history)
        image.forget_cached()
        image.epoch = text(epoch or b"")
        image.version = int(version or 0)
        image.history = text(history or b"")

    def check_ledger(self, policy: LearningPolicy, now: float) -> None:
        """At open: whether Redis still holds the newest batch the ledger (and its mirror) names (else it
        went back in time: repair)."""
        for ledger in self.ledger.ledgers():
            mark = ledger.newest_mark()
            if mark is None:
                continue
            epoch, version, batch_id = mark
            c, k = self.client, self.keys
            pipe = c.pipeline(transaction=False)
            pipe.zscore(k.store + "marks", batch_id)
            pipe.zrange(k.store + "marks", 0, 0, withscores=True)
            pipe.hget(k.store + "ledgers", ledger.id)
            score, oldest, held = pipe.execute()
            if epoch == self.image.epoch:
                if score is not None:
                    continue
                if version <= self.image.version and oldest and version < oldest[0][1] and int(held or -1) >= version:
                    continue  # aged out of the marks Redis keeps, and Redis holds this ledger's newer batches
            self.rolled_back(self.image.version, policy, now, found_here=True, known=version)
            return

    def pull(self, policy: LearningPolicy, now: float, monotonic: float) -> None:
        """Read the entries other processes changed since the known version (one or two round trips)."""
        self.tally("syncs", 1)
        last = self.last_batch
        recent = last[0] if last is not None and monotonic - last[1] < BATCH_MEMORY else ""
        mark = self.ledger.newest_mark()
        marked = ["", 0, ""] if mark is None or mark[0] != self.image.epoch else [mark[2], mark[1], self.ledger.id]
        answer = self._sync(args=[self.keys.store, self.image.version, self.image.epoch, recent, self.image.history, *marked])
        epoch, version, changes = text(answer[0]), int(answer[1]), [text(c) for c in answer[2:]]
        if changes in (["!"], ["~"]):
            self.rolled_back(version, policy, now, found_here=changes == ["!"])
            return
        if changes == ["*"]:
            if not epoch:
                self.republish(policy)
            self._reload_watching(policy, now)
            return
        if not changes:
            return
        origins = {change[1:] for change in changes if change[0] == "r"}
        before = self._active(origins, policy, now)
        self._refresh(changes)
        self.image.version = version
        self.contradicted.update(before - self._active(origins, policy, now))

    def _reload_watching(self, policy: LearningPolicy, now: float) -> None:
        before = self._active(list(self.image.rules.origins), policy, now)
        self.load()
        after = set()
        for origin in {key.origin for key in before}:  # read again now: a rule suspended meanwhile is reported
            self.image.rules.get(origin)
            after |= self._active([origin], policy, now)
        self.contradicted.update(before - after)

    def _active(self, origins: Iterable[str], policy: LearningPolicy, now: float) -> set[RuleKey]:
        """The rules of ``origins`` that apply now (an origin a sink blocks has none)."""
        active = set()
        for origin in list(origins):
            records = self.image.rules.peek(origin) or {}
            block = held_record(records, RuleKey(origin, BLOCK))
            if block is not None and block.status(policy, now) is RuleStatus.SUSPENDED:
                continue
            held = [held_record(records, k) for k in held_keys(records)]  # a rule applied here was read here
            active.update(r.key for r in held if r is not None and r.key.kind != BLOCK and r.status(policy, now) is RuleStatus.ACTIVE)
        return active

    def _refresh(self, changes: Iterable[str]) -> None:
        """Forget the cached entries that changed; read the changed rules and sinks again (one round trip)."""
        again = self.image.follow((change[0], change[1:]) for change in sorted(set(changes)))
        self.tally("refreshed", len(again.origins) + len(again.sinks))
        if again.origins or again.sinks:
            found = self.port.read(again)  # raises when Redis is unreachable: the whole sync is tried again
            if found is not None:
                self.image.refreshed(again, found)

    def rolled_back(
        self, version: int, policy: LearningPolicy, now: float, *, found_here: bool = True, known: int | None = None
    ) -> None:
        """Redis went back to an older state (restarted from an older snapshot, or a restored backup).

        Said loudly, then repaired from what this process knows: its rule
        records written back (counts merged by maximum: a suspension it saw
        comes back, nothing is counted twice), its last alias writes and
        ends again (an alias ended since the snapshot stays ended), and the
        URLs it deferred and were not taken yet. Then the resident part is
        read again and the caches emptied. The process that found the
        rollback (its last batch gone, or the version lower) changes the
        store's history mark, so every other process, even one that wrote
        nothing lately, repairs and empties its caches at its next sync.
        What only another, exited process knew is lost.
        """
        journal = self.journal
        logger.error(
            "Redis at %(where)s went back to an older state (%(how)s; version %(was)d -> %(now)d; restarted"
            " from an older snapshot or backup?): the equivalence store lost what was learned since. Writing back"
            " what this process knows (%(written)d alias writes, %(deferred)d deferred requests, its rules);"
            " run Redis with appendonly yes to avoid this",
            {
                "where": self.where,
                "how": "found by this process" if found_here else "found by another process",
                "was": self.image.version if known is None else known,
                "now": version,
                "written": len(journal.written),
                "deferred": sum(len(urls) for urls in journal.deferred_here.values()),
            },
        )
        self.tally("rollbacks", 1)
        self.last_batch = None
        rules = [rule_entry(r, "max") for r in self.image.all_rules()]
        # puts go back as republished: older than the horizon or not, they are what Redis lost
        written = [[source, op[0], op[1], REPUBLISHED if op[2] == PUT else op[2], op[3]] for source, op in journal.written.items()]
        deferred = [[rule, url] for rule, urls in journal.deferred_here.items() for url in urls]
        sinks = [[target, "", -self.image.sink_cap] for target in self.image.sinks]
        for name, ops in (("r", rules), ("a", written), ("d", deferred), ("f", sinks)):
            for part in chunks(ops, 1000):
                self.apply({**EMPTY_BATCH, name: part})
        for batch in self.ledger.write_back():  # what this machine's processes ended, those gone included
            self.apply(batch)
        if found_here:
            self.client.set(self.keys.history, uuid.uuid4().hex)
        self._reload_watching(policy, now)

    def republish(self, policy: LearningPolicy) -> None:
        """Redis lost the store (restarted empty): write back what this process holds, overwriting nothing.

        Its rules, its sinks, the aliases it wrote last and those it has
        cached, and the declared cases it has cached.
        """
        logger.warning(
            "Redis at %(where)s lost the equivalence store (restarted without persistence?):"
            " publishing what this process holds of it again",
            {"where": self.where},
        )
        self.tally("republished", 1)
        image, journal = self.image, self.journal
        aliases = {source: [source, *op[:2], REPUBLISHED, op[3]] for source, op in journal.written.items() if op[2] == 0}
        for source, alias in list(image.aliases.data.items()):
            if isinstance(alias, Alias) and source not in aliases:
                aliases[source] = _republished(alias)
        cases = [
            [key, case_value(url, 0.0), 0.0, 0, ""] for key, url in list(image.cases.data.items()) if isinstance(url, str)
        ]
        rules = [rule_entry(r, "setnx") for r in image.all_rules()]
        sinks = [[target, "", -image.sink_cap] for target in image.sinks]
        for name, ops in (("a", list(aliases.values())), ("c", cases), ("r", rules), ("f", sinks)):
            for part in chunks(ops, 1000):
                self.apply({**EMPTY_BATCH, name: part})
        for batch in self.ledger.write_back():
            self.apply(batch)
        self.client.set(self.keys.layout, str(LAYOUT))
        self.client.set(self.keys.epoch, uuid.uuid4().hex, nx=True)


def _republished(alias: Alias) -> list[Any]:
    return [alias.source, alias_value(alias), alias.time, REPUBLISHED, alias_case_key(alias.source, alias.target) or ""]
