"""VerbatimLinkMiddleware: requests built from IRILinkExtractor links keep the link's URI."""

from __future__ import annotations

from scrapy import Request, Spider
from scrapy.http import HtmlResponse
from scrapy.spiders import CrawlSpider, Rule
from scrapy.utils.test import get_crawler

from scrapy_iri import IRILinkExtractor, iri_request
from scrapy_iri.scrapy._verbatim import VerbatimLinkMiddleware

PAGE = (
    b'<a href="/e?">empty query</a><a href="/e">none</a><a href="/q?a=\'b\'">quote</a>'
    b'<a href="/p">p</a><a href="/p?">p?</a><a href="/plain">plain</a>'
)


def response() -> HtmlResponse:
    return HtmlResponse("http://site.test/", body=PAGE, encoding="utf-8")


def middleware(spider_cls: type[Spider] = Spider) -> VerbatimLinkMiddleware:
    crawler = get_crawler(spider_cls, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_RUNG": "scheme"})
    return VerbatimLinkMiddleware.from_crawler(crawler)


def processed(mw: VerbatimLinkMiddleware, page: HtmlResponse, requests: list[Request]) -> list[str]:
    return [mw.get_processed_request(r, page).url for r in requests]


def test_response_follow_keeps_the_links_uris_in_either_order():
    for order in (1, -1):
        page = response()
        links = IRILinkExtractor().extract_links(page)[::order]
        urls = processed(middleware(), page, [page.follow(link) for link in links])
        assert sorted(urls) == sorted(link.url for link in links)
        assert "http://site.test/e?" in urls and "http://site.test/e" in urls
        assert "http://site.test/q?a='b'" in urls


def test_verbatim_requests_are_left_alone_and_take_their_link():
    page = response()
    mw = middleware()
    requests = [iri_request(link.url) for link in IRILinkExtractor().extract_links(page)]
    assert processed(mw, page, requests) == [r.url for r in requests]
    # the plain /p, after iri_request(/p?) took its own link, stays /p
    page = response()
    mw = middleware()
    links = {link.url: link for link in IRILinkExtractor().extract_links(page)}
    first = mw.get_processed_request(iri_request("http://site.test/p?"), page)
    second = mw.get_processed_request(page.follow(links["http://site.test/p"]), page)
    assert (first.url, second.url) == ("http://site.test/p?", "http://site.test/p")


def test_crawlspider_rules_are_matched_by_link_text():
    class Rules(CrawlSpider):
        name = "rules"
        rules = (Rule(IRILinkExtractor()),)

    page = response()
    crawler = get_crawler(Rules, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_RUNG": "scheme"})
    spider = Rules.from_crawler(crawler)
    mw = VerbatimLinkMiddleware.from_crawler(crawler)
    requests = [r for r in spider._requests_to_follow(page) if r is not None]
    by_text = {r.meta["link_text"]: mw.get_processed_request(r, page) for r in reversed(requests)}
    assert by_text["empty query"].url == "http://site.test/e?"
    assert by_text["none"].url == "http://site.test/e"
    assert by_text["p?"].url == "http://site.test/p?" and by_text["p"].url == "http://site.test/p"
    assert by_text["empty query"].meta["verbatim_url"] is True
    assert "verbatim_url" not in by_text["plain"].meta


def test_other_responses_and_requests_are_untouched():
    page = response()
    IRILinkExtractor().extract_links(page)
    mw = middleware()
    other = HtmlResponse("http://site.test/other", body=b"", encoding="utf-8")
    assert mw.get_processed_request(Request("http://site.test/e"), other).url == "http://site.test/e"
    assert mw.get_processed_request(Request("http://site.test/e"), None).url == "http://site.test/e"


# -- links that no IRILinkExtractor saw: Scrapy's LinkExtractor, response.follow(href)

ODD = """<a href="/e?">e?</a><a href="/e">e</a> <a href="/f?">f?</a>
<a href="http://faß.example/">fass idn</a> <a href="http://fass.example/">fass</a> <a href="http://b%C3%BCcher.example/">pct</a>
<a href="/q?a='b'">quote</a> <a href="http://h.example:/x">port</a> <a href=";p">semi</a> <a href="a//b">double</a>
<a href=/u? >unquoted</a> <a href='/v?'>single</a> <a href="/plain">plain</a>"""
#: every resource the page links, as the URI to request
ODD_TRUTH = {
    "http://site.test/e?", "http://site.test/e", "http://site.test/f?", "http://xn--fa-hia.example/",
    "http://fass.example/", "http://xn--bcher-kva.example/", "http://site.test/q?a='b'", "http://h.example:/x",
    "http://site.test/d/;p", "http://site.test/d/a//b", "http://site.test/u?", "http://site.test/v?",
    "http://site.test/plain",
}


def odd_page(body: str = ODD) -> HtmlResponse:
    return HtmlResponse("http://site.test/d/", body=body.encode(), encoding="utf-8")


def output(mw: VerbatimLinkMiddleware, page: HtmlResponse, requests: list[Request]) -> list[str]:
    return [r.url for r in mw.process_spider_output(page, iter(requests))]


def test_response_follow_of_raw_hrefs_requests_every_resource_once():
    page = odd_page()
    urls = output(middleware(), page, [page.follow(href) for href in page.css("a::attr(href)").getall()])
    assert sorted(urls) == sorted(ODD_TRUTH)


def test_scrapys_link_extractor_in_a_crawlspider_requests_every_resource_once():
    from scrapy.linkextractors import LinkExtractor

    class Rules(CrawlSpider):
        name = "rules"
        rules = (Rule(LinkExtractor()),)

    page = odd_page()
    crawler = get_crawler(Rules, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_RUNG": "scheme"})
    spider = Rules.from_crawler(crawler)
    mw = VerbatimLinkMiddleware.from_crawler(crawler)
    requests = [r for r in spider._requests_to_follow(page) if r is not None]
    assert len(requests) < len(ODD_TRUTH)  # Scrapy's extractor keeps one link per URL it makes
    urls = output(mw, page, requests)
    assert sorted(urls) == sorted(ODD_TRUTH)
    assert crawler.stats.get_value("iri/links/verbatim") >= 10


def test_a_spider_following_one_of_two_links_scrapy_conflates_gets_scrapys_url_first():
    page = odd_page('<a href="/e?">e?</a><a href="/e">e</a>')
    # the spider follows the link it chose; the other resource behind that URL is followed too
    assert output(middleware(), page, [page.follow("/e")]) == ["http://site.test/e", "http://site.test/e?"]
    page = odd_page('<a href="/e?">e?</a><a href="/other">o</a>')
    assert output(middleware(), page, [page.follow("/e?")]) == ["http://site.test/e?"]


def test_pages_without_rewritten_forms_are_not_read_again_and_requests_pass_unchanged(monkeypatch):
    import scrapy_iri.scrapy._verbatim as verbatim_module

    read, mapped = [], []
    page_values, link_uri = verbatim_module.page_values, verbatim_module.link_uri
    monkeypatch.setattr(verbatim_module, "page_values", lambda *a: read.append(a) or page_values(*a))
    monkeypatch.setattr(verbatim_module, "link_uri", lambda *a: mapped.append(a) or link_uri(*a))
    links = "<a href='/a?x=1'>a</a> <a href=\"/b\">b</a> <a href='http://example.org/ok'>ok</a>"
    page = odd_page(f"<p>Why? Because. {links}</p>")
    requests = [page.follow(h) for h in page.css("a::attr(href)").getall()]
    expected = ["http://site.test/a?x=1", "http://site.test/b", "http://example.org/ok"]
    assert output(middleware(), page, requests) == expected
    assert read == [] and mapped == []
    # the text looks odd ("?'" in prose): the links are read, none of them is mapped
    page = odd_page(f"<p>'Quoted?' he said. {links}</p>")
    requests = [page.follow(h) for h in page.css("a::attr(href)").getall()]
    assert output(middleware(), page, requests) == expected
    assert len(read) == 1 and mapped == []


def test_a_request_the_spider_built_for_another_url_is_untouched():
    page = odd_page()
    assert output(middleware(), page, [Request("http://site.test/other")]) == ["http://site.test/other"]


def test_a_quote_in_a_query_alone_on_its_page_is_kept():
    page = odd_page("<a href=\"/q?a='b'\">quote</a> <a href='/r?x=1'>r</a>")
    requests = [page.follow(h) for h in page.css("a::attr(href)").getall()]
    assert requests[0].url == "http://site.test/q?a=%27b%27"  # what Scrapy requests
    assert output(middleware(), page, requests) == ["http://site.test/q?a='b'", "http://site.test/r?x=1"]


def test_relative_links_under_a_base_with_an_idn_host_stay_on_that_host():
    page = HtmlResponse(
        "http://xn--fa-hia.example/",
        body='<base href="http://faß.example/dir/"><a href="x">x</a> <a href="/y">y</a>'.encode(),
        encoding="utf-8",
    )
    requests = [page.follow(h) for h in page.css("a::attr(href)").getall()]
    assert [r.url for r in requests] == ["http://fass.example/dir/x", "http://fass.example/y"]  # Scrapy's: IDNA2003
    assert output(middleware(), page, requests) == ["http://xn--fa-hia.example/dir/x", "http://xn--fa-hia.example/y"]


#: pairs w3lib's canonicalize_url merges (sorted parameters, %20 as +, a trailing "&" or a bare key dropped or
#: given "=", ";" encoded): different resources to a server (3987bis 5.3.3 keeps a query as it is)
CANONICALIZED = """<a href="/b?y=2&amp;x=1">1</a> <a href="/b?x=1&amp;y=2">2</a> <a href="/c?a=%20">3</a>
<a href="/c?a=+">4</a> <a href="/d?x=1&amp;">5</a> <a href="/d?x=1">6</a> <a href="/f?q">7</a> <a href="/f?q=">8</a>
<a href="/g?x=1;y=2">9</a> <a href="/h?z=1&amp;y=2">10</a> <a href="/i?&amp;k=v">11</a>"""
CANONICALIZED_TRUTH = {
    "http://site.test/b?y=2&x=1", "http://site.test/b?x=1&y=2", "http://site.test/c?a=%20", "http://site.test/c?a=+",
    "http://site.test/d?x=1&", "http://site.test/d?x=1", "http://site.test/f?q", "http://site.test/f?q=",
    "http://site.test/g?x=1;y=2", "http://site.test/h?z=1&y=2", "http://site.test/i?&k=v",
}


def test_scrapys_canonicalizing_link_extractor_requests_every_query_as_linked():
    from scrapy.linkextractors import LinkExtractor

    class Rules(CrawlSpider):
        name = "rules"
        rules = (Rule(LinkExtractor(canonicalize=True)),)

    page = odd_page(CANONICALIZED)
    crawler = get_crawler(Rules, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_RUNG": "scheme"})
    spider = Rules.from_crawler(crawler)
    requests = [r for r in spider._requests_to_follow(page) if r is not None]
    assert len(requests) < len(CANONICALIZED_TRUTH)  # canonicalize_url merged some: one request each
    assert "http://site.test/h?z=1&y=2" not in {r.url for r in requests}
    urls = output(VerbatimLinkMiddleware.from_crawler(crawler), page, requests)
    assert sorted(urls) == sorted(CANONICALIZED_TRUTH)
    # a one-parameter query merged with an empty parameter, alone on its page: found from the page's text
    page = odd_page('<a href="/i?&amp;k=v">i</a> <a href="/j">j</a>')
    requests = [r for r in spider._requests_to_follow(page) if r is not None]
    assert [r.url for r in requests] == ["http://site.test/i?k=v", "http://site.test/j"]
    assert output(VerbatimLinkMiddleware.from_crawler(crawler), page, requests) == [
        "http://site.test/i?&k=v", "http://site.test/j",
    ]


def test_entities_after_a_question_mark_or_an_ampersand_are_no_empty_parameter():
    from scrapy_iri.scrapy._verbatim import _REWRITTEN

    prose = "<p>&quot;Why?&quot; &#39;?&#39; <code>'&amp;'</code> a?&gt;b &lt;???&gt; x&#64;y</p>"
    assert _REWRITTEN.search(prose) is None
    for link in ('<a href="/i?&amp;k=v">', '<a href="/i?&k=v">', '<a href="/d?x=1&amp;">', "<a href='/d?x=1&'>"):
        assert _REWRITTEN.search(link) is not None, link
