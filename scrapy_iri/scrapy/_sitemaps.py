"""The URL values of a sitemap or a ``robots.txt``, read as Scrapy's ``SitemapSpider`` reads them.

``SitemapSpider`` requests every ``<loc>`` of a sitemap (and each
``xhtml:link`` alternate with ``sitemap_alternate_links``) and every
``Sitemap:`` line of a ``robots.txt`` with a plain ``Request``, which maps a
Unicode host with IDNA2003 (``faß.example`` becomes ``fass.example``, another
host) and drops an empty query. :func:`feed_values` gives
:mod:`~scrapy_iri.scrapy._verbatim` those raw values, so the requests get
their IRIs' URIs back as page links do.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from scrapy.http import XmlResponse
from scrapy.utils.gz import gunzip, gzip_magic_number
from scrapy.utils.sitemap import Sitemap

if TYPE_CHECKING:
    from scrapy.http import Response

#: a sitemap value Scrapy's ``Request`` may rewrite (a superset: a match only means "read the sitemap"):
#: an empty query, a ``'`` in a query, a non-ASCII or percent-encoded host, an empty port
_SUSPECT_XML = re.compile(rb"""\?\s*<|\?[^<\s]*'|//[^/\s"'<>?#]*(?:[%\x80-\xff]|:[/"'?#<\s])""")
#: the root element of a sitemap (``Sitemap`` reads the local name), looked for near the start
_ROOT = re.compile(rb"<(?:[\w.-]+:)?(?:urlset|sitemapindex)[\s/>]")
_ROOT_WITHIN = 1 << 16


def is_robots(response: Response) -> bool:
    """Whether ``SitemapSpider`` reads ``response`` as a ``robots.txt`` (by its URL, as Scrapy decides)."""
    return response.url.endswith("/robots.txt")


def sitemap_body(response: Response, max_size: int) -> bytes | None:
    """The XML of a sitemap response (gunzipped), as ``SitemapSpider`` finds it; ``None``: not a sitemap."""
    if isinstance(response, XmlResponse):
        return response.body
    if gzip_magic_number(response):
        try:
            return gunzip(response.body, max_size=max_size)
        except Exception:  # noqa: BLE001 -- too large or corrupt: Scrapy's spider ignores it too
            return None
    if response.url.endswith((".xml", ".xml.gz")):
        return response.body
    return None


def feed_values(response: Response, alternates: bool, max_size: int) -> list[str] | None:
    """The raw URL values of a ``robots.txt`` or a sitemap, in Scrapy's order; ``None``: neither.

    A sitemap without a value Scrapy may rewrite gives ``[]`` without being
    parsed.
    """
    if is_robots(response):
        values = []
        for line in response.body.splitlines():
            if line.lstrip()[:8].lower() == b"sitemap:":
                try:
                    values.append(line.partition(b":")[2].strip().decode())
                except UnicodeDecodeError:
                    continue
        return values
    body = sitemap_body(response, max_size)
    if body is None or _ROOT.search(body, 0, _ROOT_WITHIN) is None:
        return None  # not a sitemap: other XML is read as a page
    if _SUSPECT_XML.search(body) is None:
        return []
    try:
        sitemap = Sitemap(body)
    except Exception:  # noqa: BLE001 -- not XML: Scrapy's spider gets no requests out of it either
        return []
    if sitemap.type not in ("urlset", "sitemapindex"):
        return []
    values = []
    for entry in sitemap:
        if entry.get("loc"):
            values.append(entry["loc"])
        if alternates:
            values.extend(entry.get("alternate") or ())
    return values
