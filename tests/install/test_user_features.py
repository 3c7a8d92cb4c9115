"""Scrapy's features as a user turns them on, crawled with the add-on from a fresh install.

Each test crawls a small web of named hosts (:mod:`feature_web`: IDN hosts,
ports, http and https behind one loopback proxy) with ``scrapy crawl`` and a
spider of :mod:`feature_spiders`, and checks every URL the web received
against ground truth written from the site (each resource once, nothing
offsite or disallowed), ``log_count/ERROR == 0`` and no traceback, at the
scheme rung and at the add-on's default, the protocol rung.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from feature_web import Answer, FeatureWeb, moved, page

RUNGS = ("scheme", "protocol")
QUICK = {"DOWNLOAD_DELAY": "0", "CONCURRENT_REQUESTS": "8", "CONCURRENT_REQUESTS_PER_DOMAIN": "8"}


def _check(process, result, web: FeatureWeb, truth: dict[str, int]) -> None:
    fetched = web.fetched()
    tail = process.stderr[-4000:]
    assert process.returncode == 0, tail
    assert {url: n for url, n in fetched.items() if truth.get(url) != n} == {}, tail
    assert {url: n for url, n in truth.items() if fetched.get(url) != n} == {}, tail
    assert result["stats"].get("log_count/ERROR", 0) == 0, tail
    assert "Traceback" not in process.stderr, tail


# -- ROBOTSTXT_OBEY = True (startproject's settings.py sets it)

BUECHER = "http://xn--bcher-kva.example"
ROBOTS_WEB = {
    f"{BUECHER}/robots.txt": Answer(200, "User-agent: *\nDisallow: /privat/\nDisallow: /%7Eadmin/\nDisallow: /straße/\n"
                                         "Disallow: /caf%C3%A9/\nDisallow: /*?\n", content_type="text/plain"),
    f"{BUECHER}/": page(
        "ok.html", "privat/x.html", "~admin/y.html", "%7eadmin/z.html", "straße/a.html", "stra%C3%9Fe/b.html", "café/c.html",
        "caf%c3%a9/d.html", "e.html?", "e.html", "q?x=1", "/go", "http://bücher.example:80/privat/p.html",
        "http://BÜCHER.example/privat/u.html", "HTTP://xn--BCHER-KVA.example/privat/v.html",
        "http://shop.example:8080/", "http://SHOP.EXAMPLE:8080/cart/2", "http://mirror.example/",
    ),
    f"{BUECHER}/ok.html": page("/"),
    f"{BUECHER}/e.html": page("/"),
    f"{BUECHER}/go": moved("/privat/g.html"),
    "http://shop.example:8080/robots.txt": Answer(200, "User-agent: *\nDisallow: /cart\n", content_type="text/plain"),
    "http://shop.example:8080/": page("/cart/1", "/item", "http://shop.example:8080/cart/3"),
    "http://shop.example:8080/item": page("/"),
    "http://mirror.example/robots.txt": moved("https://mirror.example/robots.txt"),
    "https://mirror.example/robots.txt": moved("http://robots.other.example/mirror.txt"),
    "http://robots.other.example/mirror.txt": Answer(200, "User-agent: *\nDisallow: /hidden\n", content_type="text/plain"),
    "http://mirror.example/": page("/hidden/x", "/shown", "https://mirror.example/hidden/y"),
    "http://mirror.example/shown": page("/"),
}
#: URL as received -> times fetched; the start page is linked back and fetched again (a start request is
#: ``dont_filter`` in Scrapy)
ROBOTS_TRUTH = {
    f"{BUECHER}/robots.txt": 1, f"{BUECHER}/": 2, f"{BUECHER}/ok.html": 1, f"{BUECHER}/e.html": 1, f"{BUECHER}/go": 1,
    "http://shop.example:8080/robots.txt": 1, "http://shop.example:8080/": 1, "http://shop.example:8080/item": 1,
    "http://mirror.example/robots.txt": 1, "https://mirror.example/robots.txt": 1, "http://robots.other.example/mirror.txt": 1,
    "http://mirror.example/": 1, "http://mirror.example/shown": 1,
}


@pytest.fixture
def robots_web() -> Iterator[FeatureWeb]:
    web = FeatureWeb(dict(ROBOTS_WEB))
    try:
        yield web
    finally:
        web.close()


@pytest.mark.parametrize("rung", RUNGS)
def test_robots_txt_is_obeyed_for_idn_hosts_ports_redirects_and_encoded_rules(user_env, robots_web, rung, tmp_path):
    """No disallowed URL fetched, whatever form its link takes; one ``robots.txt`` per host and port written alike."""
    process, result = user_env.crawl(
        "features_href", "http://bücher.example/", tmp_path, env=robots_web.proxy_env(), IRI_RUNG=rung, **QUICK,
    )
    fetched = robots_web.fetched()
    # Scrapy asks for robots.txt once per netloc as the request writes it: other spellings of a host may ask again
    for url in [url for url in fetched if url.endswith("/robots.txt") and url not in ROBOTS_TRUTH]:
        assert url.lower().startswith(("http://xn--bcher-kva.example:80/", "http://shop.example:8080/")), url
        robots_web.counts[("GET", url)] = 0
    robots_web.counts = +robots_web.counts
    _check(process, result, robots_web, ROBOTS_TRUTH)
    assert result["stats"].get("robotstxt/forbidden", 0) >= 10
