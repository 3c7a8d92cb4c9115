"""One identity per request: computed once, then read by the dupefilter, the middleware and the store.

The crawl object is built once per crawler and holds every shared part;
components get them through ``from_crawler``. A request's URL is
canonicalized once, when its identity is computed: the middleware's
rewrite decision, the store's ``record_*`` calls and the filings all take
that form (a :class:`~scrapy_iri.store._forms.SchemeForm`). The count of
canonicalizations is read from the ladder itself, wrapped for the test.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.core.scheduler import Scheduler
from scrapy.http import HtmlResponse, Response
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

import scrapy_iri.scrapy._identity as identity_module
import scrapy_iri.store._forms as forms_module
from scrapy_iri.scrapy._crawl import ATTRIBUTE, IRICrawl
from scrapy_iri.scrapy._identity import META_IDENTITY
from scrapy_iri.scrapy._pipelines import CanonicalizeURLsPipeline
from scrapy_iri.scrapy._redirects import RedirectLearningMiddleware
from scrapy_iri.store._forms import SchemeForm


class _Spider(Spider):
    name = "one-identity"


def _crawler(**settings: Any):
    return get_crawler(_Spider, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_STORE": "memory:", **settings})


def test_the_crawl_object_is_built_once_and_shared_by_every_component() -> None:
    crawler = _crawler(IRI_URL_FIELDS=["url"])
    crawl = IRICrawl.of(crawler)
    assert getattr(crawler, ATTRIBUTE) is crawl and IRICrawl.of(crawler) is crawl
    df = build_from_crawler(Scheduler, crawler).df
    middleware = RedirectLearningMiddleware.from_crawler(crawler)
    pipeline = CanonicalizeURLsPipeline.from_crawler(crawler)
    assert crawler.request_fingerprinter.identities is crawl.identities
    assert df.identities is crawl.identities and middleware.identities is crawl.identities
    assert middleware.store is crawl.store and pipeline._get_store() is crawl.store
    assert df.config is crawl.settings is pipeline.config
    # another crawler, another crawl object: nothing is shared through the module
    other = _crawler()
    assert IRICrawl.of(other) is not crawl and IRICrawl.of(other).store is not crawl.store


def test_no_module_keeps_per_crawler_state() -> None:
    import scrapy_iri.scrapy as package

    for name in ("_crawl", "_dupefilter", "_redirects", "_redis_crawl", "_redis_seen", "_fingerprint", "_identity", "_download"):
        module = getattr(package, name, None) or __import__(f"scrapy_iri.scrapy.{name}", fromlist=["_"])
        for value in vars(module).values():
            assert type(value).__name__ not in ("WeakKeyDictionary", "WeakSet", "WeakValueDictionary"), (name, value)


@pytest.fixture
def canonicalizations(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """How often each URL is canonicalized (by the identity function or by the store)."""
    counts: Counter = Counter()
    real_identity, real_store = identity_module.canonicalize, forms_module.canonicalize

    def counted(real):
        def canonicalize(url, *args, **kwargs):
            counts[url] += 1
            return real(url, *args, **kwargs)

        return canonicalize

    monkeypatch.setattr(identity_module, "canonicalize", counted(real_identity))
    monkeypatch.setattr(forms_module, "canonicalize", counted(real_store))
    return counts


def test_a_request_is_canonicalized_once_from_scheduling_to_learning(canonicalizations: Counter) -> None:
    crawler = _crawler()
    df = build_from_crawler(Scheduler, crawler).df
    middleware = RedirectLearningMiddleware.from_crawler(crawler)
    url = "HTTP://Shop.Example:80/a/./b"
    request = Request(url, meta={"verbatim_url": True})
    assert not df.request_seen(request)
    middleware.process_request(request)
    response = Response(request.url, status=301, headers={"Location": "/c"}, request=request)
    middleware.response_downloaded(response, request)
    identity = request.meta[META_IDENTITY]
    assert isinstance(identity.form, SchemeForm) and identity.form == "http://shop.example/a/b"
    # the request's URL: once at the syntax rung (the scheme form is computed from that form)
    assert canonicalizations[url] == 1
    assert canonicalizations["http://shop.example/a/b"] == 0  # the form is never canonicalized again
    # the store learned from the request's form: the alias is keyed by it
    assert crawler.iri_crawl.store.representative(identity.form) == "http://shop.example/c"


def test_a_documents_answer_is_recorded_under_the_identity_form(canonicalizations: Counter) -> None:
    crawler = _crawler()
    df = build_from_crawler(Scheduler, crawler).df
    middleware = RedirectLearningMiddleware.from_crawler(crawler)
    request = Request("http://a.example/%7Euser/")
    assert not df.request_seen(request)
    middleware.process_request(request)
    middleware.response_downloaded(HtmlResponse(request.url, body=b"<html></html>", request=request), request)
    assert canonicalizations[request.url] == 1 and sum(canonicalizations.values()) == 2  # syntax, then scheme of it
