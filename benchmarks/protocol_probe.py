"""Why each redirect round trip was paid: a downloader middleware for the protocol benchmark.

``RedirectProbe`` runs in the benchmark's crawls with the add-on, at a
priority below the learning middleware's, so that its ``response_downloaded``
handler runs first: it sees the store as it was when the redirect arrived,
before the redirect is recorded. Each redirect answer is written as a JSON
line ``{"url", "status", "why"}`` to the file named by the
``PROTOCOL_PROBE_FILE`` setting, ``why`` being:

* ``verification``: a rule's prediction checked by fetching the original
  (adaptive verification above ``IRI_VERIFY_SHARE``, or a suspicious landing);
* ``in_flight``: the store already merged the URL when the answer came: it
  learned the alias or the rule while the request was on its way;
* ``alias_check``: the store holds an alias of the URL from an earlier
  crawl, picked for this crawl's check (it merges nothing until confirmed);
* ``alias_stale``: the store holds an alias of the URL past its lifetime;
* ``learning``: a rule not yet active (fewer than ``IRI_RULE_MIN_OBSERVATIONS``
  observations) predicts exactly this redirect: one of the K observations
  that make it;
* ``refuted``: a rule that predicts it is suspended (a counterexample) or its
  origin is blocked (a sink);
* ``unpredicted``: no rule predicts it (a one-off move, a chain, the first
  contact with a page's case; temporaries and other redirects no learner
  may save): what is learned from it is at most an exact alias.

The benchmark joins the lines with the simulated web's per-URL policy counts.
"""

from __future__ import annotations

import json
from typing import IO, TYPE_CHECKING, Any

from scrapy import signals

from scrapy_iri import IRIError, Rung, canonicalize
from scrapy_iri.scrapy._plan import VERIFY, Flight
from scrapy_iri.scrapy._redirects import _FLIGHT, ORDER, location_url
from scrapy_iri.scrapy._crawl import crawler_store
from scrapy_iri.store import RuleKey, RuleStatus
from scrapy_iri.store._rules import REDIRECTS, predictions

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

#: DOWNLOADER_MIDDLEWARES priority: built (and connected to the signal) before the learning middleware
PROBE_ORDER = ORDER - 1
#: the setting naming the JSON-lines file
SETTING = "PROTOCOL_PROBE_FILE"


def _form(url: str) -> str | None:
    try:
        return canonicalize(url, Rung.SCHEME, lenient=True)
    except IRIError:
        return None


class RedirectProbe:
    """Writes why each redirect answer was paid (see the module docstring)."""

    def __init__(self, crawler: Crawler, out: IO[str]) -> None:
        self.store = crawler_store(crawler)
        self.out = out

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedirectProbe:
        out = open(crawler.settings[SETTING], "a", encoding="utf-8")  # noqa: SIM115 (closed with the spider)
        probe = cls(crawler, out)
        crawler.signals.connect(probe.response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(probe.spider_closed, signal=signals.spider_closed)
        return probe

    def response_downloaded(self, response: Response, request: Request, spider: Any = None) -> None:
        location = response.headers.get(b"Location")
        if response.status not in REDIRECTS or not location:
            return
        why = self.why(request, location_url(request, location))
        line: dict[str, Any] = {"url": request.url, "status": response.status, "why": why}
        flight = request.meta.get(_FLIGHT)
        if why == "verification" and isinstance(flight, Flight) and flight.rules:
            rule = RuleKey.parse(flight.rules[0])
            line["rule"] = str(rule)
            line["confirmations"] = self.store.confirmations(rule)
        self.out.write(json.dumps(line) + "\n")

    def why(self, request: Request, target: str) -> str:
        flight = request.meta.get(_FLIGHT)
        if isinstance(flight, Flight) and flight.action == VERIFY:
            return "verification"
        source, destination = _form(request.url), _form(target)
        if source is None or destination is None:
            return "unpredicted"
        store = self.store
        if store.resolve(source).merged:
            return "in_flight"
        alias = store.storage.alias(source)
        if alias is not None and alias.target == destination:
            if store.clock() >= alias.stale_at(store.policy.alias_ttl):
                return "alias_stale"
            return "alias_check"
        whys = set()
        for prediction in predictions(source, store.storage.case_target):
            if prediction.target == destination:
                record = store.storage.rules_at(prediction.key.origin).get(prediction.key)
                refuted = record is not None and store.rule_status(record) is RuleStatus.SUSPENDED
                whys.add("refuted" if refuted else "learning")
        return "learning" if "learning" in whys else whys.pop() if whys else "unpredicted"

    def spider_closed(self, spider: Any = None) -> None:
        self.out.close()
