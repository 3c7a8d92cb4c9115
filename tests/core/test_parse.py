"""Parsing and validation against the 3987bis grammar (sec. 2.2)."""

from __future__ import annotations

import pytest
from corpora import corpus_params

from scrapy_iri import IRIError, IRIReference, parse

OXIRI = "conformance/oxiri_iri_tests.json"


def test_absent_and_empty_components_differ():
    assert parse("http://a/?").query == ""
    assert parse("http://a/").query is None
    assert parse("http://a/#").fragment == ""
    assert parse("http://a/").fragment is None
    assert parse("http://@a/").userinfo == ""
    assert parse("http://a/").userinfo is None
    assert parse("http://a:/").port == ""
    assert parse("http://a/").port is None
    assert parse("file:///x").host == ""
    assert parse("urn:x").host is None


def test_components_of_a_full_iri():
    ref = parse("HTTP://us%65r:pw@Bücher.example:8080/p/ä;x?q=ü#frag")
    assert ref == IRIReference("HTTP", "us%65r:pw", "Bücher.example", "8080", "/p/ä;x", "q=ü", "frag")
    assert ref.authority == "us%65r:pw@Bücher.example:8080"
    assert ref.unsplit() == "HTTP://us%65r:pw@Bücher.example:8080/p/ä;x?q=ü#frag"


def test_ip_literals():
    assert parse("http://[2001:db8::7]:8/").host == "[2001:db8::7]"
    assert parse("http://[v7.x:y]/").host == "[v7.x:y]"
    with pytest.raises(IRIError, match="host"):
        parse("http://[fe80::1%25eth0]/")  # zone identifiers are not in the grammar
    with pytest.raises(IRIError, match="host"):
        parse("http://[1.2.3.4]/")


@pytest.mark.parametrize(
    "text, component, position",
    [
        ("http://a/b c", "path", 10),
        ("http://a b/", "host", 8),
        ("http://a:8x/", "port", 10),
        ("http://a/%zz", "path", 9),
        ("http://a/?q=%4", "query", 12),
        ("http://a/#x[y", "fragment", 11),
        ("http://a/\U000e0001", "path", 9),  # tag characters are iprivate: the query only
        ("http://a/\u202eevil", "path", 9),  # bidi formatting (3987bis 4.1)
        ("http://a/\ue000", "path", 9),  # private use outside the query (2.2)
        ("http://a/\ufffd", "path", 9),  # specials (7.3)
        ("http://a/\ufdd0", "path", 9),  # noncharacter
        ("http://a/\ud800", "path", 9),  # lone surrogate
        ("http://a/<x>", "path", 9),
        ("http://u s@a/", "userinfo", 8),
        ("1http://a/", "scheme", 0),
        ("ht_tp://a/", "scheme", 2),
        ("a:b:c/d", None, None),  # valid: a scheme 'a' with path 'b:c/d'
        (":a/b", "path", 0),  # a relative path's first segment may not hold ':'
    ],
)
def test_errors_name_component_and_position(text, component, position):
    if component is None:
        parse(text)
        return
    with pytest.raises(IRIError) as info:
        parse(text)
    assert info.value.component == component
    assert info.value.position == position
    assert str(info.value).startswith(component + ":")
    assert f"position {position}" in str(info.value)


def test_private_use_is_allowed_in_the_query_only():
    assert parse("http://a/?\ue000").query == "\ue000"
    assert parse("http://a/?\U000e0001").query == "\U000e0001"  # 3987bis-03 iprivate includes the tags


def test_3987bis_03_allows_hash_in_the_fragment():
    assert parse("http://a/#x#y").fragment == "x#y"


def test_non_str_is_a_type_error():
    with pytest.raises(TypeError):
        parse(b"http://a/")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        parse(None)  # type: ignore[arg-type]


def test_iri_error_is_a_value_error():
    assert issubclass(IRIError, ValueError)


@pytest.mark.parametrize("case", corpus_params(OXIRI, lambda d: d["groups"]["valid_absolute_iris"]["cases"], ids=lambda c: c["iri"]))
def test_oxiri_valid_absolute_iris_parse_and_round_trip(case):
    ref = parse(case["iri"])
    assert ref.scheme is not None
    assert ref.unsplit() == case["iri"]


@pytest.mark.parametrize("case", corpus_params(OXIRI, lambda d: d["groups"]["valid_iri_references"]["cases"], ids=lambda c: c["iri_ref"]))
def test_oxiri_valid_references_parse(case):
    assert parse(case["iri_ref"]).unsplit() == case["iri_ref"]


@pytest.mark.parametrize("case", corpus_params(OXIRI, lambda d: d["groups"]["invalid_iri_references"]["cases"], ids=lambda c: repr(c["iri_ref"])))
def test_oxiri_invalid_references_raise_iri_error(case):
    with pytest.raises(IRIError):
        parse(case["iri_ref"])
