"""Percent-encoding (RFC 3986 2.1, 2.3, 6.2.2; 3987bis 3.3, 3.7, 5.3.2.3)."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from scrapy_iri import _grammar as g
from scrapy_iri import _percent as pct


def test_pct_encode_octets_uppercase_3987bis_3_3():
    assert pct.pct_encode_octets("é".encode()) == "%C3%A9"
    assert pct.pct_encode_octets(b"") == ""
    assert pct.pct_encode_octets(b"\x00\xff") == "%00%FF"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("résumé", "r%C3%A9sum%C3%A9"),
        ("納豆", "%E7%B4%8D%E8%B1%86"),
        ("\U00010000", "%F0%90%80%80"),
        ("a%2fb", "a%2fb"),  # ASCII, escapes included, is left alone
    ],
)
def test_encode_non_ascii(text, expected):
    assert pct.encode_non_ascii(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("%7e%7E", "~~"),  # RFC 3986 6.2.2.2: unreserved decoded
        ("%41%2d%5F", "A-_"),
        ("%2f%3a", "%2F%3A"),  # 6.2.2.1: reserved kept, hex uppercased
        ("%c3%a9", "%C3%A9"),
        ("%", "%"),
        ("%zz", "%zz"),
    ],
)
def test_normalize_triplets_rfc_3986_6_2_2(text, expected):
    assert pct.normalize_triplets(text) == expected


def test_normalize_component_is_normalize_triplets_after_encoding():
    for text in ["é%7e", "%c3%a9é", "a%2fé~", "%41\u00a0"]:
        assert pct.normalize_component(text) == pct.normalize_triplets(pct.encode_non_ascii(text))


def test_uppercase_triplets_leaves_the_rest():
    assert pct.uppercase_triplets("ab%2fc%c3") == "ab%2Fc%C3"


@pytest.mark.parametrize(
    "run, expected",
    [
        ("%C3%BC", "ü"),  # 3987bis 3.7.1, first example
        ("%FC", "%FC"),  # second: not UTF-8, step 3
        ("%e2%80%ae", "\u202e"),  # decoded here; the caller's keep pattern re-encodes it (step 4)
        ("%C0%AF", "%C0%AF"),  # overlong
        ("%ED%A0%80", "%ED%A0%80"),  # an encoded surrogate
        ("%F4%90%80%80", "%F4%90%80%80"),  # beyond U+10FFFF
        ("%E2%82", "%E2%82"),  # truncated
        ("%E2%82%C3%BC", "%E2%82ü"),  # a broken sequence before a good one
        ("%f0%9f%98%80", "\U0001f600"),
    ],
)
def test_decode_utf8_run_3987bis_3_7(run, expected):
    assert pct.decode_utf8_run(run) == expected


def test_decode_utf8_run_keeps_what_the_component_forbids():
    keep = g.NOT_IRI_CHARS["path"]
    assert pct.decode_utf8_run("%e2%80%ae%C3%BC%EE%80%80", keep) == "%E2%80%AEü%EE%80%80"
    assert pct.decode_utf8_run("%EE%80%80", g.NOT_IRI_CHARS["query"]) == "\ue000"  # iprivate: query only


@given(st.lists(st.integers(0x80, 0xFF), min_size=1, max_size=12).map(bytes))
def test_decode_utf8_run_round_trips(octets):
    run = pct.pct_encode_octets(octets)
    decoded = pct.decode_utf8_run(run)
    assert pct.encode_non_ascii(decoded) == run  # nothing invented, nothing lost


# -- the table and bytes implementations against the definitions -----------------


def escape_by_definition(text: str) -> str:
    """3987bis 3.3, one character at a time: the UTF-8 octets of each non-ASCII character as %HH."""
    return "".join(
        c if c.isascii() else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass")) for c in text
    )


def normalize_by_definition(text: str) -> str:
    """RFC 3986 6.2.2.1-2, one triplet at a time: unreserved decoded, the others uppercased."""

    def one(m):
        char = chr(int(m.group()[1:], 16))
        return char if char in g.UNRESERVED_CHARS else m.group().upper()

    return re.sub("%[0-9A-Fa-f]{2}", one, text)


# The characters these implementations treat apart ('\\', 'x', 'a'-'f', U+0001-U+0007, '%'),
# hex digits for triplets, lone surrogates, and anything else.
_tricky = st.sampled_from(list("\\xXaAfF%%%09\x01\x07\x08\x7f ") + ["\ud800", "\udcff", "é", "\U0001f600", "\u00a0"])
any_text = st.text(alphabet=st.characters(codec="utf-8") | _tricky, max_size=40)
iri_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\\\x01\x02\x03\x04\x05\x06\x07") | st.sampled_from(list("xXaAfF%é日")),
    max_size=40,
)


@given(any_text)
@example("\\Xé")
@example("\\x")
@example("x\x01é\x07f")
@example("é" * 100)
def test_encode_non_ascii_is_the_definition(text):
    assert pct.encode_non_ascii(text) == escape_by_definition(text)


@given(iri_text)
@example("xabcdefXABCDEF\u00e9\u00ff\u0100\U0010fffd")
def test_encode_iri_chars_is_the_definition(text):
    assert pct.encode_iri_chars(text) == escape_by_definition(text)


@given(any_text)
@example("%2e%2E%7e%41%5a%5f%2f%c3%A9%%41%4")
def test_normalize_triplets_is_the_definition(text):
    assert pct.normalize_triplets(text) == normalize_by_definition(text)


_high_triplet = st.integers(0x80, 0xFF).flatmap(
    lambda b: st.sampled_from([f"%{b:02X}", f"%{b:02x}", f"%{b:02X}"[:2] + f"{b:02x}"[1], f"%{b:02x}"[:2] + f"{b:02X}"[1]])
)
_no_percent = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="%\\\x01\x02\x03\x04\x05\x06\x07"), max_size=8)


@given(st.lists(_no_percent | _high_triplet, max_size=12).map("".join))
@example("stra%c3%9fe/caf%C3%A9/M\u00fcnchen?q=%d0%bd")
@example("x%e9xa")
def test_normalize_encoded_utf8_is_normalize_component(text):
    expected = escape_by_definition(normalize_by_definition(text))
    assert pct.normalize_component(text) == expected
    assert pct.normalize_encoded_utf8(text) == expected


def test_normalize_encoded_utf8_without_the_bytes_literal_codec(monkeypatch):
    monkeypatch.setattr(pct, "escape_decode", None)
    text = "stra%c3%9fe/caf%C3%A9/M\u00fcnchen?q=%d0%bd"
    assert pct.normalize_encoded_utf8(text) == escape_by_definition(normalize_by_definition(text))
