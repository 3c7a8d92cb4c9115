"""The equivalence store: the interface every backend offers, and the learning logic they share.

Backends (:mod:`._memory`, :mod:`._sqlite`, :mod:`._redis`) implement a few
storage primitives (the ``_``-prefixed abstract methods); everything else,
what evidence means and how a URL finds its representative, lives here once.

Safety properties, each with a test in ``tests/store`` and ``tests/scrapy``:

* the mapping goes alias -> target only, never the reverse;
* chains resolve (A -> B -> C gives A, B -> C); a loop or an over-long
  chain resolves to the URL itself (no merge);
* only clean permanent redirects within one registrable domain make
  aliases; cookies, credentials, ``Set-Cookie`` and ``Vary`` disqualify;
* rules are keyed by origin and scope (a first-level directory, a numbered
  path family, or the whole origin once several directories agree) and only
  ever predict URLs of their own origin (or its ``www.``/``https`` partner
  inside one registrable domain); never on IP hosts or URIs without a host;
* a suspended rule stops applying at once.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .._schemes import SCHEMES
from ..errors import StoreError
from ._evidence import USERINFO, Alias, Evidence
from ._forms import has_userinfo, scheme_form, sink_key, source_key, spelling_key, split_form, split_fragment
from ._psl import same_site
from ._rules import (
    ANYWHERE,
    BLOCK,
    KINDS_BY_NAME,
    DECLARED_CASE,
    PERMANENT,
    REDIRECTS,
    LearningPolicy,
    RuleKey,
    RuleRecord,
    RuleStatus,
    Verdict,
    case_key,
    generalized,
    judge,
    kind_order,
    path_prefix,
    predict,
    predictions,
)


class Step(NamedTuple):
    """One hop of a resolution: an exact alias (``rule is None``) or a rule's prediction."""

    source: str
    target: str
    rule: RuleKey | None = None


class Resolution(NamedTuple):
    """How a URL reaches its representative.

    ``steps`` are the hops followed; when they end in a loop or exceed the
    policy's ``max_chain`` the representative is the URL itself and
    ``note`` says why.
    """

    url: str
    representative: str
    steps: tuple[Step, ...] = ()
    note: str = ""

    @property
    def merged(self) -> bool:
        """Whether the URL has another representative (a loop or an over-long chain has not)."""
        return self.representative != self.url

    @property
    def rules(self) -> tuple[RuleKey, ...]:
        """The rules a merge relies on (a merge they make may be wrong)."""
        if not self.merged:
            return ()
        return tuple(step.rule for step in self.steps if step.rule is not None)


@dataclass
class Outcome:
    """What one observation changed."""

    learned_alias: bool = False
    dropped_alias: bool = False
    sink: bool = False
    activated: list[RuleKey] = field(default_factory=list)
    confirmed: list[RuleKey] = field(default_factory=list)
    contradicted: list[RuleKey] = field(default_factory=list)
    ignored: str = ""


@dataclass
class Explanation:
    """Why two URLs are (or are not) merged at the protocol rung."""

    a: Resolution
    b: Resolution | None
    lines: list[str]

    @property
    def merged(self) -> bool:
        return self.b is not None and self.a.representative == self.b.representative

    def __str__(self) -> str:
        return "\n".join(self.lines)


def _host(url: str) -> str:
    authority = split_form(url).authority or ""
    host = authority.rpartition("@")[2]
    if host.startswith("["):
        return host.partition("]")[0] + "]"
    return host.partition(":")[0]


def _authority_matcher(given: str) -> Callable[[str], bool]:
    """A test on stored (scheme-form) URLs for ``host``, ``host:port`` or ``host:*``."""
    from .._ladder import canonicalize
    from .._parse import parse

    any_port = given.endswith(":*")
    text = given[:-2] if any_port else given
    try:
        ref = parse(canonicalize(f"http://{text.strip()}/", "scheme"))
    except ValueError as exc:
        raise StoreError(f"{given!r}: not a host, host:port or host:* ({exc})") from None
    name, port = ref.host or "", ref.port  # port None: given without one, or the default 80

    def matches(url: str) -> bool:
        authority = split_form(url).authority or ""
        host = authority.rpartition("@")[2]
        if host.startswith("["):
            stored_name, _, rest = host.partition("]")
            stored_name += "]"
            stored_port = rest[1:] or None
        else:
            stored_name, _, stored_port = host.partition(":")
            stored_port = stored_port or None
        if stored_name.rstrip(".") != name.rstrip("."):
            return False
        if any_port:
            return True
        if ":" in text.rpartition("]")[2] and port is None:  # given as host:80: http's default
            default = SCHEMES.get(split_form(url).scheme.lower())
            return stored_port is None and default is not None and default.default_port == 80
        if port is None:
            return stored_port is None
        default = SCHEMES.get(split_form(url).scheme.lower())
        return stored_port == port or (stored_port is None and default is not None and str(default.default_port) == port)

    return matches


