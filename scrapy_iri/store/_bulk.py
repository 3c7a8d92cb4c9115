"""Bulk learning: many recorded exchanges learned a chunk at a time, as one-at-a-time recording would.

:class:`BulkLearning` is the part of :class:`~._learner.EquivalenceStore`
that :meth:`~BulkLearning.learn` runs: a chunk's URLs split once, its reads
made ahead in a few round trips, its writes committed together, and the
counts that change no rule's status made in place. What it cannot do in
place goes through the learner's one-at-a-time methods, so the store it
leaves is the one ``record_redirect`` and ``record_response`` leave
(``tests/store/test_learn_bulk.py``).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Mapping
from itertools import islice
from typing import Any, NamedTuple

from ._evidence import USERINFO, Alias, Evidence
from ._forms import CACHED_LENGTH, form_spelling, origin_of, sink_key, split_form
from ._observation import LEARN_CHUNK, KnownFree, LearnSummary, Observation, batched, observation_forms, prefetch_keys
from ._outcome import At, Outcome, same_site, site_and_family
from ._rules import (
    ANYWHERE,
    BLOCK,
    GENERALIZES,
    PERMANENT,
    REDIRECTS,
    Prediction,
    RuleKey,
    RuleRecord,
    Verdict,
    case_key,
    declared_prediction,
    generalized,
    known_free,
)
from ._storage import Storage


class BulkLearning:
    """:meth:`learn`, and the chunk kernel it runs (a part of :class:`~._learner.EquivalenceStore`)."""

    def learn(
        self,
        observations: Iterable[Observation],
        *,
        progress: Callable[[int], None] | None = None,
        chunk: int = LEARN_CHUNK,
    ) -> LearnSummary:
        """Learn from many recorded exchanges, in the order given, as one-at-a-time recording would.

        Each observation is applied at its own ``time`` (now when it has
        none), so an archive's captures must come in date order: a later
        capture that answers 200 ends what an earlier 301 taught. They are
        taken ``chunk`` at a time: what a chunk needs from the storage is read
        in a few round trips, and its writes are committed together.
        ``progress(n)`` is called after each chunk with the number applied so far.
        """
        summary = LearnSummary()
        storage = self.storage
        clock, storage_clock = self.clock, storage.clock
        at = At(clock)
        done = 0
        # the cyclic collector waits while a chunk is learned (its objects form no cycles), and
        # what was allocated before a chunk, or by it, is kept out of its passes (given back at the
        # end): only what reading the next observations allocates is scanned
        collecting = gc.isenabled()
        freeze = collecting and not gc.get_freeze_count()
        # what watches the storage's writes (the resolution memo) hears of a chunk once, at its end,
        # as a change of anything: no lookup is made while a chunk is learned
        watchers = storage.watchers
        try:
            for batch in batched(observations, max(1, chunk)):
                if freeze:
                    gc.freeze()
                if collecting:
                    gc.disable()
                storage.watchers = ()
                forms = [observation_forms(obs) for obs in batch]
                storage.refresh()
                free: KnownFree = {}
                if storage.reads_ahead:
                    storage.prefetch(prefetch_keys(forms, free))
                self.clock = storage.clock = at
                storage.recorded_time = True
                self._unwritten = {} if self._defer_writes else None
                self._learn_chunk(batch, forms, at, summary, free)
                self._write_unwritten()
                self._unwritten = None
                _heard(storage, watchers)
                self.clock, storage.clock, storage.recorded_time = clock, storage_clock, False
                summary.rules_contradicted += len(self._observed(Outcome()).contradicted)
                if freeze:
                    gc.freeze()
                if collecting:
                    gc.enable()
                done += len(batch)
                if progress is not None:
                    progress(done)
        finally:
            if self._unwritten is not None:
                self._write_unwritten()
                self._unwritten = None
            if storage.watchers is not watchers:
                _heard(storage, watchers)
            self.clock, storage.clock, storage.recorded_time = clock, storage_clock, False
            if collecting:
                gc.enable()
            if freeze:
                gc.unfreeze()
        return summary

    def _learn_chunk(
        self, batch: list[Observation], forms: list[tuple[str | None, str | None]], at: At, summary: LearnSummary, free: KnownFree
    ) -> None:
        """Learn one chunk: the common observations (redirects between hosts, documents) through the
        bulk kernel, each URL's facts computed once; the others as one-at-a-time recording does."""
        facts: dict[str, _Facts] = {}
        add = summary.add
        count = learned = activated = contradicted = 0  # what :meth:`LearnSummary.add` counts, for most outcomes
        for obs, (src, tgt) in zip(batch, forms):
            at.time = obs.time
            status = obs.status
            if src is None:
                add(self._learn_observation(obs, src, tgt))
            elif status in REDIRECTS:
                if tgt is None:
                    add(self._learn_observation(obs, src, tgt))
                    continue
                fs = facts.get(src)
                if fs is None:
                    fs = facts[src] = _facts(src)
                ft = facts.get(tgt)
                if ft is None:
                    ft = facts[tgt] = _facts(tgt)
                outcome = self._bulk_hop(src, status, tgt, obs.context, obs.location, obs.max_age, fs, ft, free)
                if outcome.ignored or outcome.dropped_alias or outcome.sink:
                    add(outcome)
                    continue
                count += 1
                learned += outcome.learned_alias
                if outcome.activated:
                    activated += len(outcome.activated)
                if outcome.contradicted:
                    contradicted += len(outcome.contradicted)
            elif status < 400:
                fs = facts.get(src)
                if fs is None:
                    fs = facts[src] = _facts(src)
                add(self._bulk_answer(src, status, obs.context, fs, free))
            else:
                add(self._learn_observation(obs, src, tgt))
        summary.observations += count
        summary.aliases_learned += learned
        summary.rules_activated += activated
        summary.rules_contradicted += contradicted

    def _bulk_hop(
        self,
        src: str,
        status: int,
        tgt: str,
        context: frozenset[str],
        location: str | None,
        lifetime: float | None,
        fs: _Facts,
        ft: _Facts,
        known: KnownFree,
    ) -> Outcome:
        """:meth:`_learn_hop` in a bulk chunk, the URLs' facts given."""
        src_host, tgt_host = fs.host, ft.host
        if not src_host or not tgt_host:
            return Outcome(ignored="a URI without a host")
        flags = frozenset(context)
        if fs.userinfo or ft.userinfo:
            flags |= {USERINFO}
        now = self.clock()
        outcome = Outcome()
        notes: list[str] = []
        policy = self._policy
        if fs.spelling == ft.spelling:
            sources: list[str] = []
            sink = False
        else:
            sources = self.storage.add_fanin(sink_key(tgt), src.partition("#")[0], policy.sink_fanin)  # its source_key
            sink = outcome.sink = len(sources) >= policy.sink_fanin
        cross_site = src_host != tgt_host and not same_site(src_host, tgt_host)
        permanent = status in PERMANENT
        if permanent and src != tgt:
            refusal = self._alias_refusal(flags, cross_site, sink) if flags or cross_site or sink else ""
            if not refusal and lifetime is not None and lifetime <= 0:
                refusal = "not to be reused (no-store, no-cache or no lifetime)"
                if self._end_alias(src, outcome):
                    notes.append("alias dropped: the redirect may not be reused")
            if refusal:
                notes.append(f"no alias: {refusal}")
            elif lifetime is None and self.storage.alias(src) is None:  # a new alias (:meth:`_state_alias`)
                self.storage.set_alias(src, Alias(src, tgt, status, now, None))
                outcome.learned_alias = True
            else:
                self._state_alias(src, tgt, status, now, lifetime, outcome)
        elif not permanent:
            if self._end_alias(src, outcome):
                notes.append("alias dropped: no longer a permanent redirect")
            self.storage.answered(src)
        hop = f"{src} -{status}-> {tgt}"
        free = known[src] if src in known else known_free(src)
        if free is not None:
            trusted = not flags and not sink and not cross_site
            agreed = (Verdict.SUPPORT if trusted else Verdict.NEUTRAL) if permanent else Verdict.AGAINST
            judged = []
            before, after = free
            known_case = self.storage.case_target
            if known_case(case_key(src)) is not None:
                before = self._predictions(src, free)
                after = ()
            for prediction in (*before, *after) if after else before:
                verdict = agreed if prediction.target == tgt else Verdict.AGAINST
                if verdict is not Verdict.NEUTRAL:
                    judged.append((prediction.key, verdict))
            if judged:
                self._count_bulk(fs.origin, judged, now, hop, outcome)
        if sink:
            notes.append(f"sink: {len(sources)}+ sources redirect to {sink_key(tgt)}")
            for origin in {fs.origin, *(origin_of(s) for s in sources)}:
                self._count(RuleKey(origin, BLOCK), Verdict.AGAINST, now, f"sink {sink_key(tgt)} ({hop})", outcome)
        shown = location if location is not None and location != tgt else None
        self.storage.add_evidence(Evidence(now, src, status, tgt, flags, "; ".join(notes), shown))
        return outcome

    def _predictions(self, url: str, free: tuple[tuple[Prediction, ...], tuple[Prediction, ...]]) -> tuple[Prediction, ...]:
        """:func:`~._rules.predictions` of a covered URL whose predictions that need nothing known are given."""
        before, after = free
        known = self.storage.case_target
        declared = None if known(case_key(url)) is None else declared_prediction(url, known)
        if declared is None:
            return before + after if after else before
        return (*before, declared, *after)

    def _bulk_answer(self, u: str, status: int, context: frozenset[str], fu: _Facts, known: KnownFree) -> Outcome:
        """:meth:`_learn_answer` in a bulk chunk (no note), the URL's facts given."""
        outcome = Outcome()
        context = frozenset(context) | ({USERINFO} if fu.userinfo else frozenset())
        now = self.clock()
        dropped = self._end_alias(u, outcome)
        self.storage.answered(u)
        free = known[u] if u in known else known_free(u)
        if free is not None:
            records = self.storage.rules_at(fu.origin)
            supported = False
            judged = []
            for prediction in self._predictions(u, free):
                if not supported:
                    record = records.get(prediction.key)
                    supported = record is not None and record.support > 0
                judged.append((prediction.key, Verdict.AGAINST))
            if judged:
                self._count_bulk(fu.origin, judged, now, f"{u} answered {status}", outcome)
        else:
            supported = False
        if supported or dropped:
            note = "alias dropped: answered for itself" if dropped else ""
            self.storage.add_evidence(Evidence(now, u, status, None, frozenset(context), note))
        if not context and self._declares_case(u, now):
            self.storage.set_declared_case(case_key(u), u)
        return outcome

    def _active_bulk(self, key: RuleKey, now: float, records: Mapping[RuleKey, RuleRecord]) -> bool:
        """:meth:`_is_active` of a record among ``records``, without building the policy it is judged with."""
        record = records.get(key)
        return record is not None and self._active_record(record, now)

    def _active_record(self, record: RuleRecord, now: float) -> bool:
        """Whether ``record``'s status is active (:meth:`_judged` by :meth:`_needed`)."""
        if not record.support:
            return False
        ttl = self._policy.rule_ttl
        if record.against and now - record.last_against <= ttl or now - record.last_support > ttl:
            return False
        return record.support >= self._policy.min_observations or record.support >= self._needed(record.key)

    def _count_bulk(self, origin: str, judged: list[tuple[RuleKey, Verdict]], now: float, note: str, outcome: Outcome) -> None:
        """:meth:`_count_all` in a bulk chunk: a count that changes no rule's status is made here
        (a counterexample to a rule already suspended or never supported, a support that leaves a
        rule a candidate or confirms an active one); the others go through :meth:`_count_rule`."""
        records = self.storage.rules_at(origin)
        ttl = self._policy.rule_ttl
        block_key = _BLOCKS.get(origin)
        if block_key is None:
            block_key = _block_key(origin)
        block = records.get(block_key)
        if block is not None and block.against and now - block.last_against <= ttl:  # :meth:`_blocked`
            for key, verdict in judged:
                self._count_rule(records, True, key, verdict, now, note, outcome)
            return
        for key, verdict in judged:
            while True:  # the rule, then the origin-wide rule it speaks for
                record = records.get(key)
                wide = _WIDE.get(key)
                if wide is None:
                    wide = _wide(key)
                if verdict is Verdict.AGAINST:
                    if record is None:
                        record = RuleRecord(key, 0, 1, now, 0.0, now, "", note)
                    elif (
                        (record.against and now - record.last_against <= ttl or not record.against and not record.support)
                        and not (record.support and now - record.last_support > ttl)
                    ):  # suspended, or never supported: it changes no status
                        if not record.first_seen:
                            record.first_seen = now
                        record.against += 1
                        record.last_against = now
                        record.counterexample = note
                    else:
                        self._count_rule(records, False, key, verdict, now, note, outcome)
                        break
                    self._write_rule(key, record, False)
                    if not wide:
                        break
                    key = wide
                    continue
                # a support
                if record is None:
                    if self._needed(key) <= 1:
                        self._count_rule(records, False, key, verdict, now, note, outcome)
                        break
                    record = RuleRecord(key, 1, 0, now, now, 0.0, note, "")
                    self._write_rule(key, record, False)
                    if not wide:
                        break
                    key = wide  # its first support: the origin-wide rule gains one
                    continue
                if record.against or not record.support or now - record.last_support > ttl:
                    self._count_rule(records, False, key, verdict, now, note, outcome)
                    break
                needed = record.support if record.support >= self._policy.min_observations else self._needed(key)
                active = record.support >= needed
                if not active and record.support + 1 >= needed:  # it becomes active
                    self._count_rule(records, False, key, verdict, now, note, outcome)
                    break
                if not record.first_seen:
                    record.first_seen = now
                record.support += 1
                record.last_support = now
                record.example = note
                self._write_rule(key, record, False)
                if active:
                    outcome.confirmed.append(key)
                    self._note_prior(key, held=True, support=record.support)
                if not wide or not self._active_bulk(wide, now, records):
                    break
                key = wide


