"""The comparison ladder: what each rung merges, and what no rung below protocol may merge."""

from __future__ import annotations

import pytest

from scrapy_iri import IRIError, Rung, canonicalize, equivalent
from scrapy_iri._ladder import lowest_common_rung


def test_rungs_are_ordered_and_parse_by_name():
    assert Rung.STRING < Rung.SYNTAX < Rung.SCHEME < Rung.PROTOCOL
    assert Rung.parse("Scheme") is Rung.SCHEME
    assert Rung.parse(Rung.SYNTAX) is Rung.SYNTAX
    with pytest.raises(ValueError, match="unknown rung"):
        Rung.parse("dns")


def test_protocol_rung_without_a_store_is_a_clear_error():
    with pytest.raises(ValueError, match="store"):
        canonicalize("http://a/", "protocol")


# --- spec examples, each named after its section -------------------------------------

def test_3987bis_5_3_2_syntax_example():
    a = "example://a/b/c/%7Bfoo%7D/rosé"
    b = "eXAMPLE://a/./b/../b/%63/%7bfoo%7d/ros%C3%A9"
    assert not equivalent(a, b, "string")
    assert equivalent(a, b, "syntax")
    assert canonicalize(b, "syntax") == "example://a/b/c/%7Bfoo%7D/ros%C3%A9"


def test_3987bis_5_3_2_1_case_of_scheme_and_host():
    assert canonicalize("HTTP://www.EXAMPLE.com/", "syntax") == "http://www.example.com/"


def test_3987bis_5_3_2_3_tilde_escapes():
    forms = ["http://example.org/~user", "http://example.org/%7euser", "http://example.org/%7Euser"]
    assert {canonicalize(f, "syntax") for f in forms} == {"http://example.org/~user"}


def test_3987bis_5_3_3_four_equivalent_http_iris():
    forms = ["http://example.com", "http://example.com/", "http://example.com:/", "http://example.com:80/"]
    assert {canonicalize(f, "scheme") for f in forms} == {"http://example.com/"}
    assert len({canonicalize(f, "syntax") for f in forms}) == 4  # not a syntax-rung merge


def test_3987bis_5_3_3_empty_query_is_not_merged():
    assert not equivalent("http://example.com/?", "http://example.com/", "scheme")


def test_3987bis_5_3_3_idn_and_punycode():
    assert equivalent("http://résumé.example.org", "http://xn--rsum-bpad.example.org", "scheme")
    assert not equivalent("http://résumé.example.org", "http://xn--rsum-bpad.example.org", "syntax")


def test_brief_alias_example():
    assert canonicalize("HTTP://Example.com:80/%7Efoo") == canonicalize("http://example.com/~foo") == "http://example.com/~foo"


# --- syntax rung details -------------------------------------------------------------

@pytest.mark.parametrize(
    "iri, syntax_form",
    [
        ("http://a/%2e%2E/b", "http://a/b"),  # %2E decoded, then dot segments removed
        ("http://a/b/%2E%2E", "http://a/"),
        ("http://%41%62.example/", "http://ab.example/"),  # unreserved escapes decoded in the host, then lowercased
        ("http://a/%c3%a9", "http://a/%C3%A9"),  # hex case only
        ("http://a/é", "http://a/%C3%A9"),  # non-ASCII as UTF-8 escapes (5.3.2.3)
        ("http://A/%C0%AF%e9", "http://a/%C0%AF%E9"),  # invalid UTF-8 stays encoded
        ("http://[2001:DB8::1]/", "http://[2001:db8::1]/"),
        ("http://BÜCHER.example/", "http://b%C3%9Ccher.example/"),  # no Unicode case mapping at this rung
        ("foo:/..//x", "foo:/.//x"),  # dot removal may not create an authority
        ("urn:a/./b", "urn:a/./b"),  # rootless paths keep their dots
        ("http://a/?%7e#%7e", "http://a/?~#~"),
    ],
)
def test_syntax_forms(iri, syntax_form):
    assert canonicalize(iri, "syntax") == syntax_form


# --- scheme rung details -------------------------------------------------------------

