"""IRI -> URI (3987bis 3.3-3.6) and URI -> IRI (3.7) mappings."""

from __future__ import annotations

import pytest

from scrapy_iri import IRIError, to_iri, to_uri


# 3987bis 3.7.1: the three worked examples, input (step 1) and result (step 6).
@pytest.mark.parametrize(
    "uri, iri",
    [
        pytest.param("http://www.example.org/D%C3%BCrst", "http://www.example.org/Dürst", id="3.7.1-utf8"),
        pytest.param("http://www.example.org/D%FCrst", "http://www.example.org/D%FCrst", id="3.7.1-latin1-stays"),
        pytest.param(
            "http://xn--99zt52a.example.org/%e2%80%ae",
            "http://\u7d0d\u8c46.example.org/%E2%80%AE",
            id="3.7.1-bidi-override-stays-and-punycode-decoded",
        ),
    ],
)
def test_uri_to_iri_worked_examples(uri, iri):
    assert to_iri(uri) == iri


@pytest.mark.parametrize(
    "uri, iri",
    [
        # step 2: escapes of reserved characters and '%' stay as written
        ("http://a/%2F%2f%3F%25%23", "http://a/%2F%2f%3F%25%23"),
        # step 2: unreserved ASCII is decoded
        ("http://a/%7Euser/%41", "http://a/~user/A"),
        # step 2: ASCII not allowed in URIs (space, controls) stays encoded
        ("http://a/x%20y%09", "http://a/x%20y%09"),
        # step 3: overlong forms and encoded surrogates are not legal UTF-8
        ("http://a/%C0%AF", "http://a/%C0%AF"),
        ("http://a/%ED%A0%80", "http://a/%ED%A0%80"),
        # step 4: private use is allowed in the query only (2.2)
        ("http://a/%EE%80%80?%EE%80%80", "http://a/%EE%80%80?\ue000"),
        # step 4: specials and noncharacters are not appropriate
        ("http://a/%EF%BF%BD%EF%B7%90", "http://a/%EF%BF%BD%EF%B7%90"),
        # 3987bis 6.4's mixed-encoding example: latin-1 path, UTF-8 fragment
        ("http://www.example.org/r%E9sum%E9.xml#r%C3%A9sum%C3%A9", "http://www.example.org/r%E9sum%E9.xml#résumé"),
        # invalid A-labels are left alone
        ("http://xn--zz.example/", "http://xn--zz.example/"),
        # non-DNS schemes keep their hosts
        ("foo://xn--bcher-kva/", "foo://xn--bcher-kva/"),
    ],
)
def test_uri_to_iri_steps(uri, iri):
    assert to_iri(uri) == iri


@pytest.mark.parametrize(
    "iri, uri",
    [
        # 3987bis 3.4: ToASCII for a DNS ireg-name, never percent-encoding
        ("http://résumé.example.org", "http://xn--rsum-bpad.example.org"),
        # 3.4 note: existing escapes and reserved characters are not encoded again
        ("http://www.example.org/red%09rosé#red", "http://www.example.org/red%09ros%C3%A9#red"),
        ("http://validator.w3.org/check?uri=http%3A%2F%2Frésumé.example.org",
         "http://validator.w3.org/check?uri=http%3A%2F%2Fr%C3%A9sum%C3%A9.example.org"),
        # IDNA2008 keeps the sharp s (IDNA2003 would map faß to fass)
        ("http://faß.de/", "http://xn--fa-hia.de/"),
        # unknown schemes: the host is percent-encoded (3.3), not punycoded
        ("foo://bücher/x", "foo://b%C3%BCcher/x"),
        # relative references are mapped too
        ("/ä?ö#ü", "/%C3%A4?%C3%B6#%C3%BC"),
        # iprivate in the query
        ("http://a/?\ue000", "http://a/?%EE%80%80"),
        # '#' is allowed in an IRI fragment (3987bis-03 2.2), not in a URI's
        ("http://a/#x#y", "http://a/#x%23y"),
    ],
)
def test_iri_to_uri(iri, uri):
    assert to_uri(iri) == uri


@pytest.mark.parametrize(
    "uri",
    ["http://a/%7e%2F?%zz".replace("%zz", "%25"), "HTTP://Example.COM:80/a b".replace(" ", "%20"), "mailto:x@y", "urn:isbn:1"],
)
def test_to_uri_is_the_identity_on_uris(uri):
    assert to_uri(uri) == uri


def test_to_uri_is_idempotent_and_round_trips_through_to_iri():
    iri = "http://納豆.example.org/Dürst?q=€#é"
    uri = to_uri(iri)
    assert uri.isascii()
    assert to_uri(uri) == uri
    assert to_iri(uri) == iri
    assert to_uri(to_iri(uri)) == uri


def test_invalid_idn_cannot_be_mapped():
    with pytest.raises(IRIError, match="host"):
        to_uri("http://a\u200db.example/")  # ZWJ outside a CONTEXTJ context


def test_lenient_to_uri():
    assert to_uri(" http://a/b c\n", lenient=True) == "http://a/b%20c"
    with pytest.raises(IRIError):
        to_uri("http://a/b c")
