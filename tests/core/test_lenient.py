"""Lenient input: the 3987bis sec. 7 preprocessing, step by step."""

from __future__ import annotations

import pytest
from hypothesis import given
from test_properties import any_iri

from scrapy_iri import IRIError, parse
from scrapy_iri._lenient import _unchanged_by_preprocessing, preprocess, preprocess_steps


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("  http://a/b \r\n", "http://a/b"),  # 7.2 step 1: whitespace and controls at the ends
        ("\x00http://a/\x1f", "http://a/"),
        ("http://a/b\tc\nd\re", "http://a/bcde"),  # step 2: TAB, LF, CR dropped anywhere
        ("http://a\\b\\c?x\\y", "http://a/b/c?x%5Cy"),  # step 5: '\' is '/' in web paths only
        ("foo://a\\b", "foo://a%5Cb"),  # ... not for other schemes
        ("http://a/b c", "http://a/b%20c"),  # step 3: what the component forbids, as UTF-8
        ("http://a/%zz%4", "http://a/%25zz%254"),  # '%' starting no triplet -> %25
        ("http://a/%41", "http://a/%41"),  # valid triplets untouched
        ("http://u@v@a/", "http://u%40v@a/"),  # the userinfo ends at the last '@'
        ("http://a/ü<>", "http://a/ü%3C%3E"),  # ucschar stays, '<' '>' do not
        ("http://a/\ue000?\ue000", "http://a/%EE%80%80?\ue000"),  # iprivate: query only
        ("http://a/#b#c d", "http://a/#b#c%20d"),  # '#' is allowed in ifragment
        ("http://[::1]:80/", "http://[::1]:80/"),  # IP literals are left to strict parsing
        ("http://a/\u202e", "http://a/%E2%80%AE"),  # 7.3: bidi controls are encoded
    ],
)
def test_preprocess_steps(raw, expected):
    assert preprocess(raw) == expected
    assert preprocess_steps(raw) == expected


@pytest.mark.parametrize("text, component", [("http://a/\udcff", "path"), ("http://\ud800/", "host"), ("http://a/?\udc80", "query")])
def test_lone_surrogates_are_refused_not_invented(text, component):
    with pytest.raises(IRIError) as info:
        preprocess(text)
    assert info.value.component == component


@given(any_iri)
def test_a_valid_iri_passes_through_unchanged(iri):
    try:
        parse(iri)
    except IRIError:
        return
    assert preprocess(iri) == iri
    assert preprocess_steps(iri) == iri


@pytest.mark.parametrize("text", ["http://a/b", "http://ü.example/p?q#f", "http://a/ b", "http://u@v@a/", "x:\\y", "http://a/%zz"])
def test_fast_path_is_sound(text):
    if _unchanged_by_preprocessing(text):
        assert preprocess_steps(text) == text


def test_hostile_sizes_get_an_answer():
    assert preprocess("http://a/" + " " * 1_000_000 + "x") == "http://a/" + "%20" * 1_000_000 + "x"
    assert preprocess("http://" + "u@" * 500_000 + "a/").endswith("%40u@a/")