def _heard(storage: Storage, watchers: tuple[Callable[[str, Any, Any], None], ...]) -> None:
    """Give ``storage`` its ``watchers`` back and tell each that anything may have changed."""
    storage.watchers = watchers
    for watcher in watchers:
        watcher("*", None, None)


_NEW = tuple.__new__


class _Facts(NamedTuple):
    """What learning in bulk asks of one scheme form, computed once per chunk."""

    host: str
    userinfo: bool
    spelling: str
    origin: str


def _facts(url: str) -> _Facts:
    """:func:`_host`, :func:`~._forms.has_userinfo`, :func:`~._forms.spelling_key` and the origin of ``url``, split once."""
    form = split_form(url)
    authority = form.authority
    if authority is None:
        return _Facts("", False, form_spelling(form), origin_of(url))
    host = authority.rpartition("@")[2]
    host = host.partition("]")[0] + "]" if host.startswith("[") else host.partition(":")[0]
    return _NEW(_Facts, (host, "@" in authority, form_spelling(form), f"{form.scheme}://{authority}"))


#: origin -> the key of its block, for the origins counted last
_BLOCKS: dict[str, RuleKey] = {}


def _block_key(origin: str) -> RuleKey:
    found = RuleKey(origin, BLOCK)
    if len(origin) <= CACHED_LENGTH:  # a hostile origin is never held
        if len(_BLOCKS) >= 1 << 14:
            _BLOCKS.clear()
        _BLOCKS[origin] = found
    return found


