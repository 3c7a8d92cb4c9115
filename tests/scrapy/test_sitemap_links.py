"""``SitemapSpider`` with the add-on: every ``<loc>``, alternate and robots.txt ``Sitemap:`` line requested at its URI."""

from __future__ import annotations

import gzip

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse, Response, TextResponse, XmlResponse
from scrapy.spiders import SitemapSpider
from scrapy.utils.test import get_crawler

from scrapy_iri.scrapy._verbatim import VerbatimLinkMiddleware

URLSET = """<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">
<url><loc>http://faß.example/</loc><xhtml:link rel="alternate" hreflang="en" href="http://faß.example/en?"/></url>
<url><loc>http://fass.example/</loc></url>
<url><loc> http://site.test/e? </loc></url><url><loc>http://site.test/e</loc></url>
<url><loc>http://site.test/q?b=2&amp;a=1</loc></url><url><loc>http://site.test/q?a='b'</loc></url>
<url><loc>http://b%C3%BCcher.example/</loc></url><url><loc>http://h.example:/x</loc></url>
</urlset>"""
#: every listed resource, as the URI to request (alternates with ``sitemap_alternate_links``)
LOCS = [
    "http://xn--fa-hia.example/", "http://fass.example/", "http://site.test/e?", "http://site.test/e",
    "http://site.test/q?b=2&a=1", "http://site.test/q?a='b'", "http://xn--bcher-kva.example/", "http://h.example:/x",
]
INDEX = """<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>http://faß.example/s.xml.gz</loc></sitemap><sitemap><loc>http://site.test/s2.xml</loc></sitemap></sitemapindex>"""


def spider_and_middleware(alternates: bool = False) -> tuple[SitemapSpider, VerbatimLinkMiddleware]:
    class Map(SitemapSpider):
        name = "map"
        sitemap_urls = ["http://site.test/robots.txt"]
        sitemap_alternate_links = alternates

    crawler = get_crawler(Map, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_RUNG": "scheme"})
    crawler.spider = spider = Map.from_crawler(crawler)
    return spider, VerbatimLinkMiddleware.from_crawler(crawler)


def requested(response: Response, alternates: bool = False) -> list[str]:
    spider, mw = spider_and_middleware(alternates)
    return [r.url for r in mw.process_spider_output(response, iter(spider._parse_sitemap(response)))]


def test_a_urlset_gives_each_loc_its_uri():
    assert sorted(requested(XmlResponse("http://site.test/s.xml", body=URLSET.encode()))) == sorted(LOCS)


def test_alternates_too_when_the_spider_follows_them():
    urls = requested(XmlResponse("http://site.test/s.xml", body=URLSET.encode()), alternates=True)
    assert sorted(urls) == sorted([*LOCS, "http://xn--fa-hia.example/en?"])


@pytest.mark.parametrize("url", ["http://site.test/s.xml.gz", "http://site.test/sitemap"])
def test_a_gzipped_sitemap_and_an_index(url):
    body = gzip.compress(INDEX.encode())
    assert requested(Response(url, body=body, request=Request(url))) == ["http://xn--fa-hia.example/s.xml.gz", "http://site.test/s2.xml"]


def test_robots_txt_sitemap_lines():
    robots = b"User-agent: *\nSitemap: http://fa\xc3\x9f.example/a.xml\n  sitemap: /b.xml?\nSitemap: http://site.test/c.xml\n"
    urls = requested(TextResponse("http://site.test/robots.txt", body=robots))
    assert urls == ["http://xn--fa-hia.example/a.xml", "http://site.test/b.xml?", "http://site.test/c.xml"]


def test_a_sitemap_without_odd_values_is_not_parsed_again_and_other_xml_is_read_as_a_page():
    plain = '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://site.test/a</loc></url></urlset>'
    assert requested(XmlResponse("http://site.test/s.xml", body=plain.encode())) == ["http://site.test/a"]
    spider, mw = spider_and_middleware()
    feed = XmlResponse("http://site.test/feed.xml", body=b'<rss><channel><link>x</link></channel></rss>')
    page = HtmlResponse("http://site.test/d/", body='<a href="/e?">e?</a>'.encode(), encoding="utf-8")
    assert mw.get_processed_request(page.follow("/e?"), page).url == "http://site.test/e?"
    assert mw.get_processed_request(page.follow("http://site.test/x"), feed).url == "http://site.test/x"


# -- start URLs: Scrapy's start() makes a plain Request of each


def started(spider_cls: type, **settings) -> list[str]:
    import asyncio

    crawler = get_crawler(spider_cls, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_RUNG": "scheme", **settings})
    crawler.spider = spider = spider_cls.from_crawler(crawler)
    mw = VerbatimLinkMiddleware.from_crawler(crawler)

    async def run() -> list[str]:
        return [r.url async for r in mw.process_start(spider.start())]

    return asyncio.run(run())


def test_start_urls_and_sitemap_urls_written_as_iris():
    from scrapy import Spider

    class Start(Spider):
        name = "start"
        start_urls = ["http://faß.example/", "http://site.test/e?", "http://site.test/e", "http://site.test/a", "http://b%C3%BCcher.example/"]

    class Map(SitemapSpider):
        name = "map"
        sitemap_urls = ["http://faß.example/robots.txt"]

    assert sorted(started(Start)) == sorted([
        "http://xn--fa-hia.example/", "http://site.test/e?", "http://site.test/e", "http://site.test/a",
        "http://xn--bcher-kva.example/",
    ])
    assert started(Map) == ["http://xn--fa-hia.example/robots.txt"]


def test_a_spider_with_its_own_start_keeps_its_requests():
    from scrapy import Spider

    class Own(Spider):
        name = "own"
        start_urls = ["http://faß.example/", "http://site.test/e?"]

        async def start(self):
            yield Request("http://fass.example/")
            yield Request("http://site.test/e")

    class Iterator(Spider):
        name = "iterator"
        start_urls = iter(["http://faß.example/"])

    assert started(Own) == ["http://fass.example/", "http://site.test/e"]
    assert started(Iterator) == ["http://fass.example/"]
