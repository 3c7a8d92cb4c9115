"""Scrapy's features as a user turns them on, crawled with the add-on from a fresh install.

Each test crawls a small web of named hosts (:mod:`feature_web`: IDN hosts,
ports, http and https behind one loopback proxy) with ``scrapy crawl`` and a
spider of :mod:`feature_spiders`, and checks every URL the web received
against ground truth written from the site (each resource once, nothing
offsite or disallowed), ``log_count/ERROR == 0`` and no traceback, at the
scheme rung and at the add-on's default, the protocol rung.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from feature_web import Answer, FeatureWeb, moved, page

RUNGS = ("scheme", "protocol")
QUICK = {"DOWNLOAD_DELAY": "0", "CONCURRENT_REQUESTS": "8", "CONCURRENT_REQUESTS_PER_DOMAIN": "8"}


def _check(process, result, web: FeatureWeb, truth: dict[str, int]) -> None:
    fetched = web.fetched()
    tail = process.stderr[-4000:]
    assert process.returncode == 0, tail
    extra = {url: n for url, n in fetched.items() if truth.get(url) != n}
    missing = {url: fetched.get(url, 0) for url, n in truth.items() if fetched.get(url) != n}
    assert (extra, missing) == ({}, {}), f"fetched, not in truth: {extra}; truth, not fetched so: {missing}\n{tail}"
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
    """No disallowed URL fetched, whatever form its link takes; one ``robots.txt`` per host and port written alike.

    Crawled twice on one store: the second crawl knows /go is an alias of a disallowed page.
    """
    store = f"sqlite:///{tmp_path / 'store.sqlite'}"
    for crawl in ("cold", "warm"):
        robots_web.reset()
        process, result = user_env.crawl(
            "features_href", "http://bücher.example/", tmp_path, env=robots_web.proxy_env(), IRI_RUNG=rung, IRI_STORE=store,
            # Scrapy's offsite middleware filters a robots.txt redirected out of allowed_domains (then no rule holds)
            allowed="BÜCHER.example shop.example mirror.example other.example", **QUICK,
        )
        fetched = robots_web.fetched()
        # Scrapy asks for robots.txt once per netloc as the request writes it: other spellings of a host may ask again
        for url in [url for url in fetched if url.endswith("/robots.txt") and url not in ROBOTS_TRUTH]:
            assert url.lower().startswith(("http://xn--bcher-kva.example:80/", "http://shop.example:8080/")), url
            robots_web.counts[("GET", url)] = 0
        robots_web.counts = +robots_web.counts
        truth = dict(ROBOTS_TRUTH)
        if crawl == "warm" and rung == "protocol":  # /go is the disallowed /privat/g.html: asking robots.txt is enough
            truth[f"{BUECHER}/go"] = fetched.get(f"{BUECHER}/go", 0)
        _check(process, result, robots_web, truth)
        assert result["stats"].get("robotstxt/forbidden", 0) >= 10


# -- SitemapSpider: robots.txt Sitemap lines -> a sitemap index -> sitemaps (one gzipped) listing IRIs


def _urlset(*entries: str) -> str:
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
            ' xmlns:xhtml="http://www.w3.org/1999/xhtml">' + "".join(entries) + "</urlset>")


def _url(loc: str, *alternates: str) -> str:
    links = "".join(f'<xhtml:link rel="alternate" hreflang="x{i}" href="{href}"/>' for i, href in enumerate(alternates))
    return f"<url><loc>{loc}</loc>{links}</url>"


def _gzip(text: str) -> bytes:
    import gzip

    return gzip.compress(text.encode("utf-8"))


FASS = "http://xn--fa-hia.example"  # faß.example (IDNA2008); IDNA2003 maps it to fass.example, another host
XML = "application/xml"
SITEMAP_WEB = {
    f"{BUECHER}/robots.txt": Answer(200, "User-agent: *\nDisallow: /privat/\nSitemap: http://bücher.example/index.xml\n"
                                         "sitemap: /relative.xml\n", content_type="text/plain"),
    f"{BUECHER}/index.xml": Answer(200, '<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/'
                                        'schemas/sitemap/0.9"><sitemap><loc>http://bücher.example/s1.xml</loc></sitemap>'
                                        "<sitemap><loc>http://faß.example/s2.xml.gz</loc></sitemap></sitemapindex>",
                                   content_type=XML),
    f"{BUECHER}/relative.xml": Answer(200, _urlset(_url("http://bücher.example/r")), content_type=XML),
    f"{BUECHER}/s1.xml": Answer(200, _urlset(
        _url("http://bücher.example/straße?a=1&amp;b=2", "http://bücher.example/de/straße?a=1&amp;b=2"),
        _url("http://bücher.example/%7Ea"), _url("HTTP://BÜCHER.example:80/~a"),  # one page, three forms
        _url("http://bücher.example/e?"), _url("http://bücher.example/e"),
        _url("http://bücher.example/privat/x"),  # robots.txt says no
        _url("http://bücher.example/q?b=2&amp;a=1"),
    ), content_type=XML),
    f"{FASS}/s2.xml.gz": Answer(200, _gzip(_urlset(_url("http://faß.example/", "http://faß.example/en/"))),
                                content_type="application/octet-stream"),
    f"{BUECHER}/r": page(), f"{BUECHER}/stra%C3%9Fe?a=1&b=2": page(), f"{BUECHER}/de/stra%C3%9Fe?a=1&b=2": page(),
    f"{BUECHER}/~a": page(), f"{BUECHER}/%7Ea": page(), f"{BUECHER}/e?": page(), f"{BUECHER}/e": page(),
    f"{BUECHER}/q?b=2&a=1": page(), f"{FASS}/": page(), f"{FASS}/en/": page(),
    f"{FASS}/extra.xml": Answer(200, _urlset(_url(f"{FASS}/x")), content_type=XML), f"{FASS}/x": page(),
}
SITEMAP_TRUTH = {
    f"{BUECHER}/robots.txt": 2,  # once for the robots.txt middleware, once as the spider's first sitemap
    f"{BUECHER}/index.xml": 1, f"{BUECHER}/relative.xml": 1, f"{BUECHER}/s1.xml": 1, f"{FASS}/robots.txt": 1,
    f"{FASS}/s2.xml.gz": 1, f"{BUECHER}/r": 1, f"{BUECHER}/stra%C3%9Fe?a=1&b=2": 1, f"{BUECHER}/de/stra%C3%9Fe?a=1&b=2": 1,
    f"{BUECHER}/e?": 1, f"{BUECHER}/e": 1, f"{BUECHER}/q?b=2&a=1": 1, f"{FASS}/": 1, f"{FASS}/en/": 1,
    f"{FASS}/extra.xml": 1, f"{FASS}/x": 1,  # sitemap_urls may be IRIs too
}


@pytest.fixture
def sitemap_web() -> Iterator[FeatureWeb]:
    web = FeatureWeb(dict(SITEMAP_WEB))
    try:
        yield web
    finally:
        web.close()


@pytest.mark.parametrize("rung", RUNGS)
def test_sitemap_spider_fetches_each_listed_iri_once_at_its_own_host(user_env, sitemap_web, rung, tmp_path):
    """Crawled twice on one store, cold then warm."""
    store = f"sqlite:///{tmp_path / 'store.sqlite'}"
    for _crawl in ("cold", "warm"):
        sitemap_web.reset()
        process, result = user_env.crawl(
            "features_sitemap", "http://bücher.example/robots.txt http://faß.example/extra.xml", tmp_path, env=sitemap_web.proxy_env(), IRI_RUNG=rung,
            IRI_STORE=store, allowed="bücher.example faß.example", **QUICK,
        )
        fetched = sitemap_web.fetched()
        # /~a, /%7Ea and //BÜCHER.example:80/~a are one page: whichever form comes first is fetched, once
        tilde = {url: n for url, n in fetched.items() if url.lower().endswith(("/~a", "/%7ea"))}
        assert sum(tilde.values()) == 1, (tilde, process.stderr[-3000:])
        sitemap_web.counts = +Counter({k: v for k, v in sitemap_web.counts.items() if k[1] not in tilde})
        _check(process, result, sitemap_web, SITEMAP_TRUTH)
        assert len(result["parsed"]) == 10  # the pages: the sitemaps and robots.txt go to SitemapSpider itself


# -- HTTPCACHE_ENABLED, DEPTH_LIMIT, DUPEFILTER_DEBUG, dont_filter, priorities, AUTOTHROTTLE_ENABLED

SHOP = "http://xn--lden-loa.example"  # läden.example
KNOBS_WEB = {
    f"{SHOP}/": page('/a" data-priority="5', "/%61", "/old", "/B", "/d1", "/e?", "/e", "http://LÄDEN.example:80/a"),
    f"{SHOP}/a": page("/", "/b"), f"{SHOP}/b": page("/a"), f"{SHOP}/B": page("/b"),
    f"{SHOP}/old": moved("/new"), f"{SHOP}/new": page("/old"),
    f"{SHOP}/d1": page("/d2"), f"{SHOP}/d2": page("/d3"), f"{SHOP}/d3": page("/d4"), f"{SHOP}/d4": page(),
    f"{SHOP}/e?": page(), f"{SHOP}/e": page(),
}
#: DEPTH_LIMIT = 2: /d3 (depth 3) is never requested; /a once more (``again``, dont_filter); / again (linked back)
KNOBS_TRUTH = {
    f"{SHOP}/robots.txt": 1, f"{SHOP}/": 2, f"{SHOP}/a": 2, f"{SHOP}/b": 1, f"{SHOP}/B": 1, f"{SHOP}/old": 1,
    f"{SHOP}/new": 1, f"{SHOP}/d1": 1, f"{SHOP}/d2": 1, f"{SHOP}/e?": 1, f"{SHOP}/e": 1,
}
KNOBS = {"DEPTH_LIMIT": "2", "DUPEFILTER_DEBUG": "True", "AUTOTHROTTLE_ENABLED": "True", "AUTOTHROTTLE_START_DELAY": "0",
         "AUTOTHROTTLE_MAX_DELAY": "0.5", "HTTPCACHE_ENABLED": "True", "LOG_LEVEL": "DEBUG"}


@pytest.fixture
def knobs_web() -> Iterator[FeatureWeb]:
    web = FeatureWeb(dict(KNOBS_WEB))
    try:
        yield web
    finally:
        web.close()


@pytest.mark.parametrize("rung", RUNGS)
def test_http_cache_depth_limit_dont_filter_and_autothrottle_and_a_recrawl_from_the_cache(user_env, knobs_web, rung, tmp_path):
    """The first crawl fills Scrapy's HTTP cache; the site then turns /old into a page; the recrawl is served from
    the cache (its 301 included) and asks the site nothing; a crawl without the cache fetches the changed /old."""
    settings = {**QUICK, **KNOBS, "IRI_RUNG": rung, "HTTPCACHE_DIR": str(tmp_path / "cache"),
                "IRI_STORE": f"sqlite:///{tmp_path / 'store.sqlite'}"}
    crawl = dict(start=f"{SHOP}/", tmp=tmp_path, env=knobs_web.proxy_env(), again=f"{SHOP}/a")
    process, first = user_env.crawl("features_href", **crawl, **settings)
    # / and /a are requested twice (dont_filter); the second request may find the first one's answer in the cache
    hits = first["stats"].get("httpcache/hit", 0)
    fetched = knobs_web.fetched()
    assert fetched.get(f"{SHOP}/", 0) + fetched.get(f"{SHOP}/a", 0) + hits == 4, (fetched, hits)
    _check(process, first, knobs_web, {**KNOBS_TRUTH, f"{SHOP}/": fetched.get(f"{SHOP}/"), f"{SHOP}/a": fetched.get(f"{SHOP}/a")})
    assert "Filtered duplicate request" in process.stderr and "dupefilter/filtered" in first["stats"]
    assert first["stats"].get("request_depth_max") == 2
    knobs_web.reset({**KNOBS_WEB, f"{SHOP}/old": page("/only-on-old"), f"{SHOP}/only-on-old": page()})
    process, second = user_env.crawl("features_href", **crawl, **settings)
    _check(process, second, knobs_web, {})
    assert sorted(second["parsed"]) == sorted(first["parsed"])
    assert second["stats"].get("httpcache/hit", 0) >= len(KNOBS_TRUTH)
    process, third = user_env.crawl("features_href", **crawl, **{**settings, "HTTPCACHE_ENABLED": "False"})
    changed = {url: n for url, n in KNOBS_TRUTH.items() if url != f"{SHOP}/new"}  # nothing links /new now
    _check(process, third, knobs_web, {**changed, f"{SHOP}/only-on-old": 1})


# -- CrawlSpider: process_links / process_request rewriting URLs, canonicalize=True, unique=False, restrict_css,
#    <area> and <link rel=next>

CAFE = "http://xn--caf-dma.example"  # café.example
RULES_WEB = {
    f"{CAFE}/": '<html><head><meta charset=utf-8><link rel="next" href="/page/2"></head><body><div class="nav">'
                '<a href="/A;jsessionid=1">A</a> <a href="/b?y=2&amp;x=1">b</a> <a href="/b?x=1&amp;y=2">b</a>'
                '<map name="m"><area shape="rect" coords="0,0,9,9" href="/area-target"></map>'
                '<a href="/straße">s</a> <a href="/e?">e?</a> <a href="/e">e</a> <a href="/%7Et">t</a> <a href="/~t">t</a></div>'
                '<div class="other"><a href="/not-in-nav">no</a> <a href="/list/1">1</a> <a href="/list/1">1</a>'
                '<a href="/list/old/2">2</a> <a href="/list/3?">3?</a></div></body></html>',
    f"{CAFE}/page/2": '<html><head><link rel="next" href="/page/3"></head><body></body></html>',
    f"{CAFE}/page/3": page(), f"{CAFE}/A": page(), f"{CAFE}/b?y=2&x=1": page(), f"{CAFE}/b?x=1&y=2": page(),
    f"{CAFE}/area-target": page(), f"{CAFE}/stra%C3%9Fe": page(), f"{CAFE}/e?": page(), f"{CAFE}/e": page(),
    f"{CAFE}/~t": page(), f"{CAFE}/%7Et": page(), f"{CAFE}/list/1": page("/list/1#top", "/list/3"), f"{CAFE}/list/2": page(),
    f"{CAFE}/list/3?": page(), f"{CAFE}/list/3": page(),
}
RULES_TRUTH = {
    f"{CAFE}/robots.txt": 1, f"{CAFE}/": 1, f"{CAFE}/page/2": 1, f"{CAFE}/page/3": 1, f"{CAFE}/A": 1,
    f"{CAFE}/b?y=2&x=1": 1, f"{CAFE}/b?x=1&y=2": 1, f"{CAFE}/area-target": 1, f"{CAFE}/stra%C3%9Fe": 1,
    f"{CAFE}/e?": 1, f"{CAFE}/e": 1, f"{CAFE}/list/1": 1, f"{CAFE}/list/2": 1, f"{CAFE}/list/3?": 1, f"{CAFE}/list/3": 1,
}


@pytest.fixture
def rules_web() -> Iterator[FeatureWeb]:
    web = FeatureWeb(dict(RULES_WEB))
    try:
        yield web
    finally:
        web.close()


@pytest.mark.parametrize("rung", RUNGS)
@pytest.mark.parametrize("spider", ["features_irirules", "features_rules"])
def test_crawl_spider_rules_that_rewrite_links_and_requests(user_env, rules_web, spider, rung, tmp_path):
    process, result = user_env.crawl(spider, f"{CAFE}/", tmp_path, env=rules_web.proxy_env(), IRI_RUNG=rung, **QUICK)
    fetched = rules_web.fetched()
    tilde = {url: n for url, n in fetched.items() if url.endswith(("/~t", "/%7Et"))}  # one page: either form, once
    assert sum(tilde.values()) == 1, tilde
    truth = {**RULES_TRUTH, **tilde}  # Scrapy's canonicalize=True sorts the query: the add-on requests both /b
    _check(process, result, rules_web, truth)


# -- scrapy fetch, scrapy shell -c, scrapy parse with the add-on

COMMANDS_WEB = {
    f"{BUECHER}/robots.txt": Answer(200, "User-agent: *\nDisallow: /privat/\n", content_type="text/plain"),
    f"{BUECHER}/": page("/e?", "/e", "/old", "http://faß.example/", head="<title>home</title>"),
    f"{BUECHER}/old": moved("/e"), f"{BUECHER}/e": "<html><title>page e</title></html>",
    f"{BUECHER}/e?": "<html><title>page e?</title></html>", f"{FASS}/": "<html><title>fass</title></html>",
}


@pytest.fixture
def commands_web() -> Iterator[FeatureWeb]:
    web = FeatureWeb(dict(COMMANDS_WEB))
    try:
        yield web
    finally:
        web.close()


def _command(user_env, web: FeatureWeb, *args: str):
    from userenv import clean_env, run

    process = run([user_env.bin("scrapy"), *args], cwd=user_env.project, env={**clean_env(), **web.proxy_env()})
    assert process.returncode == 0, process.stderr[-3000:]
    assert "Traceback" not in process.stderr and " ERROR: " not in process.stderr, process.stderr[-3000:]
    return process


@pytest.mark.parametrize("rung", ["protocol"])  # the rung whose middleware saw these commands' requests
def test_scrapy_fetch_shell_and_parse_commands(user_env, commands_web, rung):
    """The commands' requests pass the add-on's components (``fetch`` and ``shell`` let Scrapy follow redirects
    with a ``handle_httpstatus_list`` that is no list: a ``SequenceExclude`` of the 3xx statuses)."""
    setting = f"IRI_RUNG={rung}"
    fetched = _command(user_env, commands_web, "fetch", "-s", setting, "--nolog", "http://bücher.example/")
    assert "<title>home</title>" in fetched.stdout
    moved_ = _command(user_env, commands_web, "fetch", "-s", setting, "--nolog", "--no-redirect", "http://bücher.example/old")
    assert moved_.stdout.strip() == ""  # the 301's empty body, not the page it points to
    shell = _command(user_env, commands_web, "shell", "-s", setting, "--nolog", "-c",
                     "(response.status, response.url, response.css('title::text').get())", "http://bücher.example/old")
    assert shell.stdout.strip() == f"(200, '{BUECHER}/e', 'page e')"
    parsed = _command(user_env, commands_web, "parse", "-s", setting, "--nolog", "--spider=features_href", "-c", "parse",
                      "--depth", "2", "http://bücher.example/")
    assert "Requests" in parsed.stdout
    # depth 2 follows the links through the add-on's spider middleware: /e? and faß.example (IDNA2008) each once
    assert {url: n for url, n in commands_web.fetched().items() if not url.endswith("/robots.txt")} == {
        f"{BUECHER}/": 2, f"{BUECHER}/old": 3, f"{BUECHER}/e": 2, f"{BUECHER}/e?": 1, f"{FASS}/": 1,
    }


def test_urls_on_the_command_line_are_requested_as_written(user_env, commands_web, tmp_path):
    """``Request(url)`` would ask ``fass.example`` (IDNA2003), another host, for ``/e`` (the empty query dropped)."""
    commands_web.reset({
        **COMMANDS_WEB, f"{FASS}/e?": "<html><title>fass e?</title></html>", f"{FASS}/e": "<html><title>fass e</title></html>",
        "http://fass.example/e": "<html><title>the wrong host</title></html>",
    })
    url = "http://faß.example/e?"
    fetched = _command(user_env, commands_web, "fetch", "-s", "LOG_LEVEL=INFO", url)
    assert fetched.stdout.strip() == "<html><title>fass e?</title></html>"
    assert "'iri/command_line_urls': 1" in fetched.stderr and "log_count/ERROR" not in fetched.stderr, fetched.stderr[-3000:]
    shell = _command(user_env, commands_web, "shell", "--nolog", "-c", "(response.url, response.css('title::text').get())", url)
    assert shell.stdout.strip() == f"('{FASS}/e?', 'fass e?')"
    parsed = _command(user_env, commands_web, "parse", "-s", "LOG_LEVEL=INFO", "--spider=features_href", "-a",
                      f"out={tmp_path / 'parse.json'}", "-c", "parse", url)
    assert "log_count/ERROR" not in parsed.stderr, parsed.stderr[-3000:]
    assert {url: n for url, n in commands_web.fetched().items() if not url.endswith("/robots.txt")} == {f"{FASS}/e?": 3}


# -- feed exports (JSON Lines, CSV) of items with IRIs, through the URL pipeline

ITEMS_WEB = {
    f"{BUECHER}/": '<html><head><meta charset=utf-8><title>Bücher – Startseite</title></head><body>'
                   '<a href="http://bücher.example/straße?q=grüße#oben">1</a> <a href="HTTP://BÜCHER.example:80/%7Eich">2</a>'
                   '<a href="http://a.example/x?b=2&amp;a=1">3</a> <a href="http://faß.example/">4</a>'
                   '<a href="http://[::1/">5</a> <a class="next" href="http://bücher.example/old">next</a></body></html>',
    f"{BUECHER}/old": moved("/neu"),
    f"{BUECHER}/neu": '<html><head><meta charset=utf-8><title>Neu</title></head><body><a href="http://bücher.example/e?">e?</a>'
                      '</body></html>',
}
#: the pipeline's canonical forms at the scheme rung (3987bis: UTF-8 percent-encoding, IDNA2008 A-labels,
#: the default port dropped, %7E decoded, the empty query kept); "http://[::1/" is no IRI: kept as scraped
ITEM_LINKS = {
    f"{BUECHER}/": [
        f"{BUECHER}/stra%C3%9Fe?q=gr%C3%BC%C3%9Fe#oben", f"{BUECHER}/~ich", "http://a.example/x?b=2&a=1", f"{FASS}/",
        "http://[::1/", f"{BUECHER}/old",
    ],
    f"{BUECHER}/neu": [f"{BUECHER}/e?"],
}


@pytest.fixture
def items_web() -> Iterator[FeatureWeb]:
    web = FeatureWeb(dict(ITEMS_WEB))
    try:
        yield web
    finally:
        web.close()


@pytest.mark.parametrize(("rung", "encoding"), [("scheme", "utf-8"), ("protocol", None)])
def test_feed_exports_of_items_with_iris_through_the_url_pipeline(user_env, items_web, rung, encoding, tmp_path):
    import csv
    import json

    # startproject's FEED_EXPORT_ENCODING is utf-8; None (Scrapy's default) escapes non-ASCII in JSON, CSV is utf-8
    feeds = {str(tmp_path / "items.jsonl"): {"format": "jsonlines", "encoding": encoding},
             str(tmp_path / "items.csv"): {"format": "csv", "encoding": encoding}}
    settings = {"FEEDS": json.dumps(feeds), "IRI_URL_FIELDS": "url,links,home", "IRI_URL_KEEP_ORIGINAL": "True",
                "IRI_URL_RUNG": "scheme", "IRI_RUNG": rung, **QUICK}
    process, result = user_env.crawl("features_items", "http://bücher.example/", tmp_path, env=items_web.proxy_env(), **settings)
    _check(process, result, items_web, {f"{BUECHER}/robots.txt": 1, f"{BUECHER}/": 1, f"{BUECHER}/old": 1, f"{BUECHER}/neu": 1})
    lines = (tmp_path / "items.jsonl").read_text(encoding="utf-8").splitlines()
    if not encoding:  # JSON escapes every non-ASCII character
        assert all(line.isascii() for line in lines)
    items = {item["url"]: item for item in map(json.loads, lines)}
    assert {url: item["links"] for url, item in items.items()} == ITEM_LINKS
    assert items[f"{BUECHER}/"]["title"] == "Bücher – Startseite"
    assert items[f"{BUECHER}/"]["links_original"][0] == "http://bücher.example/straße?q=grüße#oben"
    assert items[f"{BUECHER}/"]["home"] == ITEM_LINKS[f"{BUECHER}/"][0]
    with (tmp_path / "items.csv").open(encoding="utf-8", newline="") as f:
        rows = {row["url"]: row for row in csv.DictReader(f)}
    assert {url: row["links"] for url, row in rows.items()} == {url: ",".join(links) for url, links in ITEM_LINKS.items()}
    assert rows[f"{BUECHER}/"]["title"] == "Bücher – Startseite" and rows[f"{BUECHER}/"]["url_original"] == f"{BUECHER}/"
    assert result["stats"].get("iri/pipeline/invalid") == 1  # "http://[::1/", logged as a warning, item kept
    assert result["stats"].get("item_scraped_count") == 2


# -- FilesPipeline: a media request for a URL the spider fetched already


FILES_WEB = {
    f"{BUECHER}/": page('/a.txt" data-priority="9', "/p"),
    f"{BUECHER}/p": page('/a.txt" data-file="1', '/b.txt" data-file="1'),
    f"{BUECHER}/a.txt": Answer(200, "a", content_type="text/plain"), f"{BUECHER}/b.txt": Answer(200, "b", content_type="text/plain"),
}


@pytest.fixture
def files_web() -> Iterator[FeatureWeb]:
    web = FeatureWeb(dict(FILES_WEB))
    try:
        yield web
    finally:
        web.close()


@pytest.mark.parametrize(("rung", "redirects"), [("scheme", "True"), ("protocol", "False"), ("protocol", "True")])
def test_files_pipeline_downloads_a_file_the_spider_fetched_already(user_env, files_web, rung, redirects, tmp_path):
    """One request at a time, /a.txt first: the FilesPipeline's request for it comes after the spider's.

    ``MEDIA_ALLOW_REDIRECTS`` gives media requests a ``handle_httpstatus_list`` that is a ``SequenceExclude``;
    without it they handle every status themselves.
    """
    import json

    feeds = {str(tmp_path / "items.jsonl"): {"format": "jsonlines"}}
    process, result = user_env.crawl(
        "features_files", "http://bücher.example/", tmp_path, env=files_web.proxy_env(), IRI_RUNG=rung,
        ITEM_PIPELINES=json.dumps({"scrapy.pipelines.files.FilesPipeline": 1}), FILES_STORE=str(tmp_path / "files"),
        FEEDS=json.dumps(feeds), DOWNLOAD_DELAY="0", CONCURRENT_REQUESTS="1", MEDIA_ALLOW_REDIRECTS=redirects,
    )
    truth = {f"{BUECHER}/robots.txt": 1, f"{BUECHER}/": 1, f"{BUECHER}/p": 1, f"{BUECHER}/a.txt": 2, f"{BUECHER}/b.txt": 2}
    _check(process, result, files_web, truth)
    items = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [sorted((f["url"], f["status"]) for f in item["files"]) for item in items] == [
        [(f"{BUECHER}/a.txt", "downloaded"), (f"{BUECHER}/b.txt", "downloaded")]
    ], process.stderr[-3000:]
