"""The display form (3987bis sec. 3.7, 4.1, 4.2, 4.4 and 8.6)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from adversarial import hostile_iris
from test_mapping_agreement import _realworld, references

from scrapy_iri import IRIError, canonicalize, parse, to_display, to_iri, to_uri
from scrapy_iri._display import LRE, PDF, bidi_safe_component, strip_embedding

SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow])

# 4.4 writes right-to-left characters as uppercase Latin letters ("Bidi
# Notation"); here each stands for a Hebrew letter (bidi class R).
HEBREW = dict(zip("ABCDEFGHIJKLMNOPQRSTUV", "אבגדהוזחטיכלמנסעפצקרשת"))


def bidi(notation: str) -> str:
    return "".join(HEBREW.get(c, c) for c in notation)


def embedded(text: str) -> str:
    return LRE + text + PDF


def encoded(notation: str) -> str:
    return to_uri("x:" + bidi(notation))[2:]


# --- 3.7.1: URI-to-IRI conversion ---------------------------------------------

@pytest.mark.parametrize(
    "uri, shown",
    [
        ("http://www.example.org/D%C3%BCrst", "http://www.example.org/Dürst"),  # decoded
        ("http://www.example.org/D%FCrst", "http://www.example.org/D%FCrst"),  # not UTF-8: stays
        # U+202E RIGHT-TO-LEFT OVERRIDE is forbidden in IRIs (4.1): re-encoded; the A-label converted
        ("http://xn--99zt52a.example.org/%e2%80%ae", "http://納豆.example.org/%E2%80%AE"),
    ],
)
def test_section_3_7_1_examples(uri, shown):
    assert to_display(uri) == shown


# --- 4.4: the bidi examples -------------------------------------------------------

@pytest.mark.parametrize(
    "number, logical",
    [
        (1, "http://ab.CDEFGH.ij/kl/mn/op.html"),
        (2, "http://ab.CDE.FGH/ij/kl/mn/op.html"),
        (3, "http://AB.CD.EF/GH/IJ/KL?MN=OP;QR=ST#UV"),
        (5, "http://ab.cd.EF/GH/ij/kl.html"),
        (6, "http://ab.CD.EF/GH/IJ/kl.html"),
        (7, "http://ab.CDE123FGH.ij/kl/mn/op.html"),  # digits inside an rtl component are fine
        (10, "http://ab.CDEFGH.123/kl/mn/op.html"),  # allowed, not recommended
        (11, "http://ab.CDEFGH.123ij/kl/mn/op.html"),
    ],
)
def test_section_4_4_allowed_examples_are_shown_as_they_are_in_an_embedding(number, logical):
    iri = bidi(logical)
    assert to_display(iri) == embedded(iri)


def test_section_4_4_example_4_a_mixed_segment_is_encoded():
    # "KL.html" mixes rtl with ltr characters: 4.2 rule 1
    shown = to_display(bidi("http://AB.CD.ef/gh/IJ/KL.html"))
    assert shown == embedded(bidi("http://AB.CD.ef/gh/IJ/") + encoded("KL") + ".html")


@pytest.mark.parametrize(
    "logical",
    [
        "http://ab.cd.ef/GH1/2IJ/KL.html",  # example 8 (not allowed): numbers at the ends
        "http://ab.cd.ef/GH%31/%32IJ/KL.html",  # example 9: the same numbers percent-encoded
    ],
)
def test_section_4_4_examples_8_and_9_components_are_encoded_whole(logical):
    # no right-to-left character is left, so no embedding either
    expected = "http://ab.cd.ef/" + encoded("GH") + "1/2" + encoded("IJ") + "/" + encoded("KL") + ".html"
    assert to_display(bidi(logical)) == expected


# --- 4.2 rule by rule, per component ---------------------------------------------

@pytest.mark.parametrize(
    "notation, kept",
    [
        ("AB", True),
        ("A1B", True),  # digits (EN) between rtl characters
        ("A-B.C", True),  # punctuation (ON, CS) between rtl characters
        ("", True),
        ("abc", True),
        ("1A", False),  # starts with a digit
        ("A1", False),  # ends with a digit
        ("Ab", False),  # mixes rtl and ltr
        ("aB", False),
        ("!A", False),  # starts with punctuation
    ],
)
def test_component_rules(notation, kept):
    component = bidi(notation)
    assert bidi_safe_component(component) == (component if kept else encoded(notation))


def test_arabic_letters_count_as_right_to_left():
    # bidi class AL, not only R
    assert to_display("http://example.org/مرحبا") == embedded("http://example.org/مرحبا")
    assert to_display("http://example.org/مرحباx") == "http://example.org/" + to_uri("x:مرحبا")[2:] + "x"


def test_arabic_indic_digits_alone_need_no_embedding():
    # U+0660..0669 are bidi class AN: not R or AL
    assert to_display("http://example.org/\u0661\u0662") == "http://example.org/\u0661\u0662"


@pytest.mark.parametrize(
    "notation",
    [
        "http://Ab@ex.com/",  # userinfo
        "http://ex.com/?Ab",  # query
        "http://ex.com/#Ab",  # fragment
        "foo://aB.ex/",  # a label of a host that is not a DNS name: percent-encoded
    ],
)
def test_every_component_kind_is_checked(notation):
    shown = to_display(bidi(notation))
    assert not any(c in shown for c in HEBREW.values())
    assert LRE not in shown
    assert encoded("A") in shown or encoded("B") in shown


def test_the_query_is_one_component():
    # the query as a whole starts with rtl and ends with ltr: encoded whole, '=' included unencoded
    shown = to_display(bidi("http://ex.com/?A=b"))
    assert shown == "http://ex.com/?" + encoded("A") + "=b"


def test_bidi_controls_stay_escaped():
    for control in ["%E2%80%8E", "%E2%80%8F", "%E2%80%AA", "%E2%80%AB", "%E2%80%AC", "%E2%80%AD", "%E2%80%AE"]:
        shown = to_display(f"http://ex.com/a{control}b?{control}#{control}")
        assert shown == f"http://ex.com/a{control}b?{control}#{control}"


def test_embedding_exactly_when_a_right_to_left_character_is_shown():
    assert to_display("http://ex.com/%D7%90") == embedded("http://ex.com/א")
    assert to_display("http://ex.com/%D7%90x") == "http://ex.com/%D7%90x"
    assert to_display("http://ex.com/ü") == "http://ex.com/ü"


def test_hosts_as_u_labels_where_valid():
    assert to_display("http://xn--bcher-kva.example/") == "http://bücher.example/"
    assert to_display("http://xn--4dbrk0ce.example/") == embedded("http://ישראל.example/")
    assert to_display("http://xn--zz.example/") == "http://xn--zz.example/"


def test_a_dns_label_that_breaks_the_bidi_rules_is_shown_as_its_a_label():
    # "كازينو888" ends with digits (4.2 rule 2): its URI form is the A-label (3.4),
    # which is what to_uri writes for it, so what is shown maps back to the same URI.
    assert to_display("https://xn--888-nze9cufxaqq.com/") == "https://xn--888-nze9cufxaqq.com/"
    assert to_display("https://كازينو888.com/") == "https://xn--888-nze9cufxaqq.com/"
    assert to_display("https://كازينو.com/") == embedded("https://كازينو.com/")


def test_invalid_input_raises_iri_error_and_lenient_accepts_it():
    with pytest.raises(IRIError):
        to_display("http://ex.com/a b")
    assert to_display(" http://ex.com/a b ", lenient=True) == "http://ex.com/a%20b"


# --- the round trip: what is shown maps back to the URI -----------------------------

def assert_round_trip(iri: str) -> None:
    shown = to_display(iri)
    try:
        uri = to_uri(iri)
    except IRIError:
        return  # an IRI with no URI (an invalid IDN): nothing to map back to
    body = strip_embedding(shown)
    assert LRE not in body and PDF not in body
    assert (body != shown) == any(c in shown for c in "\u202a\u202c")
    assert to_uri(body) == to_uri(to_iri(uri)), iri
    try:
        expected = canonicalize(iri)
    except IRIError:
        return
    assert canonicalize(body) == expected


@SETTINGS
@given(references() | st.builds(lambda p, q: f"http://ex.com/{p}?{q}", st.text(alphabet=bidi("ABab1-. ") + "٠ا", max_size=8).map(lambda s: s.replace(" ", "/")), st.text(alphabet=bidi("Ab1=&"), max_size=6)))
def test_round_trip_on_generated_input(iri):
    try:
        parse(iri)
    except IRIError:
        return
    assert_round_trip(iri)


@pytest.mark.parametrize("name", ["ada_kasztp", "ada_userbait", "citizenlab", "oxiri"])
def test_round_trip_on_real_urls(name):
    checked = 0
    for line in _realworld(name):
        try:
            iri = parse(line, lenient=True).unsplit()
        except IRIError:
            continue
        assert_round_trip(iri)
        checked += 1
    assert checked > 5000


@SETTINGS
@given(hostile_iris())
@example(" http://\u05d01.%41/ ")
@example("ws://%e4%be%8b")
def test_round_trip_on_hostile_strings(iri):
    """Strings made of the pieces that break URL code (tests/core/adversarial.py), lenient ones preprocessed.

    What is shown maps back to a URI with the IRI's scheme form, or where it
    has none (an invalid IDN, a port above 65535), to the syntax form of
    ``to_uri(to_iri(uri))`` (which decodes escaped hosts). Not always to the same
    string: ``http://\u05d01.%41/`` is shown ``http://xn--1-zhc.A/`` (the
    label that breaks the bidi rules as its A-label, ``%41`` decoded) while
    ``to_uri`` maps the whole non-ASCII host, lowercasing its ASCII labels;
    ``ws://%e4%be%8b`` is shown ``ws://例``, whose URI is ``ws://xn--fsq``.
    """
    for lenient in (False, True):
        try:
            ref = parse(iri, lenient=lenient)
            uri = to_uri(ref.unsplit())
        except IRIError:
            continue
        if ref.scheme is None:  # no form of its own: test_round_trip_on_generated_input has those
            continue
        iri = ref.unsplit()
        body = strip_embedding(to_display(iri))
        try:
            expected = canonicalize(iri)
        except IRIError:
            assert canonicalize(to_uri(body), "syntax") == canonicalize(to_uri(to_iri(uri)), "syntax"), iri
            continue
        assert canonicalize(body) == canonicalize(to_uri(body)) == canonicalize(uri) == expected, iri
