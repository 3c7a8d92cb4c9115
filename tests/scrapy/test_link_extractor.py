"""IRILinkExtractor and iri_request: correct URIs, and a drop-in for Scrapy's LinkExtractor."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.test import get_crawler

from scrapy_iri import IRIError, IRILinkExtractor, iri_request
from scrapy_iri.scrapy._links import ascii_domains, base_url, request_url


def page(body: str, url: str = "http://bücher.example/dir/page", encoding: str = "utf-8") -> HtmlResponse:
    return HtmlResponse(Request(url).url, body=body.encode(encoding), encoding=encoding)


def urls(links):
    return [link.url for link in links]


IDN_PAGE = page(
    """<html><head><title>t</title></head><body>
    <a href="http://faß.example/">eszett</a>
    <a href="http://fass.example/">ss</a>
    <a href="http://b%C3%BCcher.example/kontakt">pct host</a>
    <a href="über uns">raw path</a>
    <a href="HTTP://BÜCHER.example/dir/über%20uns">same, other spelling</a>
    <a href="//ΒΙΒΛΊΑ.example/">greek, upper case</a>
    </body></html>"""
)


def test_idn_hosts_are_idna2008_a_labels():
    assert urls(IRILinkExtractor().extract_links(IDN_PAGE)) == [
        "http://xn--fa-hia.example/",
        "http://fass.example/",
        "http://xn--bcher-kva.example/kontakt",
        "http://xn--bcher-kva.example/dir/%C3%BCber%20uns",
        "http://xn--kxaeba8an.example/",
    ]


def test_scrapys_extractor_gets_those_wrong():
    scrapy_urls = urls(LinkExtractor().extract_links(IDN_PAGE))
    assert "http://fass.example/" in scrapy_urls and "http://xn--fa-hia.example/" not in scrapy_urls
    assert "http://b%C3%BCcher.example/kontakt" in scrapy_urls  # unresolvable host


def test_requests_keep_the_extracted_uris_byte_for_byte():
    for link in IRILinkExtractor().extract_links(IDN_PAGE):
        assert Request(link.url).url == link.url


def test_base_href_is_honoured_and_not_mapped_with_idna2003():
    response = page('<head><base href="http://faß.example/wein/"></head><a href="rot">x</a><a href="/">y</a>')
    assert base_url(response) == "http://faß.example/wein/"
    assert urls(IRILinkExtractor().extract_links(response)) == [
        "http://xn--fa-hia.example/wein/rot",
        "http://xn--fa-hia.example/",
    ]


def test_relative_base_and_empty_base():
    assert base_url(page('<base href="../other/">', url="http://a.example/x/y")) == "http://a.example/other/"
    assert base_url(page('<base href=" ">', url="http://a.example/x/y")) == "http://a.example/x/y"
    assert base_url(page('<base target="_top"><base href="/b/">')) == "http://xn--bcher-kva.example/b/"


def test_query_uses_a_non_unicode_document_charset():
    """3987bis 3.5: the query of an http(s) IRI in a windows-1251 page is encoded in windows-1251."""
    response = page('<a href="/s?q=мир#мир">x</a><a href="/мир">y</a>', encoding="cp1251")
    assert urls(IRILinkExtractor().extract_links(response)) == [
        "http://xn--bcher-kva.example/s?q=%EC%E8%F0#%D0%BC%D0%B8%D1%80",
        "http://xn--bcher-kva.example/%D0%BC%D0%B8%D1%80",
    ]
    not_encodable = page('<a href="/s?q=&#8364;">x</a>', encoding="latin-1")
    assert urls(IRILinkExtractor().extract_links(not_encodable)) == ["http://xn--bcher-kva.example/s?q=%26%238364%3B"]


def test_invalid_links_are_counted_and_followed_as_scrapy_would():
    """A drop-in never loses a link: what is not an IRI is counted, then treated as Scrapy does."""
    crawler = get_crawler()
    response = page('<a href="http://[::1">a</a><a href="http://☃.example/">b</a><a href="ok">c</a>')
    extractor = IRILinkExtractor.from_crawler(crawler)
    assert urls(extractor.extract_links(response)) == urls(LinkExtractor().extract_links(response))
    assert urls(extractor.extract_links(response))[-1] == "http://xn--bcher-kva.example/dir/ok"
    extractor.invalid_count = 0
    crawler.stats.set_value("iri/links/invalid", 0)
    extractor.extract_links(response)
    assert extractor.invalid_count == 2
    assert crawler.stats.get_value("iri/links/invalid") == 2


def test_lenient_real_world_hrefs():
    response = page('<a href=" /a b|c\\d?x=%zz ">x</a><a href="\tjavascript:void(0)">j</a>')
    assert urls(IRILinkExtractor().extract_links(response)) == ["http://xn--bcher-kva.example/a%20b%7Cc/d?x=%25zz"]


def test_unique_merges_by_canonical_form_and_keeps_fragments_apart():
    response = page(
        '<a href="http://a.example/%7Ex">1</a><a href="http://A.EXAMPLE:80/~x">2</a>'
        '<a href="http://a.example/~x#f">3</a><a href="http://a.example/~X">4</a>'
    )
    assert urls(IRILinkExtractor().extract_links(response)) == [
        "http://a.example/%7Ex",
        "http://a.example/~x#f",
        "http://a.example/~X",
    ]
    assert len(IRILinkExtractor(unique=False).extract_links(response)) == 4
    assert len(IRILinkExtractor(rung="string").extract_links(response)) == 4


def test_canonicalize_uses_the_ladder_not_query_sorting():
    response = page('<a href="http://A.example:80/%7Ex?b=1&a=2#f">1</a>')
    assert urls(IRILinkExtractor(canonicalize=True).extract_links(response)) == ["http://a.example/~x?b=1&a=2"]


def test_allow_domains_accept_unicode_labels():
    extractor = IRILinkExtractor(allow_domains=["bücher.example"], deny_domains="FAß.example")
    assert urls(extractor.extract_links(IDN_PAGE)) == [
        "http://xn--bcher-kva.example/kontakt",
        "http://xn--bcher-kva.example/dir/%C3%BCber%20uns",
    ]
    assert ascii_domains(["faß.example", "[bad"]) == {"faß.example", "xn--fa-hia.example", "[bad"}


def test_process_value_gets_the_absolute_iri_and_may_return_a_relative_one():
    seen = []

    def process(value):
        seen.append(value)
        return None if "skip" in value else value.replace("/dir/", "/andere/").rpartition("/")[2]

    response = page('<a href="über">1</a><a href="skip">2</a>')
    assert urls(IRILinkExtractor(process_value=process).extract_links(response)) == [
        "http://xn--bcher-kva.example/dir/%C3%BCber"
    ]
    assert seen == ["http://xn--bcher-kva.example/dir/über", "http://xn--bcher-kva.example/dir/skip"]


ASCII_PAGE = """<html><body>
<div id="nav"><a href="/nav/1">Nav one</a><a href="http://other.example/nav/2" rel="nofollow">Nav two</a></div>
<div class="main">
  <a href="item/1.html">Item 1</a>
  <a href=" item/2.html ">Item 2</a>
  <a href="item/1.html">Item 1 again</a>
  <a href="doc.pdf">PDF</a>
  <a href="http://sub.shop.example/p?b=2&amp;a=1">Shop</a>
  <area href="/map" />
  <img src="/img.png" />
  <link href="/style.css" />
  <a href="javascript:go('x')">JS</a>
  <a href="mailto:me@example.com">Mail</a>
  <a href="#top">Top</a>
