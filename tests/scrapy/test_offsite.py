"""``allowed_domains`` as people write them: Unicode labels and upper case keep the site on site.

Scrapy's ``OffsiteMiddleware`` compares the request's host (lowercase,
A-labels) with ``allowed_domains`` as written; the add-on's replacement
compares the lowercase and A-label forms too. What differs stays offsite.
"""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

from scrapy_iri.scrapy._offsite import IRIOffsiteMiddleware

ADDON = {"ADDONS": {"scrapy_iri.Addon": 0}}
DOMAINS = ["BÜCHER.example", "Example.ORG", "faß.de", "127.0.0.1", "port.example:8080"]


def _offsite(settings: dict[str, Any], domains: list[str] = DOMAINS) -> OffsiteMiddleware:
    class Site(Spider):
        name = "site"
        allowed_domains = domains

    crawler = get_crawler(Site, settings)
    crawler.spider = Site.from_crawler(crawler)
    classes = [
        load_object(path)
        for path in build_component_list(crawler.settings.getwithbase("DOWNLOADER_MIDDLEWARES"))
        if issubclass(load_object(path), OffsiteMiddleware)
    ]
    assert len(classes) == 1, classes
    middleware = classes[0].from_crawler(crawler)
    middleware.spider_opened(crawler.spider)
    return middleware


def _follows(middleware: OffsiteMiddleware, url: str) -> bool:
    try:
        middleware.process_request(Request(url))
    except IgnoreRequest:
        return False
    return True


ON_SITE = [
    "http://xn--bcher-kva.example/", "http://bücher.example/katalog", "http://www.xn--bcher-kva.example/",
    "http://example.org/", "http://WWW.Example.org/x", "http://xn--fa-hia.de/", "http://127.0.0.1:8000/",
]
OFF_SITE = [
    "http://fass.de/",  # another host than faß.de under IDNA2008
    "http://bucher.example/", "http://example.org.evil.test/", "http://notexample.org/",
    "http://port.example/",  # an entry with a port is kept as written, as Scrapy keeps it: it matches no host
]


@pytest.mark.parametrize("url", ON_SITE)
def test_unicode_and_upper_case_domains_keep_their_site(url: str) -> None:
    assert _follows(_offsite(ADDON), url)


@pytest.mark.parametrize("url", OFF_SITE)
def test_other_hosts_stay_offsite(url: str) -> None:
    assert not _follows(_offsite(ADDON), url)


def test_scrapys_own_middleware_loses_those_sites() -> None:
    scrapy_offsite = _offsite({})
    assert type(scrapy_offsite) is OffsiteMiddleware
    assert not any(_follows(scrapy_offsite, url) for url in ON_SITE[:6])


def test_a_project_that_sets_its_own_offsite_middleware_keeps_it() -> None:
    class Mine(OffsiteMiddleware):
        pass

    for setting in (
        {"scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None, Mine: 50},
        {"scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": 60},
    ):
        middleware = _offsite({**ADDON, "DOWNLOADER_MIDDLEWARES": setting})
        assert not isinstance(middleware, IRIOffsiteMiddleware)


def test_no_allowed_domains_allows_everything() -> None:
    middleware = _offsite(ADDON, domains=[])
    assert isinstance(middleware, IRIOffsiteMiddleware)
    assert _follows(middleware, "http://anything.example/")
