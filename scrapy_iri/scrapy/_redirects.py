"""The protocol rung in a crawl: learn from redirects, rewrite before download.

:class:`RedirectLearningMiddleware` is a downloader middleware, enabled by
the :class:`~scrapy_iri.Addon` at priority :data:`ORDER` when ``IRI_RUNG`` is
``"protocol"`` (the add-on's default). It shares the crawler's equivalence
store (``IRI_STORE``) with the dupefilter and:

* reads the identity the request carries (``request.meta["iri_identity"]``,
  computed once when it was scheduled: see :mod:`._identity`) and leaves
  the decisions to :func:`._plan.plan`;
* observes every raw response through the ``response_downloaded`` signal,
  before ``RedirectMiddleware`` turns a 3xx into a new request: each hop
  (source, status, Location, target), including hops whose target the
  dupefilter later drops, and each final answer (a document at a URL a rule
  covers contradicts the rule);
* rewrites a request whose URL has another representative (an exact alias or
  an active rule) to that representative in ``process_request``, before any
  other middleware (robots.txt, auth, cookies) sees it, so the round trip is
  saved. A share (``IRI_VERIFY_SHARE``) of rule predictions is not rewritten
  but verified by fetching the original: each hop of its redirect chain that
  lands on its own identity passes the dupefilter;
* honours every filing: when a chain ends (a document, an error) elsewhere
  than a representative it was filed under, and nothing fetched that
  representative, it is fetched on its own, so a later link to it, dropped
  as a duplicate, is never lost;
* checks aliases an earlier crawl learned: the store merges nothing
  through an alias picked by :func:`._plan.alias_checked` (every alias of an
  origin until later crawls confirmed its aliases, then a decaying share), so its
  source is fetched as it is; a source that answers anything but the same
  permanent redirect ends the alias, and a redirect's stated lifetime
  (``Cache-Control``, ``Expires``) bounds how long its alias is used;
* keeps every request a rule (or an alias from an earlier crawl) merged away (rewritten, or dropped by the
  dupefilter as a duplicate of its predicted target; the dupefilter hands
  those over through the crawl object, or Scrapy's ``request_dropped``
  signal under another scheduler or dupefilter) in the store and in
  memory. When a rule is contradicted those requests are scheduled again:
  a wrong rule costs fetches, never pages. A rule-rewritten request that
  lands on 404/410, or cannot be downloaded at all, has its original fetched
  to check the rule (its redirects followed), and so has every request a
  rule merges into a URL that answered 404/410 in this crawl, or into any
  hop of a chain that ended there;
* checks the predictions the dupefilter dropped as duplicates of their
  targets by a rule that has not held in this crawl yet, by fetching the
  originals one at a time per rule until the rule holds or falls;
* checks every prediction of a rule learned in an earlier crawl until the
  rule holds once in this one, whatever the verification share.

Stats: ``iri/learned/exact``, ``iri/learned/rule``, ``iri/rewritten``,
``iri/verified``, ``iri/contradicted``, and ``iri/verify`` (verification
fetches, alias checks included), ``iri/deferred``, ``iri/rescheduled``,
``iri/alias/checked``, ``iri/alias/confirmed``, ``iri/alias/ended``.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, NoReturn

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.httpobj import urlparse_cached

from scrapy_iri import Rung
from scrapy_iri.store import Alias, EquivalenceStore, Outcome, RuleKey, context_flags, stated_lifetime
from scrapy_iri.store._forms import scheme_form
from scrapy_iri.store._rules import PERMANENT, REDIRECTS

from ._identity import (
    META_IDENTITY,
    RequestIdentities,
    RequestIdentity,
    component_request,
    protocol_mergeable,
    protocol_rewritable,
)
from ._location import redirect_target
from ._plan import REWRITE, SEND, VERIFY, Flight, Plan, alias_checked, plan, verification_share, verifies_by_hash
from ._settings import IRISettings

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

logger = logging.getLogger(__name__)

#: DOWNLOADER_MIDDLEWARES priority: before OffsiteMiddleware (50) and robots.txt (100)
ORDER = 40

#: meta key set on rewritten requests: the URL before the rewrite
META_REWRITTEN_FROM = "iri_rewritten_from"
#: meta key a request can set to be sent as it is
META_DONT_REWRITE = "iri_dont_rewrite"
#: internal meta: the :class:`~._plan.Flight` of a request the middleware planned
_FLIGHT = "_iri_flight"
#: requests held in memory for re-scheduling (beyond it only their URLs are kept)
HELD_MAX = 100_000
#: answers to a rule-rewritten request that make the middleware check the original
_SUSPICIOUS = frozenset({404, 410})


__all__ = [
    "META_DONT_REWRITE",
    "META_REWRITTEN_FROM",
    "ORDER",
    "RedirectLearningMiddleware",
    "exchange_context",
    "location_url",
    "verifies",
]


def verifies(form: str, share: float) -> bool:
    """Whether the prediction for the scheme form ``form`` is verified: a stable ``share`` of URLs, by hash."""
    return verifies_by_hash(form, share)


def exchange_context(request: Request, response: Response) -> frozenset[str]:
    """Why this exchange may depend on who asked (empty: it teaches about the URL alone)."""
    return context_flags(
        method=request.method,
        userinfo="@" in urlparse_cached(request).netloc,
        cookie=b"Cookie" in request.headers,
        authorization=b"Authorization" in request.headers,
        set_cookie=b"Set-Cookie" in response.headers,
        vary=[v.decode("latin-1") for v in response.headers.getlist(b"Vary")],
    )


def redirect_lifetime(response: Response) -> float | None:
    """The seconds a redirect said it stays true (``Cache-Control``, ``Expires``), ``None`` if it said nothing."""
    headers = response.headers

    def one(name: bytes) -> str | None:
        value = headers.get(name)
        return None if value is None else value.decode("latin-1")

    cache_control = [v.decode("latin-1") for v in headers.getlist(b"Cache-Control")]
    if not cache_control and b"Expires" not in headers:
        return None
    return stated_lifetime(cache_control, one(b"Expires"), one(b"Date"), one(b"Age"))


def location_url(request: Request, location: bytes) -> str:
    """The absolute URL a Location header points to, as the crawl follows it.

    The same mapping as :class:`~scrapy_iri.scrapy._location.IRILocationMiddleware`
    (which the add-on enables) followed by Scrapy's RedirectMiddleware, so
    what is learned is what is fetched (never IDNA2003's ``fass`` for ``faß``).
    """
    return redirect_target(request, location)


def _known_enqueues() -> tuple[object, ...]:
    """The schedulers' ``enqueue_request`` that drop a request only as the dupefilter's duplicate, after its ``log``."""
    from scrapy.core.scheduler import Scheduler

    known: list[object] = [Scheduler.enqueue_request]
    try:
        from scrapy_redis.scheduler import Scheduler as RedisScheduler
    except ImportError:
        pass
    else:
        known.append(RedisScheduler.enqueue_request)
    return tuple(known)


def _hands_over_duplicates(crawler: Crawler, crawl: object) -> bool:
    """Whether every request the engine drops passes the crawl's dupefilter's ``log`` (so ``crawl.dropped`` sees it)."""
    from ._dupefilter import IRIDupeFilter

    scheduler = getattr(crawler.engine, "scheduler", None)
    df = getattr(scheduler, "df", None)
    return (
        isinstance(df, IRIDupeFilter)
        and df.crawl is crawl
        and df.fallback is None
        and type(df).log is IRIDupeFilter.log
        and "log" not in vars(df)
        and getattr(type(scheduler), "enqueue_request", None) in _known_enqueues()
    )


class RedirectLearningMiddleware:
    """Downloader middleware of the protocol rung (see the module docstring).

    Enabled by the add-on when ``IRI_RUNG = "protocol"``; not configured
    under ``IRI_COMPAT`` or at a lower rung.
    """

    def __init__(
        self,
        crawler: Crawler,
        store: EquivalenceStore,
        identities: RequestIdentities | None = None,
        settings: IRISettings | None = None,
    ) -> None:
        """``identities`` and ``settings`` default to the crawl object's (:class:`~._crawl.IRICrawl`)."""
        if identities is None or settings is None:
            from ._crawl import IRICrawl

            crawl = IRICrawl.of(crawler)
            identities, settings = identities or crawl.identities, settings or crawl.settings
        self.crawler = crawler
        self.store = store
        self.stats = crawler.stats
        self.verify_share = settings.verify_share
        self.verify_adaptive = settings.verify_adaptive
        self.rewrite = settings.rewrite
        self.identities = identities
        self.held: dict[str, Request] = {}
        #: target scheme form -> URLs held because a rule merged them into it, and that rule
        self.merged_into: dict[str, dict[str, RuleKey]] = {}
        #: scheme forms that answered 404 or 410 in this crawl: what a rule merges into them is checked
        self.gone: set[str] = set()
        #: scheme forms fetched as they are, or on their way to the downloader: never twice
        self.fetched: set[str] = set()
        #: scheme forms this middleware scheduled itself (filings, re-scheduled requests): scheduled once
        self.queued: set[str] = set()
        #: rule -> scheme forms the dupefilter dropped as its predictions before it held in this crawl
        self.unchecked: dict[RuleKey, dict[str, Request]] = {}
        #: rule -> the scheme form of its dropped prediction being fetched as a check (one per rule at a time)
        self.checking: dict[RuleKey, str] = {}
        store.alias_check = self._alias_checked

    def _alias_checked(self, alias: Alias) -> bool:
        """Whether an alias an earlier crawl learned is checked in this one (see :func:`._plan.alias_checked`)."""
        return alias_checked(alias, self.store.alias_trust(alias.source), self.verify_share)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        from ._crawl import IRICrawl

        crawl = IRICrawl.of(crawler)
        if not crawl.settings.needs_store or crawl.settings.rung is not Rung.PROTOCOL:
            raise NotConfigured("IRI_RUNG is not 'protocol'")
        middleware = cls(crawler, crawl.store, crawl.identities, crawl.settings)
        crawler.signals.connect(middleware.response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(middleware.request_dropped, signal=signals.request_dropped)
        crawler.signals.connect(middleware.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(middleware.spider_idle, signal=signals.spider_idle)
        return middleware

    # -- before download: rewrite or verify -------------------------------------

    def process_request(self, request: Request, spider: Spider | None = None) -> Request | None:
        flight = request.meta.get(_FLIGHT)
        identity = self.identities.of(request)
        if isinstance(flight, Flight) and flight.action:
            if not flight.dont_filter and not component_request(request):  # makes no later one a duplicate, as in Scrapy
                sent = identity.sent_form or request.url
                if flight.claim:
                    self._claim(request, flight, sent)
                self.fetched.add(sent)
            return None  # planned already (a rewritten request, a check, a retry)
        if identity.form is None:  # an invalid URL: compared as given, never merged
            return None
        dont_filter = flight.dont_filter if isinstance(flight, Flight) else request.dont_filter
        if not self.rewrite or not protocol_rewritable(request):
            self._send(request, identity, Flight(dont_filter, SEND))
            return None
        filed_as = identity.representative or identity.form
        now = self.store.resolve(identity.form)
        decision = plan(identity.form, filed_as, now, self._verifies)
        if decision.action == REWRITE and decision.rules and decision.target in self.gone:
            decision = Plan(VERIFY, rules=decision.rules[:1])  # a prediction into a page that is gone is checked
        fetches = decision.target if decision.target is not None else identity.form
        if fetches in self.fetched and not dont_filter and not component_request(request):
            self._drop_fetched(request, identity.form, filed_as, fetches, decision.rules)
        if now.held is not None:  # what is fetched asks the server about an alias again
            self.stats.inc_value("iri/verify")
            self.stats.inc_value("iri/alias/checked")
        if decision.action == VERIFY:
            self.stats.inc_value("iri/verify")
            self._send(request, identity, Flight(dont_filter, VERIFY, tuple(str(r) for r in decision.rules)))
            return None
        if decision.action == SEND:
            self._send(request, identity, Flight(dont_filter, SEND))
            return None
        assert decision.target is not None
        self.stats.inc_value("iri/rewritten")
        if decision.rules:
            self._hold(request, decision.rules, decision.target)
        if decision.orphan is not None and self.store.representative(decision.orphan) != decision.target:
            self._fetch_filing(request, decision.orphan)
        rules = tuple(str(rule) for rule in decision.rules)
        flight = Flight(dont_filter, REWRITE, rules, request.url)
        meta = {**request.meta, META_REWRITTEN_FROM: request.url, _FLIGHT: flight}
        if decision.filed:  # the dupefilter holds it under the target already: it must pass
            self.fetched.add(decision.target)  # on its way: a request for the target meanwhile is a duplicate
            meta[META_IDENTITY] = identity.sent_as(decision.target)
            return request.replace(url=decision.target, dont_filter=True, meta=meta)
        # filed under its own URL (the store learned meanwhile): the dupefilter judges the target,
        # and the request notes the target as on its way only when it comes back from the scheduler
        meta.pop(META_IDENTITY, None)
        meta[_FLIGHT] = replace(flight, claim=True)
        return request.replace(url=decision.target, dont_filter=dont_filter, meta=meta)

    def _claim(self, request: Request, flight: Flight, sent: str) -> None:
        """A request planned earlier reaches the downloader: drop it if ``sent`` was fetched meanwhile.

        A rewrite sent back through the dupefilter is judged there on its
        target, and a check the middleware scheduled passes it: neither
        stops a request the dupefilter never saw (one the middleware
        scheduled itself) or one filed under another identity from fetching
        the same URL first. Both fetch ``sent`` exactly as it is: the other
        request fetches the same resource, and its answer is recorded as
        this one's would be.
        """
        request.meta[_FLIGHT] = replace(flight, claim=False)  # a retry of this request is this request
        if sent not in self.fetched:
            return
        self.stats.inc_value("iri/filtered/fetched")
        raise IgnoreRequest(f"fetched already in this crawl: {sent}")

    def _drop_fetched(
        self, request: Request, form: str, filed_as: str, fetches: str, rules: tuple[RuleKey, ...]
    ) -> NoReturn:
        """Drop a request for a URL this crawl fetched already as it is (by a request filed under another identity).

        The dupefilter could not tell: the earlier request was filed under
        what a rule or an alias predicted, and that merge fell since. What
        this request was filed under is fetched if nothing fetched it; a
        request a rule merged is kept, as the dupefilter's duplicates are.
        """
        if rules:
            self._hold(request, rules, fetches)
        if filed_as not in (form, fetches) and self.store.representative(filed_as) != fetches:
            self._fetch_filing(request, filed_as)
        identity = request.meta.get(META_IDENTITY)
        if isinstance(identity, RequestIdentity) and identity.url == request.url and identity.filings:
            self._honor_chain_filings(request, identity, fetches)
        self.stats.inc_value("iri/filtered/fetched")
        raise IgnoreRequest(f"fetched already in this crawl: {fetches}")

    def _send(self, request: Request, identity: RequestIdentity, flight: Flight) -> None:
        request.meta[_FLIGHT] = flight
        if identity.form is not None and not flight.dont_filter and not component_request(request):
            self.fetched.add(identity.form)

    def _verifies(self, form: str, rule: RuleKey) -> bool:
        """Whether this prediction is checked by fetching the original (see :func:`._plan.verification_share`).

        A rule that has not held in this crawl yet (learned in an earlier
        one: no confirmations here) has every prediction checked, whatever
        the share.
        """
        confirmations = self.store.confirmations(rule)
        if not confirmations:
            return True
        if not self.verify_adaptive:
            return verifies(form, self.verify_share)
        return verifies(form, verification_share(confirmations, self.verify_share))

    # -- after download: learn ---------------------------------------------------

    def response_downloaded(self, response: Response, request: Request, spider: Spider | None = None) -> None:
        """Record one raw exchange (runs before any middleware's ``process_response``)."""
        flight = request.meta.pop(_FLIGHT, None)
        if isinstance(flight, Flight):
            request.dont_filter = flight.dont_filter  # a redirect of it is filtered as usual
        else:
            flight = None
        status = response.status
        context = exchange_context(request, response)
        location = response.headers.get(b"Location") if status in REDIRECTS else None
        target = None
        form = self.identities.of(request).sent_form  # None: not a valid IRI, nothing to learn
        if location:
            target = location_url(request, location)
            lifetime = redirect_lifetime(response) if status in PERMANENT else None
            outcome = Outcome() if form is None else self.store.record_redirect(
                form, status, target, context=context, location=location.decode("latin-1"), lifetime=lifetime
            )
        elif status not in REDIRECTS and form is not None:
            outcome = self.store.record_response(form, status, context=context)
        else:
            outcome = Outcome()
        self._account(outcome)
        followed = target is not None and protocol_mergeable(request)
        if not followed:
            self._honor_filings(request)
        if flight is not None and flight.action == VERIFY and flight.rules:
            rule = RuleKey.parse(flight.rules[0])
            if rule in outcome.confirmed:
                self.stats.inc_value("iri/verified")
            if form is not None and self.checking.get(rule) == form:  # a dropped prediction's check is answered
                del self.checking[rule]
                self._check_dropped(rule)
        if flight is not None and flight.action == REWRITE and flight.rules and status in _SUSPICIOUS:
            self._check_original(request, flight, RuleKey.parse(flight.rules[0]))
        if status in _SUSPICIOUS and form is not None:
            self._gone(form, request)
        for rule in (*outcome.contradicted, *outcome.ended):
            self._reschedule(rule)

    def _honor_filings(self, request: Request) -> None:
        """The chain of ``request`` ends here: fetch what it was filed under and nothing fetched.

        A request fetched as it is (verified, or its rule fell meanwhile) was
        filed under its representative: the dupefilter drops later links to
        it as seen. If the chain did not end there, it is fetched on its own.
        """
        identity = request.meta.get(META_IDENTITY)
        if not isinstance(identity, RequestIdentity) or identity.url != request.url:
            return
        pending = identity.filings + ((identity.representative,) if identity.merged else ())
        if not pending:
            return
        here = identity.sent_form
        for filed_as in pending:
            # Only what was fetched here counts: where the store would send ``here`` (a
            # prediction that an error or a redirect not followed did not confirm) was not fetched.
            if filed_as == here or self.store.representative(filed_as) == here:
                continue
            self._fetch_filing(request, filed_as)

    def _fetch_filing(self, request: Request, filed_as: str) -> None:
        """Fetch ``filed_as``, a URL the dupefilter holds as seen for ``request``, unless already fetched."""
        if filed_as in self.fetched or filed_as in self.queued:
            return
        self.queued.add(filed_as)
        drop = (_FLIGHT, META_REWRITTEN_FROM, META_IDENTITY, "redirect_urls", "redirect_reasons", "redirect_times")
        meta = {k: v for k, v in request.meta.items() if k not in drop}
        meta[_FLIGHT] = Flight(False)
        self.stats.inc_value("iri/filings_fetched")
        self._crawl(request.replace(url=filed_as, dont_filter=True, meta=meta))

    def process_exception(self, request: Request, exception: Exception, spider: Spider | None = None) -> None:
        """A rule-rewritten request that cannot be downloaded (after retries): check the original."""
        flight = request.meta.get(_FLIGHT)
        if isinstance(flight, Flight) and flight.action == REWRITE and flight.rules:
            del request.meta[_FLIGHT]
            self._check_original(request, flight, RuleKey.parse(flight.rules[0]))

    def _account(self, outcome: Outcome) -> None:
        if outcome.learned_alias:
            self.stats.inc_value("iri/learned/exact")
        if outcome.activated:
            self.stats.inc_value("iri/learned/rule", len(outcome.activated))
            for rule in outcome.activated:
                logger.info("Learned rule %(rule)s", {"rule": str(rule)})
        if outcome.confirmed_alias:
            self.stats.inc_value("iri/verified")
            self.stats.inc_value("iri/alias/confirmed")
        if outcome.ended:
            self.stats.inc_value("iri/alias/ended", len(outcome.ended))
        if outcome.contradicted:
            self.stats.inc_value("iri/contradicted", len(outcome.contradicted))
            for rule in outcome.contradicted:
                logger.info("Rule contradicted, suspended: %(rule)s", {"rule": str(rule)})

    def _check_original(self, rewritten: Request, flight: Flight, rule: RuleKey) -> None:
        """Fetch the URL a rule rewrote, as it was, when its prediction led to an error."""
        original = flight.rewritten_from
        if not original:
            return
        carried = rewritten.meta.get(META_IDENTITY)  # the original's, sent as its representative (filed there)
        original_form = carried.form if isinstance(carried, RequestIdentity) and carried.rewritten_to else None
        key = original_form or scheme_form(original) or original
        if key in self.fetched or key in self.queued:
            return  # fetched as it is already, or on its way (re-scheduled when its rule fell, or checked)
        meta = {k: v for k, v in rewritten.meta.items() if k not in (META_REWRITTEN_FROM, META_IDENTITY)}
        # its redirects are followed: where the server sends it now is a page the rule would lose
        meta[_FLIGHT] = Flight(flight.dont_filter, VERIFY, (str(rule),))
        self.stats.inc_value("iri/verify")
        self.fetched.add(key)
        self._crawl(rewritten.replace(url=original, dont_filter=True, meta=meta))

    # -- requests merged away by rules -------------------------------------------

    def spider_opened(self, spider: Spider | None = None) -> None:
        """Take dropped duplicates from the dupefilter directly when it is scrapy-iri's under a known scheduler.

        Until then (and for good with another scheduler or dupefilter) they
        come through Scrapy's ``request_dropped`` signal, which costs a
        dispatch per duplicate link; never both ways at once.
        """
        from ._crawl import IRICrawl

        crawl = IRICrawl.of(self.crawler)
        if _hands_over_duplicates(self.crawler, crawl):
            self.crawler.signals.disconnect(self.request_dropped, signal=signals.request_dropped)
            crawl.dropped = self.request_dropped

    def request_dropped(self, request: Request, spider: Spider | None = None) -> None:
        """A duplicate the dupefilter dropped: keep it if a rule made it one; honour its chain's filings."""
        identity = request.meta.get(META_IDENTITY)
        if not isinstance(identity, RequestIdentity) or identity.url != request.url:
            return
        if identity.rules:
            rules = tuple(RuleKey.parse(rule) for rule in identity.rules)
            self._hold(request, rules, identity.representative)
            form = identity.form
            if form is not None and not self.store.confirmations(rules[0]):
                self.unchecked.setdefault(rules[0], {}).setdefault(form, request)
        if identity.filings:
            self._honor_chain_filings(request, identity, identity.representative or identity.form)
        if (identity.representative or identity.form) in self.gone:
            self._gone(identity.form, request)

    def _check_dropped(self, rule: RuleKey) -> None:
        """Check the next prediction the dupefilter dropped for ``rule``, a rule that has not held in this crawl.

        The dupefilter drops a request whose predicted target it has seen
        before the downloader could check the prediction; a rule of an
        earlier crawl whose every prediction lands on a seen target would
        otherwise never be tested, and keep what it merged. One dropped
        prediction per rule is fetched as it is at a time: when the crawl is
        idle (a link to the same URL that passed the dupefilter has been
        fetched by then), then again after each check that did not confirm
        the rule. Once the rule holds the rest wait no more: the share of the
        predictions that reach the downloader stands for the dropped ones;
        a refutation re-schedules everything the rule merged.
        """
        waiting = self.unchecked.get(rule)
        if waiting is None or rule in self.checking:
            return
        if self.store.confirmations(rule):
            del self.unchecked[rule]
            return
        while waiting:
            form = next(iter(waiting))
            request = waiting.pop(form)
            if form in self.fetched or form in self.queued:
                continue
            self.queued.add(form)
            self.checking[rule] = form
            drop = (_FLIGHT, META_REWRITTEN_FROM, META_IDENTITY)
            meta = {k: v for k, v in request.meta.items() if k not in drop}
            meta[_FLIGHT] = Flight(request.dont_filter, VERIFY, (str(rule),), claim=True)
            self.stats.inc_value("iri/verify")
            self._crawl(request.replace(dont_filter=True, meta=meta))
            break
        if not waiting:
            del self.unchecked[rule]

    def _honor_chain_filings(self, request: Request, identity: RequestIdentity, handled: str | None) -> None:
        """A redirect hop is dropped (another request has its identity): its chain ends here.

        The earlier hops of the chain were filed under representatives that
        were not their own URL, and the dupefilter drops later links to them
        as seen; the request that owns ``handled`` fetches that one only, so
        each other filing nothing fetched is fetched on its own.
        """
        for filed_as in identity.filings:
            if filed_as == handled or self.store.representative(filed_as) == handled:
                continue
            self._fetch_filing(request, filed_as)

    def _hold(self, request: Request, rules: tuple[RuleKey, ...], target: str | None) -> None:
        self.store.defer(request.url, rules)
        if request.url not in self.held:
            self.stats.inc_value("iri/deferred")
            if len(self.held) < HELD_MAX:
                self.held[request.url] = request
                if target is not None:
                    self.merged_into.setdefault(target, {})[request.url] = rules[0]
                    if target in self.gone:
                        self._check_merged_into(target)

    def _gone(self, form: str | None, request: Request) -> None:
        """``form`` answered 404 or 410, and so did every hop of the chain that led ``request`` there.

        A URL that redirects to a page that is gone is gone too: what a rule
        merges into any hop of the chain is checked as what it merges into
        the last one is.
        """
        for hop in request.meta.get("redirect_urls", ()):
            gone = scheme_form(hop)
            if gone is not None and gone not in self.gone:
                self.gone.add(gone)
                self._check_merged_into(gone)
        if form is not None:
            self.gone.add(form)
            self._check_merged_into(form)

    def _check_merged_into(self, target: str) -> None:
        """``target`` is gone (404, 410): fetch, as they are, the URLs a rule merged into it.

        Nothing contradicts the rule yet (an error is neutral evidence), so
        what it merged would stay merged into a page that does not exist;
        each original is fetched once, as a check of the rule's prediction.
        """
        for url, rule in self.merged_into.pop(target, {}).items():
            held = self.held.get(url)
            carried = held.meta.get(META_IDENTITY) if held is not None else None
            form = carried.form if isinstance(carried, RequestIdentity) and carried.url == url else scheme_form(url)
            key = form or url
            if key in self.fetched or key in self.queued:
                continue
            self.queued.add(key)
            flight = Flight(held.dont_filter if held is not None else False, VERIFY, (str(rule),), claim=True)
            if held is not None:
                drop = (_FLIGHT, META_REWRITTEN_FROM, META_IDENTITY)
                meta = {k: v for k, v in held.meta.items() if k not in drop}
                request = held.replace(dont_filter=True, meta={**meta, _FLIGHT: flight})
            else:
                request = Request(url, dont_filter=True, meta={_FLIGHT: flight})
            self.stats.inc_value("iri/verify")
            self._crawl(request)

    def _reschedule(self, rule: RuleKey) -> None:
        """Schedule again what ``rule`` merged away (its own callback, or the spider's default)."""
        for url in self.store.take_deferred(rule):
            held = self.held.pop(url, None)
            carried = held.meta.get(META_IDENTITY) if held is not None else None
            form = carried.form if isinstance(carried, RequestIdentity) and carried.url == url else scheme_form(url)
            if form is not None:
                # Fetched (or on its way) as it is, or as what it resolves to now: done.
                if form in self.fetched or form in self.queued or self.store.representative(form) in self.fetched:
                    continue
                self.queued.add(form)
            # Past the dupefilter: it filed this request already (under what the rule
            # predicted, or under its own URL before a rewrite), so it would drop it as seen.
            # Its identity is computed afresh: the rule it carried has fallen.
            if held is not None:
                drop = (_FLIGHT, META_REWRITTEN_FROM, META_IDENTITY)
                meta = {k: v for k, v in held.meta.items() if k not in drop}
                request = held.replace(dont_filter=True, meta={**meta, _FLIGHT: Flight(held.dont_filter)})
            else:
                request = Request(url, dont_filter=True, meta={_FLIGHT: Flight(False)})
            self.stats.inc_value("iri/rescheduled")
            self._crawl(request)

    def _crawl(self, request: Request) -> None:
        engine = self.crawler.engine
        if engine is None or engine.spider is None:
            return
        engine.crawl(request)

    def spider_idle(self, spider: Spider | None = None) -> None:
        """Commit what was learned while the crawl waits (a batch otherwise waits for the next write);
        check a dropped prediction of each rule that has not held in this crawl."""
        self.store.flush()
        self.checking.clear()  # nothing is in flight: a check that got no answer (an error, a filter) is over
        for rule in list(self.unchecked):
            self._check_dropped(rule)

    def spider_closed(self, spider: Spider | None = None, reason: str = "") -> None:
        """Make what was learned durable (the store itself closes when the engine stops)."""
        self.store.flush()