@pytest.mark.parametrize(
    "iri, scheme_form",
    [
        ("https://a:443/x", "https://a/x"),
        ("https://a:80/x", "https://a:80/x"),
        ("http://a:0080/", "http://a/"),  # leading zeros: still the default port
        ("http://a:08080/", "http://a:8080/"),
        ("ws://a:80", "ws://a/"),
        ("wss://a:443?x", "wss://a/?x"),
        ("ftp://a:21", "ftp://a/"),
        ("http://a?x", "http://a/?x"),
        ("http://BÜCHER.example/", "http://xn--bcher-kva.example/"),
        ("http://b%C3%BCcher.example/", "http://xn--bcher-kva.example/"),  # idn-uri draft: escapes decoded first
        ("http://xn--BCHER-KVA.example/", "http://xn--bcher-kva.example/"),
        ("http://faß.de/", "http://xn--fa-hia.de/"),
        ("http://ｅｘａｍｐｌｅ。com/", "http://example.com/"),  # UTS #46 width and dot mapping
        ("http://my_host.example/", "http://my_host.example/"),  # ASCII labels outside LDH are kept
        ("http://[2001:0DB8:0:0:0:0:0:1]:80/", "http://[2001:db8::1]/"),  # RFC 5952 4.2.1
        ("http://[2001:db8:0:1:1:1:1:1]/", "http://[2001:db8:0:1:1:1:1:1]/"),  # 5952 4.2.2: no '::' for one field
        ("http://[::FFFF:192.0.2.1]/", "http://[::ffff:192.0.2.1]/"),  # 5952 5
        ("file://localhost/etc/hosts", "file:///etc/hosts"),
        ("file://LOCALHOST/etc/hosts", "file:///etc/hosts"),
        ("mailto:John.Doe@EXAMPLE.com", "mailto:John.Doe@example.com"),
        ("mailto:a@BÜCHER.example,B@X.ORG?cc=C@Y.ORG", "mailto:a@xn--bcher-kva.example,B@x.org?cc=C@Y.ORG"),
        ("URN:ISBN:0-395-36341-1", "urn:isbn:0-395-36341-1"),
        ("urn:example:Foo", "urn:example:Foo"),
        ("foo://A:0080/", "foo://a:0080/"),  # unknown schemes: syntax form only
        ("http://a/#%7e", "http://a/#~"),
        ("http://a/#x#y", "http://a/#x%23y"),  # 3987bis-03 ifragment allows '#'; the URI form encodes it
        ("http://a%2fb/", "http://a%2Fb/"),  # escapes kept in a host keep uppercase hex (5.3.2.1)
        ("mailto:%22x@Y,z%22@C.com", "mailto:%22x@Y,z%22@C.com"),  # a quoted local part: left alone
    ],
)
def test_scheme_forms(iri, scheme_form):
    assert canonicalize(iri, "scheme") == scheme_form


@pytest.mark.parametrize(
    "iri",
    [
        "http://a:65536/",  # port out of range
        "http://a\u200db.example/",  # ZWJ not in a CONTEXTJ context: invalid IDN
        "http://xn--zz.example/",  # not a valid A-label
        "http://%FF.example/",  # escapes that are not UTF-8 cannot be a host name
        "http:///path",  # RFC 9110: an empty host is invalid for http
        "http://ab--c\u00e9.example/",  # hyphens in positions 3-4 of a U-label
        "http://a:" + "1" * 5000 + "/",  # far too long for a port (and for int())
        "http:x",  # RFC 9110 4.2.1: http URIs have an authority with a host
        "http://a\uff0fb.example/",  # UTS #46 maps the full-width solidus to '/': never a new delimiter
        "http://\u00a0/",  # ... and NBSP to a space
        "http://\u00ad/",  # the soft hyphen maps to nothing: an empty host
    ],
)
def test_scheme_rung_errors(iri):
    with pytest.raises(IRIError) as info:
        canonicalize(iri, "scheme")
    assert info.value.component in {"port", "host"}


# --- traps: pairs that must stay apart at every rung below protocol ------------------

TRAPS = [
    ("http://a/Page", "http://a/page"),  # path case
    ("http://a/?Q=1", "http://a/?q=1"),  # query case
    ("http://a/a?x=1&y=2", "http://a/a?y=2&x=1"),  # parameter order
    ("http://a/a?x=1", "http://a/a?x=1&utm_source=z"),  # added parameter
    ("http://a/a?sid=42", "http://a/a"),  # session parameter removed
    ("http://a/a/b", "http://a/a%2Fb"),  # reserved character vs its escape
    ("http://a/a;b", "http://a/a%3Bb"),
    ("http://a/?a=b", "http://a/?a%3Db"),
    ("http://a/?", "http://a/"),  # empty query
    ("http://a/#", "http://a/"),  # empty fragment
    ("http://@a/", "http://a/"),  # empty userinfo
    ("http://u@a/", "http://a/"),  # userinfo present vs absent
    ("http://a/x/", "http://a/x"),  # trailing slash
    ("http://www.a.example/", "http://a.example/"),  # www.
    ("http://a.example./", "http://a.example/"),  # trailing dot in the host
    ("http://a/", "https://a/"),  # http vs https
    ("http://a/caf\u00e9", "http://a/cafe\u0301"),  # composed vs decomposed
    ("http://a/caf%E9", "http://a/caf%C3%A9"),  # Latin-1 vs UTF-8
    ("http://a/\uff21", "http://a/A"),  # full-width look-alike in a path
    ("http://a/\ufb01le", "http://a/file"),  # ligature look-alike in a path
    ("http://127.0.0.1/", "http://[::ffff:127.0.0.1]/"),  # IPv4 vs IPv6
    ("http://a/index.html", "http://a/"),  # default document
    ("http://faß.de/", "http://fass.de/"),  # IDNA2008 vs IDNA2003
    ("http://a/%7E", "http://a/%7e%7e"),  # sanity: different paths
    ("mailto:John@x.org", "mailto:john@x.org"),  # mailto local parts are case-sensitive
    ("urn:example:Foo", "urn:example:foo"),  # URN NSS is case-sensitive
    ("http://a/#Frag", "http://a/#frag"),  # fragments are never touched
    ("http://a:8080/", "http://a/"),
    ("http://a/%C3%A9", "http://a/%C3%89"),  # É vs é
    ("http://0x7f.0.0.1/", "http://127.0.0.1/"),  # no numeric IPv4 shortcuts
    ("http://a/%2e", "http://a/%252e"),
]


