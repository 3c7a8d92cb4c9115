"""How every backend writes a rule record and the learning policy: the field lists, once."""

from __future__ import annotations

import dataclasses
import json
from operator import attrgetter
from typing import Any

from ._rules import LearningPolicy, RuleKey, RuleRecord

#: the fields of a rule record after its key, in the order every backend stores them
RULE_FIELDS = ("support", "against", "first_seen", "last_support", "last_against", "example", "counterexample")
_POLICY_FIELDS = frozenset(f.name for f in dataclasses.fields(LearningPolicy))


_RULE_VALUES = attrgetter(*RULE_FIELDS)


def rule_values(record: RuleRecord) -> tuple[Any, ...]:
    """A rule record's counts, times and notes (:data:`RULE_FIELDS`)."""
    return _RULE_VALUES(record)  # type: ignore[no-any-return]


def rule_row(key: RuleKey, record: RuleRecord) -> tuple[Any, ...]:
    """A rule as stored: its key's parts, then :func:`rule_values`."""
    return (*key, *_RULE_VALUES(record))


def rule_record(key: RuleKey, values: Any) -> RuleRecord:
    """The rule record of ``key`` from its stored :data:`RULE_FIELDS` values."""
    support, against, first, last_support, last_against, example, counterexample = values
    return RuleRecord(
        key, int(support), int(against), float(first), float(last_support), float(last_against), example, counterexample
    )


def copy_counts(image: RuleRecord, record: RuleRecord) -> None:
    """Make ``image`` hold what ``record`` holds (same key)."""
    for name in RULE_FIELDS:
        setattr(image, name, getattr(record, name))


def policy_text(policy: LearningPolicy) -> str:
    """The learning policy as stored (JSON)."""
    return json.dumps(dataclasses.asdict(policy), sort_keys=True)


def policy_from_text(text: str | bytes) -> LearningPolicy | None:
    """The learning policy a store recorded; None for a value this version cannot read."""
    try:
        values = json.loads(text)
        return LearningPolicy(**{k: v for k, v in values.items() if k in _POLICY_FIELDS})
    except (ValueError, TypeError, AttributeError):
        return None
