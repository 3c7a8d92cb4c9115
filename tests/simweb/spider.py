"""A spider that follows every link of the simulated web (needs Scrapy)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from importlib import import_module
from typing import Any

import scrapy
from scrapy.core.scheduler import Scheduler
from scrapy.http import Response, TextResponse

from .pages import RESOURCE_ID_META

#: short names of the ``extractor`` argument: (link extractor, request factory)
EXTRACTORS = {
    "scrapy": ("scrapy.linkextractors.LinkExtractor", "scrapy.Request"),
    "iri": ("scrapy_iri.IRILinkExtractor", "scrapy_iri.iri_request"),
}


def _load(path: str) -> Any:
    module, _, attribute = path.rpartition(".")
    if not module:
        raise ValueError(f"not a dotted path: {path!r}")
    return getattr(import_module(module), attribute)


def make_link_following(name: str) -> tuple[Any, Callable[..., scrapy.Request]]:
    """(link extractor, request factory) for ``"scrapy"``, ``"iri"`` or a dotted
    path to a LinkExtractor class (its links requested with ``scrapy.Request``).
    """
    extractor, factory = EXTRACTORS.get(name, (name, "scrapy.Request"))
    return _load(extractor)(), _load(factory)


class FollowAllSpider(scrapy.Spider):
    """Yields ``{"url", "resource_id", "status"}`` per page; follows all links.

    Arguments: ``start_urls`` (a list, or a string of space-separated URLs
    from the command line) and ``extractor`` (see `make_link_following`).
    Pages seen are also kept in ``self.pages``.
    """

    name = "simweb"

    def __init__(
        self, *args: Any, start_urls: Iterable[str] | str = (), extractor: str = "scrapy", **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.start_urls = start_urls.split() if isinstance(start_urls, str) else list(start_urls)
        self.extractor_name = extractor
        self.link_extractor, self.make_request = make_link_following(extractor)
        self.pages: list[dict[str, Any]] = []

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        if not isinstance(response, TextResponse):
            return
        page = {
            "url": response.url,
            "resource_id": response.css(f'meta[name="{RESOURCE_ID_META}"]::attr(content)').get(),
            "status": response.status,
        }
        self.pages.append(page)
        yield page
        for link in self.link_extractor.extract_links(response):
            yield self.make_request(link.url, callback=self.parse)


class OwnScheduler(Scheduler):
    """A project's own scheduler: Scrapy's, dropping duplicates without logging them (the engine's ``request_dropped`` signal tells)."""

    def enqueue_request(self, request: scrapy.Request) -> bool:
        if not request.dont_filter and self.df.request_seen(request):
            return False
        request.dont_filter = True
        try:
            return super().enqueue_request(request)
        finally:
            request.dont_filter = False
