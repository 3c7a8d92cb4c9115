"""Child process of the empty-query wire tests: ``python wire_child.py CONFIG.json``.

One real crawl (``AsyncCrawlerProcess``, the add-on, no proxy) from
``config["start"]`` with a spider written the ordinary way:

- ``spider="follow"``: ``response.follow(link)`` for every ``IRILinkExtractor`` link;
- ``spider="rules"``: a ``CrawlSpider`` with ``Rule(IRILinkExtractor(), follow=True)``.

Writes ``result.json`` next to the config: the URLs the callbacks received
(``response.url``), the documents' ids, and the crawl stats.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import scrapy
from scrapy.crawler import AsyncCrawlerProcess
from scrapy.spiders import CrawlSpider, Rule

from scrapy_iri import IRILinkExtractor
from scrapy_iri.scrapy._download import IRIDownloadHandler


class Recorder:
    def __init__(self, *args: Any, start: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.start_urls = [start]
        self.parsed: list[dict[str, Any]] = []

    def record(self, response: scrapy.http.Response) -> None:
        self.parsed.append({"url": response.url, "doc": response.css("title::text").get()})


class FollowSpider(Recorder, scrapy.Spider):
    name = "follow"

    def parse(self, response: scrapy.http.Response, **kwargs: Any) -> Any:
        self.record(response)
        for link in IRILinkExtractor().extract_links(response):
            yield response.follow(link, callback=self.parse)


class RulesSpider(Recorder, CrawlSpider):
    name = "rules"
    rules = (Rule(IRILinkExtractor(), callback="parse_item", follow=True),)

    def parse_start_url(self, response: scrapy.http.Response, **kwargs: Any) -> list[Any]:
        self.record(response)
        return []

    def parse_item(self, response: scrapy.http.Response) -> None:
        self.record(response)


class MismatchedHandler(IRIDownloadHandler):
    """The handler on a Scrapy whose private http11 parts are not what it expects."""

    scrapy_module = ModuleType("http11_without_agents")


def _http11_with_another_direct_agent() -> ModuleType:
    """Scrapy's http11 module as a handler would see it if Scrapy's direct agent were another class."""
    from scrapy.core.downloader.handlers import http11

    module = ModuleType("http11_with_another_direct_agent")
    module.__dict__.update(vars(http11))
    module._BindAddressAgent = type("OtherAgent", (http11._BindAddressAgent,), {})
    return module


class LateMismatchHandler(IRIDownloadHandler):
    """The handler when Scrapy hands it an agent it does not know, found at the first ``/e?``."""

    scrapy_module = _http11_with_another_direct_agent()


SPIDERS = {"follow": FollowSpider, "rules": RulesSpider}


def main(config_path: str) -> int:
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    process = AsyncCrawlerProcess(config["settings"])
    crawler = process.create_crawler(SPIDERS[config["spider"]])
    process.crawl(crawler, start=config["start"])
    process.start()
    parsed = crawler.spider.parsed if crawler.spider is not None else []
    result = {"parsed": parsed, "stats": crawler.stats.get_stats()}
    Path(config_path).with_name("result.json").write_text(json.dumps(result, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
