"""The protocol rung's request path without a crawl: the plan, the carried identity, the invariants.

Scrapy's own objects (Request, RedirectMiddleware's ``request.replace``) with
a real in-memory store; the redirect hops are built the way
RedirectMiddleware builds them.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.http import HtmlResponse, Response
from scrapy.utils.test import get_crawler

from scrapy_iri.scrapy._dupefilter import IRIDupeFilter
from scrapy_iri.scrapy._identity import META_IDENTITY, RequestIdentity
from scrapy_iri.scrapy._plan import REWRITE, SEND, VERIFY, plan
from scrapy_iri.scrapy._redirects import RedirectLearningMiddleware
from scrapy_iri.scrapy._crawl import crawler_store
from scrapy_iri.store import MemoryStore, RuleKey


class _Spider(Spider):
    name = "request-path"


def _never(form: str, rule: RuleKey) -> bool:
    return False


def _always(form: str, rule: RuleKey) -> bool:
    return True


def _store_with_rules() -> MemoryStore:
    store = MemoryStore()
    for k in (1, 2, 3):
        store.record_redirect(f"http://www.x.example/d-{k}", 301, f"https://www.x.example/d-{k}")
    return store


# -- the plan -----------------------------------------------------------------


def test_nothing_merges_a_url_so_it_is_sent() -> None:
    store = MemoryStore()
    assert plan("http://x.example/a", "http://x.example/a", store.resolve("http://x.example/a"), _never).action == SEND


def test_a_rule_that_fell_while_in_flight_sends_the_url_as_it_is() -> None:
    """Filed under the prediction; the rule is contradicted before download: fetch the URL itself."""
    store = _store_with_rules()
    filed = store.representative("http://www.x.example/p")
    assert filed == "https://www.x.example/p"
    store.record_response("http://www.x.example/q", 200)  # a counterexample
    decision = plan("http://www.x.example/p", filed, store.resolve("http://www.x.example/p"), _never)
    assert decision.action == SEND


def test_a_filed_prediction_is_rewritten_past_the_filter() -> None:
    store = _store_with_rules()
    decision = plan("http://www.x.example/p", "https://www.x.example/p", store.resolve("http://www.x.example/p"), _never)
    assert (decision.action, decision.target, decision.filed) == (REWRITE, "https://www.x.example/p", True)
    assert decision.rules == (RuleKey("http://www.x.example", "http-to-https", "/"),)


def test_a_rule_learned_after_the_filing_lets_the_filter_judge_the_target() -> None:
    """Filed under its own URL: the rewritten request must go through the dupefilter (invariant 3)."""
    store = _store_with_rules()
    decision = plan("http://www.x.example/p", "http://www.x.example/p", store.resolve("http://www.x.example/p"), _never)
    assert (decision.action, decision.filed, decision.orphan) == (REWRITE, False, None)


def test_a_filing_under_another_representative_is_an_orphan() -> None:
    store = _store_with_rules()
    decision = plan("http://www.x.example/p", "https://x.example/p", store.resolve("http://www.x.example/p"), _never)
    assert decision.orphan == "https://x.example/p" and not decision.filed


def test_only_rule_predictions_are_verified_exact_aliases_never() -> None:
    store = _store_with_rules()
    store.record_redirect("http://y.example/old", 301, "http://y.example/new")
    assert plan("http://www.x.example/p", "https://www.x.example/p", store.resolve("http://www.x.example/p"), _always).action == VERIFY
    alias = plan("http://y.example/old", "http://y.example/new", store.resolve("http://y.example/old"), _always)
    assert alias.action == REWRITE


# -- the identity travels with the request ------------------------------------


def _crawler(**settings: Any) -> Any:
    return get_crawler(_Spider, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_STORE": "memory:", **settings})


def _redirect(crawler: Any, request: Request, status: int, location: str) -> Request:
    """The request Scrapy's RedirectMiddleware makes of a redirect answer."""
    response = Response(request.url, status=status, headers={"Location": location}, request=request)
    out = RedirectMiddleware.from_crawler(crawler).process_response(request, response)
    assert isinstance(out, Request)
    return out


def test_the_identity_is_computed_once_and_pickles() -> None:
    crawler = _crawler()
    dupefilter = IRIDupeFilter.from_crawler(crawler)
    request = Request("http://a.example/x")
    assert not dupefilter.request_seen(request)
    identity = request.meta[META_IDENTITY]
    assert isinstance(identity, RequestIdentity)
    assert crawler.request_fingerprinter.identity(request) is identity
    assert crawler.request_fingerprinter.fingerprint(request) == identity.fingerprint
    assert pickle.loads(pickle.dumps(identity)) == identity


def test_a_copied_meta_on_another_url_is_not_taken_for_its_identity() -> None:
    """``response.follow(url, meta=response.meta)``: the page's identity must not pass a new link."""
    crawler = _crawler()
    dupefilter = IRIDupeFilter.from_crawler(crawler)
    page = Request("http://a.example/x")
    assert not dupefilter.request_seen(page)
    again = Request("http://a.example/x", meta=dict(page.meta))
    assert dupefilter.request_seen(again)
    other = Request("http://a.example/y", meta=dict(page.meta))
    assert not dupefilter.request_seen(other)
    assert dupefilter.request_seen(Request("http://a.example/y", meta=dict(page.meta)))


