"""The mappings agree with the ladder (3987bis 3.6, 3.7, 5.3).

* ``to_uri`` accepts every IRI ``canonicalize`` accepts, and the URI it
  gives has the same scheme-rung identity.
* ``to_iri`` never writes an IRI that ``to_uri`` refuses: 3.7 says the
  conversion must give an IRI that maps back to the URI, so an escape that
  would decode into something the component or the IDN rules forbid stays
  an escape, and an A-label that does not map back stays an A-label.
"""

from __future__ import annotations

import string

import pytest
from corpora import CORPORA
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scrapy_iri import IRIError, canonicalize, parse, resolve, to_iri, to_uri

SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow])


def scheme_form(iri: str) -> str | None:
    try:
        return canonicalize(iri)
    except IRIError:
        return None


def assert_agrees(iri: str) -> None:
    """The two properties above, for one IRI (or URI)."""
    canonical = scheme_form(iri)
    if canonical is not None:
        uri = to_uri(iri)  # must not raise
        assert uri.isascii()
        assert canonicalize(uri) == canonical, iri
    try:
        uri = to_uri(iri)
    except IRIError:
        return
    back = to_iri(uri)
    again = to_uri(back)  # must not raise: to_iri never writes what to_uri refuses
    if canonical is not None:
        assert canonicalize(back) == canonical, (iri, back)
        assert canonicalize(again) == canonical, (iri, again)


@pytest.mark.parametrize(
    "iri, uri",
    [
        # a non-ASCII host holding escapes of ASCII: decoded before UTS #46, as the ladder does
        ("http://例え%2Ejp/", "http://xn--r8jz45g.jp/"),
        ("https://www.ciςgar%2e%2eety-el.cz/", "https://www.xn--cigar-bde..ety-el.cz/"),
        ("http://b%C3%BCcher%2Eexample/", "http://b%C3%BCcher%2Eexample/"),  # ASCII: left as written
        ("http://BÜCHER%2eexample/x", "http://xn--bcher-kva.example/x"),
    ],
)
def test_to_uri_accepts_what_canonicalize_accepts(iri, uri):
    assert to_uri(iri) == uri
    assert canonicalize(to_uri(iri)) == canonicalize(iri)


@pytest.mark.parametrize(
    "uri, iri",
    [
        # escapes that would decode into an invalid IDN stay escapes (3.7: the IRI must map back)
        ("http://%E2%98%83.com/", "http://%E2%98%83.com/"),
        # a valid A-label beside a label UTS #46 refuses: the host stays as the URI wrote it
        ("http://xn--fa-hia.a~b/", "http://xn--fa-hia.a~b/"),
        # labels that do map back are converted (3.7 step 6), escapes decoded (steps 2-5)
        ("http://xn--fa-hia.de/", "http://faß.de/"),
        ("http://b%C3%BCcher.de/", "http://bücher.de/"),
        ("http://XN--BCHER-KVA.example/", "http://bücher.example/"),
        # an A-label that is not the canonical encoding of its U-label is kept
        ("http://xn--zz.example/", "http://xn--zz.example/"),
        # a host longer than DNS allows has no A-labels to convert
        ("http://" + "xn--bcher-kva." * 30 + "de/", "http://" + "xn--bcher-kva." * 30 + "de/"),
    ],
)
def test_to_iri_writes_only_what_to_uri_accepts(uri, iri):
    assert to_iri(uri) == iri
    to_uri(to_iri(uri))  # does not raise
    assert_agrees(uri)


def test_to_uri_of_to_iri_of_snowman_host_does_not_raise():
    assert to_uri(to_iri("http://%E2%98%83.com/")) == "http://%E2%98%83.com/"


# --- generated input -------------------------------------------------------

LABEL_PIECES = [
    *string.ascii_lowercase[:6], "A", "Z", "0", "9", "-", "_", "~",
    "%2E", "%2e", "%41", "%2F", "%C3%BC", "%c3%bc", "%E2%98%83", "%FF", "%C0%AF", "%E2%80%AE",
    "ü", "ß", "ς", "例え", "☃", "ا", "\u0660", "\uff21", "\u3002", "\u00ad",
]
WHOLE_LABELS = ["xn--fa-hia", "xn--bcher-kva", "XN--99ZT52A", "xn--zz", "xn--", "xn--a-ecp.ru", "com"]
label = st.lists(st.sampled_from(LABEL_PIECES), min_size=1, max_size=5).map("".join) | st.sampled_from(WHOLE_LABELS)
host = st.lists(label, min_size=1, max_size=4).map(".".join)
PATH_PIECES = ["a", "/", "%2F", "%41", "%C3%A9", "%E2%80%8F", "%EF%BF%BF", "%F4%8F%BF%BF", "%ED%A0%80", "é", ".", "..", ";", "="]
path = st.lists(st.sampled_from(PATH_PIECES), max_size=6).map(lambda p: "/" + "".join(p))
query = st.none() | st.lists(st.sampled_from(PATH_PIECES + ["?", "%EE%80%80", "\ue000"]), max_size=4).map("".join)
fragment = st.none() | st.lists(st.sampled_from(PATH_PIECES + ["#", "?"]), max_size=4).map("".join)
scheme = st.sampled_from(["http", "https", "ftp", "ws", "foo", "mailto"])


@st.composite
def references(draw: st.DrawFn) -> str:
    iri = f"{draw(scheme)}://{draw(host)}{draw(path)}"
    q, f = draw(query), draw(fragment)
    if q is not None:
        iri += "?" + q
    if f is not None:
        iri += "#" + f
    return iri


@SETTINGS
@given(references())
@example("http://例え%2Ejp/")
@example("http://%E2%98%83.com/")
@example("http://xn--fa-hia.a~b/")
@example("http://%C3%BC%2F.example/")
def test_mappings_agree_with_the_ladder_on_generated_input(iri):
    try:
        parse(iri)
    except IRIError:
        return  # not an IRI: nothing to map
    assert_agrees(iri)


# --- the real URL corpora ----------------------------------------------------

def _lines(relative: str) -> list[str]:
    path = CORPORA / relative
    if not path.exists():
        pytest.skip(f"corpus {relative} not found under {CORPORA} (set SCRAPY_IRI_CORPORA)")
    return path.read_text(encoding="utf-8-sig").splitlines()


def _realworld(name: str) -> list[str]:
    if name == "citizenlab":
        return [row.split("\t")[1] for row in _lines("realworld/citizenlab_test_lists_urls.tsv")[1:] if "\t" in row]
    if name == "oxiri":
        urls = []
        for row in _lines("realworld/oxiri_relative_urls_cc_10k.csv")[1:]:
            base, _, ref = row.partition(",")
            try:
                urls.append(resolve(base, ref, lenient=True))
            except IRIError:
                continue
        return urls
    return _lines(f"realworld/{name}.txt")


@pytest.mark.parametrize("name", ["ada_kasztp", "ada_userbait", "citizenlab", "oxiri"])
def test_mappings_agree_with_the_ladder_on_real_urls(name):
    checked = 0
    for line in _realworld(name):
        try:
            iri = parse(line, lenient=True).unsplit()  # what a crawler would hold
        except IRIError:
            continue
        assert_agrees(iri)
        checked += 1
    assert checked > 5000
