"""The links of a response whose URI a ``Request`` would rewrite, by the URL Scrapy makes of them.

Filled by the link extractor (:func:`remember`) or by a scan of the page
(:func:`scrapy_iri.scrapy._verbatim.scan`); read by
:class:`~scrapy_iri.scrapy._verbatim.VerbatimLinkMiddleware`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urljoin
from weakref import WeakKeyDictionary

from w3lib.url import safe_url_string

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy import Request
    from scrapy.http import Response
    from scrapy.link import Link


@dataclass
class Pending:
    """Links of one response, by the URL Scrapy would request for them, in extraction order."""

    by_form: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    #: found by :func:`scan`, not by the extractor: the forms a request took, for :meth:`siblings`
    scanned: bool = False
    read: bool = False
    taken: dict[str, Request] = field(default_factory=dict)

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

    def siblings(self) -> list[Request]:
        """Requests for the links left behind a form a request took, on a scanned page.

        Scrapy's ``LinkExtractor`` keeps one link per URL it makes, so ``/e?``
        and ``/e`` (both ``/e`` to it) give one request: the other resource
        gets a copy of it.
        """
        out = []
        for form, request in self.taken.items():
            for url, _ in self.by_form.pop(form, ()):
                out.append(request.replace(url=url, meta={**request.meta, "verbatim_url": True}))
        self.taken.clear()
        return out


pending_links: WeakKeyDictionary[Response, Pending] = WeakKeyDictionary()


def scrapy_forms(url: str, base: str, encoding: str) -> set[str]:
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
    pending = pending_links.get(response)
    if pending is None:  # the extractor saw this response's links: no scan of its page
        pending = pending_links[response] = Pending()
    order = [(form, link) for link in links for form in scrapy_forms(link.url, base, encoding)]
    changed = {form for form, link in order if form != link.url}
    for form, link in order:
        if form in changed:  # links that keep their URL but share the form take their turn too
            pending.add(form, link.url, link.text)