@pytest.mark.parametrize("a, b", TRAPS)
def test_traps_stay_apart_at_every_rung(a, b):
    for rung in ("string", "syntax", "scheme"):
        assert not equivalent(a, b, rung), (rung, canonicalize(a, rung), canonicalize(b, rung))


# --- fragments, rungs, misc ----------------------------------------------------------

def test_keep_fragment_false_drops_the_fragment_at_every_rung():
    for rung in ("string", "syntax", "scheme"):
        assert canonicalize("http://a/b#frag", rung, keep_fragment=False) == "http://a/b"
        assert canonicalize("http://a/b#", rung, keep_fragment=False) == "http://a/b"
    assert equivalent("http://a/b#x", "http://a/b#y", keep_fragment=False)
    assert not equivalent("http://a/b#x", "http://a/b#y")


def test_string_rung_is_the_input_itself():
    iri = "HTTP://Example.com/%7e"
    assert canonicalize(iri, "string") == iri
    assert canonicalize(" http://a/ ", "string", lenient=True) == "http://a/"


def test_relative_references_have_no_canonical_form():
    with pytest.raises(IRIError, match="scheme"):
        canonicalize("/a/b")


def test_lowest_common_rung():
    assert lowest_common_rung("http://a/", "http://a/") is Rung.STRING
    assert lowest_common_rung("http://a/%7e", "HTTP://a/~") is Rung.SYNTAX
    assert lowest_common_rung("http://a:80/", "http://a") is Rung.SCHEME
    assert lowest_common_rung("http://a/x", "http://a/y") is None
    assert lowest_common_rung("http://a:80/", "http://a", "syntax") is None


def test_scheme_form_of_syntax_form_is_scheme_form():
    for iri in ["HTTP://B%C3%9Ccher.Example:0080", "mailto:x@EXAMPLE.%63om", "file://LocalHost/a/../b"]:
        assert canonicalize(canonicalize(iri, "syntax"), "scheme") == canonicalize(iri, "scheme")


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("  http://a/b c  ", "http://a/b%20c"),
        ("http://a/b\tc\n", "http://a/bc"),
        ("http://a/100%", "http://a/100%25"),
        ("http://a/%zz", "http://a/%25zz"),
        ("http://a/%7e", "http://a/~"),  # a valid escape is not touched by the preprocessing
        ("http:\\\\a\\b\\c?x\\y", "http://a/b/c?x%5Cy"),
        ('http://a/"q"<>{}|^`', "http://a/%22q%22%3C%3E%7B%7D%7C%5E%60"),
        ("http://a/\u202e", "http://a/%E2%80%AE"),
        ("http://a/x#y#z", "http://a/x#y%23z"),  # valid in 3987bis-03; %23 in the URI form
        ("http://a/x#y z", "http://a/x#y%20z"),
        ("http://a/[x]", "http://a/%5Bx%5D"),
    ],
)
def test_lenient_mode(raw, expected):
    assert canonicalize(raw, "scheme", lenient=True) == expected


@pytest.mark.parametrize(
    "iri",
    [
        "http://a/b?c=d&e#f",
        "http://u:p@[::1]:8/a/%2F/b?%3D#%23",
        "http://bücher.example/é?ü#ö",
        "mailto:a@b?subject=%20x",
        "foo:bar",
    ],
)
def test_lenient_mode_never_changes_a_valid_iri(iri):
    for rung in ("string", "syntax", "scheme"):
        assert canonicalize(iri, rung, lenient=True) == canonicalize(iri, rung)


@pytest.mark.parametrize(
    "text, component", [("http://a/\udcff", "path"), ("http://\udcff/", "host"), ("http://a/?\ud800", "query")]
)
def test_lenient_mode_refuses_lone_surrogates(text, component):
    # undecodable input (surrogateescape): encoding the surrogate would invent octets
    with pytest.raises(IRIError) as info:
        canonicalize(text, lenient=True)
    assert info.value.component == component