</div></body></html>"""

PARITY_ARGUMENTS = [
    {},
    {"unique": False},
    {"allow": r"/item/"},
    {"deny": r"item/2"},
    {"allow_domains": "shop.example"},
    {"deny_domains": ["other.example"]},
    {"deny_extensions": []},
    {"restrict_xpaths": '//div[@id="nav"]'},
    {"restrict_css": "div.main"},
    {"restrict_text": "Item"},
    {"tags": ("a", "img"), "attrs": ("href", "src")},
    {"tags": "*", "attrs": "*", "deny_tags": "link", "deny_attrs": "class"},
    {"strip": False},
    {"process_value": lambda v: v.replace("item", "ITEM")},
]


@pytest.mark.parametrize("kwargs", PARITY_ARGUMENTS, ids=lambda kw: ",".join(kw) or "defaults")
def test_drop_in_parity_with_scrapy_on_plain_ascii_pages(kwargs):
    response = HtmlResponse("http://www.example.com/dir/", body=ASCII_PAGE.encode(), encoding="utf-8")
    ours = IRILinkExtractor(**kwargs).extract_links(response)
    theirs = LinkExtractor(**kwargs).extract_links(response)
    assert [(l.url, l.text, l.nofollow) for l in ours] == [(l.url, l.text, l.nofollow) for l in theirs]


def test_matches_like_scrapy():
    assert IRILinkExtractor(allow=r"/a", allow_domains=["bücher.example"]).matches("http://xn--bcher-kva.example/a")


# -- iri_request


def test_iri_request_maps_and_resolves():
    assert iri_request("http://faß.example/straße").url == "http://xn--fa-hia.example/stra%C3%9Fe"
    assert iri_request("../über", base="http://b%C3%BCcher.example/a/b").url == "http://xn--bcher-kva.example/%C3%BCber"
    request = iri_request("rot", base=page('<base href="http://faß.example/wein/">'), callback=print, priority=3)
    assert (request.url, request.priority, request.callback) == ("http://xn--fa-hia.example/wein/rot", 3, print)
    with pytest.raises(IRIError):
        iri_request("relative/only")
    with pytest.raises(ValueError, match="not allowed"):
        iri_request("http://☃.example/")  # IDNA2003 allowed symbols; IDNA2008 does not


def test_iri_request_uses_the_response_encoding_for_the_query():
    response = page("<p>x</p>", encoding="cp1251")
    assert iri_request("/s?q=мир", base=response).url == "http://xn--bcher-kva.example/s?q=%EC%E8%F0"


def test_iri_request_keeps_an_empty_query_that_request_would_drop():
    request = iri_request("http://news.example/p?", meta={"k": 1})
    assert request.url == "http://news.example/p?"
    assert request.meta == {"k": 1, "verbatim_url": True}
    assert "verbatim_url" not in iri_request("http://news.example/p").meta


_iri_chars = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="#?/%[]"), max_size=12
)


@given(path=_iri_chars, query=_iri_chars)
def test_request_leaves_mapped_uris_alone(path, query):
    """Scrapy's safe_url_string is the identity on what request_url produces (non-empty query)."""
    try:
        url = request_url(f"http://bücher.example/{path}?q{query}", encoding="utf-8")
    except IRIError:
        return
    if "'" in url.partition("?")[2]:
        return  # WHATWG-style: Scrapy encodes ' in a query; iri_request sets verbatim_url then
    assert Request(url).url == url


@pytest.mark.parametrize("href", ["mailto:someone@example.com", "tel:+123", "javascript:void(0)"])
def test_iri_request_raises_iri_error_for_what_scrapy_cannot_request(href):
    with pytest.raises(IRIError, match="scheme"):
        iri_request(href, base="http://a.example/")


def test_a_link_with_an_absurd_port_does_not_cost_the_page_its_other_links():
    body = '<a href="http://a.example:' + "1" * 5000 + '/">x</a><a href="/ok">ok</a>'
    response = HtmlResponse("http://a.example/", body=body.encode(), encoding="utf-8")
    urls = [link.url for link in IRILinkExtractor(unique=True, canonicalize=True).extract_links(response)]
    assert urls[-1] == "http://a.example/ok"
