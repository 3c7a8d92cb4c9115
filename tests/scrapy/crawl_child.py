"""Child process of the crawl tests: ``python crawl_child.py CONFIG.json``.

Runs one real Scrapy crawl (``AsyncCrawlerProcess``, Scrapy's default
download handler, through the simulated web's proxy taken from the
environment) with a spider that follows every link:

- ``mode="scrapy"``: Scrapy's ``LinkExtractor`` and ``scrapy.Request``;
- ``mode="iri"``: ``IRILinkExtractor`` and ``iri_request``.

Start requests are made like every other request (no ``dont_filter``), so
that "fetched once" also holds for start pages. Writes ``pages.json`` and
``stats.json`` next to the config.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import scrapy
from scrapy.crawler import AsyncCrawlerProcess
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor

from scrapy_iri import IRILinkExtractor, iri_request


class TrackingFreeFingerprinter:
    """A project's own fingerprinter (``REQUEST_FINGERPRINTER_CLASS``): tracking parameters do not count.

    It keeps everything else of the URL as it is (no query sorting: that is
    w3lib's, which merges different resources).
    """

    TRACKING = ("utm_source=", "utm_medium=", "ref=")

    def fingerprint(self, request: scrapy.Request) -> bytes:
        import hashlib

        head, sep, query = request.url.partition("?")
        kept = [p for p in query.split("&") if not p.startswith(self.TRACKING)] if sep else []
        url = head + ("?" + "&".join(kept) if kept or (sep and not query) else "")
        return hashlib.sha1(f"{request.method} {url}".encode() + request.body).digest()


class FollowEverything(scrapy.Spider):
    name = "plugin-crawl"

    def __init__(self, *args: Any, start_urls: list[str], mode: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.start_urls = start_urls
        self.mode = mode
        self.pages: list[dict[str, Any]] = []

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> FollowEverything:
        spider = super().from_crawler(crawler, *args, **kwargs)
        extractor = IRILinkExtractor.from_crawler(crawler) if spider.mode == "iri" else LinkExtractor()
        spider.link_extractor = extractor
        return spider

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.start_urls:
            yield self.request(url)

    def request(self, url: str) -> scrapy.Request:
        if self.mode == "iri":
            return iri_request(url, callback=self.parse)
        return scrapy.Request(url, callback=self.parse)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        if not isinstance(response, TextResponse):
            return
        self.pages.append(
            {
                "url": response.url,
                "resource_id": response.css('meta[name="resource-id"]::attr(content)').get(),
            }
        )
        for link in self.link_extractor.extract_links(response):
            yield self.request(link.url)


def main(config_path: str) -> int:
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    process = AsyncCrawlerProcess(config["settings"])
    crawler = process.create_crawler(FollowEverything)
    process.crawl(crawler, start_urls=config["start_urls"], mode=config["mode"])
    process.start()
    out = Path(config_path).parent
    pages = crawler.spider.pages if crawler.spider is not None else []
    out.joinpath("pages.json").write_text(json.dumps(pages), encoding="utf-8")
    out.joinpath("stats.json").write_text(json.dumps(crawler.stats.get_stats(), default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
