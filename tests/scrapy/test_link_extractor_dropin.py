"""IRILinkExtractor as a drop-in: every link Scrapy's LinkExtractor follows, in order, same or better URL.

"Same or better" is checked through the scheme-rung canonical form (an
empty query ``?`` set aside, since Scrapy drops it): the list of distinct
forms of Scrapy's links is a subsequence of ours (ours may add a link
that ``urljoin`` refuses, such as ``//]``). Pages: a page of everyday
link forms, random pages (hypothesis), and real documentation trees
(Debian's git-doc and python3.x-doc packages, downloaded once into a cache
outside the repository; skipped with the reason when apt cannot fetch
them).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.python import unique
from w3lib.url import safe_url_string

from scrapy_iri import IRIError, IRILinkExtractor, canonicalize


def form(url: str) -> str:
    """What a link names at the scheme rung, once Scrapy's ``Request`` has rewritten it.

    ``safe_url_string`` drops an empty query and escapes ``'`` in a query
    (another resource: our links keep both); the comparison puts both
    sides through it, and the tests below check that ours keep them.
    """
    url = safe_url_string(url)
    try:
        return canonicalize(url, "scheme", keep_fragment=True, lenient=True)
    except IRIError:
        return url


def assert_drop_in(response: HtmlResponse, **kwargs) -> list[str]:
    theirs = [link.url for link in LinkExtractor(**kwargs).extract_links(response)]
    ours = [link.url for link in IRILinkExtractor(**kwargs).extract_links(response)]
    mine, scrapys = unique([form(u) for u in ours]), unique([form(u) for u in theirs])
    remaining = iter(mine)  # Scrapy's links, in Scrapy's order, among ours (ours may add what urljoin refuses)
    missing = [key for key in scrapys if not any(key == other for other in remaining)]
    assert not missing, (missing, mine, scrapys)
    for url in ours:
        scheme = url.partition(":")[0]
        assert scheme == scheme.lower() and url.isascii()
    return ours


BASE = "http://site.test/dir/page.html"
EVERYDAY = [
    "HTTP://Example.COM:80/%7Efoo", "Https://Site.Test/a", "http://site.test:8080/p", "https://site.test:443/q",
    "/a/./b/../c", "HTTP://SITE.TEST:80/a/./b/../c", "#", "#top", "?", "e?", "e", "?x=1", "e?x", "../up",
    "//other.test/x", "  spaced  ", "\n/nl\t", "mailto:a@b.test", "javascript:void(0)", "tel:123",
    "ftp://files.test/f", "file:///etc/x", "/über", "/q?x=ä", "x y", "a%20b", "%7e", "/a?b=c#d",
    "http://u:p@site.test/", "http://site.test", "HTTP://SITE.TEST", "./", "..", "/a//b", "http://[::1]:80/",
    "http://127.0.0.1:8000/x", "data:text/plain,x", "/a'b?c'd", "/pic.jpg", "/doc.PDF", "?#", "e?#f",
]


def everyday_page(base_tag: str = "") -> HtmlResponse:
    anchors = "".join(f'<a href="{href}">t{i}</a>' for i, href in enumerate(EVERYDAY))
    body = f"<html><head>{base_tag}</head><body>{anchors}<area href='/area'></body></html>"
    return HtmlResponse(BASE, body=body.encode(), encoding="utf-8")


@pytest.mark.parametrize("base_tag", ["", '<base href="http://site.test/dir/page.html">', '<base href="/other/">'])
def test_everyday_link_forms(base_tag):
    assert_drop_in(everyday_page(base_tag))


def test_everyday_link_forms_better_than_scrapy():
    ours = assert_drop_in(everyday_page())
    assert "http://example.com:80/%7Efoo" in ours  # upper-case scheme: followed, lowercased
    assert "https://site.test/a" in ours
    assert "http://site.test/dir/page.html" in ours  # href="#": the page itself, as in Scrapy
    assert "http://site.test/dir/page.html#" not in ours
    assert ours.index("http://site.test/dir/page.html?") > ours.index("http://site.test/dir/page.html")
    assert "http://site.test/dir/e?" in ours and "http://site.test/dir/e" in ours  # two resources
    assert "http://site.test/dir/e?#f" in ours  # empty query kept, fragment kept
    assert "http://site.test/a'b?c'd" in ours  # Scrapy: ?c%27d, another resource
    assert "mailto:a@b.test" not in ours and "/pic.jpg" not in "".join(ours)


def test_idn_hosts_better_than_scrapy():
    response = HtmlResponse(
        BASE, body='<a href="http://faß.example/">a</a><a href="HTTP://BÜCHER.example/">b</a>'.encode(), encoding="utf-8"
    )
    theirs = [link.url for link in LinkExtractor().extract_links(response)]
    ours = [link.url for link in IRILinkExtractor().extract_links(response)]
    assert theirs == ["http://fass.example/", "http://xn--bcher-kva.example/"]  # IDNA2003: another host
    assert ours == ["http://xn--fa-hia.example/", "http://xn--bcher-kva.example/"]


def test_uniqueness_is_decided_after_filtering():
    """A spelling that a filter drops must not take its aliases with it."""
    body = '<a href="HTTP://SITE.TEST:80/a/./b/../c">1</a><a href="/a/c">2</a><a href="/x/./y">3</a><a href="/x/y">4</a>'
    response = HtmlResponse(BASE, body=body.encode(), encoding="utf-8")
    assert [link.url for link in IRILinkExtractor(deny=r":80/").extract_links(response)] == [
        "http://site.test/a/c",
        "http://site.test/x/y",
    ]
    assert [link.url for link in IRILinkExtractor(restrict_text="4").extract_links(response)] == [
        "http://site.test/x/y"
    ]
    assert_drop_in(response, deny=r":80/")


def test_paths_resolve_per_rfc_3986_where_urljoin_does_not():
    """``urljoin`` still treats ``;`` as RFC 1808 parameters; browsers and RFC 3986 see a path segment."""
    response = HtmlResponse(BASE, body=b'<a href=";">x</a><a href=";p">y</a>', encoding="utf-8")
    assert [link.url for link in LinkExtractor().extract_links(response)][0] == BASE  # Scrapy: the page itself
    assert [link.url for link in IRILinkExtractor().extract_links(response)] == [
        "http://site.test/dir/;",
        "http://site.test/dir/;p",
    ]
    response = HtmlResponse(BASE, body=b'<a href="a//">x</a>', encoding="utf-8")
    assert [link.url for link in LinkExtractor().extract_links(response)] == ["http://site.test/dir/a/"]
    assert [link.url for link in IRILinkExtractor().extract_links(response)] == ["http://site.test/dir/a//"]


# Left out: ``;`` (urljoin's RFC 1808 reading, above) and ``//`` inside a path
# (urljoin collapses ``a//`` to ``a/``, another resource), and white space
# (urljoin drops ``?`` from ``a ?``, then safe_url_string trims ``a `` to ``a``;
# the everyday page covers white space at the ends).
_PREFIXES = st.sampled_from(["", "", "/", "//h.test/", "http://h.test/", "HTTP://H.Test:80/", "https://h.test:443/", "http:"])
# (hosts stay ASCII: IDNA2003 and IDNA2008 differ on purpose, see test_idn_hosts_better_than_scrapy)
_PIECES = st.sampled_from(
    ["a", "B", "/", ".", "..", "?", "#", "%", "%7e", "%41", ":", "@", "80", "é", "ß", "x=1&y", "~", "'",
     "[", "]", "*", "index.html", "+", ",", "=", "!"]
)
_HREF = st.tuples(_PREFIXES, st.lists(_PIECES, max_size=8).map("".join)).map(
    lambda parts: parts[0] + re.sub("/+", "/", parts[1]).lstrip("/" if parts[0].endswith("/") else "")
)
_HREFS = st.lists(_HREF, max_size=12)


@settings(deadline=None)
@given(_HREFS)
def test_random_pages(hrefs):
    anchors = "".join(f"<a href='{href.replace(chr(39), '&#39;')}'>x</a>" for href in hrefs)
    assert_drop_in(HtmlResponse(BASE, body=f"<html><body>{anchors}</body></html>".encode(), encoding="utf-8"))


# -- real HTML: Debian's documentation trees

DEBIAN_PACKAGES = ("git-doc", f"python3.{sys.version_info.minor}-doc", "python3.11-doc")


def _docs_cache() -> Path:
    root = os.environ.get("SCRAPY_IRI_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "scrapy-iri")
    return Path(root) / "debian-docs"


@pytest.fixture(scope="session")
def debian_docs() -> Path:
    cache = _docs_cache()
    if not any(cache.rglob("*.html")) if cache.exists() else True:
        if not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
            pytest.skip("Debian documentation corpus: apt-get/dpkg-deb not available")
        debs = cache / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        for package in dict.fromkeys(DEBIAN_PACKAGES):
            subprocess.run(["apt-get", "download", package], cwd=debs, capture_output=True, timeout=300)
        for deb in debs.glob("*.deb"):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(cache / "tree")], capture_output=True, timeout=300)
        if not any(cache.rglob("*.html")):
            pytest.skip(f"Debian documentation corpus: apt-get download {' '.join(DEBIAN_PACKAGES)} fetched nothing")
    return cache


def test_debian_documentation_pages(debian_docs):
    """A seeded sample (every page under HYPOTHESIS_PROFILE=fuzz), link by link."""
    pages = sorted(debian_docs.rglob("*.html"))
    if os.environ.get("HYPOTHESIS_PROFILE") != "fuzz":
        pages = random.Random(12).sample(pages, min(60, len(pages)))
    links = 0
    for path in pages:
        url = "http://docs.test/" + path.relative_to(debian_docs).as_posix()
        response = HtmlResponse(url, body=path.read_bytes())
        links += len(assert_drop_in(response))
    assert links > 100
