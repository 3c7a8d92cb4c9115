"""Observations: exchanges recorded elsewhere (a crawl log, a web archive), learned in bulk.

:meth:`EquivalenceStore.learn` takes them in the order given (captures in
date order) and applies each exactly as :meth:`EquivalenceStore.record_redirect`
or :meth:`EquivalenceStore.record_response` would at the observation's time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from ._forms import origin_of, scheme_form, sink_key, split_form
from ._rules import BLOCK, DECLARED_CASE, KINDS_BY_NAME, REDIRECTS, Prediction, RuleKey, case_key, generalized, known_free, path_prefix

#: observations learned together: their reads in a few round trips, their writes in one commit
LEARN_CHUNK = 10_000


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

    def add(self, outcome: Any) -> None:
        """Count what one observation changed (an ``Outcome``), or a reason it was skipped (a string)."""
        if isinstance(outcome, str):
            self.ignored[outcome] += 1
            return
        self.observations += 1
        self.aliases_learned += outcome.learned_alias
        self.aliases_dropped += outcome.dropped_alias
        self.sinks += outcome.sink
        self.rules_activated += len(outcome.activated)
        self.rules_contradicted += len(outcome.contradicted)
        if outcome.ignored:
            self.ignored[outcome.ignored] += 1

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


@dataclass(frozen=True)
class Prefetch:
    """What a chunk of observations will read: alias sources, fan-in targets (sink keys), case keys, origins."""

    sources: frozenset[str]
    sinks: frozenset[str]
    cases: frozenset[str]
    origins: frozenset[str]
    #: the rule records the observations count for (and their origins' blocks)
    rules: frozenset[RuleKey] = frozenset()


def batched(items: Iterable[Observation], size: int) -> Iterator[list[Observation]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def observation_forms(obs: Observation) -> tuple[str | None, str | None]:
    """The scheme forms of an observation's URL and target (``None``: absent or invalid)."""
    src = scheme_form(obs.url)
    tgt = scheme_form(obs.target) if obs.target is not None and obs.status in REDIRECTS else None
    return src, tgt


#: what :func:`~._rules.known_free` answers for a URL, remembered for one chunk
KnownFree = dict[str, "tuple[tuple[Prediction, ...], tuple[Prediction, ...]] | None"]


def prefetch_keys(forms: Iterable[tuple[str | None, str | None]], free: KnownFree | None = None) -> Prefetch:
    """The keys a chunk of observations (their scheme forms) reads from the storage; each source's
    predictions that need nothing known are kept in ``free``, when given, for the chunk's learning."""
    sources, sinks, cases, origins = set(), set(), set(), set()
    rules: set[RuleKey] = set()
    for src, tgt in forms:
        if src is None:
            continue
        sources.add(src)
        cases.add(case_key(src))
        origin = origin_of(src)
        origins.add(origin)
        if tgt is not None:
            sinks.add(sink_key(tgt))
        rules.update(rule_keys(src, origin, free))
    return Prefetch(frozenset(sources), frozenset(sinks), frozenset(cases), frozenset(origins), frozenset(rules))


_NEW = tuple.__new__
#: the kinds whose rules speak for an origin-wide rule too
_GENERALIZING = frozenset(name for name, kind in KINDS_BY_NAME.items() if kind.generalizes)


def rule_keys(url: str, origin: str, free: KnownFree | None = None) -> list[RuleKey]:
    """The rule records an observation of the scheme form ``url`` may count for, and its origin's block."""
    keys = [_NEW(RuleKey, (origin, BLOCK, ""))]
    found = known_free(url)
    if free is not None:
        free[url] = found
    for key, _ in () if found is None else (*found[0], *found[1]):
        keys.append(key)
        if key[1] in _GENERALIZING:
            keys.append(_NEW(RuleKey, (origin, key[1], generalized(key[2]))))
    path = split_form(url).path
    if path.lower() != path.upper():
        keys.append(_NEW(RuleKey, (origin, DECLARED_CASE, path_prefix(path.lower()))))
    return keys
