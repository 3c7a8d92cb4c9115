"""The protocol rung in a crawl: learn from redirects, rewrite before download.

:class:`RedirectLearningMiddleware` is a downloader middleware, enabled by
the :class:`~scrapy_iri.Addon` at priority :data:`ORDER` when ``IRI_RUNG`` is
``"protocol"`` (the add-on's default). It shares the crawler's equivalence
store (``IRI_STORE``) with the dupefilter and:

* observes every raw response through the ``response_downloaded`` signal,
  before ``RedirectMiddleware`` turns a 3xx into a new request: each hop
  (source, status, Location, target), including hops whose target the
  dupefilter later drops, and each final answer (a document at a URL a rule
  covers contradicts the rule);
* rewrites a request whose URL has another representative (an exact alias or
  an active rule) to that representative in ``process_request``, before any
  other middleware (robots.txt, auth, cookies) sees it, so the round trip is
  saved. The dupefilter keys on the protocol form, so it filed the request
  under that representative already: the rewritten request passes it
  (``dont_filter=True``; the original flag is restored before a redirect of
  it is built). If the store learned the rewrite only after the request was
  filed, the dupefilter judges the target instead. A share
  (``IRI_VERIFY_SHARE``) of rule predictions is not rewritten but verified
  by fetching the original;
* honours every filing: a request filed under a representative but fetched
  as it is (a verification, a rule suspended meanwhile) lets its redirect to
  that representative through the filter once, or has the representative
  fetched on its own, so a later link to it is never dropped unfetched;
* keeps every request a rule merged away (rewritten, or dropped by the
  dupefilter as a duplicate of its predicted target) in the store and in
  memory. When a rule is contradicted those requests are scheduled again:
  a wrong rule costs fetches, never pages. A rule-rewritten request that
  lands on 404/410, or cannot be downloaded at all, has its original fetched
  to check the rule.

Stats: ``iri/learned/exact``, ``iri/learned/rule``, ``iri/rewritten``,
``iri/verified``, ``iri/contradicted``, and ``iri/verify`` (verification
fetches), ``iri/deferred``, ``iri/rescheduled``.
"""

from __future__ import annotations

import logging
import zlib
from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.httpobj import urlparse_cached

from scrapy_iri import IRIError, Rung, canonicalize
from scrapy_iri.store import EquivalenceStore, Outcome, RuleKey, context_flags
from scrapy_iri.store._rules import REDIRECTS

from ._location import redirect_target
from ._settings import IRISettings, crawler_store, learning_policy

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
#: internal meta: ("rewrite", original dont_filter, rule keys), ("verify", rule key)
#: or ("restore", original dont_filter)
_STATE = "_iri_protocol"
#: internal meta: the representative the dupefilter filed a request under, when not its own URL
_FILED_AS = "_iri_filed_as"
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
    "learning_policy",
    "location_url",
    "verifies",
]


def verifies(form: str, share: float) -> bool:
    """Whether the prediction for the scheme form ``form`` is verified: a stable ``share`` of URLs, by hash."""
    return zlib.crc32(form.encode("utf-8")) % 1000 < round(share * 1000)


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


def location_url(request: Request, location: bytes) -> str:
    """The absolute URL a Location header points to, as the crawl follows it.

    The same mapping as :class:`~scrapy_iri.scrapy._location.IRILocationMiddleware`
    (which the add-on enables) followed by Scrapy's RedirectMiddleware, so
    what is learned is what is fetched (never IDNA2003's ``fass`` for ``faß``).
    """
    return redirect_target(request, location)


def _form(url: str) -> str | None:
    try:
        return canonicalize(url, Rung.SCHEME, lenient=True)
    except IRIError:
        return None


