"""Requests built from ``IRILinkExtractor`` links keep the link's URI (``/e?`` stays ``/e?``).

``response.follow(link)`` and ``CrawlSpider`` rules build a plain
``Request(link.url)``: Scrapy joins and rewrites the URL on the way
(``urljoin`` drops an empty query ``?`` and an empty fragment,
``safe_url_string`` escapes ``'`` in a query), so ``/e?`` -- another resource
than ``/e`` (3987bis 5.3.3) -- is requested as ``/e``.

The extractor remembers, per response, the links whose URI Scrapy would
rewrite, under the URL Scrapy turns them into. :class:`VerbatimLinkMiddleware`
(a spider middleware the add-on enables) looks at the requests a callback
yields for that response: a request whose URL is such a rewritten form gets
the link's URI back, with Scrapy's documented ``meta["verbatim_url"]`` so
that ``Request`` keeps it as given. Requests the spider built itself with
``verbatim_url`` (``iri_request``) are left alone, and the link they were
built from is no longer pending.

When a page links both ``/e?`` and ``/e``, both requests arrive as ``/e``:
they are given the page's links in extraction order (matching
``meta["link_text"]``, which ``CrawlSpider`` sets, when present), so each of
the two resources is requested once.

Links that came from elsewhere (Scrapy's ``LinkExtractor``,
``response.follow(href)`` on a selector's ``href``) are found the same way:
when a response whose links the extractor did not see yields a request, and
its text holds a link form that Scrapy rewrites (an empty query, a
non-ASCII or percent-encoded host, an empty port, ``;`` or ``//`` in a
relative path) or the request shows one (``%27`` in its query, where the
link may have had ``'``), the middleware reads the page's ``a``, ``area``,
``link``, ``iframe`` and ``frame`` links once and remembers those whose URI
Scrapy would rewrite, under every URL Scrapy makes of the raw value. There,
a link whose URI is the rewritten URL itself comes first, so a spider that
follows only that one gets what Scrapy would give it.

A sitemap or a ``robots.txt`` that yields requests (``SitemapSpider``) gives
its URL values instead of page links (:mod:`._sitemaps`), and the start
requests of a spider that keeps Scrapy's ``start()`` are matched with its
``start_urls`` (``sitemap_urls``) the same way (:func:`start_pending`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from scrapy import Request, Spider
from scrapy.http import TextResponse
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware
from scrapy.spiders import SitemapSpider
from scrapy.utils.response import get_base_url
from w3lib.url import canonicalize_url, safe_url_string

from ._command_line import STAT as COMMAND_LINE_STAT
from ._command_line import CommandLineURLs, command_line_urls
from ._links import base_url, link_uri, page_values
from ._pending import Pending, pending_links, scrapy_forms
from ._sitemaps import feed_values

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable

    from scrapy.http import Response

ORDER = 950  # near the spider: before other middlewares look at the URL
STAT = "iri/links/verbatim"


#: link forms in a page's text that Scrapy's ``Request`` or ``urljoin`` rewrite (a superset: a match only
#: means "look"); one alternative per first character, so the search skips the rest of the text quickly
_REWRITTEN = re.compile(
    r"""\?(?:["'#]|&(?:amp;|(?!#?\w+;)))"""  # an empty query or first parameter, not an entity (' shows: %27)
    r"""|//(?:(?<=[^:/"'=\s>;]//)|[^/\s"'<>?#]*(?:[%\u0080-\U0010ffff]|:[/"'?#]))"""  # a//b; odd hosts, empty ports
    r"""|=["']?;"""  # ";p": urljoin reads it the RFC 1808 way
    r"""|&(?<=[^\s"'<>;]&)(?:amp;)?["']""",  # a query ending in "&" (canonicalize_url drops empty parameters)
)
#: the same, for one stripped link value
_SUSPECT = re.compile(r"""\?(?:#|$)|\?.*'|^;|[^:/]//|^[^?#]*//[^/?#]*(?:[%\u0080-\U0010ffff]|:(?:[/?#]|$))""")


def _tail(url: str) -> str:
    """The last path segment and the query: links that may share a URL share it."""
    return url.partition("#")[0].rpartition("/")[2]


_SCAN_TAGS = frozenset({"a", "area", "link", "iframe", "frame"})
_SCAN_ATTRS = ("href", "src")


def scan(response: Response, look: bool = False, alternates: bool = False, max_size: int = 0) -> Pending:
    """The pending links of a response whose links no extractor remembered (see module doc).

    The page is read once, when its text holds a suspect form or when
    ``look`` says a request shows one. Only the links whose value Scrapy may
    rewrite are mapped, and the others that may end at the same URL (the
    same last segment). A sitemap or a ``robots.txt`` gives its URL values
    (:mod:`._sitemaps`; ``alternates``: also a sitemap's alternate links;
    ``max_size``: the limit of a gunzipped sitemap, as ``DOWNLOAD_MAXSIZE``).
    """
    pending = pending_links.get(response)
    if pending is None:
        pending = pending_links[response] = Pending(scanned=True)
        feed = feed_values(response, alternates, max_size)
        if feed is not None:
            pending.read = True
            _map(pending, [(value, "") for value in feed], response.url, response.url, "utf-8")
            return pending
        look = look or (isinstance(response, TextResponse) and _REWRITTEN.search(response.text) is not None)
    if pending.read or not pending.scanned or not look or not isinstance(response, TextResponse):
        return pending
    pending.read = True
    encoding = response.encoding
    _map(pending, page_values(response, _SCAN_TAGS, _SCAN_ATTRS), base_url(response), get_base_url(response), encoding)
    return pending


#: the base of start URLs, which are absolute (``Request`` refuses others): never a URL of the crawl
_START_BASE = "http://start.invalid/"


def start_pending(spider: Spider | None) -> Pending:
    """The start URLs Scrapy's own ``start()`` requests (``start_urls``; a ``SitemapSpider``'s ``sitemap_urls``).

    Only when the spider keeps Scrapy's ``start()`` and defines no
    ``start_requests()``: a spider's own start requests are its own. Lists
    and tuples only: an iterator given as ``start_urls`` is left to the spider.
    """
    pending = Pending()
    cls = type(spider)
    if spider is None or getattr(cls, "start_requests", None) is not None:
        return pending
    if cls.start is Spider.start:
        urls = getattr(spider, "start_urls", ())
    elif cls.start is SitemapSpider.start:
        urls = getattr(spider, "sitemap_urls", ())
    else:
        return pending
    if isinstance(urls, (list, tuple)):
        _map(pending, [(url, "") for url in urls if isinstance(url, str)], _START_BASE, _START_BASE, "utf-8")
    return pending


def canonical_forms(forms: set[str]) -> set[str]:
    """What Scrapy's ``LinkExtractor(canonicalize=True)`` makes of link URLs with a query.

    w3lib's ``canonicalize_url`` sorts the query and re-encodes it (``%20``
    becomes ``+``, ``;`` becomes ``%3B``, ``?a`` becomes ``?a=``): links to
    different resources get one URL, so such a URL is mapped back to the
    links it came from like any other rewritten form.
    """
    out = set()
    for form in forms:
        if "?" in form:
            try:
                out.add(canonicalize_url(form))
            except ValueError:
                continue
    return out


#: a query ``canonicalize_url`` may have made of another: sorted parameters, ``+`` for ``%20``, a blank value
_CANONICAL_QUERY = re.compile(r"[&+%]|=(?:&|$)")


def _canonical(url: str) -> bool:
    """A request URL that may be a canonicalized link of another query: its page is worth reading."""
    query = url.partition("?")[2]
    if not query or "#" in query or not _CANONICAL_QUERY.search(query):
        return False
    try:
        return canonicalize_url(url) == url
    except ValueError:
        return False


def _canonical_changes(value: str, base: str) -> bool:
    """Whether ``canonicalize_url`` changes the URL Scrapy makes of a link value with a query."""
    try:
        url = safe_url_string(urljoin(base, value.strip()))
        return canonicalize_url(url) != url.partition("#")[0]
    except ValueError:
        return False


def _map(pending: Pending, values: list[tuple[str, str]], base: str, scrapy_base: str, encoding: str) -> None:
    """Remember the ``(raw value, text)`` links whose URI Scrapy would rewrite, under each URL it makes of them."""
    odd_base = not base.isascii() or safe_url_string(base, encoding) != scrapy_base
    suspects = {
        i
        for i, (value, _) in enumerate(values)
        if odd_base or _SUSPECT.search(value.strip()) or ("?" in value and _canonical_changes(value, scrapy_base))
    }
    if not suspects:
        return
    mapped: dict[int, tuple[str, set[str]]] = {}

    def map_link(i: int, value: str, stripped: str) -> None:
        url = link_uri(value, base, encoding)
        if url is not None:
            forms = scrapy_forms(value, scrapy_base, encoding)
            if stripped != value:
                forms |= scrapy_forms(stripped, scrapy_base, encoding)
            forms |= canonical_forms(forms)
            mapped[i] = (url, forms)

    for i in suspects:
        value = values[i][0]
        map_link(i, value, value.strip())
    tails = {_tail(form) for _, forms in mapped.values() for form in forms}
    for i, (value, _) in enumerate(values):
        if i in suspects:
            continue
        stripped = value.strip()
        tail = _tail(stripped)
        if tail in tails or (not tail.isascii() and _tail(safe_url_string(stripped, encoding)) in tails):
            map_link(i, value, stripped)
    first: dict[str, list[tuple[str, str]]] = {}
    rest: dict[str, list[tuple[str, str]]] = {}
    for i in sorted(mapped):
        url, forms = mapped[i]
        for form in forms:
            (first if form == url else rest).setdefault(form, []).append((url, values[i][1]))
    for form, entries in rest.items():
        if any(url != form for url, _ in entries):
            for url, text in first.get(form, []) + entries:
                pending.add(form, url, text)


class VerbatimLinkMiddleware(BaseSpiderMiddleware):
    """Give requests built from ``IRILinkExtractor`` links the link's URI (see module doc)."""

    def process_spider_output(self, response: Response | None, result: Iterable[Any]) -> Iterable[Any]:
        yield from super().process_spider_output(response, result)
        yield from self._siblings(response)

    async def process_spider_output_async(
        self, response: Response | None, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for o in super().process_spider_output_async(response, result):
            yield o
        for o in self._siblings(response):
            yield o

    def _siblings(self, response: Response | None) -> list[Request]:
        pending = pending_links.get(response) if response is not None else None
        if pending is None or not pending.taken:
            return []
        out = pending.siblings()
        self.crawler.stats.inc_value(STAT, len(out))
        return out

    _feeds: tuple[bool, int] | None = None

    def _feed_options(self) -> tuple[bool, int]:
        """How the spider reads sitemaps: alternate links followed, the gunzipped size limit (once per crawl)."""
        spider = self.crawler.spider
        maxsize = getattr(spider, "download_maxsize", self.crawler.settings.getint("DOWNLOAD_MAXSIZE"))
        self._feeds = (bool(getattr(spider, "sitemap_alternate_links", False)), maxsize)
        return self._feeds

    _start: Pending | None = None

    _command_line: CommandLineURLs | None = None

    def _start_request(self, request: Request) -> Request:
        """A start request made from an IRI of the spider's start URLs (or of the command line) gets its URI."""
        if self._command_line is None:
            self._command_line = command_line_urls(self.crawler)
        replaced = self._command_line.take(request)
        if replaced is not request:
            self.crawler.stats.inc_value(COMMAND_LINE_STAT)
            return replaced
        if self._start is None:
            self._start = start_pending(self.crawler.spider)
        if not self._start.by_form or request.meta.get("verbatim_url"):
            return request
        url = self._start.take(request.url, None)
        if url is None or url == request.url:
            return request
        self.crawler.stats.inc_value(STAT)
        return request.replace(url=url, meta={**request.meta, "verbatim_url": True})

    def get_processed_request(self, request: Request, response: Response | None) -> Request | None:
        if response is None:
            return self._start_request(request)
        feeds = self._feeds or self._feed_options()
        look = "%27" in request.url.partition("?")[2] or _canonical(request.url)
        pending = scan(response, look=look, alternates=feeds[0], max_size=feeds[1])
        if not pending.by_form:
            return request
        if request.meta.get("verbatim_url"):
            pending.discard(request.url)
            return request
        form = request.url
        url = pending.take(form, request.meta.get("link_text"))
        if url is None:
            return request
        if url != form:
            self.crawler.stats.inc_value(STAT)
            request = request.replace(url=url, meta={**request.meta, "verbatim_url": True})
        if pending.scanned:
            pending.taken.setdefault(form, request)
        return request
