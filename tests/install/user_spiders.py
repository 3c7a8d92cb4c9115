"""The spiders of tests/install/test_user_crawls.py, written as Scrapy's tutorial writes them (copied into the user's project)."""
import json
import os
import signal

import scrapy
from scrapy.http import FormRequest
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule

from scrapy_iri import IRILinkExtractor


class Recorder:
    def __init__(self, start="", out="", stop_after="0", allowed="", **kwargs):
        super().__init__(**kwargs)
        self.start_urls = start.split()
        if allowed:
            self.allowed_domains = allowed.split()
        self.out = out
        self.parsed = []
        self.stop_after = int(stop_after)

    def record(self, response):
        """Note the page; after ``stop_after`` pages, stop as a user does: Ctrl-C (SIGINT)."""
        self.parsed.append(response.url)
        if len(self.parsed) == self.stop_after:
            os.kill(os.getpid(), signal.SIGINT)

    def forms(self, response):
        for number in range(len(response.css("form"))):
            yield FormRequest.from_response(response, formnumber=number, callback=self.parse_form)

    def parse_form(self, response):
        self.record(response)

    def closed(self, reason):
        with open(self.out, "w", encoding="utf-8") as f:
            json.dump({"parsed": self.parsed, "stats": self.crawler.stats.get_stats()}, f, default=str)


class FollowSpider(Recorder, scrapy.Spider):
    name = "follow"

    def parse(self, response):
        self.parsed.append(response.url)
        if isinstance(response, scrapy.http.TextResponse):
            for link in IRILinkExtractor().extract_links(response):
                yield response.follow(link, callback=self.parse)


class RulesSpider(Recorder, CrawlSpider):
    name = "rules"
    rules = (Rule(IRILinkExtractor(), callback="parse_item", follow=True),)

    def parse_start_url(self, response):
        self.parsed.append(response.url)
        return []

    def parse_item(self, response):
        self.parsed.append(response.url)


class HrefSpider(Recorder, scrapy.Spider):
    """The tutorial's spider: ``response.follow`` on the raw ``href`` values, forms posted."""

    name = "href"

    def parse(self, response):
        self.record(response)
        if not isinstance(response, scrapy.http.TextResponse):
            return
        for href in response.css("a::attr(href)").getall():
            if not href.startswith(("mailto:", "javascript:")):  # Scrapy cannot request them
                yield response.follow(href, callback=self.parse)
        yield from self.forms(response)


class RedirectsSpider(Recorder, scrapy.Spider):
    """Requests that handle redirects themselves: each gets the redirect, whatever the store learned."""

    name = "redirects"

    async def start(self):
        for url in self.start_urls:
            yield scrapy.Request(url, meta={"dont_redirect": True, "handle_httpstatus_list": [301, 308]}, dont_filter=True)
            yield scrapy.Request(url, meta={"handle_httpstatus_all": True}, dont_filter=True)
            yield scrapy.Request(url, meta={"handle_httpstatus_list": [301, 308]}, callback=self.parse)

    def parse(self, response):
        self.parsed.append(f"{response.status} {response.url}")


class ScrapyRulesSpider(Recorder, CrawlSpider):
    """``CrawlSpider`` with Scrapy's own ``LinkExtractor``."""

    name = "scrapyrules"
    rules = (Rule(LinkExtractor(), callback="parse_item", follow=True),)

    def parse_start_url(self, response):
        self.record(response)
        return []

    def parse_item(self, response):
        self.record(response)
        yield from self.forms(response)