def _origin(url: str) -> str:
    return split_form(url).origin


class EquivalenceStore(ABC):
    """Evidence, exact aliases and rules, and the representative of a URL.

    URLs given to :meth:`representative` and :meth:`resolve` must be
    scheme-rung forms (``canonicalize(url, "scheme")``); the ``record_*``
    methods accept any URL and canonicalize it themselves. A fragment is
    carried over to the representative unchanged.
    """

    def __init__(self, policy: LearningPolicy | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self.policy = policy or LearningPolicy()
        self.clock = clock

    # -- storage primitives (backends) ------------------------------------

    @abstractmethod
    def _get_alias(self, source: str) -> Alias | None: ...

    @abstractmethod
    def _put_alias(self, alias: Alias) -> None: ...

    @abstractmethod
    def _drop_alias(self, source: str) -> None: ...

    @abstractmethod
    def _iter_aliases(self) -> Iterator[Alias]: ...

    @abstractmethod
    def _case_target(self, key: str) -> str | None:
        """The case declared for :func:`.rules.case_key` ``key``: a case-only alias's target, else a document's URL."""

    @abstractmethod
    def _declare_case(self, url: str) -> None:
        """Remember that a document answered at ``url``: the case its server declared for its path."""

    @abstractmethod
    def _drop_declared_case(self, url: str) -> bool:
        """Forget the case the document at ``url`` declared; whether there was one."""

    @abstractmethod
    def _iter_declared_cases(self) -> Iterator[str]:
        """The URLs of the documents that declared a case."""

    @abstractmethod
    def _rules_at(self, origin: str) -> Mapping[RuleKey, RuleRecord]:
        """The rule records of one origin (empty mapping when none)."""

    @abstractmethod
    def _put_rule(self, record: RuleRecord) -> None: ...

    @abstractmethod
    def _drop_rule(self, key: RuleKey) -> None: ...

    @abstractmethod
    def _iter_rules(self) -> Iterator[RuleRecord]: ...

    @abstractmethod
    def _add_fanin(self, target: str, source: str, cap: int) -> list[str]:
        """Remember that ``source`` redirected to ``target`` (up to ``cap`` sources); return them."""

    @abstractmethod
    def _fanin(self, target: str) -> int:
        """How many distinct sources redirected to ``target`` (at most the cap)."""

    @abstractmethod
    def _drop_fanin(self, target: str) -> None: ...

    @abstractmethod
    def _iter_fanin(self) -> Iterator[tuple[str, int]]: ...

    @abstractmethod
    def _add_evidence(self, evidence: Evidence) -> None: ...

    @abstractmethod
    def _iter_evidence(self, url: str | None = None) -> Iterator[Evidence]:
        """Evidence about ``url`` (as source or target), or all of it, oldest first."""

    @abstractmethod
    def _drop_evidence(self, url: str) -> int: ...

    @abstractmethod
    def _count_evidence(self) -> int: ...

    @abstractmethod
    def _add_deferred(self, rule: RuleKey, url: str) -> None: ...

    @abstractmethod
    def _take_deferred(self, rule: RuleKey) -> list[str]: ...

    @abstractmethod
    def _count_deferred(self) -> int: ...

    def _load_policy(self) -> LearningPolicy | None:
        """The learning policy a crawl recorded in the store, if the backend keeps one (optional hook)."""
        return None

    def _save_policy(self, policy: LearningPolicy) -> None:
        """Record the learning policy a crawl judges rules with (optional hook; default: not kept)."""

    def flush(self) -> None:
        """Make everything recorded so far durable (no-op for volatile stores)."""

    def close(self) -> None:
        """Flush and release resources; the store is unusable afterwards."""
        self.flush()

    def __enter__(self) -> EquivalenceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- looking up ---------------------------------------------------------

    def representative(self, url: str) -> str:
        """The URL that stands for the scheme form ``url`` at the protocol rung."""
        return self.resolve(url).representative

    def resolve(self, url: str) -> Resolution:
        """The representative of the scheme form ``url``, with the hops that lead there."""
        base, fragment = split_fragment(url)
        now = self.clock()
        steps: list[Step] = []
        visited = {base}
        current = base
        while (step := self._step(current, now)) is not None:
            if step.target in visited:
                return Resolution(url, url, (*steps, step), "loop: no merge")
            if len(steps) >= self.policy.max_chain:
                return Resolution(url, url, tuple(steps), "chain too long: no merge")
            steps.append(step)
            visited.add(step.target)
            current = step.target
        if not steps:
            return Resolution(url, url)
        return Resolution(url, current + fragment, tuple(steps))

    def _step(self, url: str, now: float) -> Step | None:
        """The next hop from ``url``: its exact alias, else an active rule's prediction."""
        alias = self._get_alias(url)
        if alias is not None and not self._is_sink(alias.target):
            return Step(url, alias.target)
        origin = _origin(url)
        records = self._rules_at(origin)
        if not records or self._blocked(records, origin, now):
            return None
        active = [key for key, r in records.items() if r.status(self.policy, now) is RuleStatus.ACTIVE]
        for key in sorted(active, key=kind_order):
            target = predict(url, key, self._case_target)
            if target is not None and target != url:
                return Step(url, target, key)
        return None

    def _blocked(self, records: Mapping[RuleKey, RuleRecord], origin: str, now: float) -> bool:
        """Whether a sink blocks every rule of ``origin``."""
        block = records.get(RuleKey(origin, BLOCK))
        return block is not None and block.status(self.policy, now) is RuleStatus.SUSPENDED

    def _is_sink(self, target: str) -> bool:
        return self._fanin(sink_key(target)) >= self.policy.sink_fanin

    def rule_status(self, record: RuleRecord) -> RuleStatus:
        """A rule's status now, a block on its origin included."""
        now = self.clock()
        origin = record.key.origin
        if record.key.kind != BLOCK and self._blocked(self._rules_at(origin), origin, now):
            return RuleStatus.SUSPENDED
        return record.status(self.policy, now)

    # -- recording evidence -----------------------------------------------

    def record_redirect(
        self,
        source: str,
        status: int,
        target: str,
        *,
        context: Iterable[str] = (),
        location: str | None = None,
    ) -> Outcome:
        """Learn from one redirect hop: ``source`` answered ``status`` with Location ``target``.

        ``target`` is the absolute URL the Location resolves to (``location``,
        the header as sent, is kept in the evidence log); ``context`` holds
        the reasons the exchange may depend on who asked (see
        :func:`.evidence.context_flags`): empty for a clean exchange.
        """
        if status not in REDIRECTS:
            raise ValueError(f"{status} is not a redirect status; use record_response()")
        src, tgt = scheme_form(source), scheme_form(target)
        if src is None or tgt is None:
            return Outcome(ignored="not a valid URL")
        if not _host(src) or not _host(tgt):  # no site: nothing to learn about
            return Outcome(ignored="a URI without a host")
        flags = frozenset(context)
        if has_userinfo(src) or has_userinfo(tgt):  # credentials in the URL: who asked matters, always
            flags |= {USERINFO}
        now = self.clock()
        outcome = Outcome()
        notes: list[str] = []
        # distinct sources by path and query (/item?id=1 and /item?id=2 are two pages); the
        # target without its query (/login?next=... is /login); a redirect that only fixes
        # the spelling of a page (scheme, www., case, slash, index.html) is no sign of a sink
        if spelling_key(src) == spelling_key(tgt):
            sources = []
        else:
            sources = self._add_fanin(sink_key(tgt), source_key(src), self.policy.sink_fanin)
        outcome.sink = len(sources) >= self.policy.sink_fanin
        cross_site = not same_site(_host(src), _host(tgt))

        if status in PERMANENT and src != tgt:
            refusal = self._alias_refusal(flags, cross_site, outcome.sink)
            if refusal:
                notes.append(f"no alias: {refusal}")
            else:
                old = self._get_alias(src)
                if old is None or old.target != tgt:
                    self._put_alias(Alias(src, tgt, status, now))
                    outcome.learned_alias = True
        elif status not in PERMANENT and self._get_alias(src) is not None:
            self._drop_alias(src)
            outcome.dropped_alias = True
            notes.append("alias dropped: no longer a permanent redirect")

        trusted = not flags and not outcome.sink and not cross_site
        hop = f"{src} -{status}-> {tgt}"
        for prediction in predictions(src, self._case_target):
            verdict = judge(prediction.target, status, tgt, trusted=trusted)
            if verdict is not Verdict.NEUTRAL:
                self._count(prediction.key, verdict, now, hop, outcome)
        if outcome.sink:
            notes.append(f"sink: {len(sources)}+ sources redirect to {sink_key(tgt)}")
            for origin in {_origin(src), *(_origin(s) for s in sources)}:
                self._count(RuleKey(origin, BLOCK), Verdict.AGAINST, now, f"sink {sink_key(tgt)} ({hop})", outcome)
        shown = location if location is not None and location != tgt else None
        self._add_evidence(Evidence(now, src, status, tgt, flags, "; ".join(notes), shown))
        return outcome

    def record_response(self, url: str, status: int, *, context: Iterable[str] = (), note: str = "") -> Outcome:
        """Learn from a final (non-redirect) answer at ``url``.

        A document (status below 400) at a URL a rule covers contradicts the
        rule, and a URL that answers for itself is no longer an alias. On an
        origin that redirects case variants, a clean document also declares
        the case of its path (see :meth:`_declares_case`). Errors teach
        nothing.
        """
        if status in REDIRECTS:
            raise ValueError(f"{status} is a redirect status; use record_redirect()")
        outcome = Outcome()
        if status >= 400:
            return outcome
        u = scheme_form(url)
        if u is None:
            return Outcome(ignored="not a valid URL")
        context = frozenset(context) | ({USERINFO} if has_userinfo(u) else frozenset())
        now = self.clock()
        notes = [note] if note else []
        if self._get_alias(u) is not None:
            self._drop_alias(u)
            outcome.dropped_alias = True
            notes.append("alias dropped: answered for itself")
        records = self._rules_at(_origin(u))
        known = False
        for prediction in predictions(u, self._case_target):
            record = records.get(prediction.key)
            known = known or (record is not None and record.support > 0)
            self._count(prediction.key, Verdict.AGAINST, now, f"{u} answered {status}", outcome)
        if known or outcome.dropped_alias:
            self._add_evidence(Evidence(now, u, status, None, frozenset(context), "; ".join(notes)))
        if not context and self._declares_case(u, now):
            self._declare_case(u)
        return outcome

    def _declares_case(self, url: str, now: float) -> bool:
        """Whether a clean document at ``url`` declares the case of its path.

        A case-insensitive server that redirects case variants answers a
        document at one case, the one it declares: the ``declared-case``
        rule may then predict that ``/DOCS/PAGE-7`` redirects to the
        ``/Docs/Page-7`` already fetched, as it predicts the target of a
        case-only redirect already seen. Only on an origin whose
        ``declared-case`` rule has support and no counterexample (other
        origins keep no document), and only when no case is known for the
        path yet (a document at another case of a declared path is a
        counterexample, counted by the caller).
        """
        path = split_form(url).path
        if path.lower() == path.upper():  # nothing a case could change
            return False
        origin = _origin(url)
        record = self._rules_at(origin).get(RuleKey(origin, DECLARED_CASE, path_prefix(path.lower())))
        if record is None or not record.support or now - record.last_support > self.policy.rule_ttl:
            return False
        if self.rule_status(record) is RuleStatus.SUSPENDED:
            return False
        return self._case_target(case_key(url)) is None

    def _alias_refusal(self, flags: frozenset[str], cross_site: bool, sink: bool) -> str:
        if flags:
            return "context-dependent (" + ", ".join(sorted(flags)) + ")"
        if cross_site and not self.policy.cross_site_aliases:
            return "another registrable domain"
        if sink:
            return "target is a sink"
        return ""

    def _count(self, key: RuleKey, verdict: Verdict, now: float, note: str, outcome: Outcome) -> None:
        """Add one judged observation to a rule and report the rules whose status it changed."""
        records = self._rules_at(key.origin)
        blocked = self._blocked(records, key.origin, now)
        record = records.get(key)
        if record is None:
            record = RuleRecord(key)
            was = RuleStatus.CANDIDATE
        else:
            was = record.status(self.policy, now)
            record.expire(self.policy, now)
        record.add(verdict, now, note)
        self._put_rule(record)
        if key.kind == BLOCK:
            if not blocked:  # every active rule of the origin stops at once
                others = self._rules_at(key.origin).values()
                outcome.contradicted += [r.key for r in others if r.key.kind != BLOCK and r.status(self.policy, now) is RuleStatus.ACTIVE]
            return
        if blocked:
            return
        now_status = record.status(self.policy, now)
        if was is RuleStatus.ACTIVE and now_status is not RuleStatus.ACTIVE:
            outcome.contradicted.append(key)
        elif was is not RuleStatus.ACTIVE and now_status is RuleStatus.ACTIVE:
            outcome.activated.append(key)
        elif was is RuleStatus.ACTIVE and verdict is Verdict.SUPPORT:
            outcome.confirmed.append(key)
        self._count_generalized(key, verdict, record.support == 1, now, note, outcome)

    def _count_generalized(
        self, key: RuleKey, verdict: Verdict, first: bool, now: float, note: str, outcome: Outcome
    ) -> None:
        """A directory's rule of a server-wide kind speaks for the origin-wide rule too.

        The origin-wide rule (scope :data:`~._rules.ANYWHERE`) gains one
        support from the first support under each first-level directory
        (``first``), and every counterexample under any directory counts
        against it: it applies everywhere once ``min_observations``
        directories have supported it and none has refuted it. Once active,
        every confirmation under any directory counts for it.
        """
        kind = KINDS_BY_NAME.get(key.kind)
        if kind is None or not kind.generalizes or key.scope.startswith(ANYWHERE):
            return
        wide = RuleKey(key.origin, key.kind, generalized(key.scope))
        if verdict is Verdict.AGAINST:
            self._count(wide, Verdict.AGAINST, now, note, outcome)
        elif verdict is Verdict.SUPPORT and (first or self._is_active(wide, now)):
            self._count(wide, Verdict.SUPPORT, now, note, outcome)

    def _is_active(self, key: RuleKey, now: float) -> bool:
        record = self._rules_at(key.origin).get(key)
        return record is not None and record.status(self.policy, now) is RuleStatus.ACTIVE

    def confirmations(self, key: RuleKey) -> int:
        """How many consistent observations an active rule has (0 if it is not active): what verification decays with."""
        record = self._rules_at(key.origin).get(key)
        if record is None or record.status(self.policy, self.clock()) is not RuleStatus.ACTIVE:
            return 0
        return record.support

    # -- deferred requests ------------------------------------------------

    def defer(self, url: str, rules: Iterable[RuleKey]) -> None:
        """Keep ``url``, merged away by ``rules``, for re-scheduling if one is contradicted."""
        for rule in rules:
            self._add_deferred(rule, url)

    def take_deferred(self, rule: RuleKey) -> list[str]:
        """The URLs merged away by ``rule`` (removed from the store)."""
        return self._take_deferred(rule)

    # -- explaining, listing, forgetting ----------------------------------

    def explain(self, a: str, b: str | None = None) -> Explanation:
        """Why ``a`` (and ``b``) resolve where they do; any URLs, canonicalized here."""
        res_a = self._resolve_any(a)
        res_b = None if b is None else self._resolve_any(b)
        lines = self._explain_one(res_a)
        if res_b is not None:
            lines += self._explain_one(res_b)
            same = res_a.representative == res_b.representative
            lines.append("merged: same representative" if same else "not merged: different representatives")
        return Explanation(res_a, res_b, lines)

    def _resolve_any(self, url: str) -> Resolution:
        form = scheme_form(url.partition("#")[0])
        return self.resolve(form) if form is not None else Resolution(url, url, (), "not a valid URL")

    def _explain_one(self, res: Resolution) -> list[str]:
        lines = [f"{res.url}", f"  representative: {res.representative}"]
        now = self.clock()
        for step in res.steps:
            if step.rule is None:
                alias = self._get_alias(step.source)
                seen = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(alias.time)) if alias else "?"
                status = alias.status if alias else "?"
                lines.append(f"  {step.source} -> {step.target}: exact alias ({status} seen {seen} UTC)")
            else:
                record = self._rules_at(step.rule.origin).get(step.rule)
                detail = ""
                if record is not None:
                    detail = f", {record.support} consistent observations, e.g. {record.example}"
                lines.append(f"  {step.source} -> {step.target}: rule {step.rule} ({record.status(self.policy, now).value if record else '?'}{detail})")
        if res.note:
            lines.append(f"  {res.note}")
        for evidence in self._iter_evidence(res.url.partition("#")[0]):
            lines.append(f"  evidence: {evidence.describe()}")
        return lines

    def aliases(self) -> Iterator[Alias]:
        """Every exact alias."""
        return self._iter_aliases()

    def rules(self) -> Iterator[RuleRecord]:
        """Every rule record (candidates, active and suspended rules, origin blocks)."""
        return self._iter_rules()

    def evidence(self, url: str | None = None) -> Iterator[Evidence]:
        """The evidence log, or the entries about one URL (any form)."""
        return self._iter_evidence(None if url is None else scheme_form(url) or url)

    def forget(self, url: str) -> int:
        """Forget what was learned from ``url``: its alias, declared case and evidence. Returns entries removed."""
        form = scheme_form(url) or url
        removed = 0
        if self._get_alias(form) is not None:
            self._drop_alias(form)
            removed += 1
        if self._drop_declared_case(form):
            removed += 1
        return removed + self._drop_evidence(form)

    def forget_host(self, host: str) -> int:
        """Forget every alias, rule and sink learned on ``host``. Returns entries removed.

        ``host`` is ``name`` (its default ports: what URLs without a port
        reach), ``name:port`` (that port only) or ``name:*`` (every port).
        """
        on_host = _authority_matcher(host)
        removed = 0
        for alias in list(self._iter_aliases()):
            if on_host(alias.source):
                self._drop_alias(alias.source)
                removed += 1
        for record in list(self._iter_rules()):
            if on_host(record.key.origin + "/"):
                self._drop_rule(record.key)
                removed += 1
        for target, _ in list(self._iter_fanin()):
            if on_host(target):
                self._drop_fanin(target)
                removed += 1
        for declared in list(self._iter_declared_cases()):
            if on_host(declared):
                self._drop_declared_case(declared)
                removed += 1
        return removed

    def rule_label(self, record: RuleRecord) -> str:
        """The one word ``stats`` and ``export`` use for a rule record.

        ``candidate``, ``active``, ``suspended`` (a rule a counterexample
        stopped), ``refuted`` (counterexamples only: never a rule); for an
        origin block, ``blocked`` (in force) or ``unblocked`` (expired).
        """
        status = self.rule_status(record)
        if record.key.kind == BLOCK:
            return "blocked" if status is RuleStatus.SUSPENDED else "unblocked"
        if status is RuleStatus.SUSPENDED and not record.support:
            return "refuted"
        return status.value

    def stats(self) -> dict[str, int]:
        """Counts of what the store holds."""
        counts = {"aliases": sum(1 for _ in self._iter_aliases())}
        counts.update(dict.fromkeys(("rules/active", "rules/candidate", "rules/suspended", "rules/refuted"), 0))
        counts["blocked_origins"] = 0
        for record in self._iter_rules():
            label = self.rule_label(record)
            if label == "blocked":
                counts["blocked_origins"] += 1
            elif label != "unblocked":
                counts[f"rules/{label}"] += 1
        counts["sinks"] = sum(1 for _, n in self._iter_fanin() if n >= self.policy.sink_fanin)
        counts["declared_cases"] = sum(1 for _ in self._iter_declared_cases())
        counts["evidence"] = self._count_evidence()
        counts["deferred"] = self._count_deferred()
        return counts

    def export(self, *, evidence: bool = False) -> Iterator[dict[str, Any]]:
        """Everything as JSON-ready dicts, each with a ``"type"``."""
        for alias in self._iter_aliases():
            yield {"type": "alias", **alias.as_dict()}
        for record in self._iter_rules():
            yield {
                "type": "rule",
                "rule": str(record.key),
                "origin": record.key.origin,
                "kind": record.key.kind,
                "scope": record.key.scope,
                "status": self.rule_label(record),
                "support": record.support,
                "against": record.against,
                "first_seen": record.first_seen,
                "last_support": record.last_support,
                "last_against": record.last_against,
                "example": record.example,
                "counterexample": record.counterexample,
            }
        for target, count in self._iter_fanin():
            if count >= self.policy.sink_fanin:
                yield {"type": "sink", "target": target, "sources": count}
        for url in self._iter_declared_cases():
            yield {"type": "case", "url": url}
        if evidence:
            for item in self._iter_evidence():
                yield {"type": "evidence", **item.as_dict()}
