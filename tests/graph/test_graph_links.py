"""Link resolution in archives: the plain-reference shortcut is RFC 3986 5.2 resolution, and browsers' charsets."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from scrapy_iri import IRIError, resolve
from scrapy_iri.graph._links import Resolver, charset_of, html_links, query_in_charset

PIECES = ["a", "b.html", "..", ".", "", "x:y", "?q=1", "#f", "//h.test/p", "http://H.test/a/../b", "HTTPS://x.test",
          "/", "g;x", "mailto:a@b", "%41", "c d", "\\", "é", "http://x.test?y", "http:/a", "http:a", "...", "u@v"]
BASES = ["http://a.test/b/c/d;p?q", "http://a.test", "https://a.test/x/", "http://a.test/x/y#f",
         "http://u@a.test:8080/x/./y?z#w", "http://a.test/../b/..", "file:///x/y", "http://[::1]/a/b", "urn:a:b"]


@given(st.sampled_from(BASES), st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(["", "/"])), max_size=5))
def test_the_resolver_is_rfc_3986_resolution(base, pieces):
    reference = "".join(a + b for a, b in pieces)
    try:
        expected = resolve(base, reference, lenient=True)
    except IRIError:
        return  # the shortcut may pass an invalid host on: canonicalization then rejects it
    assert Resolver(base)(reference) == expected


def test_charsets_as_browsers_decode():
    assert charset_of(b"<p>caf\xc3\xa9", None) == "utf-8"
    assert charset_of(b"<p>caf\xe9", None) == "cp1252"  # not UTF-8: windows-1252
    assert charset_of(b"<meta charset=iso-8859-1><p>", None) == "cp1252"  # WHATWG: latin-1 means windows-1252
    assert charset_of(b"<meta charset=koi8-r>", "shift_jis") == "shift_jis"  # the HTTP charset first
    assert charset_of(b"", "no-such-charset") == "utf-8"


def test_queries_in_the_document_charset():
    assert query_in_charset("q=\xe9&r=1", "cp1252") == "q=%E9&r=1"
    assert query_in_charset("q=\u3042", "cp1252") == "q=%26%2312354%3B"  # not encodable: a character reference
    links = list(html_links("http://a.test/", "<a href='s?q=\u3042'>x</a>".encode("shift_jis"), "shift_jis"))
    assert links == [("A@/href", "http://a.test/s?q=%82%A0", "s?q=\u3042")]


def test_entities_and_whitespace_and_the_first_base():
    html = b"<base href=' /x/ '><base href='/y/'><a href='\n a?b=1&amp;c=2 \t'>1</a><area href='&#x2F;z'>"
    assert [link for _, link, _ in html_links("http://a.test/p", html, "utf-8")] == [
        "http://a.test/x/a?b=1&c=2",
        "http://a.test/z",
    ]
