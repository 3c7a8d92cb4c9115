"""IRI-correct redirects: map ``Location`` to a URI before Scrapy's RedirectMiddleware sees it.

Scrapy's ``RedirectMiddleware`` passes ``Location`` through w3lib's
``safe_url_string``, which maps hosts with IDNA2003: a redirect to
``http://faß.example/`` would be followed to ``http://fass.example/``,
another host. This middleware sits closer to the downloader (order 650, so
its ``process_response`` runs first) and replaces a ``Location`` holding an
IRI by the URI that 3987bis sec. 3 gives for it, resolved against the
request URL (RFC 3986 5.2). ``safe_url_string`` leaves such URIs alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from urllib.parse import urljoin

from scrapy.utils.httpobj import urlparse_cached
from w3lib.url import safe_url_string

from scrapy_iri import IRIError, resolve

from ._links import request_url

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

ORDER = 650
"""Above RedirectMiddleware (600): process_response runs from the downloader inwards."""


def map_location(base: str, location: bytes) -> str | None:
    """The URI for an IRI ``Location``, or ``None`` where Scrapy's own handling is right.

    ``None`` for ASCII locations without escapes before the query (Scrapy
    maps those correctly), for headers that are not UTF-8, and for values
    that are not IRIs even leniently.
    """
    try:
        text = location.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text.isascii() and "%" not in text.split("?", 1)[0].split("#", 1)[0]:
        return None
    try:
        return request_url(resolve(base, text, lenient=True))
    except IRIError:
        return None


#: internal meta: ``(Location as sent, map_location's answer)`` for the response being handled,
#: so that the header is mapped once per hop (the learning middleware maps it first)
META_LOCATION = "_iri_location"


def redirect_target(request: Request, location: bytes) -> str:
    """The absolute URL a redirect to ``location`` is followed to, with this middleware on.

    The IRI mapping where it applies, else what Scrapy's RedirectMiddleware
    computes. The mapping is kept in the request's meta for this
    middleware's ``process_response``.
    """
    mapped = map_location(request.url, location)
    request.meta[META_LOCATION] = (location, mapped)
    if mapped is not None:
        return mapped
    url = safe_url_string(location)
    if location.startswith(b"//"):
        url = urlparse_cached(request).scheme + "://" + url.lstrip("/")
    return urljoin(request.url, url)


class IRILocationMiddleware:
    """Downloader middleware enabled by the add-on (``DOWNLOADER_MIDDLEWARES``)."""

    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        raw = response.headers.get(b"Location")
        if raw is None or not 300 <= response.status < 400:
            return response
        known = request.meta.pop(META_LOCATION, None)
        uri = known[1] if known is not None and known[0] == raw else map_location(request.url, raw)
        if uri is None or uri.encode("ascii") == raw:
            return response
        headers = response.headers.copy()
        headers[b"Location"] = uri.encode("ascii")
        self.stats.inc_value("iri/location/mapped")
        return response.replace(headers=headers)
