"""The simulator's own URL handling: server-side normalization, reference resolution."""

from __future__ import annotations

import pytest

from simweb.urls import (
    BadTarget,
    Target,
    a_label_host,
    normalize_target,
    remove_dot_segments,
    resolve_href,
    resolve_reference,
    wire_host,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/%7Efoo", Target("/~foo")),
        ("/%7efoo/", Target("/~foo/")),
        ("/%41%62c", Target("/Abc")),
        ("/a%2fb", Target("/a%2Fb")),  # reserved: never decoded
        ("/a%3Bb", Target("/a%3Bb")),
        ("/caf%c3%a9", Target("/caf%C3%A9")),
        ("/café", Target("/caf%C3%A9")),  # text: UTF-8
        (b"/caf\xc3\xa9", Target("/caf%C3%A9")),  # wire bytes
        (b"/caf\xe9", Target("/caf%E9")),  # Latin-1 byte stays a different byte
        ("/cafe%CC%81", Target("/cafe%CC%81")),  # no Unicode normalization
        ("/a/./b/../c", Target("/a/c")),
        ("/%2E%2E/x", Target("/x")),
        ("/a/b/..", Target("/a/")),
        ("/p?", Target("/p", "")),
        ("/p", Target("/p")),
        ("/a?y=2&x=1", Target("/a", "y=2&x=1")),
        ("/a?x=%41", Target("/a", "x=A")),
        ("/Page", Target("/Page")),
    ],
)
def test_normalize_target(raw: str | bytes, expected: Target) -> None:
    assert normalize_target(raw) == expected


@pytest.mark.parametrize("raw", ["/%zz", "/%4", "/a%", "relative", "*"])
def test_bad_targets(raw: str) -> None:
    with pytest.raises(BadTarget):
        normalize_target(raw)


def test_target_str_keeps_empty_query() -> None:
    assert str(Target("/p", "")) == "/p?"
    assert str(Target("/p")) == "/p"


def test_remove_dot_segments_rfc_examples() -> None:
    assert remove_dot_segments("/a/b/c/./../../g") == "/a/g"
    assert remove_dot_segments("/./g") == "/g"
    assert remove_dot_segments("/../g") == "/g"


@pytest.mark.parametrize(
    ("host", "key"),
    [
        ("XN--BCHER-KVA.example", "xn--bcher-kva.example"),
        ("fass.example.", "fass.example"),
        ("b%C3%BCcher.example", None),  # a resolver cannot look this up
        ("bücher.example", None),
        ("", None),
    ],
)
def test_wire_host(host: str, key: str | None) -> None:
    assert wire_host(host) == key


def test_idna2008_keeps_eszett_apart() -> None:
    assert a_label_host("faß.example") == "xn--fa-hia.example"
    assert a_label_host("fass.example") == "fass.example"
    assert a_label_host("BÜCHER.example") == "xn--bcher-kva.example"


BASE = "http://a/b/c/d;p?q"
# RFC 3986 sec. 5.4.1 and 5.4.2 (strict parser)
RFC3986_EXAMPLES = {
    "g:h": "g:h", "g": "http://a/b/c/g", "./g": "http://a/b/c/g", "g/": "http://a/b/c/g/",
    "/g": "http://a/g", "//g": "http://g", "?y": "http://a/b/c/d;p?y", "g?y": "http://a/b/c/g?y",
    "#s": "http://a/b/c/d;p?q", "g#s": "http://a/b/c/g", "g?y#s": "http://a/b/c/g?y",
    ";x": "http://a/b/c/;x", "g;x": "http://a/b/c/g;x", "": "http://a/b/c/d;p?q",
    ".": "http://a/b/c/", "./": "http://a/b/c/", "..": "http://a/b/", "../": "http://a/b/",
    "../g": "http://a/b/g", "../..": "http://a/", "../../": "http://a/", "../../g": "http://a/g",
    "../../../g": "http://a/g", "../../../../g": "http://a/g", "/./g": "http://a/g",
    "/../g": "http://a/g", "g.": "http://a/b/c/g.", ".g": "http://a/b/c/.g",
    "g..": "http://a/b/c/g..", "..g": "http://a/b/c/..g", "./../g": "http://a/b/g",
    "./g/.": "http://a/b/c/g/", "g/./h": "http://a/b/c/g/h", "g/../h": "http://a/b/c/h",
    "g;x=1/./y": "http://a/b/c/g;x=1/y", "g;x=1/../y": "http://a/b/c/y",
    "g?y/./x": "http://a/b/c/g?y/./x", "g?y/../x": "http://a/b/c/g?y/../x",
    "g#s/./x": "http://a/b/c/g", "http:g": "http:g",
}


@pytest.mark.parametrize(("reference", "expected"), sorted(RFC3986_EXAMPLES.items()))
def test_resolve_reference(reference: str, expected: str) -> None:
    assert resolve_reference(BASE, reference) == expected


@pytest.mark.parametrize(
    ("base", "href", "expected"),
    [
        ("http://x.example/", "http://BÜCHER.example/a", "http://xn--bcher-kva.example/a"),
        ("http://x.example/", "HTTP://B%C3%9CCHER.EXAMPLE/", "http://xn--bcher-kva.example/"),
        ("http://x.example/", "https://faß.example/weiß", "https://xn--fa-hia.example/wei%C3%9F"),
        ("http://x.example/", "http://fass.example:80/", "http://fass.example/"),
        ("http://x.example/", "http://fass.example:8080/", "http://fass.example:8080/"),
        ("http://x.example/d/", "../p?", "http://x.example/p?"),
        ("http://x.example/d/", "p?#frag", "http://x.example/d/p?"),
        ("http://x.example/d/", " ./a\tb#x ", "http://x.example/d/ab"),
        ("http://x.example/", "/q?ä=1", "http://x.example/q?%C3%A4=1"),
        ("http://x.example/", "/%7Efoo", "http://x.example/%7Efoo"),
        ("http://x.example/", "mailto:a@b.example", None),
        ("http://x.example/", "http://xn--/", None),
    ],
)
def test_resolve_href(base: str, href: str, expected: str | None) -> None:
    assert resolve_href(base, href) == expected
