"""Real Scrapy crawls through the simulated web: in a subprocess and in-process."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
import scrapy
from scrapy.utils.test import get_crawler

from simweb import SimulatedWeb, Site
from simweb.crawl import run_crawl
from simweb.spider import FollowAllSpider


def test_scrapy_defaults_on_the_demo_web(demo_web: SimulatedWeb) -> None:
    result = run_crawl(demo_web)
    assert result.returncode == 0, result.log[-3000:]
    # the server saw exactly what Scrapy's downloader sent
    assert result.counts["requests"] == result.stat("downloader/request_count")
    assert result.stat("dupefilter/filtered") > 0
    reached = result.resource_ids
    # http and https tunnels both worked
    assert {"buecher:offers-http", "buecher:offers-https", "news:edition-https"} <= reached
    # Scrapy's IDNA2003 turns faß.example into fass.example: the real faß site is never reached
    assert "fass:home" in reached
    assert not any(rid.startswith("fass-eszett:") for rid in reached)
    # Scrapy's canonicalize_url merges the query-order and empty-query traps
    assert len(reached & {"news:a-xy", "news:a-yx"}) == 1
    assert {"www", "https", "slash", "index", "moves", "temporaries"} <= set(result.counts["redirects"])
    assert demo_web.fetches("buecher:home") >= 1


def test_scrapy_defaults_on_the_protocol_web(protocol_web: SimulatedWeb) -> None:
    result = run_crawl(protocol_web)
    assert result.returncode == 0, result.log[-3000:]
    assert result.resource_ids == protocol_web.resource_ids()
    kinds = {policy.name for site in protocol_web.sites for policy in site.policies}
    assert set(result.counts["redirects"]) == kinds
    assert result.counts["redirects_served"] == sum(
        result.stat(f"downloader/response_status_count/{status}") for status in (301, 302, 303, 307, 308)
    )


class CollectingSpider(scrapy.Spider):
    name = "collect"
    seen: ClassVar[list[tuple[str, str | None]]] = []

    def parse(self, response: Any, **kwargs: Any) -> Any:
        rid = response.css('meta[name="resource-id"]::attr(content)').get()
        self.seen.append((response.url, rid))
        yield from response.follow_all(css="a", callback=self.parse)


async def test_in_process_crawl(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-asyncio, no reactor: Scrapy's aiohttp handler through the proxy."""
    site = Site("tiny.example", start=("/", "https://tiny.example/secure"))
    site.page("tiny:home", "/", "a", "https://tiny.example/b")
    site.page("tiny:a", "/a", "/")
    site.page("tiny:b", "/b", scheme="https")
    site.page("tiny:secure", "/secure", scheme="https")
    with SimulatedWeb([site]) as web:
        for name, value in web.proxy_env().items():
            monkeypatch.setenv(name, value)
        CollectingSpider.seen = []
        CollectingSpider.start_urls = web.start_urls()
        crawler = get_crawler(CollectingSpider, {"LOG_LEVEL": "WARNING"})
        await crawler.crawl_async()
        assert {rid for _, rid in CollectingSpider.seen} == web.resource_ids()
        assert web.url_counts()["https://tiny.example/b"] == 1


async def test_follow_all_spider_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    site = Site("tiny.example")
    site.page("tiny:home", "/", "a?x=1", "/a")
    site.page("tiny:a", "/a", "/")
    with SimulatedWeb([site]) as web:
        for name, value in web.proxy_env().items():
            monkeypatch.setenv(name, value)
        crawler = get_crawler(FollowAllSpider, {"LOG_LEVEL": "WARNING"})
        await crawler.crawl_async(start_urls=web.start_urls(), extractor="scrapy")
        assert crawler.spider is not None
        assert {page["resource_id"] for page in crawler.spider.pages} == {"tiny:home", "tiny:a"}
        assert web.fetches("tiny:a") == 2  # /a and /a?x=1: two URLs, one document
