"""The Redis backend's reads: :class:`.._port.StoragePort` in Redis commands (one round trip per read)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .._evidence import Alias, Evidence
from .._filter import KeyFilter
from .._port import CaseAliases, Changeset, Found, Reads, StoragePort
from .._rules import BLOCK, RuleKey, RuleRecord
from .._storage import MISSING
from .codec import alias_of, case_aliases, case_of, rule_field, rule_of, text
from .codec import chunks, evidence_of
from .connection import RedisKeys
from .journal import batch_of, parts
from .scripts import READ


class RedisPort(StoragePort):
    """Reads of one namespace. ``guarded(call)`` runs a read (``MISSING``: Redis unreachable);
    ``command(*args)`` sends one command on a private connection (the alias read's path);
    ``send(batch, id)`` runs one batch of the :data:`.scripts.BATCH` script (and records it)."""

    def __init__(
        self,
        client: Any,
        keys: RedisKeys,
        guarded: Callable[[Callable[[], Any]], Any],
        command: Callable[..., Any],
        alias_sha: Callable[[], str],
        send: Callable[[dict[str, list[Any]], str], None] | None = None,
        batch_size: int = 1000,
    ) -> None:
        self.client = client
        self.keys = keys
        self.guarded = guarded
        self.command = command
        self.alias_sha = alias_sha
        self.send = send
        self.batch_size = batch_size
        #: the changeset being applied, and its batches not applied yet, each with its id
        self.applying: Changeset | None = None
        self.parts: list[tuple[dict[str, list[Any]], str]] = []
        #: batches applied
        self.batches = 0
        self.read_sha = client.register_script(READ).sha

    def apply(self, changes: Changeset) -> dict[str, dict[RuleKey, RuleRecord]]:
        """Send ``changes`` as one batch (several when large), each with its id; raises when Redis is
        unreachable. Applied again, the same changeset goes on with the same batches and ids, so one
        whose reply was lost is applied once (the script skips an id it applied)."""
        assert self.send is not None, "a port without a sender applies nothing"
        if changes is not self.applying:
            self.applying = changes
            self.parts = [(part, uuid.uuid4().hex) for part in parts(batch_of(changes), self.batch_size)]
        while self.parts:
            self.send(*self.parts[0])
            self.parts.pop(0)
            self.batches += 1
        self.applying = None
        return {}

    def _run(self, call: Callable[[], Any]) -> Any:
        answer = self.guarded(call)
        return None if answer is MISSING else answer

    def read_aliases(self, sources: Sequence[str], follow: bool = False) -> dict[str, Alias | None] | None:
        if follow and len(sources) == 1:  # the alias and its target's own alias: one script, one round trip
            (source,) = sources
            answer = self._run(lambda: self.command("EVALSHA", self.alias_sha(), 1, self.keys.aliases, source))
            if answer is None:
                return None
            alias = alias_of(source, answer[0]) if answer else None
            found: dict[str, Alias | None] = {source: alias}
            if alias is not None and len(answer) > 1:
                found[alias.target] = None if answer[1] is None else alias_of(alias.target, answer[1])
            return found
        values = self._run(lambda: self.client.hmget(self.keys.aliases, list(sources))) if sources else []
        if values is None:
            return None
        found = {s: None if raw is None else alias_of(s, raw) for s, raw in zip(sources, values)}
        return self.with_targets(found) if follow else found

    def read_cases(self, keys: Sequence[str]) -> dict[str, tuple[CaseAliases, str | None]] | None:
        def read() -> list[Any]:
            pipe = self.client.pipeline(transaction=False)
            pipe.hmget(self.keys.case_aliases, list(keys))
            pipe.hmget(self.keys.cases, list(keys))
            return pipe.execute()  # type: ignore[no-any-return]

        answer = self._run(read) if keys else [[], []]
        if answer is None:
            return None
        return {
            key: (case_aliases(aliases), None if declared is None else case_of(declared))
            for key, aliases, declared in zip(keys, answer[0], answer[1])
        }

    def read_fanins(self, targets: Sequence[str], cap: int) -> dict[str, list[str]] | None:
        def read() -> list[Any]:
            pipe = self.client.pipeline(transaction=False)
            for target in targets:
                pipe.smembers(self.keys.fanin(target))
            return pipe.execute()  # type: ignore[no-any-return]

        answer = self._run(read) if targets else []
        if answer is None:
            return None
        return {target: sorted(text(m) for m in members)[:cap] for target, members in zip(targets, answer)}

    def read_sinks(self, cap: int, targets: Sequence[str] | None = None) -> set[str] | None:
        if targets is None:
            found = self._run(lambda: self.client.zrangebyscore(self.keys.sinks, cap, "+inf"))
            return None if found is None else {text(t) for t in found}
        def read() -> list[Any]:
            pipe = self.client.pipeline(transaction=False)
            for target in targets:
                pipe.zscore(self.keys.sinks, target)
            return pipe.execute()  # type: ignore[no-any-return]

        scores = self._run(read) if targets else []
        return None if scores is None else {t for t, n in zip(targets, scores) if n is not None and float(n) >= cap}

    def read_rules(self, keys: Sequence[RuleKey]) -> dict[RuleKey, RuleRecord | None] | None:
        if len(keys) == 1:
            (key,) = keys
            raw = self.guarded(lambda: self.client.hget(self.keys.rules(key.origin), rule_field(key)))
            if raw is MISSING:
                return None
            return {key: None if raw is None else rule_of(key.origin, rule_field(key), raw)}
        by_origin: dict[str, list[RuleKey]] = {}
        for key in keys:
            by_origin.setdefault(key.origin, []).append(key)

        def read() -> list[Any]:
            pipe = self.client.pipeline(transaction=False)
            for origin, wanted in by_origin.items():
                pipe.hmget(self.keys.rules(origin), [rule_field(k) for k in wanted])
            return pipe.execute()  # type: ignore[no-any-return]

        answer = self._run(read) if keys else []
        if answer is None:
            return None
        return _rules_found(by_origin, answer)

    def read_origin(self, origin: str) -> dict[RuleKey, RuleRecord] | None:
        fields = self._run(lambda: self.client.hgetall(self.keys.rules(origin)))
        if fields is None:
            return None
        return {(r := rule_of(origin, field, raw)).key: r for field, raw in fields.items()}

    def read(self, reads: Reads) -> Found | None:
        """Every read in one pipelined round trip."""
        by_origin: dict[str, list[RuleKey]] = {}
        for key in reads.rules:
            by_origin.setdefault(key.origin, []).append(key)
        sources, cases, targets = list(reads.aliases), list(reads.cases), list(reads.fanins)

        many: list[Any] = [self.keys.store, len(targets), *targets]
        for origin, wanted in by_origin.items():
            many += [origin, len(wanted), *(rule_field(k) for k in wanted)]

        def read() -> list[Any]:
            from redis.exceptions import NoScriptError  # redis is an optional dependency

            pipe = self.client.pipeline(transaction=False)
            pipe.hmget(self.keys.aliases, sources or [""])
            pipe.hmget(self.keys.case_aliases, cases or [""])
            pipe.hmget(self.keys.cases, cases or [""])
            if targets or by_origin:  # the fan-ins and rule records: one script call
                pipe.evalsha(self.read_sha, 0, *many)
            for origin in (*reads.in_force, *reads.origins):
                pipe.hgetall(self.keys.rules(origin))
            for target in reads.sinks:
                pipe.zscore(self.keys.sinks, target)
            try:
                return pipe.execute()  # type: ignore[no-any-return]
            except NoScriptError:  # a server that restarted: load the script, read again
                self.client.script_load(READ)
                return read()

        answer = self._run(read)
        if answer is None:
            return None
        aliases, declared_aliases, declared, *rest = answer
        fanins, rules = rest.pop(0) if targets or by_origin else ([], [])
        found = Found()
        found.aliases = {s: None if raw is None else alias_of(s, raw) for s, raw in zip(sources, aliases)}
        found.cases = {
            key: (case_aliases(raw), None if url is None else case_of(url))
            for key, raw, url in zip(cases, declared_aliases, declared)
        }
        found.fanins = {t: [] for t in targets}
        for at in range(0, len(fanins), 2):
            found.fanins[targets[fanins[at] - 1]] = sorted(text(m) for m in fanins[at + 1])[: reads.cap]
        keys = [key for wanted in by_origin.values() for key in wanted]
        found.rules = dict.fromkeys(keys)
        for at in range(0, len(rules), 2):
            key = keys[rules[at] - 1]
            found.rules[key] = rule_of(key.origin, rule_field(key), rules[at + 1])
        for origin, fields in zip(reads.in_force, rest):
            records = (rule_of(origin, field, raw) for field, raw in fields.items())
            found.in_force[origin] = {r.key: r for r in records if r.key.kind == BLOCK or r.support >= reads.floor}
        rest = rest[len(reads.in_force) :]
        for origin, fields in zip(reads.origins, rest):
            found.origins[origin] = {(r := rule_of(origin, field, raw)).key: r for field, raw in fields.items()}
        scores = rest[len(reads.origins) :]
        found.sinks = {t for t, n in zip(reads.sinks, scores) if n is not None and float(n) >= reads.cap}
        if reads.follow:
            aliases = self.with_targets(found.aliases)
            if aliases is None:
                return None
        return found


    # -- listings and the store's own records (raise when Redis is unreachable) --------------

    def scan_aliases(self) -> Iterator[Alias]:
        for field, raw in self.client.hscan_iter(self.keys.aliases, count=1000):
            alias = alias_of(text(field), raw)
            if alias is not None:
                yield alias

    def scan_rules(self) -> Iterator[RuleRecord]:
        records = []
        origins = sorted(text(o) for o in self.client.smembers(self.keys.origins))
        for part in chunks(origins, 500):
            pipe = self.client.pipeline(transaction=False)
            for origin in part:
                pipe.hgetall(self.keys.rules(origin))
            for origin, fields in zip(part, pipe.execute()):
                records += [rule_of(origin, field, raw) for field, raw in fields.items()]
        return iter(records)

    def scan_fanins(self) -> Iterator[tuple[str, int]]:
        targets = sorted(text(t) for t in self.client.smembers(self.keys.fanins))
        pipe = self.client.pipeline(transaction=False)
        for target in targets:
            pipe.scard(self.keys.fanin(target))
        return iter([(t, int(n)) for t, n in zip(targets, pipe.execute()) if n])

    def scan_declared(self) -> Iterator[tuple[str, str]]:
        for field, raw in self.client.hscan_iter(self.keys.cases, count=1000):
            url = case_of(raw)
            if url is not None:
                yield text(field), url

    def read_evidence(self, url: str | None = None) -> Iterator[Evidence]:
        entries = [evidence_of(item) for item in self.client.lrange(self.keys.evidence, 0, -1)]
        return iter(entries if url is None else [e for e in entries if url in (e.url, e.target)])

    def delete_evidence(self, url: str) -> int:
        removed = 0
        for item in self.client.lrange(self.keys.evidence, 0, -1):
            e = evidence_of(item)
            if url in (e.url, e.target):
                removed += int(self.client.lrem(self.keys.evidence, 1, item))
        return removed

    def counts(self) -> tuple[int, int]:
        rules = list(self.client.smembers(self.keys.deferreds))
        pipe = self.client.pipeline(transaction=False)
        pipe.llen(self.keys.evidence)
        for rule in rules:
            pipe.scard(self.keys.deferred(text(rule)))
        answer = pipe.execute()
        return int(answer[0]), int(sum(answer[1:]))

    def read_meta(self, name: str) -> str | bytes | None:
        return self.client.get(self.keys.store + name)  # type: ignore[no-any-return]

    def write_meta(self, name: str, value: str) -> None:
        self.client.set(self.keys.store + name, value)

    def count_aliases(self) -> int:
        return int(self.client.hlen(self.keys.aliases))

    def alias_sources(self) -> Iterator[str]:
        return (text(field) for field, _ in self.client.hscan_iter(self.keys.aliases, count=10_000))

    def saved_filter(self) -> tuple[KeyFilter, int] | None:
        state, bits = self.client.mget(self.keys.filter_state, self.keys.filter)
        if not (state and bits):
            return None
        try:
            capacity, count, version = json.loads(state)
            return KeyFilter.load(int(capacity), int(count), bits), int(version)
        except (ValueError, TypeError):
            return None


def _rules_found(by_origin: dict[str, list[RuleKey]], answer: list[Any]) -> dict[RuleKey, RuleRecord | None]:
    found: dict[RuleKey, RuleRecord | None] = {}
    for (origin, wanted), values in zip(by_origin.items(), answer):
        for key, raw in zip(wanted, values):
            found[key] = None if raw is None else rule_of(origin, rule_field(key), raw)
    return found
