"""How the Redis store encodes what it keeps (JSON values, hash fields), and small helpers.

Rule records are the shared codec's field list (:data:`.._codec.RULE_FIELDS`)
as a JSON array; the policy is the shared codec's JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .._codec import rule_record
from .._evidence import Alias, Evidence
from .._rules import RuleKey, RuleRecord

try:  # the batches' encoding when installed (the ``redis`` extra): numbers travel as binary, not as text
    from msgpack import packb as _packb
except ImportError:  # pragma: no cover - JSON then
    _packb = None

#: the layout of the store's keys this version writes (``NS:store:layout``)
LAYOUT = 2
#: the kinds of write of a batch: aliases, declared cases, rules, fan-ins, evidence, deferred URLs
EMPTY_BATCH: dict[str, list[Any]] = {"a": [], "c": [], "r": [], "f": [], "e": [], "d": []}
#: ``json.dumps(value, ensure_ascii=False)``, without making an encoder at every call
_json = json.JSONEncoder(ensure_ascii=False).encode


def batch_bytes(batch: dict[str, list[Any]]) -> bytes | str:
    """A batch as the batch script reads it: MessagePack (Redis's Lua reads it natively, and numbers
    need no decimal text either way), or JSON without the ``msgpack`` package. Both give the script
    the same values."""
    return _json(batch) if _packb is None else _packb(batch)


def text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def alias_value(alias: Alias) -> str:
    """An alias: JSON ``[target, status, expires, confirmations, time]`` (the time last: what newer-wins compares)."""
    return _json([alias.target, alias.status, alias.expires, alias.confirmations, alias.time])


def alias_of(source: str, raw: bytes | str) -> Alias | None:
    """The alias stored for ``source``, or None for a tombstone (a drop, kept so an older write cannot undo it).

    Values written before aliases had a lifetime (``[target, status, time]``) read as stating none.
    """
    value = json.loads(raw)
    target, status, time_ = value[0], value[1], value[-1]
    if not target:
        return None
    expires, confirmations = (value[2], value[3]) if len(value) == 5 else (None, 0)
    return Alias(source, target, int(status), float(time_), None if expires is None else float(expires), int(confirmations))


def tombstone(time_: float) -> str:
    return json.dumps(["", 0, time_])


def case_value(url: str, time_: float) -> str:
    """A declared case: JSON ``[url, time]`` (``["", time]``: dropped)."""
    return _json([url, time_])


def case_of(raw: bytes | str) -> str | None:
    url, _ = json.loads(raw)
    return url or None


def case_aliases(raw: bytes | str | None) -> dict[str, tuple[float, str]]:
    """The case-only aliases of one case key: source -> (time, target)."""
    if not raw:
        return {}
    return {source: (float(t), target) for source, (target, t) in json.loads(raw).items()}


def rule_field(key: RuleKey) -> str:
    return f"{key.kind} {key.scope}"


def rule_of(origin: str, field: bytes | str, raw: bytes | str) -> RuleRecord:
    kind, _, scope = text(field).partition(" ")
    return rule_record(RuleKey(origin, kind, scope), json.loads(raw))


def evidence_value(e: Evidence) -> str:
    return _json([e.time, e.url, e.status, e.target, sorted(e.context), e.note, e.location])


def evidence_of(raw: bytes | str) -> Evidence:
    time_, url, status, target, context, note, *rest = json.loads(raw)
    return Evidence(time_, url, status, target, frozenset(context), note, rest[0] if rest else None)


def glob_escape(value: str) -> str:
    """``value`` matched literally by a SCAN ``MATCH`` pattern."""
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in value)


def chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
