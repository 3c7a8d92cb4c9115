"""URL arguments of Scrapy's commands: the URL ``Request`` makes of them is mapped back to their URI, once."""

from __future__ import annotations

import sys

from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

from scrapy_iri.scrapy._command_line import CommandLineURLMiddleware, CommandLineURLs
from scrapy_iri.scrapy._verbatim import VerbatimLinkMiddleware

ARGV = ["scrapy", "-s", "IRI_RUNG=scheme", "--nolog", "http://faß.example/e?", "http://bücher.example/", "x.example"]


def test_arguments_that_request_rewrites_are_mapped_and_the_others_are_not():
    urls = CommandLineURLs(ARGV)
    # IDNA2003's fass.example is another host, and /e is another resource than /e?; bücher is the same in both
    assert urls.by_form == {"http://fass.example/e": "http://xn--fa-hia.example/e?"}
    taken = urls.take(Request("http://fass.example/e", dont_filter=True))
    assert (taken.url, taken.meta["verbatim_url"], taken.dont_filter) == ("http://xn--fa-hia.example/e?", True, True)
    assert urls.take(Request("http://fass.example/e")).url == "http://fass.example/e"  # once only


def test_the_start_request_takes_the_argument_and_a_later_request_for_scrapys_url_is_left_alone(monkeypatch):
    monkeypatch.setattr(sys, "argv", ARGV)
    crawler = get_crawler(Spider, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_RUNG": "scheme"})
    spider_mw = VerbatimLinkMiddleware.from_crawler(crawler)
    downloader_mw = CommandLineURLMiddleware.from_crawler(crawler)
    crawler.stats.open_spider()
    start = spider_mw.get_processed_request(Request("http://fass.example/e", dont_filter=True), None)
    assert start.url == "http://xn--fa-hia.example/e?"
    assert downloader_mw.process_request(start) is None
    # a redirect of the fetched page to the other host, fass.example, is that host's
    assert downloader_mw.process_request(Request("http://fass.example/e", dont_filter=True)) is None
    assert crawler.stats.get_value("iri/command_line_urls") == 1


def test_the_shells_request_is_replaced_before_download(monkeypatch):
    monkeypatch.setattr(sys, "argv", ARGV)
    crawler = get_crawler(Spider, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_RUNG": "scheme"})
    crawler.stats.open_spider()
    downloader_mw = CommandLineURLMiddleware.from_crawler(crawler)
    assert downloader_mw.process_request(Request("http://fass.example/e")) is None  # scheduled through the dupefilter
    replaced = downloader_mw.process_request(Request("http://fass.example/e", dont_filter=True))
    assert replaced.url == "http://xn--fa-hia.example/e?"
