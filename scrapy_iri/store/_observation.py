"""Observations: exchanges recorded elsewhere (a crawl log, a web archive), learned in bulk.

:meth:`EquivalenceStore.learn` takes them in the order given (captures in
date order) and applies each exactly as :meth:`EquivalenceStore.record_redirect`
or :meth:`EquivalenceStore.record_response` would at the observation's time.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ._rules import REDIRECTS


@dataclass(frozen=True)
class Observation:
    """One exchange: ``url`` answered ``status`` (with ``target``, the resolved ``Location``, for a redirect).

    ``time`` is when it was observed (a capture's date, seconds since the
    epoch; ``None``: now). ``context`` holds the reasons the answer may
    depend on who asked (:func:`.context_flags`). ``max_age`` is how long the
    redirect said it stays valid, in seconds (``Cache-Control: max-age`` or
    ``Expires``), when it said so.
    """

    url: str
    status: int
    target: str | None = None
    context: frozenset[str] = field(default_factory=frozenset)
    location: str | None = None
    time: float | None = None
    max_age: float | None = None

    @property
    def is_redirect(self) -> bool:
        return self.status in REDIRECTS


@dataclass
class LearnSummary:
    """What a bulk learning run did."""

    observations: int = 0
    aliases_learned: int = 0
    aliases_dropped: int = 0
    rules_activated: int = 0
    rules_contradicted: int = 0
    sinks: int = 0
    ignored: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, object]:
        return {
            "observations": self.observations,
            "aliases_learned": self.aliases_learned,
            "aliases_dropped": self.aliases_dropped,
            "rules_activated": self.rules_activated,
            "rules_contradicted": self.rules_contradicted,
            "sinks": self.sinks,
            "ignored": dict(self.ignored),
        }
