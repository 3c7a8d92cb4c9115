"""Property tests: idempotence, the syntax/scheme factoring, to_uri, and the error contract."""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from scrapy_iri import IRIError, canonicalize, equivalent, parse, resolve, to_iri, to_uri

# Example counts come from the Hypothesis profile (tests/conftest.py; HYPOTHESIS_PROFILE=fuzz for long runs).
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow])

UNICODE_LETTERS = "üßöéÉÜ日本語кирΣσαעבר\u0301\uff21\u00a0\ufb01"
triplet = st.integers(0, 255).map(lambda b: f"%{b:02X}") | st.integers(0, 255).map(lambda b: f"%{b:02x}")
ipchar = st.sampled_from(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@" + UNICODE_LETTERS) | triplet
segment = st.lists(ipchar | st.just("."), max_size=6).map("".join)
path = st.lists(segment, max_size=5).map(lambda segs: "/" + "/".join(segs))
query = st.none() | st.lists(ipchar | st.sampled_from("/?"), max_size=8).map("".join)
label = st.lists(st.sampled_from(string.ascii_letters + string.digits + "-" + "üßöéÜ日本кир"), min_size=1, max_size=8).map("".join)
reg_name = st.lists(label, min_size=1, max_size=3).map(".".join)
host = reg_name | st.sampled_from(["[::1]", "[2001:DB8:0::1]", "127.0.0.1", "", "%C3%BC.example", "localhost"])
port = st.none() | st.sampled_from(["", "80", "0080", "443", "8080", "21"])
scheme = st.sampled_from(["http", "HTTPS", "ws", "ftp", "file", "foo", "Coap"])


@st.composite
def iris(draw: st.DrawFn) -> str:
    s = draw(scheme)
    h = draw(host)
    userinfo = draw(st.none() | st.sampled_from(["", "u", "U:p%41"]))
    auth = (userinfo + "@" if userinfo is not None else "") + h
    p = draw(port)
    if p is not None:
        auth += ":" + p
    iri = f"{s}://{auth}{draw(path)}"
    q = draw(query)
    if q is not None:
        iri += "?" + q
    f = draw(query)
    if f is not None:
        iri += "#" + f.replace("?", "")
    return iri


mailto = st.builds(lambda local, dom: f"mailto:{local}@{dom}", st.sampled_from(["a", "A.b", "x%41"]), reg_name)
any_iri = iris() | mailto | st.builds(lambda nss: f"URN:Ex:{nss}", segment)


def canonical_or_error(iri: str, rung: str) -> str | None:
    try:
        return canonicalize(iri, rung)
    except IRIError:
        return None


@SETTINGS
@given(any_iri, st.sampled_from(["string", "syntax", "scheme"]))
def test_canonical_forms_are_idempotent(iri, rung):
    form = canonical_or_error(iri, rung)
    assume(form is not None)
    assert canonicalize(form, rung) == form
    if rung != "string":
        assert form.isascii()


@SETTINGS
@given(any_iri)
@example("HTTP://B%C3%9Ccher.example:0080")
def test_scheme_form_of_syntax_form_equals_scheme_form(iri):
    syntax = canonical_or_error(iri, "syntax")
    assume(syntax is not None)
    assert canonical_or_error(syntax, "scheme") == canonical_or_error(iri, "scheme")


@SETTINGS
@given(any_iri)
def test_to_uri_is_equivalent_at_the_scheme_rung(iri):
    try:
        uri = to_uri(iri)
    except IRIError:
        assume(False)
    assert uri.isascii()
    assert to_uri(uri) == uri
    scheme_form = canonical_or_error(iri, "scheme")
    assume(scheme_form is not None)
    assert equivalent(uri, iri, "scheme")


@SETTINGS
@given(any_iri)
def test_to_iri_maps_back_to_an_equivalent_uri(iri):
    try:
        uri = to_uri(iri)
    except IRIError:
        assume(False)
    assume(canonical_or_error(uri, "scheme") is not None)
    assert equivalent(to_uri(to_iri(uri)), uri, "scheme")


@SETTINGS
@given(any_iri, st.sampled_from(["string", "syntax", "scheme"]))
def test_lower_rungs_never_merge_what_higher_rungs_keep_apart(iri, rung):
    # equivalence grows up the ladder: equal at a rung implies equal above it
    other = iri.replace("%7E", "~").upper()
    low = [canonical_or_error(x, rung) for x in (iri, other)]
    high = [canonical_or_error(x, "scheme") for x in (iri, other)]
    assume(None not in low and None not in high)
    if low[0] == low[1]:
        assert high[0] == high[1]


@SETTINGS
@given(st.text(), st.booleans())
def test_only_iri_error_escapes_for_any_string(text, lenient):
    for call in (
        lambda: canonicalize(text, "string", lenient=lenient),
        lambda: canonicalize(text, "syntax", lenient=lenient),
        lambda: canonicalize(text, "scheme", lenient=lenient, keep_fragment=False),
        lambda: parse(text, lenient=lenient),
        lambda: to_uri(text, lenient=lenient),
        lambda: to_iri(text),
        lambda: resolve("http://a/b/c", text, lenient=lenient),
        lambda: resolve(text, "x", lenient=lenient),
    ):
        try:
            call()
        except IRIError:
            pass


@SETTINGS
@given(st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from("%:/?#[]@.\\ ")).map(lambda t: "http://" + t))
def test_only_iri_error_escapes_for_url_like_strings(text):
    for lenient in (False, True):
        for rung in ("syntax", "scheme"):
            try:
                form = canonicalize(text, rung, lenient=lenient)
            except IRIError:
                continue
            assert canonicalize(form, rung) == form


@pytest.mark.parametrize("rung", ["string", "syntax", "scheme"])
def test_lenient_output_is_a_valid_iri(rung):
    form = canonicalize("http://ä/c d%/e\u202e#x#y", rung, lenient=True)
    assert parse(form).unsplit() == form
