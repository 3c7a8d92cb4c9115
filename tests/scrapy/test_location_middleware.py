"""Redirect Location headers holding IRIs are followed to the right host (not IDNA2003's)."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from scrapy_iri.scrapy._location import IRILocationMiddleware


def follow(location: bytes, status: int = 301, url: str = "http://a.example/x") -> tuple[str, Request | Response]:
    """Run a redirect response through our middleware, then Scrapy's own RedirectMiddleware."""
    crawler = get_crawler()
    request = Request(url)
    response = Response(url, status=status, headers={"Location": location}, request=request)
    ours = IRILocationMiddleware.from_crawler(crawler).process_response(request, response)
    followed = RedirectMiddleware.from_crawler(crawler).process_response(request, ours)
    return ours.headers[b"Location"].decode("latin-1"), followed


@pytest.mark.parametrize(
    "location, expected",
    [
        ("http://faß.example/ü", "http://xn--fa-hia.example/%C3%BC"),  # IDNA2003 would give fass.example
        ("//b%C3%BCcher.example/", "http://xn--bcher-kva.example/"),  # a percent-encoded host, resolvable
        ("/caf%C3%A9", "http://a.example/caf%C3%A9"),
        ("../über", "http://a.example/%C3%BCber"),
    ],
)
def test_iri_locations_are_followed_to_their_uri(location, expected):
    header, followed = follow(location.encode("utf-8"))
    assert header == expected
    assert isinstance(followed, Request) and followed.url == expected


def test_scrapy_alone_would_follow_the_sharp_s_to_another_host():
    # the reason this middleware exists: the same response without it
    crawler = get_crawler()
    request = Request("http://a.example/x")
    response = Response(request.url, status=301, headers={"Location": "http://faß.example/".encode()}, request=request)
    followed = RedirectMiddleware.from_crawler(crawler).process_response(request, response)
    assert followed.url == "http://fass.example/"


@pytest.mark.parametrize(
    "location", [b"http://b.example/plain", b"/relative?q=1", b"http://a b/", b"http://\xfa\xdf/"]
)
def test_ascii_invalid_or_undecodable_locations_are_left_to_scrapy(location):
    header, _ = follow(location)
    assert header.encode("latin-1") == location


def test_non_redirects_are_untouched():
    crawler = get_crawler()
    request = Request("http://a.example/")
    response = Response(request.url, status=200, headers={"Location": "http://faß.example/".encode()})
    assert IRILocationMiddleware.from_crawler(crawler).process_response(request, response) is response


def test_the_addon_enables_it_between_the_downloader_and_redirect_middleware():
    from scrapy_iri.scrapy._location import ORDER

    crawler = get_crawler(settings_dict={"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_STORE": "memory:"})
    middlewares = crawler.settings.getwithbase("DOWNLOADER_MIDDLEWARES")
    assert middlewares[IRILocationMiddleware] == ORDER
    assert ORDER > middlewares["scrapy.downloadermiddlewares.redirect.RedirectMiddleware"]


def test_redirect_learning_resolves_locations_the_same_way():
    from scrapy_iri.scrapy._redirects import location_url

    request = Request("http://a.example/x")
    assert location_url(request, "http://faß.example/".encode()) == "http://xn--fa-hia.example/"
    assert location_url(request, b"//b.example/p") == "http://b.example/p"
    assert location_url(request, b"/y?q=1") == "http://a.example/y?q=1"
