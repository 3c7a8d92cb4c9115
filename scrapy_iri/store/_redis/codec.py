"""How the Redis store encodes what it keeps (JSON values, key fields), and small helpers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .._evidence import Alias, Evidence
from .._rules import RuleKey, RuleRecord


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def _alias_value(alias: Alias) -> str:
    return json.dumps([alias.target, alias.status, alias.time], ensure_ascii=False)


def _alias(source: str, raw: bytes | str) -> Alias | None:
    """The alias stored for ``source``, or None for a tombstone (a drop, kept so an older write cannot undo it)."""
    target, status, time_ = json.loads(raw)
    if not target:
        return None
    return Alias(source, target, int(status), float(time_))


def _alias_tombstone(time_: float) -> str:
    return json.dumps(["", 0, time_])


def _case_value(url: str, time_: float) -> str:
    """A declared case: JSON ``[url, time]`` (``["", time]``: dropped)."""
    return json.dumps([url, time_], ensure_ascii=False)


def _case(raw: bytes | str) -> str | None:
    url, _ = json.loads(raw)
    return url or None


def _rule_field(key: RuleKey) -> str:
    return f"{key.kind} {key.scope}"


def _rule(origin: str, field: bytes | str, raw: bytes | str) -> RuleRecord:
    kind, _, scope = _text(field).partition(" ")
    support, against, first, last_support, last_against, example, counterexample = json.loads(raw)
    return RuleRecord(
        RuleKey(origin, kind, scope),
        int(support),
        int(against),
        float(first),
        float(last_support),
        float(last_against),
        example,
        counterexample,
    )


def _evidence_value(e: Evidence) -> str:
    return json.dumps([e.time, e.url, e.status, e.target, sorted(e.context), e.note, e.location], ensure_ascii=False)


def _evidence(raw: bytes | str) -> Evidence:
    time_, url, status, target, context, note, *rest = json.loads(raw)
    return Evidence(time_, url, status, target, frozenset(context), note, rest[0] if rest else None)


def _glob_escape(text: str) -> str:
    """``text`` matched literally by a SCAN ``MATCH`` pattern."""
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in text)


def _adds(base_count: int, count: int, base_last: float, last: float) -> int:
    """How many observations of one kind were added to a record since ``base`` (expiry may have reset it)."""
    if count > base_count:
        return count - base_count
    if count < base_count or last != base_last:
        return count  # expired locally, then ``count`` added
    return 0


_ZERO = RuleRecord(RuleKey("", ""))
#: the kinds of write of a batch: aliases, declared cases, rules, fan-ins, evidence, deferred URLs
_EMPTY_BATCH: dict[str, list[Any]] = {"a": [], "c": [], "r": [], "f": [], "e": [], "d": []}


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
