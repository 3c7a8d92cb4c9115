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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urljoin
from weakref import WeakKeyDictionary

from scrapy.spidermiddlewares.base import BaseSpiderMiddleware
from w3lib.url import safe_url_string

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy import Request
    from scrapy.http import Response
    from scrapy.link import Link

ORDER = 950  # near the spider: before other middlewares look at the URL
STAT = "iri/links/verbatim"


@dataclass
class _Pending:
    """Links of one response, by the URL Scrapy would request for them, in extraction order."""

    by_form: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def add(self, form: str, url: str, text: str) -> None:
        entries = self.by_form.setdefault(form, [])
        if (url, text) not in entries:
            entries.append((url, text))

    def discard(self, url: str) -> None:
        """A request already carries ``url`` as given (``iri_request``): its link is not up for grabs."""
        for entries in self.by_form.values():
            for index, (candidate, _) in enumerate(entries):
                if candidate == url:
                    del entries[index]
                    return

    def take(self, form: str, text: str | None) -> str | None:
        entries = self.by_form.get(form)
        if not entries:
            return None
        index = next((i for i, (_, t) in enumerate(entries) if t == text), 0) if text is not None else 0
        url, _ = entries.pop(index)
        return url


_pending: WeakKeyDictionary[Response, _Pending] = WeakKeyDictionary()


def _scrapy_forms(url: str, base: str, encoding: str) -> set[str]:
    """The URLs Scrapy requests for a link URL: ``Request(url)`` and ``response.follow(url)``."""
    forms = set()
    for enc in {"utf-8", encoding}:
        try:
            forms.add(safe_url_string(url, enc))
            forms.add(safe_url_string(urljoin(base, url), enc))
        except (ValueError, LookupError):
            continue
    return forms


def remember(response: Response, links: Iterable[Link], base: str) -> None:
    """Note the links of ``response`` whose URI a ``Request`` would rewrite."""
    encoding = getattr(response, "encoding", "utf-8")
    changed: dict[str, list[Link]] = {}
    unchanged: dict[str, list[Link]] = {}
    order: list[tuple[str, Link]] = []
    for link in links:
        for form in _scrapy_forms(link.url, base, encoding):
            order.append((form, link))
            (unchanged if form == link.url else changed).setdefault(form, []).append(link)
    if not changed:
        return
    pending = _pending.get(response)
    if pending is None:
        pending = _pending[response] = _Pending()
    for form, link in order:
        if form in changed:  # links that keep their URL but share the form take their turn too
            pending.add(form, link.url, link.text)


class VerbatimLinkMiddleware(BaseSpiderMiddleware):
    """Give requests built from ``IRILinkExtractor`` links the link's URI (see module doc)."""

    def get_processed_request(self, request: Request, response: Response | None) -> Request | None:
        pending = _pending.get(response) if response is not None else None
        if pending is None:
            return request
        if request.meta.get("verbatim_url"):
            pending.discard(request.url)
            return request
        url = pending.take(request.url, request.meta.get("link_text"))
        if url is None or url == request.url:
            return request
        self.crawler.stats.inc_value(STAT)
        return request.replace(url=url, meta={**request.meta, "verbatim_url": True})
