"""Spiders of tests/install/test_user_features.py, written as users write them (copied into the user's project)."""

import json

import scrapy
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule, SitemapSpider

from scrapy_iri import IRILinkExtractor


class Recorder:
    def __init__(self, start="", out="", allowed="", **kwargs):
        super().__init__(**kwargs)
        self.start_urls = start.split()
        if allowed:
            self.allowed_domains = allowed.split()
        self.out = out
        self.parsed = []

    def closed(self, reason):
        with open(self.out, "w", encoding="utf-8") as f:
            json.dump({"parsed": self.parsed, "stats": self.crawler.stats.get_stats()}, f, default=str)


class HrefSpider(Recorder, scrapy.Spider):
    """The tutorial's spider: ``response.follow`` on every ``href``, a link's ``data-priority`` as its priority.

    ``again``: URLs requested once more with ``dont_filter=True`` from the start page.
    """

    name = "features_href"

    def __init__(self, again="", **kwargs):
        super().__init__(**kwargs)
        self.again = again.split()

    def parse(self, response):
        self.parsed.append(response.url)
        if not isinstance(response, scrapy.http.TextResponse):
            return
        for anchor in response.css("a"):
            priority = int(anchor.attrib.get("data-priority", 0))
            yield response.follow(anchor, callback=self.parse, priority=priority)
        if response.url in self.start_urls:
            for url in self.again:
                yield scrapy.Request(url, callback=self.parse, dont_filter=True, priority=-5)


class MapSpider(Recorder, SitemapSpider):
    """``SitemapSpider`` from ``robots.txt`` or sitemap URLs, alternate links followed."""

    name = "features_sitemap"
    sitemap_alternate_links = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.sitemap_urls = self.start_urls

    def parse(self, response):
        self.parsed.append(response.url)


def _rules(extractor):
    return (
        Rule(extractor(restrict_css=(".nav", "head"), tags=("a", "area", "link"), canonicalize=True), callback="parse_item",
             follow=True, process_links="drop_session"),
        Rule(extractor(allow=r"/list/", unique=False), callback="parse_item", follow=True, process_request="move_list"),
    )


class RewritingRulesSpider(Recorder, CrawlSpider):
    """``CrawlSpider`` whose rules rewrite links (``process_links``) and requests (``process_request``)."""

    name = "features_rules"
    rules = _rules(LinkExtractor)

    def drop_session(self, links):
        for link in links:
            link.url = link.url.replace(";jsessionid=1", "")
        return links

    def move_list(self, request, response):
        return request.replace(url=request.url.replace("/list/old/", "/list/"))

    def parse_start_url(self, response):
        self.parsed.append(response.url)
        return []

    def parse_item(self, response):
        self.parsed.append(response.url)


class IRIRewritingRulesSpider(RewritingRulesSpider):
    """The same with scrapy-iri's drop-in extractor."""

    name = "features_irirules"
    rules = _rules(IRILinkExtractor)


class ItemSpider(Recorder, scrapy.Spider):
    """Items that carry the page's links as scraped, exported as a feed."""

    name = "features_items"

    def parse(self, response):
        self.parsed.append(response.url)
        links = response.css("a::attr(href)").getall()
        yield {"url": response.url, "links": links, "title": response.css("title::text").get(), "home": links[0]}
        yield from response.follow_all(css="a.next", callback=self.parse)


class FilesSpider(HrefSpider):
    """Follows every link; each page's ``data-file`` links become an item's ``file_urls`` (``FilesPipeline``)."""

    name = "features_files"

    def parse(self, response):
        yield from super().parse(response)
        if isinstance(response, scrapy.http.TextResponse):
            files = [response.urljoin(href) for href in response.css("a[data-file]::attr(href)").getall()]
            if files:
                yield {"page": response.url, "file_urls": files}