@pytest.mark.parametrize(
    "chain",
    [
        ["http://www.x.example/P", "http://x.example/P", "http://x.example/p"],
        ["http://www.x.example/p", "https://www.x.example/p", "https://x.example/p"],
    ],
)
def test_invariant_1_every_hop_of_a_verified_chain_passes(chain: list[str]) -> None:
    """The head is filed under the end of its chain; verified, each hop lands on its own identity."""
    crawler = _crawler(IRI_VERIFY_SHARE=1)
    store = crawler_store(crawler)
    for hop, nxt in zip(chain, chain[1:]):
        for k in (1, 2, 3):
            store.record_redirect(hop.replace("/p", f"/n-{k}").replace("/P", f"/N-{k}"), 301,
                                  nxt.replace("/p", f"/n-{k}").replace("/P", f"/N-{k}"))
    dupefilter = IRIDupeFilter.from_crawler(crawler)
    middleware = RedirectLearningMiddleware(crawler, store)
    crawled: list[Request] = []
    middleware._crawl = crawled.append  # type: ignore[method-assign]
    head = Request(chain[0])
    assert not dupefilter.request_seen(head)
    assert head.meta[META_IDENTITY].representative == chain[-1]
    assert dupefilter.request_seen(Request(chain[-1]))  # a link to the end is a duplicate of the head
    request = head
    for nxt in chain[1:]:
        assert middleware.process_request(request) is None  # verified: sent as it is
        middleware.response_downloaded(Response(request.url, status=301, headers={"Location": nxt}), request)
        request = _redirect(crawler, request, 301, nxt)
        assert not dupefilter.request_seen(request), request.url  # its own chain: passes
    assert middleware.process_request(request) is None
    middleware.response_downloaded(HtmlResponse(request.url, body=b"<html></html>"), request)
    assert crawled == []  # the chain ended where it was filed: nothing more to fetch
    assert crawler.stats.get_value("iri/verify") >= 1


def test_a_loop_is_not_taken_for_a_chain() -> None:
    crawler = _crawler(IRI_VERIFY_SHARE=1)
    dupefilter = IRIDupeFilter.from_crawler(crawler)
    a = Request("http://a.example/a")
    assert not dupefilter.request_seen(a)
    b = _redirect(crawler, a, 302, "http://a.example/b")
    assert not dupefilter.request_seen(b)
    back = _redirect(crawler, b, 302, "http://a.example/a")
    assert dupefilter.request_seen(back)


def test_invariant_2_a_filing_the_chain_missed_is_fetched_once() -> None:
    """Filed under a prediction; verified, the URL answers itself (the rule is wrong there)."""
    crawler = _crawler(IRI_VERIFY_SHARE=1)
    store = crawler_store(crawler)
    for k in (1, 2, 3):
        store.record_redirect(f"http://s.example/d-{k}", 301, f"http://s.example/d-{k}/")
    dupefilter = IRIDupeFilter.from_crawler(crawler)
    middleware = RedirectLearningMiddleware(crawler, store)
    crawled: list[Request] = []
    middleware._crawl = crawled.append  # type: ignore[method-assign]
    head = Request("http://s.example/d-7")
    assert not dupefilter.request_seen(head)
    assert dupefilter.request_seen(Request("http://s.example/d-7/"))  # dropped: filed by the head
    assert middleware.process_request(head) is None
    middleware.response_downloaded(HtmlResponse(head.url, body=b"<html>file</html>"), head)
    assert [r.url for r in crawled] == ["http://s.example/d-7/"]
    middleware.response_downloaded(HtmlResponse(head.url, body=b"<html>file</html>"), head)
    assert len(crawled) == 1  # once


def test_the_dupefilter_imports_no_redis_code_unless_redis_is_configured(tmp_path: Any) -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from scrapy.core.scheduler import Scheduler\n"
        "from scrapy.utils.misc import build_from_crawler\n"
        "from scrapy.utils.test import get_crawler\n"
        "from scrapy import Spider, Request\n"
        "class S(Spider): name = 's'\n"
        f"c = get_crawler(S, {{'ADDONS': {{'scrapy_iri.Addon': 0}}, 'IRI_STORE': 'sqlite:///{tmp_path / 's.db'}'}})\n"
        "df = build_from_crawler(Scheduler, c).df\n"
        "df.request_seen(Request('http://a.example/'))\n"
        "bad = sorted(m for m in sys.modules if 'redis' in m)\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


def test_verification_decays_with_confirmations_and_keeps_its_floor() -> None:
    from scrapy_iri.scrapy._plan import verification_share

    assert verification_share(3, 0.0) == 1.0  # just learned: every prediction is checked
    assert verification_share(30, 0.0) == pytest.approx(0.1)  # 95% bound on the error rate: about 3/30
    assert verification_share(300, 0.0) == pytest.approx(0.01)
    assert verification_share(3000, 0.05) == 0.05  # IRI_VERIFY_SHARE is the floor
    assert verification_share(30, 1.0) == 1.0


def test_confirmations_count_only_for_active_rules() -> None:
    store = _store_with_rules()
    rule = RuleKey("http://www.x.example", "http-to-https", "/")
    assert store.confirmations(rule) == 3
    store.record_redirect("http://www.x.example/d-4", 301, "https://www.x.example/d-4")
    assert store.confirmations(rule) == 4
    store.record_response("http://www.x.example/q", 200)
    assert store.confirmations(rule) == 0  # suspended at once