class RedirectLearningMiddleware:
    """Downloader middleware of the protocol rung (see the module docstring).

    Enabled by the add-on when ``IRI_RUNG = "protocol"``; not configured
    under ``IRI_COMPAT`` or at a lower rung.
    """

    def __init__(self, crawler: Crawler, store: EquivalenceStore) -> None:
        self.crawler = crawler
        self.store = store
        self.stats = crawler.stats
        config = IRISettings.from_settings(crawler.settings)
        self.verify_share = config.verify_share
        self.rewrite = config.rewrite
        self.held: dict[str, Request] = {}
        #: scheme forms fetched as they are, or scheduled to be (past the dupefilter): never twice
        self.fetched: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = IRISettings.from_settings(crawler.settings)
        if not config.needs_store or config.rung is not Rung.PROTOCOL:
            raise NotConfigured("IRI_RUNG is not 'protocol'")
        middleware = cls(crawler, crawler_store(crawler))
        crawler.signals.connect(middleware.request_scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(middleware.response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(middleware.request_dropped, signal=signals.request_dropped)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(middleware.spider_idle, signal=signals.spider_idle)
        return middleware

    # -- scheduling: remember where the dupefilter files a request ---------------

    def request_scheduled(self, request: Request, spider: Spider | None = None) -> None:
        """Note the representative a request is filed under (the dupefilter asks next, same store)."""
        request.meta.pop(_FILED_AS, None)
        if request.dont_filter or request.method not in ("GET", "HEAD") or request.meta.get("verbatim_url"):
            return
        form = _form(request.url)
        if form is not None:
            representative = self.store.representative(form)
            if representative != form:
                request.meta[_FILED_AS] = representative

    # -- before download: rewrite or verify -------------------------------------

    def process_request(self, request: Request, spider: Spider | None = None) -> Request | None:
        if not self.rewrite or _STATE in request.meta or not self._rewritable(request):
            return None
        form = _form(request.url)
        if form is None:
            return None
        resolution = self.store.resolve(form)
        if not resolution.merged:
            return None
        first = resolution.steps[0]
        if first.rule is not None and self._verifies(form):
            request.meta[_STATE] = ("verify", str(first.rule))
            self.stats.inc_value("iri/verify")
            return None
        self.stats.inc_value("iri/rewritten")
        rules = resolution.rules
        if rules:
            self._hold(request, rules)
        meta = {
            **request.meta,
            META_REWRITTEN_FROM: request.url,
            _STATE: ("rewrite", request.dont_filter, tuple(str(rule) for rule in rules)),
        }
        # Filed under this representative already: the filter must let it pass. Filed
        # under its own URL (the store learned meanwhile): the filter judges the target.
        filed_as = request.meta.get(_FILED_AS)
        filed = request.dont_filter or filed_as == resolution.representative
        if filed_as is not None and filed_as != resolution.representative:
            # Filed under another representative (a rule of the filing was contradicted
            # meanwhile): that URL is seen but would never be fetched. Fetch it on its own,
            # unless it now leads where this request goes (the store learned a longer chain).
            meta.pop(_FILED_AS, None)
            if self.store.representative(filed_as) != resolution.representative:
                self._fetch_filing(request, filed_as)
        return request.replace(url=resolution.representative, dont_filter=filed, meta=meta)

    @staticmethod
    def _rewritable(request: Request) -> bool:
        """GET/HEAD requests that neither ask to see redirects themselves nor to be sent verbatim."""
        meta = request.meta
        if request.method not in ("GET", "HEAD") or meta.get(META_DONT_REWRITE) or meta.get("dont_redirect"):
            return False
        if meta.get("verbatim_url"):  # sent and fingerprinted exactly as given
            return False
        if meta.get("handle_httpstatus_all"):
            return False
        return not REDIRECTS.intersection(meta.get("handle_httpstatus_list", ()))

    def _verifies(self, form: str) -> bool:
        """Whether this prediction is checked by fetching the original (a stable share of URLs)."""
        return verifies(form, self.verify_share)

    # -- after download: learn ---------------------------------------------------

    def response_downloaded(self, response: Response, request: Request, spider: Spider | None = None) -> None:
        """Record one raw exchange (runs before any middleware's ``process_response``)."""
        state = request.meta.pop(_STATE, None)
        filed_as = request.meta.pop(_FILED_AS, None)
        fetched = _form(request.url)
        if fetched is not None:
            self.fetched.add(fetched)
        if state is not None and state[0] in ("rewrite", "restore"):
            request.dont_filter = state[1]  # a redirect of it is filtered as usual
        status = response.status
        context = exchange_context(request, response)
        location = response.headers.get(b"Location") if status in REDIRECTS else None
        target = None
        if location:
            target = location_url(request, location)
            outcome = self.store.record_redirect(
                request.url, status, target, context=context, location=location.decode("latin-1")
            )
        elif status not in REDIRECTS:
            outcome = self.store.record_response(request.url, status, context=context)
        else:
            outcome = Outcome()
        self._account(outcome)
        if filed_as is not None:
            self._honor_filing(request, filed_as, target)
        if state is not None and state[0] == "verify" and RuleKey.parse(state[1]) in outcome.confirmed:
            self.stats.inc_value("iri/verified")
        if state is not None and state[0] == "rewrite" and state[2] and status in _SUSPICIOUS:
            self._check_original(request, RuleKey.parse(state[2][0]))
        for rule in outcome.contradicted:
            self._reschedule(rule)

    def _honor_filing(self, request: Request, filed_as: str, target: str | None) -> None:
        """Make sure the URL the dupefilter filed ``request`` under gets fetched.

        The request was not rewritten (verified, or its rule was suspended
        meanwhile), so the dupefilter holds its representative as seen. If
        the answer redirects there, that redirect must pass the filter once;
        otherwise the representative is fetched on its own, or a later link
        to it would be dropped as already seen.
        """
        if target is not None and self._rewritable(request):  # RedirectMiddleware follows it
            form = _form(target)
            if form is not None and self.store.representative(form) == filed_as:
                request.meta[_STATE] = ("restore", request.dont_filter)
                request.dont_filter = True
                return
        if _form(request.url) != filed_as:
            self._fetch_filing(request, filed_as)

    def _fetch_filing(self, request: Request, filed_as: str) -> None:
        """Fetch ``filed_as``, the URL the dupefilter holds as seen for ``request``, unless already fetched."""
        if filed_as in self.fetched:
            return
        self.fetched.add(filed_as)
        meta = {k: v for k, v in request.meta.items() if k not in (_STATE, META_REWRITTEN_FROM, _FILED_AS)}
        self._crawl(request.replace(url=filed_as, dont_filter=True, meta=meta))

    def process_exception(self, request: Request, exception: Exception, spider: Spider | None = None) -> None:
        """A rule-rewritten request that cannot be downloaded (after retries): check the original."""
        state = request.meta.get(_STATE)
        if state is not None and state[0] == "rewrite" and state[2]:
            del request.meta[_STATE]
            self._check_original(request, RuleKey.parse(state[2][0]))

    def _account(self, outcome: Outcome) -> None:
        if outcome.learned_alias:
            self.stats.inc_value("iri/learned/exact")
        if outcome.activated:
            self.stats.inc_value("iri/learned/rule", len(outcome.activated))
            for rule in outcome.activated:
                logger.info("Learned rule %(rule)s", {"rule": str(rule)})
        if outcome.contradicted:
            self.stats.inc_value("iri/contradicted", len(outcome.contradicted))
            for rule in outcome.contradicted:
                logger.info("Rule contradicted, suspended: %(rule)s", {"rule": str(rule)})

    def _check_original(self, rewritten: Request, rule: RuleKey) -> None:
        """Fetch the URL a rule rewrote, as it was, when its prediction led to an error."""
        original = rewritten.meta.get(META_REWRITTEN_FROM)
        if not original:
            return
        meta = {k: v for k, v in rewritten.meta.items() if k != META_REWRITTEN_FROM}
        meta.update({_STATE: ("verify", str(rule)), "dont_redirect": True})
        self.stats.inc_value("iri/verify")
        self._crawl(rewritten.replace(url=original, dont_filter=True, meta=meta))

    # -- requests merged away by rules -------------------------------------------

    def request_dropped(self, request: Request, spider: Spider | None = None) -> None:
        """A duplicate the dupefilter dropped: keep it if a rule made it one."""
        form = _form(request.url)
        if form is None:
            return
        rules = self.store.resolve(form).rules
        if rules:
            self._hold(request, rules)

    def _hold(self, request: Request, rules: tuple[RuleKey, ...]) -> None:
        self.store.defer(request.url, rules)
        if request.url not in self.held:
            self.stats.inc_value("iri/deferred")
            if len(self.held) < HELD_MAX:
                self.held[request.url] = request

    def _reschedule(self, rule: RuleKey) -> None:
        """Schedule again what ``rule`` merged away (its own callback, or the spider's default)."""
        for url in self.store.take_deferred(rule):
            held = self.held.pop(url, None)
            form = _form(url)
            if form is not None:
                # Fetched (or on its way) as it is, or as what it resolves to now: done.
                if form in self.fetched or self.store.representative(form) in self.fetched:
                    continue
                self.fetched.add(form)
            # A fresh object (the fingerprinter caches identities per request object), past
            # the dupefilter: it filed this request already (under what the rule predicted,
            # or under its own URL before a rewrite), so it would drop it as seen.
            request = held.replace(dont_filter=True) if held is not None else Request(url, dont_filter=True)
            self.stats.inc_value("iri/rescheduled")
            self._crawl(request)

    def _crawl(self, request: Request) -> None:
        engine = self.crawler.engine
        if engine is None or engine.spider is None:
            return
        engine.crawl(request)

    def spider_idle(self, spider: Spider | None = None) -> None:
        """Commit what was learned while the crawl waits (a batch otherwise waits for the next write)."""
        self.store.flush()

    def spider_closed(self, spider: Spider | None = None, reason: str = "") -> None:
        """Make what was learned durable (the store itself closes when the engine stops)."""
        self.store.flush()
