"""Follow every link of the demo web; one item per page."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import scrapy
from scrapy.http import Response, TextResponse


def link_following(name: str) -> tuple[Any, Callable[..., scrapy.Request]]:
    """(link extractor, request factory): scrapy-iri's, or Scrapy's own for ``scrapy``.

    ``iri_request`` keeps the few correct URIs that ``scrapy.Request`` would
    rewrite (an empty query ``?``, for one) exactly as extracted.
    """
    if name == "scrapy":
        from scrapy.linkextractors import LinkExtractor

        return LinkExtractor(), scrapy.Request
    from scrapy_iri import IRILinkExtractor, iri_request

    return IRILinkExtractor(), iri_request


class WebSpider(scrapy.Spider):
    """Crawl from ``http://bücher.example/`` (its A-label), following all links.

    Arguments: ``extractor`` (``iri``, the default, or ``scrapy``),
    ``start_urls`` (space-separated), ``stats_file`` (write the crawl stats
    there as JSON when the spider closes).
    """

    name = "web"
    start_urls = ["http://xn--bcher-kva.example/"]

    def __init__(
        self, *args: Any, extractor: str = "iri", start_urls: str = "", stats_file: str = "", **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        if start_urls:
            self.start_urls = start_urls.split()
        self.link_extractor, self.make_request = link_following(extractor)
        self.stats_file = stats_file

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        if not isinstance(response, TextResponse):
            return
        yield {
            "url": response.url,
            "resource_id": response.css('meta[name="resource-id"]::attr(content)').get(),
        }
        for link in self.link_extractor.extract_links(response):
            yield self.make_request(link.url, callback=self.parse)

    def closed(self, reason: str) -> None:
        if self.stats_file:
            stats = self.crawler.stats.get_stats()
            Path(self.stats_file).write_text(json.dumps(stats, default=str), encoding="utf-8")
