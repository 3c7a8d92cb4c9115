"""URLs given on Scrapy's command line are requested as written (``scrapy fetch``, ``parse``, ``shell``).

The commands build ``Request(url)`` from their argument: w3lib's
``safe_url_string`` maps ``faß.example`` with IDNA2003 to ``fass.example``
(another host) and drops an empty query ``?``. Scrapy keeps no copy of the
argument on the request, but the argument is still in ``sys.argv`` (Scrapy's
``execute`` removes only the command's name from it). :class:`CommandLineURLs`
maps the URL Scrapy made of each URL argument back to the argument's URI,
once: the first request with that URL is the command's own.

The ``fetch`` and ``parse`` requests are start requests: the add-on's spider
middleware replaces them before they are scheduled (see
:mod:`._verbatim`). The shell schedules its request directly, with
``dont_filter``: :class:`CommandLineURLMiddleware`, a downloader middleware,
replaces it before anything downloads it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from scrapy import Request
from w3lib.url import any_to_uri, is_url

from scrapy_iri import IRIError

from ._links import request_url

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scrapy.crawler import Crawler
    from typing_extensions import Self

ORDER = 25
"""Before the protocol rung's rewrite (40) and robots.txt (100): both see the URI asked for."""
STAT = "iri/command_line_urls"


def _scrapy_urls(arg: str) -> set[str]:
    """The URLs Scrapy's commands request for a URL argument (``fetch``/``parse``; ``shell``)."""
    urls = set()
    for text in (arg, any_to_uri(arg)):
        try:
            urls.add(Request(text).url)
        except ValueError:
            continue
    return urls


class CommandLineURLs:
    """The URL arguments of this process whose URI ``Request`` would rewrite, by the URL it makes of them."""

    def __init__(self, argv: Sequence[str] | None = None) -> None:
        self.by_form: dict[str, str] = {}
        for arg in (sys.argv if argv is None else argv)[1:]:
            if arg.startswith("-") or not is_url(arg):
                continue
            try:
                uri = request_url(arg)
            except IRIError:
                continue
            for form in _scrapy_urls(arg):
                if form != uri:
                    self.by_form.setdefault(form, uri)

    def take(self, request: Request) -> Request:
        """``request`` with its argument's URI if it is the first request for a rewritten argument."""
        if not self.by_form or request.meta.get("verbatim_url"):
            return request
        uri = self.by_form.pop(request.url, None)
        if uri is None:
            return request
        return request.replace(url=uri, meta={**request.meta, "verbatim_url": True})


_per_crawler: WeakKeyDictionary[Crawler, CommandLineURLs] = WeakKeyDictionary()


def command_line_urls(crawler: Crawler) -> CommandLineURLs:
    """The crawler's one :class:`CommandLineURLs`: each argument is taken once by either middleware."""
    urls = _per_crawler.get(crawler)
    if urls is None:
        urls = _per_crawler[crawler] = CommandLineURLs()
    return urls


class CommandLineURLMiddleware:
    """Downloader middleware: the shell's request for its URL argument gets the argument's URI."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.urls = command_line_urls(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_request(self, request: Request) -> Request | None:
        if not request.dont_filter:  # scheduled through the dupefilter: only the spider middleware may replace it
            return None
        replaced = self.urls.take(request)
        if replaced is request:
            return None
        self.crawler.stats.inc_value(STAT)
        return replaced
