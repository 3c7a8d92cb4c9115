"""VerbatimLinkMiddleware: requests built from IRILinkExtractor links keep the link's URI."""

from __future__ import annotations

from scrapy import Request, Spider
from scrapy.http import HtmlResponse
from scrapy.spiders import CrawlSpider, Rule
from scrapy.utils.test import get_crawler

from scrapy_iri import IRILinkExtractor, iri_request
from scrapy_iri.scrapy._verbatim import VerbatimLinkMiddleware

PAGE = (
    b'<a href="/e?">empty query</a><a href="/e">none</a><a href="/q?a=\'b\'">quote</a>'
    b'<a href="/p">p</a><a href="/p?">p?</a><a href="/plain">plain</a>'
)


def response() -> HtmlResponse:
    return HtmlResponse("http://site.test/", body=PAGE, encoding="utf-8")


def middleware(spider_cls: type[Spider] = Spider) -> VerbatimLinkMiddleware:
    crawler = get_crawler(spider_cls, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_RUNG": "scheme"})
    return VerbatimLinkMiddleware.from_crawler(crawler)


def processed(mw: VerbatimLinkMiddleware, page: HtmlResponse, requests: list[Request]) -> list[str]:
    return [mw.get_processed_request(r, page).url for r in requests]


def test_response_follow_keeps_the_links_uris_in_either_order():
    for order in (1, -1):
        page = response()
        links = IRILinkExtractor().extract_links(page)[::order]
        urls = processed(middleware(), page, [page.follow(link) for link in links])
        assert sorted(urls) == sorted(link.url for link in links)
        assert "http://site.test/e?" in urls and "http://site.test/e" in urls
        assert "http://site.test/q?a='b'" in urls


def test_verbatim_requests_are_left_alone_and_take_their_link():
    page = response()
    mw = middleware()
    requests = [iri_request(link.url) for link in IRILinkExtractor().extract_links(page)]
    assert processed(mw, page, requests) == [r.url for r in requests]
    # the plain /p, after iri_request(/p?) took its own link, stays /p
    page = response()
    mw = middleware()
    links = {link.url: link for link in IRILinkExtractor().extract_links(page)}
    first = mw.get_processed_request(iri_request("http://site.test/p?"), page)
    second = mw.get_processed_request(page.follow(links["http://site.test/p"]), page)
    assert (first.url, second.url) == ("http://site.test/p?", "http://site.test/p")


def test_crawlspider_rules_are_matched_by_link_text():
    class Rules(CrawlSpider):
        name = "rules"
        rules = (Rule(IRILinkExtractor()),)

    page = response()
    crawler = get_crawler(Rules, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_RUNG": "scheme"})
    spider = Rules.from_crawler(crawler)
    mw = VerbatimLinkMiddleware.from_crawler(crawler)
    requests = [r for r in spider._requests_to_follow(page) if r is not None]
    by_text = {r.meta["link_text"]: mw.get_processed_request(r, page) for r in reversed(requests)}
    assert by_text["empty query"].url == "http://site.test/e?"
    assert by_text["none"].url == "http://site.test/e"
    assert by_text["p?"].url == "http://site.test/p?" and by_text["p"].url == "http://site.test/p"
    assert by_text["empty query"].meta["verbatim_url"] is True
    assert "verbatim_url" not in by_text["plain"].meta


def test_other_responses_and_requests_are_untouched():
    page = response()
    IRILinkExtractor().extract_links(page)
    mw = middleware()
    other = HtmlResponse("http://site.test/other", body=b"", encoding="utf-8")
    assert mw.get_processed_request(Request("http://site.test/e"), other).url == "http://site.test/e"
    assert mw.get_processed_request(Request("http://site.test/e"), None).url == "http://site.test/e"
