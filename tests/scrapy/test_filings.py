"""The middleware and the dupefilter together: every URL the dupefilter holds as seen is fetched."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

from scrapy_iri.scrapy._dupefilter import IRIDupeFilter
from scrapy_iri.scrapy._redirects import RedirectLearningMiddleware
from scrapy_iri.scrapy._crawl import crawler_store


class _Spider(Spider):
    name = "filings"


def test_a_filing_under_another_representative_is_fetched(monkeypatch: pytest.MonkeyPatch) -> None:
    """U is filed under R1 (http -> https, then add-slash); add-slash is contradicted before U
    is downloaded, so U is rewritten to R2: R1, seen by the dupefilter, must still be fetched."""
    crawler = get_crawler(_Spider, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_STORE": "memory:", "IRI_VERIFY_SHARE": 0, "IRI_VERIFY_ADAPTIVE": False})
    store = crawler_store(crawler)
    for k in (1, 2, 3):
        store.record_redirect(f"http://h.example/p-{k}.html", 301, f"https://h.example/p-{k}.html")
        store.record_redirect(f"https://h.example/d-{k}", 301, f"https://h.example/d-{k}/")
    dupefilter = IRIDupeFilter.from_crawler(crawler)
    middleware = RedirectLearningMiddleware(crawler, store)
    crawled: list[Any] = []
    monkeypatch.setattr(middleware, "_crawl", crawled.append)

    u = Request("http://h.example/d-7")
    assert not dupefilter.request_seen(u)
    assert store.record_response("https://h.example/d-8", 200).contradicted
    out = middleware.process_request(u)
    assert out is not None and out.url == "https://h.example/d-7"
    r1 = Request("https://h.example/d-7/")
    assert dupefilter.request_seen(r1)  # a later link to R1 is dropped ...
    assert [r.url for r in crawled] == ["https://h.example/d-7/"]  # ... but R1 is fetched on its own
    assert crawled[0].dont_filter


def test_what_was_learned_is_committed_when_the_crawl_goes_idle(tmp_path: Any) -> None:
    import sqlite3

    from scrapy import signals

    path = tmp_path / "store.db"
    settings = {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_STORE": f"sqlite:///{path}"}
    crawler = get_crawler(_Spider, settings)
    middleware = RedirectLearningMiddleware.from_crawler(crawler)
    middleware.store.record_redirect("http://a.example/old", 301, "http://a.example/new")

    def aliases() -> int:
        db = sqlite3.connect(path)
        try:
            return db.execute("SELECT count(*) FROM alias").fetchone()[0]
        finally:
            db.close()

    assert aliases() == 0  # batched
    crawler.signals.send_catch_log(signals.spider_idle, spider=_Spider())
    assert aliases() == 1
    middleware.store.close()