#: rule key -> the origin-wide rule it speaks for (``()``: none), for the keys counted last
_WIDE: dict[RuleKey, RuleKey | tuple[()]] = {}


def _wide(key: RuleKey) -> RuleKey | tuple[()]:
    """The origin-wide rule a directory's rule of a server-wide kind speaks for (see :meth:`EquivalenceStore._count_rule`)."""
    origin, kind, scope = key
    found: RuleKey | tuple[()] = ()
    if GENERALIZES.get(kind) and not scope.startswith(ANYWHERE):
        found = _NEW(RuleKey, (origin, kind, generalized(scope)))
    if len(origin) + len(scope) <= CACHED_LENGTH:  # a hostile key is never held
        if len(_WIDE) >= 1 << 14:
            _WIDE.clear()
        _WIDE[key] = found
    return found


class PriorIndex:
    """One prior kind's sites and host families where its rule held in this session, counted as the
    learner's record of them (``held``: origin -> (site, family, support); it only grows) grows:
    what :meth:`EquivalenceStore.prior` reads, in a few dictionary reads instead of a scan of every origin."""

    __slots__ = ("held", "seen", "sites", "families")

    def __init__(self, held: dict[str, tuple[str, str, int]]) -> None:
        self.held = held
        self.seen = 0
        self.sites: dict[str, int] = {}
        self.families: dict[str, int] = {}

    def prior(self, origin: str) -> int:
        held = self.held
        if len(held) != self.seen:
            if len(held) < self.seen:
                self.seen, self.sites, self.families = 0, {}, {}
            sites, families = self.sites, self.families
            for s, f, _ in islice(held.values(), self.seen, None):
                sites[s] = sites.get(s, 0) + 1
                families[f] = families.get(f, 0) + 1
            self.seen = len(held)
        site, family = _family_of(origin)
        found = len(self.sites) - (site in self.sites)
        return found + (self.families.get(family, 0) - (origin in held) > 0)


#: origin -> its site and host family (:func:`site_and_family`), for the origins met last
_FAMILIES: dict[str, tuple[str, str]] = {}


def _family_of(origin: str) -> tuple[str, str]:
    found = _FAMILIES.get(origin)
    if found is None:
        found = site_and_family(origin)
        if len(origin) <= CACHED_LENGTH:  # a hostile origin is never held
            if len(_FAMILIES) >= 1 << 14:
                _FAMILIES.clear()
            _FAMILIES[origin] = found
    return found
