"""The grammar module: classes as RFC 3986 and 3987bis 2.2 define them, and the patterns built on them."""

from __future__ import annotations

import re
import string

import pytest

from scrapy_iri import _grammar as g


def chars_of(bracket_body: str, candidates) -> set[str]:
    pattern = re.compile(f"[{bracket_body}]")
    return {c for c in candidates if pattern.fullmatch(c)}


ASCII = [chr(i) for i in range(128)]


def test_unreserved_is_rfc_3986_2_3():
    expected = set(string.ascii_letters + string.digits + "-._~")
    assert chars_of(g.UNRESERVED, ASCII) == expected == g.UNRESERVED_CHARS


def test_sub_delims_is_rfc_3986_2_2():
    assert set(g.SUB_DELIMS) == set("!$&'()*+,;=")


def test_ucschar_leaves_out_the_bidi_formatting_characters_of_4_1():
    for char in "\u200e\u200f\u202a\u202b\u202c\u202d\u202e":
        assert not chars_of(g.UCSCHAR, [char])
    for char in "\u00a0\u200d\u2010\u2029\u202f\ud7ff\uf900\ufdcf\ufdf0\uffef\U00010000\U000e1000":
        assert chars_of(g.UCSCHAR, [char]), hex(ord(char))
    for char in "\ufdd0\ufffe\U0001fffe\U000e0fff\ud800\ue000":  # noncharacters, surrogates, private use
        assert not chars_of(g.UCSCHAR, [char]), hex(ord(char))


def test_iprivate_only_in_the_query():
    for name, allowed in g.IRI_COMPONENTS.items():
        assert bool(chars_of(allowed, ["\ue000"])) == (name == "query"), name


def test_uri_classes_are_the_iri_classes_restricted_to_ascii():
    assert chars_of(g.URI_REG_NAME, ASCII) == chars_of(g.REG_NAME, ASCII)
    assert chars_of(g.URI_PATH, ASCII) == chars_of(g.PATH, ASCII)
    assert chars_of(g.URI_QUERY, ASCII) == chars_of(g.QUERY, ASCII)
    # RFC 3986 3.5 has no '#' in a fragment; 3987bis-03 2.2 allows it in ifragment
    assert chars_of(g.URI_FRAGMENT, ASCII) == chars_of(g.FRAGMENT, ASCII) - {"#"}


def test_normal_triplet_is_derived_from_the_unreserved_class():
    """The fast path's literal: exactly the triplets the syntax rung leaves as they are."""
    normal = re.compile(g.NORMAL_TRIPLET)
    for octet in range(256):
        for spelling in {f"%{octet:02X}", f"%{octet:02x}", f"%{octet:02X}"[:2] + f"{octet:02x}"[1]}:
            expected = spelling == f"%{octet:02X}" and chr(octet) not in g.UNRESERVED_CHARS
            assert bool(normal.fullmatch(spelling)) == expected, spelling


def test_split_is_rfc_3986_appendix_b():
    m = g.split("http://www.ics.uci.edu/pub/ietf/uri/#Related")
    assert m.groups() == ("http", "www.ics.uci.edu", "/pub/ietf/uri/", None, "Related")
    assert g.split("").groups() == (None, None, "", None, None)
    assert g.split("a:?#").groups() == ("a", None, "", "", "")
    assert g.split("//x\n/y").groups() == (None, "x\n", "/y", None, None)  # re.S: any character


@pytest.mark.parametrize("scheme, ok", [("http", True), ("a+b-c.d", True), ("H1", True), ("1a", False), ("a_b", False), ("", False)])
def test_scheme_is_rfc_3986_3_1(scheme, ok):
    assert bool(g.SCHEME.fullmatch(scheme)) == ok
    assert bool(g.SCHEME_PREFIX.match(scheme + ":")) == ok


@pytest.mark.parametrize(
    "component, text, first_bad",
    [
        ("path", "/a b", 2),
        ("path", "/a%2", 2),
        ("path", "/a%2F?", 5),
        ("query", "a\ue000/?", None),
        ("path", "a\ue000", 1),
        ("fragment", "a#b", None),
        ("host", "a:b", 1),
        ("userinfo", "u:p@", 3),
        ("host", "ex\u202eample", 2),
    ],
)
def test_forbidden_finds_the_first_character_a_component_may_not_hold(component, text, first_bad):
    bad = g.FORBIDDEN[component].search(text)
    assert (bad.start() if bad else None) == first_bad


def test_not_iri_chars_and_forbidden_agree_on_characters():
    sample = ASCII + list("\u00a0\u202e\ue000\ufffe\U00010000")
    for name in g.IRI_COMPONENTS:
        for char in sample:
            if char == "%":
                continue
            assert bool(g.NOT_IRI_CHARS[name].fullmatch(char)) == bool(g.FORBIDDEN[name].fullmatch(char)), (name, char)


@pytest.mark.parametrize("path, has", [("/a/./b", True), ("..", True), ("/a/..", True), ("/a/.b", False), ("/a../b", False), ("/%2E/", False)])
def test_dot_segment(path, has):
    assert bool(g.DOT_SEGMENT.search(path)) == has


def test_not_normal_triplet_is_the_complement_of_normal_triplet():
    normal = re.compile(g.NORMAL_TRIPLET)
    for octet in range(256):
        for spelling in {f"%{octet:02X}", f"%{octet:02x}", f"%{octet:02X}"[:2] + f"{octet:02x}"[1], f"%{octet:02x}"[:2] + f"{octet:02X}"[1]}:
            assert bool(g.NOT_NORMAL_TRIPLET.fullmatch(spelling)) != bool(normal.fullmatch(spelling)), spelling


def test_unreserved_triplet_is_the_escape_of_an_unreserved_character():
    for octet in range(256):
        for spelling in {f"%{octet:02X}", f"%{octet:02x}", f"%{octet:02X}"[:2] + f"{octet:02x}"[1], f"%{octet:02x}"[:2] + f"{octet:02X}"[1]}:
            assert bool(g.UNRESERVED_TRIPLET.fullmatch(spelling)) == (chr(octet) in g.UNRESERVED_CHARS), spelling
