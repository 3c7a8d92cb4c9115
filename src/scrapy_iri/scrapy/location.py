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

import logging
from typing import TYPE_CHECKING

from scrapy_iri import IRIError, resolve

from .links import request_url

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

logger = logging.getLogger(__name__)

ORDER = 650
"""Above RedirectMiddleware (600): process_response runs from the downloader inwards."""


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
        try:
            location = raw.decode("utf-8")
        except UnicodeDecodeError:
            return response  # not UTF-8: leave it to Scrapy as it is
        if location.isascii() and "%" not in location.split("?", 1)[0].split("#", 1)[0]:
            return response  # nothing IRI-specific: Scrapy maps it as it would anyway
        try:
            uri = request_url(resolve(request.url, location, lenient=True))
        except IRIError as exc:
            logger.debug("Location %r of %s is not an IRI: %s", location, response, exc)
            self.stats.inc_value("iri/location/invalid")
            return response
        if uri == location:
            return response
        headers = response.headers.copy()
        headers[b"Location"] = uri.encode("ascii")
        self.stats.inc_value("iri/location/mapped")
        return response.replace(headers=headers)
