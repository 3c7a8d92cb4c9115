"""The learner: what evidence means, and how a URL finds its representative.

It keeps nothing itself; a :class:`~._storage.Storage` (memory, SQLite or
Redis) does. Safety properties, each with a test in ``tests/store`` and
``tests/scrapy``:

* the mapping goes alias -> target only, never the reverse;
* chains resolve (A -> B -> C gives A, B -> C); a loop or an over-long
  chain resolves to the URL itself (no merge);
* only clean permanent redirects make aliases (across registrable domains
  only with ``cross_site_aliases``); cookies, credentials, ``Set-Cookie``
  and ``Vary`` disqualify;
* rules are keyed by origin and scope (a first-level directory, a numbered
  path family, or the whole origin once several directories agree) and only
  ever predict URLs of their own origin (or its ``www.``/``https`` partner
  inside one registrable domain); never on IP hosts or URIs without a host;
* a suspended rule stops applying at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from .._schemes import SCHEMES
from ..errors import StoreError
from ._bulk import BulkLearning, PriorIndex
from ._evidence import USERINFO, Alias, Evidence
from ._observation import Observation, prefetch_keys
from ._forms import has_userinfo, origin_of, scheme_form, sink_key, source_key, spelling_key, split_form, split_fragment
from ._memo import ResolutionMemo, Trace
from ._outcome import GONE, Outcome, host_of, same_site, site_and_family
from ._psl import is_ip_host
from ._report import Explanation, explanation, export, rule_label, stats
from ._resolution import Resolution, Step
from ._rules import (
    ANYWHERE,
    ALIAS,
    BLOCK,
    DECLARED_CASE,
    GENERALIZES,
    KINDS,
    PERMANENT,
    PRIOR_KINDS,
    PRIOR_SITES,
    REDIRECTS,
    LearningPolicy,
    alias_key,
    RuleKey,
    RuleKind,
    RuleRecord,
    RuleStatus,
    Verdict,
    case_key,
    generalized,
    judge,
    path_prefix,
    predictions,
)
from ._storage import Storage

#: origins whose kinds of rules in force are held (then forgotten all at once)
_KINDS_HELD = 4096

__all__ = ["EquivalenceStore", "Explanation", "Outcome", "Resolution", "Step", "StoreError"]


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


class EquivalenceStore(BulkLearning):
    """The learner: evidence, exact aliases and rules, and the representative of a URL.

    It keeps nothing itself: ``storage`` (a :class:`~._storage.Storage`)
    does. URLs given to :meth:`representative` and :meth:`resolve` must be
    scheme-rung forms (``canonicalize(url, "scheme")``); the ``record_*``
    methods accept any URL and canonicalize it themselves. A fragment is
    carried over to the representative unchanged.
    """

    def __init__(
        self, storage: Storage, policy: LearningPolicy | None = None, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.storage = storage
        #: the resolutions without an alias remembered while nothing they read changes (``None``: none kept)
        self.memo: ResolutionMemo | None = ResolutionMemo(storage, self._status_now)
        self.policy = policy or LearningPolicy()
        self.clock = clock
        #: when this session began: an alias stated before it is evidence of an earlier crawl
        self.session_start = clock()
        #: whether an alias from an earlier session is checked before use (the crawl's verification;
        #: ``None``: never): a checked alias merges nothing, so its source is fetched as it is
        self.alias_check: Callable[[Alias], bool] | None = None
        #: per prior kind: the sites where a rule of it became active in this session, and where one fell
        self._held: dict[str, dict[str, tuple[str, str, int]]] = {}  # kind -> origin -> (site, family, support)
        self._failed: dict[str, set[str]] = {}
        self._priors: dict[tuple[str, str], int] = {}
        #: per prior kind: its sites and host families counted as they are added (what prior() reads)
        self._prior_index: dict[str, PriorIndex] = {}
        #: per prior kind: the most support a held rule of it has on each site, and their sum
        self._best: dict[str, dict[str, int]] = {}
        self._best_total: dict[str, int] = {}
        #: per (prior kind, site, host family): the support of each held rule of it, by origin
        self._family_support: dict[tuple[str, str, str], dict[str, int]] = {}
        #: per prior kind: the rules in force in this session with fewer than K supports of their own
        self._leaning: dict[str, set[RuleKey]] = {}
        self._noted: set[RuleKey] = set()
        #: per origin: confirmations of aliases of earlier sessions counted in this session
        self._confirmed_here: dict[str, int] = {}
        #: while a bulk chunk is learned: rule records counted since their last write (``None``:
        #: not learning in bulk, every count is written at once), and those written in the chunk
        self._unwritten: dict[RuleKey, RuleRecord] | None = None
        self._written: set[RuleKey] = set()
        #: per origin: (its records in force, their number, the kinds they hold, whether one is a block)
        self._kinds: dict[str, tuple[Mapping[RuleKey, RuleRecord], int, tuple[RuleKind, ...], bool]] = {}

    @property
    def policy(self) -> LearningPolicy:
        """The learning policy rules are judged with (the storage merges counts with its TTL)."""
        return self._policy

    @policy.setter
    def policy(self, policy: LearningPolicy) -> None:
        self._policy = policy
        self.storage.policy = policy
        if self.memo is not None:
            self.memo.clear()

    def record_policy(self) -> None:
        """Record the learning policy in the storage: whoever reads the store later judges rules with it."""
        self.storage.save_policy(self.policy)

    def adopt_recorded_policy(self) -> None:
        """Judge rules with the policy a crawl recorded in the storage, if any."""
        recorded = self.storage.load_policy()
        if recorded is not None:
            self.policy = recorded

    @property
    def pending(self) -> int:
        """Writes not yet durable."""
        return self.storage.pending

    def flush(self) -> None:
        """Make everything recorded so far durable (no-op for volatile stores)."""
        self.storage.flush()

    def sync(self) -> None:
        """Read what other processes changed, now."""
        self.storage.sync()

    def close(self) -> None:
        """Flush and release resources; the store is unusable afterwards."""
        self.storage.close()

    def __enter__(self) -> EquivalenceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- looking up ---------------------------------------------------------

    def representative(self, url: str) -> str:
        """The URL that stands for the scheme form ``url`` at the protocol rung (:meth:`resolve`'s, without its record of the hops)."""
        self.storage.refresh()
        base, sep, fragment = url.partition("#")
        now = self.clock()
        current, hops = base, 0
        visited: set[str] | None = None
        while (step := self._step(current, now)) is not None:
            if visited is None:
                visited = {base}
            if step.target in visited or hops >= self.policy.max_chain:
                return url  # a loop, or a chain too long: no merge
            visited.add(step.target)
            hops += 1
            current = step.target
        return current + sep + fragment if hops else url

    def resolve(self, url: str) -> Resolution:
        """The representative of the scheme form ``url``, with the hops that lead there.

        A resolution that met no alias is remembered (:attr:`memo`) while
        nothing it read changes; it is the one computed afresh.
        """
        self.storage.refresh()
        now = self.clock()
        memo = self.memo
        if memo is None:
            return self._resolve(url, now)
        found = memo.get(url, now)
        if found is not None:
            return found
        trace = Trace()
        mark = memo.mark()
        resolution = self._resolve(url, now, trace)
        memo.put(url, resolution, now, trace, mark, self._policy)
        return resolution

    def _resolve(self, url: str, now: float, trace: Trace | None = None) -> Resolution:
        """:meth:`resolve` computed at ``now``, what it reads noted in ``trace``."""
        base, fragment = split_fragment(url)
        held: list[Alias] = []
        step = self._step(base, now, held, trace)
        if step is None:  # most URLs: no hop
            return Resolution(url, url, held=held[-1] if held else None)
        steps: list[Step] = []
        visited = {base}
        current = base
        while step is not None:
            if step.target in visited:
                return Resolution(url, url, (*steps, step), "loop: no merge")
            if len(steps) >= self.policy.max_chain:
                return Resolution(url, url, tuple(steps), "chain too long: no merge")
            steps.append(step)
            visited.add(step.target)
            current = step.target
            step = self._step(current, now, held, trace)
        last = held[-1] if held and held[-1].source == current else None
        if not steps:
            return Resolution(url, url, held=last)
        return Resolution(url, current + fragment, tuple(steps), held=last)

    def _step(self, url: str, now: float, held: list[Alias] | None = None, trace: Trace | None = None) -> Step | None:
        """The next hop from ``url``: its exact alias, else an active rule's prediction.

        An alias past its lifetime, or picked for a check, merges nothing by
        itself; a rule may still predict its target (and only its target:
        a rule never overrides what the server said about this URL).
        """
        alias = self.storage.alias(url)
        if trace is not None:
            trace.urls.append(url)
            trace.aliased = trace.aliased or alias is not None
        kept: Alias | None = None
        if alias is not None and not self._is_sink(alias.target):
            if self._in_force(alias, now):
                return Step(url, alias.target, aged=alias.time < self.session_start)
            kept = alias
            if held is not None:
                held.append(alias)
        origin = origin_of(url)
        records = self.storage.rules_in_force(origin)
        if trace is not None:
            trace.origins[origin] = records
        if not records:
            return None  # no rule in force on the origin: answered in memory
        kinds, blockable = self._kinds_in_force(origin, records)
        if not kinds or (blockable and self._blocked(records, origin, now)):
            return None

        def active(key: RuleKey) -> bool:
            record = records.get(key)
            if record is None or record.status(self._judged(key), now) is not RuleStatus.ACTIVE:
                return False
            if key not in self._noted:
                self._noted.add(key)
                if record.support >= self.policy.min_observations:  # in force on its own evidence
                    self._note_prior(key, held=True, support=record.support)
                else:  # in force on the prior: its merges are undone when the prior ends
                    self._leaning.setdefault(key.kind, set()).add(key)
            return True

        form = split_form(url)
        known = self.storage.case_target  # read only where a declared-case rule is active (below)
        if trace is not None:
            known = trace.reading(known)
        # only the conventions with a rule in force here; one or two keys looked up for each
        for kind in kinds:
            if kind.name == DECLARED_CASE and not active(RuleKey(origin, DECLARED_CASE, path_prefix(form.path.lower()))):
                continue  # no case to read: the rule of the URL's directory is not active
            found = kind.predict(form, known)
            if found is None:
                continue
            scope, predicted = found
            target: str | None = None
            for candidate in (RuleKey(origin, kind.name, generalized(scope)) if kind.generalizes else None, RuleKey(origin, kind.name, scope)):
                if candidate is not None and active(candidate):
                    if target is None:
                        target = predicted.unsplit()
                    if target == url:
                        continue
                    if kept is not None and target != kept.target:
                        return None
                    return Step(url, target, candidate)
        return None

    def _status_now(self, record: RuleRecord) -> RuleStatus:
        """A record's status now, judged as a lookup judges it (the origin's block aside)."""
        return record.status(self._judged(record.key), self.clock())

    def _kinds_in_force(self, origin: str, records: Mapping[RuleKey, RuleRecord]) -> tuple[tuple[RuleKind, ...], bool]:
        """The conventions (in :data:`~._rules.KINDS` order) with a record in ``records``, the origin's
        records in force, and whether one is the origin's block: read once per mapping, not per lookup.

        A storage answers a new mapping when the records in force change (SQLite, Redis) or a mapping
        of another size (memory); a URL of an origin no convention covers (not http or https, an IP
        host, userinfo) gets none.
        """
        found = self._kinds.get(origin)
        if found is not None and found[0] is records and found[1] == len(records):
            return found[2], found[3]
        names = {key.kind for key in records}
        scheme, _, authority = origin.partition("://")
        host = authority if authority.startswith("[") else authority.partition(":")[0]
        covered = scheme in ("http", "https") and bool(authority) and "@" not in authority and not is_ip_host(host)
        kinds = tuple(kind for kind in KINDS if kind.name in names) if covered else ()
        if len(self._kinds) >= _KINDS_HELD:
            self._kinds.clear()
        self._kinds[origin] = (records, len(records), kinds, BLOCK in names)
        return kinds, BLOCK in names

    def prior(self, key: RuleKey) -> int:
        """How far this session's evidence elsewhere supports ``key``'s convention, none failing.

        A prior across sites: for a near-universal host-wide convention
        (:data:`~._rules.PRIOR_KINDS`), each other site (registrable domain)
        where it became a rule in this session counts one, and so does a
        partner origin of ``key``'s own host (its other scheme, its ``www.``
        or apex partner) where it became a rule. Each one lowers the
        observations the rule needs by one, down to a single one from
        :data:`~._rules.PRIOR_SITES` on (see :meth:`_judged`). It never makes
        a rule by itself: the origin's own redirect is still needed, and one
        counterexample suspends it; one fall of the convention anywhere in
        the session ends the prior for its kind.
        """
        if key.kind not in PRIOR_KINDS or not self._held.get(key.kind) or self._failed.get(key.kind):
            return 0
        found = self._priors.get((key.kind, key.origin))
        if found is None:
            held = self._held[key.kind]
            index = self._prior_index.get(key.kind)
            if index is None or index.held is not held:
                index = self._prior_index[key.kind] = PriorIndex(held)
            found = self._priors[(key.kind, key.origin)] = index.prior(key.origin)
        return found

    def _judged(self, key: RuleKey) -> LearningPolicy:
        """The policy ``key``'s status is judged with: fewer observations make it as the prior grows."""
        return self._policy_needing(self._needed(key))

    def _needed(self, key: RuleKey) -> int:
        """The observations ``key`` needs to become active: ``min_observations``, fewer as the prior grows."""
        needed = self._policy.min_observations
        prior = self.prior(key)
        if not prior:
            return needed
        return 1 if prior >= PRIOR_SITES else max(1, needed - prior)

    def _policy_needing(self, needed: int) -> LearningPolicy:
        """The policy with ``min_observations`` lowered to ``needed`` (cached per policy)."""
        policy = self.policy
        if needed >= policy.min_observations:
            return policy
        cached = getattr(self, "_prior_policies", None)
        if cached is None or cached[0] is not policy:
            cached = (policy, {})
            self._prior_policies = cached
        found = cached[1].get(needed)
        if found is None:
            found = cached[1][needed] = replace(policy, min_observations=needed)
        return found

    def prior_support(self, key: RuleKey) -> int:
        """The confirmations ``key``'s convention earned in this session where :meth:`prior` counts it.

        The most any one rule of the kind has on each other site, and on the
        partner origins of ``key``'s host; 0 when the prior is 0.
        """
        if not self.prior(key):
            return 0
        site, family = site_and_family(key.origin)
        best = self._best.get(key.kind, {})
        others = self._best_total.get(key.kind, 0) - best.get(site, 0)
        partners = self._family_support.get((key.kind, site, family), {})
        return others + max((n for origin, n in partners.items() if origin != key.origin), default=0)

    def _note_prior(self, key: RuleKey, held: bool, support: int = 0) -> None:
        if key.kind not in PRIOR_KINDS:
            return
        known = self._held.setdefault(key.kind, {})
        before = known.get(key.origin)
        if held and before is not None:  # a confirmation: the prior's extent is the same
            support = max(support, before[2])
            known[key.origin] = (before[0], before[1], support)
            self._count_prior_support(key, before[0], before[1], support)
            return
        site, family = site_and_family(key.origin)
        if held:
            known[key.origin] = (site, family, support)
            self._count_prior_support(key, site, family, support)
        else:
            self._failed.setdefault(key.kind, set()).add(site)
        self._priors.clear()
        if self.memo is not None:  # rules elsewhere are judged with another prior now
            self.memo.clear()
        if held:
            self.storage.lower_force_floor(1)

    def _count_prior_support(self, key: RuleKey, site: str, family: str, support: int) -> None:
        """Keep the most support of ``key``'s kind on ``site`` (and their sum over sites) and its
        support among its host family's origins: :meth:`prior_support` reads them, it does not count."""
        best = self._best.setdefault(key.kind, {})
        most = best.get(site, 0)
        if support > most:
            best[site] = support
            self._best_total[key.kind] = self._best_total.get(key.kind, 0) + support - most
        self._family_support.setdefault((key.kind, site, family), {})[key.origin] = support

    def _prior_ended(self, key: RuleKey, outcome: Outcome) -> None:
        """The prior of ``key``'s kind fell: the rules in force on it alone fall with it, reported as contradicted.

        Their merges (the requests they deferred) are then scheduled again,
        as a counterexample of their own would have them.
        """
        leaning = self._leaning.pop(key.kind, None)
        if not leaning:
            return
        now = self.clock()
        for other in sorted(leaning - {key}):
            record = self.storage.rules_at(other.origin).get(other)
            if record is None or record.status(self._judged(other), now) is not RuleStatus.ACTIVE:
                if other not in outcome.contradicted:
                    outcome.contradicted.append(other)
                self._noted.discard(other)

    def _in_force(self, alias: Alias, now: float) -> bool:
        """Whether an alias merges: within its lifetime, and not picked for a check in this session."""
        if now >= alias.stale_at(self.policy.alias_ttl):
            return False
        check = self.alias_check
        return check is None or alias.time >= self.session_start or not check(alias)

    def _blocked(self, records: Mapping[RuleKey, RuleRecord], origin: str, now: float) -> bool:
        """Whether a sink blocks every rule of ``origin``."""
        block = records.get(RuleKey(origin, BLOCK))
        return block is not None and block.status(self._policy, now) is RuleStatus.SUSPENDED

    def _is_sink(self, target: str) -> bool:
        return self.storage.is_sink(target, self.policy.sink_fanin)

    def rule_status(self, record: RuleRecord) -> RuleStatus:
        """A rule's status now, a block on its origin included."""
        now = self.clock()
        origin = record.key.origin
        if record.key.kind != BLOCK and self._blocked(self.storage.rules_at(origin), origin, now):
            return RuleStatus.SUSPENDED
        return record.status(self._judged(record.key), now)

    # -- recording evidence -----------------------------------------------

    def record_redirect(
        self,
        source: str,
        status: int,
        target: str,
        *,
        context: Iterable[str] = (),
        location: str | None = None,
        lifetime: float | None = None,
    ) -> Outcome:
        """Learn from one redirect hop: ``source`` answered ``status`` with Location ``target``.

        ``target`` is the absolute URL the Location resolves to (``location``,
        the header as sent, is kept in the evidence log); ``context`` holds
        the reasons the exchange may depend on who asked (see
        :func:`.evidence.context_flags`): empty for a clean exchange. A
        :class:`~._forms.SchemeForm` is taken as it is (not canonicalized again).
        ``lifetime`` is the seconds the redirect said it stays true
        (:func:`.evidence.stated_lifetime`; ``None``: it said nothing, the
        policy's ``alias_ttl`` applies; 0: it may not be reused, no alias).
        """
        if status not in REDIRECTS:
            raise ValueError(f"{status} is not a redirect status; use record_response()")
        self.storage.refresh()
        outcome = self._learn_redirect(source, status, target, frozenset(context), location, lifetime)
        return self._observed(outcome)

    def _learn_redirect(
        self,
        source: str,
        status: int,
        target: str,
        context: frozenset[str],
        location: str | None,
        lifetime: float | None = None,
    ) -> Outcome:
        src, tgt = scheme_form(source), scheme_form(target)
        if src is None or tgt is None:
            return Outcome(ignored="not a valid URL")
        if self.storage.round_trips:  # what the hop reads, in one round trip
            self.storage.prefetch(prefetch_keys([(src, tgt)]))
        return self._learn_hop(src, status, tgt, context, location, lifetime)

    def _learn_hop(
        self, src: str, status: int, tgt: str, context: frozenset[str], location: str | None, lifetime: float | None = None
    ) -> Outcome:
        """Learn from one redirect hop between two scheme forms."""
        src_host, tgt_host = host_of(src), host_of(tgt)
        if not src_host or not tgt_host:  # no site: nothing to learn about
            return Outcome(ignored="a URI without a host")
        flags = context
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
            sources = self.storage.add_fanin(sink_key(tgt), source_key(src), self._policy.sink_fanin)
        outcome.sink = len(sources) >= self._policy.sink_fanin
        cross_site = not same_site(src_host, tgt_host)

        if status in PERMANENT and src != tgt:
            refusal = self._alias_refusal(flags, cross_site, outcome.sink)
            if not refusal and lifetime is not None and lifetime <= 0:
                refusal = "not to be reused (no-store, no-cache or no lifetime)"
                if self._end_alias(src, outcome):
                    notes.append("alias dropped: the redirect may not be reused")
            if refusal:
                notes.append(f"no alias: {refusal}")
            else:
                self._state_alias(src, tgt, status, now, lifetime, outcome)
        elif status not in PERMANENT:
            if self._end_alias(src, outcome):
                notes.append("alias dropped: no longer a permanent redirect")
            self.storage.answered(src)  # ends an alias another process may know and this one not yet

        trusted = not flags and not outcome.sink and not cross_site
        hop = f"{src} -{status}-> {tgt}"
        judged = []
        for prediction in predictions(src, self.storage.case_target):
            verdict = judge(prediction.target, status, tgt, trusted=trusted)
            if verdict is not Verdict.NEUTRAL:
                judged.append((prediction.key, verdict))
        if judged:
            self._count_all(origin_of(src), judged, now, hop, outcome)
        if outcome.sink:
            notes.append(f"sink: {len(sources)}+ sources redirect to {sink_key(tgt)}")
            for origin in {origin_of(src), *(origin_of(s) for s in sources)}:
                self._count(RuleKey(origin, BLOCK), Verdict.AGAINST, now, f"sink {sink_key(tgt)} ({hop})", outcome)
        shown = location if location is not None and location != tgt else None
        self.storage.add_evidence(Evidence(now, src, status, tgt, flags, "; ".join(notes), shown))
        return outcome

    def record_response(self, url: str, status: int, *, context: Iterable[str] = (), note: str = "") -> Outcome:
        """Learn from a final (non-redirect) answer at ``url``.

        A document (status below 400) at a URL a rule covers contradicts the
        rule, and a URL that answers for itself is no longer an alias. On an
        origin that redirects case variants, a clean document also declares
        the case of its path (see :meth:`_declares_case`). Errors teach
        nothing about rules; ``404`` and ``410`` end an alias of the URL (the
        redirect is gone). A :class:`~._forms.SchemeForm` ``url`` is taken as it is.
        """
        if status in REDIRECTS:
            raise ValueError(f"{status} is a redirect status; use record_redirect()")
        self.storage.refresh()
        if status in GONE:
            return self._observed(self._learn_gone(url, status))
        if status >= 400:  # errors teach nothing
            return self._observed(Outcome())
        return self._observed(self._learn_response(url, status, frozenset(context), note))

    def _learn_gone(self, url: str, status: int) -> Outcome:
        outcome = Outcome()
        u = scheme_form(url)
        if u is not None and self._end_alias(u, outcome):
            self.storage.answered(u)
            note = f"alias dropped: the source answered {status}"
            self.storage.add_evidence(Evidence(self.clock(), u, status, None, frozenset(), note))
        return outcome

    def _state_alias(
        self, src: str, tgt: str, status: int, now: float, lifetime: float | None, outcome: Outcome
    ) -> None:
        """The server stated ``src`` -> ``tgt`` (again, or for the first time, or instead of another target)."""
        old = self.storage.alias(src)
        expires = None if lifetime is None else now + lifetime
        if old is not None and old.target == tgt:
            again = old.time < self.session_start  # one confirmation per session at most
            confirmations = old.confirmations + again
            outcome.confirmed_alias = again
            if again:
                origin = alias_key(src).origin
                self._confirmed_here[origin] = self._confirmed_here.get(origin, 0) + 1
                self._judge_aliases(src, Verdict.SUPPORT, now, f"{src} -{status}-> {tgt}")
            self.storage.set_alias(src, Alias(src, tgt, status, now, expires, confirmations))
            return
        self.storage.set_alias(src, Alias(src, tgt, status, now, expires))
        outcome.learned_alias = True
        if old is not None:
            outcome.ended.append(alias_key(src))

    def _end_alias(self, src: str, outcome: Outcome) -> bool:
        """Drop the alias of ``src``, if any; its merges, and the other merges of its origin's aliases, are to be undone."""
        old = self.storage.alias(src)
        if old is None:
            return False
        self.storage.set_alias(src, None)
        outcome.dropped_alias = True
        outcome.ended.append(alias_key(src))
        self._judge_aliases(src, Verdict.AGAINST, self.clock(), f"{src} -{old.status}-> {old.target} ended")
        return True

    def _judge_aliases(self, src: str, verdict: Verdict, now: float, note: str) -> None:
        """Count a confirmation of one of the origin's aliases in a later crawl, or an alias that ended."""
        key = alias_key(src)
        record = self.storage.rules_at(key.origin).get(key) or RuleRecord(key)
        record.expire(self.policy, now)
        record.add(verdict, now, note)
        self.storage.set_rule(key, record)

    def alias_trust(self, source: str) -> int:
        """How far the aliases of ``source``'s origin have earned trust: crawls' confirmations, -1 after one ended.

        An alias of the origin ended within ``rule_ttl`` (in this session
        too): -1 (check them all); else the confirmations that sessions
        before this one counted within ``rule_ttl``.
        """
        key = alias_key(source)
        record = self.storage.rules_at(key.origin).get(key)
        if record is None:
            return 0
        now = self.clock()
        if record.against and now - record.last_against <= self.policy.rule_ttl:
            return -1
        if now - record.last_support > self.policy.rule_ttl:
            return 0
        return max(0, record.support - self._confirmed_here.get(key.origin, 0))

    def _learn_response(self, url: str, status: int, context: frozenset[str], note: str) -> Outcome:
        u = scheme_form(url)
        if u is None:
            return Outcome(ignored="not a valid URL")
        if self.storage.round_trips:
            self.storage.prefetch(prefetch_keys([(u, None)]))
        return self._learn_answer(u, status, context, note)

    def _learn_answer(self, u: str, status: int, context: frozenset[str], note: str) -> Outcome:
        """Learn from a final answer below 400 at the scheme form ``u``."""
        outcome = Outcome()
        context = context | ({USERINFO} if has_userinfo(u) else frozenset())
        now = self.clock()
        notes = [note] if note else []
        # What the server said about this URL's case is read before its alias ends: a
        # case-only redirect it stated (``/D-4`` -> ``/d-4``) declared the other spelling,
        # and a document here now contradicts that declaration; it declares nothing.
        covering = list(predictions(u, self.storage.case_target))
        declares_nothing = self.storage.case_target(case_key(u)) is not None
        if self._end_alias(u, outcome):
            notes.append("alias dropped: answered for itself")
        self.storage.answered(u)
        records = self.storage.rules_at(origin_of(u))
        known = False
        judged = []
        for prediction in covering:
            record = records.get(prediction.key)
            supported = record is not None and record.support > 0
            known = known or supported
            # a directory whose server redirected case variants to lowercase answers a document
            # at another case: that is no declaration, the server there is not what it was
            declares_nothing = declares_nothing or (supported and prediction.key.kind == "lowercase-path")
            judged.append((prediction.key, Verdict.AGAINST))
        if judged:
            self._count_all(origin_of(u), judged, now, f"{u} answered {status}", outcome)
        if known or outcome.dropped_alias:
            self.storage.add_evidence(Evidence(now, u, status, None, frozenset(context), "; ".join(notes)))
        if not context and not declares_nothing and self._declares_case(u, now):
            self.storage.set_declared_case(case_key(u), u)
        return outcome

    #: whether a rule record counted again within a bulk chunk is written once more at the chunk's
    #: end rather than at every count (the storage holds the same object: the results are the same)
    _defer_writes = True

    def _learn_observation(self, obs: Observation, src: str | None, tgt: str | None) -> Outcome | str:
        """What ``record_redirect`` or ``record_response`` learns from ``obs`` (its scheme forms given), or why it is skipped."""
        if obs.is_redirect:
            if obs.target is None:
                return "a redirect without a target"
            if src is None or tgt is None:
                return Outcome(ignored="not a valid URL")
            return self._learn_hop(src, obs.status, tgt, frozenset(obs.context), obs.location, obs.max_age)
        if obs.status in GONE:
            return self._learn_gone(src, obs.status) if src is not None else Outcome(ignored="not a valid URL")
        if obs.status >= 400:
            return Outcome()
        if src is None:
            return Outcome(ignored="not a valid URL")
        return self._learn_answer(src, obs.status, frozenset(obs.context), "")

    def _observed(self, outcome: Outcome) -> Outcome:
        """Commit when due, and report the rules other processes contradicted as contradicted here too.

        A process re-schedules the requests a rule merged away when an
        outcome says the rule was contradicted; a rule suspended by another
        process's observation reaches this one through the storage and is
        handed over with the next outcome, so every process that deferred
        requests under it takes them back.
        """
        self.storage.observed()
        elsewhere = self.storage.contradicted_elsewhere()
        if elsewhere:
            outcome.contradicted = sorted({*outcome.contradicted, *elsewhere})
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
        origin = origin_of(url)
        record = self.storage.rules_at(origin).get(RuleKey(origin, DECLARED_CASE, path_prefix(path.lower())))
        if record is None or not record.support or now - record.last_support > self.policy.rule_ttl:
            return False
        if self.rule_status(record) is RuleStatus.SUSPENDED:
            return False
        return self.storage.case_target(case_key(url)) is None

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
        records = self.storage.rules_at(key.origin)
        blocked = self._blocked(records, key.origin, now)
        if key.kind == BLOCK:
            self._count_record(records, key, verdict, now, note)
            if not blocked:  # every active rule of the origin stops at once
                others = self.storage.rules_at(key.origin).values()
                outcome.contradicted += [r.key for r in others if r.key.kind != BLOCK and r.status(self._judged(r.key), now) is RuleStatus.ACTIVE]
            return
        self._count_rule(records, blocked, key, verdict, now, note, outcome)

    def _count_all(
        self, origin: str, judged: list[tuple[RuleKey, Verdict]], now: float, note: str, outcome: Outcome
    ) -> None:
        """:meth:`_count` for the rules (none a block) one observation judged, in order: the origin's
        records and block read once (only a sink's block count, made after them, changes the block)."""
        records = self.storage.rules_at(origin)
        blocked = self._blocked(records, origin, now)
        for key, verdict in judged:
            self._count_rule(records, blocked, key, verdict, now, note, outcome)

    def _count_record(
        self, records: Mapping[RuleKey, RuleRecord], key: RuleKey, verdict: Verdict, now: float, note: str
    ) -> tuple[RuleRecord, RuleStatus]:
        """Add one judged observation to ``key``'s record, stored; the record, and its status before."""
        record = records.get(key)
        forgot = False
        if record is None:
            record = RuleRecord(key)
            was = RuleStatus.CANDIDATE
        else:
            was = record.status(self._judged(key), now)
            forgot = record.stale(self._policy, now)
            if forgot and self._unwritten and key in self._unwritten:  # what it held, as recording one at a time wrote it
                self.storage.set_rule(key, self._unwritten.pop(key))
            record.expire(self._policy, now)
        record.add(verdict, now, note)
        self._write_rule(key, record, forgot)
        return record, was

    def _write_rule(self, key: RuleKey, record: RuleRecord, forgot: bool) -> None:
        """Store a counted record; in a bulk chunk, a record already written in it is written again
        at the chunk's end (it is the same object the storage holds), unless its counts just fell."""
        unwritten = self._unwritten
        if unwritten is None:
            self.storage.set_rule(key, record)
        elif forgot or key not in self._written:
            self.storage.set_rule(key, record)  # the first write of a chunk holds the origin's records
            self._written.add(key)
            unwritten.pop(key, None)
        else:
            unwritten[key] = record

    def _write_unwritten(self) -> None:
        """Write the records counted again since their last write in this chunk."""
        unwritten = self._unwritten
        if unwritten:
            for key, record in unwritten.items():
                self.storage.set_rule(key, record)
            unwritten.clear()
        self._written.clear()

    def _count_rule(
        self,
        records: Mapping[RuleKey, RuleRecord],
        blocked: bool,
        key: RuleKey,
        verdict: Verdict,
        now: float,
        note: str,
        outcome: Outcome,
    ) -> None:
        """Count one observation for a rule (not a block) of an origin whose records are ``records``."""
        record, was = self._count_record(records, key, verdict, now, note)
        if blocked:
            return
        # a counterexample just counted suspends the rule: only an active one changes status
        now_status = RuleStatus.SUSPENDED if verdict is Verdict.AGAINST else record.status(self._judged(key), now)
        if was is RuleStatus.ACTIVE and now_status is not RuleStatus.ACTIVE:
            outcome.contradicted.append(key)
            self._note_prior(key, held=False)
            self._prior_ended(key, outcome)
        elif was is not RuleStatus.ACTIVE and now_status is RuleStatus.ACTIVE:
            outcome.activated.append(key)
            self._note_prior(key, held=True, support=record.support)
            if record.support < self.policy.min_observations and key.kind in PRIOR_KINDS:
                self._leaning.setdefault(key.kind, set()).add(key)
        elif was is RuleStatus.ACTIVE and verdict is Verdict.SUPPORT:
            outcome.confirmed.append(key)
            self._note_prior(key, held=True, support=record.support)
        # A directory's rule of a server-wide kind speaks for the origin-wide rule too (scope
        # ANYWHERE): it gains one support from the first support under each first-level directory,
        # and every counterexample under any directory counts against it, so it applies everywhere
        # once min_observations directories have supported it and none has refuted it. Once
        # active, every confirmation under any directory counts for it.
        if GENERALIZES.get(key.kind) and not key.scope.startswith(ANYWHERE):
            wide = RuleKey(key.origin, key.kind, generalized(key.scope))
            if verdict is Verdict.AGAINST or (verdict is Verdict.SUPPORT and (record.support == 1 or self._is_active(wide, now, records))):
                self._count_rule(records, blocked, wide, verdict, now, note, outcome)

    def _is_active(self, key: RuleKey, now: float, records: Mapping[RuleKey, RuleRecord] | None = None) -> bool:
        record = (self.storage.rules_at(key.origin) if records is None else records).get(key)
        return record is not None and record.status(self._judged(key), now) is RuleStatus.ACTIVE

    def confirmations(self, key: RuleKey) -> int:
        """How many consistent observations an active rule has (0 if it is not active): what verification decays with.

        The confirmations its convention earned on the other sites, and the
        partner origins, where it held in this session (:meth:`prior_support`)
        count too. A rule is evidence about the days it was seen: until this
        session has seen it hold once (a support, a confirmed prediction), its
        earlier confirmations earn it no trust here (0: every prediction is
        checked), as an alias of an earlier crawl is checked.
        """
        record = self.storage.rules_at(key.origin).get(key)
        if record is None or record.status(self._judged(key), self.clock()) is not RuleStatus.ACTIVE:
            return 0
        if record.last_support < self.session_start:
            return 0
        return record.support + self.prior_support(key)

    # -- deferred requests ------------------------------------------------

    def defer(self, url: str, rules: Iterable[RuleKey]) -> None:
        """Keep ``url``, merged away by ``rules``, for re-scheduling if one is contradicted."""
        for rule in rules:
            self.storage.add_deferred(rule, url)
        self.storage.observed()

    def take_deferred(self, rule: RuleKey) -> list[str]:
        """The URLs merged away by ``rule`` (removed from the store)."""
        return self.storage.take_deferred(rule)

    # -- explaining, listing, forgetting ----------------------------------

    def explain(self, a: str, b: str | None = None) -> Explanation:
        """Why ``a`` (and ``b``) resolve where they do; any URLs, canonicalized here."""
        res_a = self._resolve_any(a)
        res_b = None if b is None else self._resolve_any(b)
        return explanation(self, res_a, res_b)

    def _resolve_any(self, url: str) -> Resolution:
        form = scheme_form(url.partition("#")[0])
        return self.resolve(form) if form is not None else Resolution(url, url, (), "not a valid URL")

    def aliases(self) -> Iterator[Alias]:
        """Every exact alias."""
        return self.storage.aliases()

    def rules(self) -> Iterator[RuleRecord]:
        """Every rule record (candidates, active and suspended rules, origin blocks; not the origins' alias records)."""
        return (record for record in self.storage.rules() if record.key.kind != ALIAS)

    def evidence(self, url: str | None = None) -> Iterator[Evidence]:
        """The evidence log, or the entries about one URL (any form)."""
        return self.storage.evidence(None if url is None else scheme_form(url) or url)

    def forget(self, url: str) -> int:
        """Forget what was learned from ``url``: its alias, declared case and evidence. Returns entries removed."""
        self.storage.refresh()
        form = scheme_form(url) or url
        removed = 0
        if self.storage.alias(form) is not None:
            self.storage.set_alias(form, None)
            removed += 1
        if self._forget_declared_case(form):
            removed += 1
        removed += self.storage.drop_evidence(form)
        self.storage.flush()
        return removed

    def _forget_declared_case(self, url: str) -> bool:
        key = case_key(url)
        if self.storage.declared_case(key) != url:
            return False
        self.storage.set_declared_case(key, None)
        return True

    def forget_host(self, host: str) -> int:
        """Forget every alias, rule and sink learned on ``host``. Returns entries removed.

        ``host`` is ``name`` (its default ports: what URLs without a port
        reach), ``name:port`` (that port only) or ``name:*`` (every port).
        """
        on_host = _authority_matcher(host)
        self.storage.refresh()
        removed = 0
        for alias in list(self.storage.aliases()):
            if on_host(alias.source):
                self.storage.set_alias(alias.source, None)
                removed += 1
        for record in list(self.storage.rules()):
            if on_host(record.key.origin + "/"):
                self.storage.set_rule(record.key, None)
                removed += 1
        for target, _ in list(self.storage.fanins()):
            if on_host(target):
                self.storage.drop_fanin(target)
                removed += 1
        for declared in list(self.storage.declared_cases()):
            if on_host(declared) and self._forget_declared_case(declared):
                removed += 1
        self.storage.flush()
        return removed

    def rule_label(self, record: RuleRecord) -> str:
        """The one word ``stats`` and ``export`` use for a rule record (see :func:`._report.rule_label`)."""
        return rule_label(self, record)

    def stats(self) -> dict[str, int]:
        """Counts of what the store holds."""
        return stats(self)

    def export(self, *, evidence: bool = False) -> Iterator[dict[str, Any]]:
        """Everything as JSON-ready dicts, each with a ``"type"``."""
        return export(self, evidence=evidence)


# -- what learning in bulk keeps ---------------------------------------------
