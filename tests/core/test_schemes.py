"""The scheme registry of the scheme-based rung (3987bis 5.3.3), row by row."""

from __future__ import annotations

import pytest

from scrapy_iri import IRIError, parse
from scrapy_iri._ladder import normalize_syntax_based
from scrapy_iri._schemes import SCHEMES, SchemeRule, normalize_port, normalize_scheme_based


def scheme_form(iri: str) -> str:
    return normalize_scheme_based(normalize_syntax_based(parse(iri))).unsplit()


def test_every_row_names_its_source():
    for scheme, rule in SCHEMES.items():
        assert rule.source.startswith("RFC "), scheme
        assert scheme == scheme.lower()


@pytest.mark.parametrize(
    "scheme, port",
    [("http", 80), ("https", 443), ("ws", 80), ("wss", 443), ("ftp", 21), ("coap", 5683), ("coaps", 5684),
     ("ldap", 389), ("telnet", 23), ("gopher", 70), ("nntp", 119)],
)
def test_default_ports(scheme, port):
    assert SCHEMES[scheme].default_port == port
    assert scheme_form(f"{scheme}://h.example:{port}/x") == f"{scheme}://h.example/x"
    assert scheme_form(f"{scheme}://h.example:{port + 1}/x") == f"{scheme}://h.example:{port + 1}/x"


@pytest.mark.parametrize(
    "port, expected",
    [(None, None), ("", None), ("80", None), ("0080", None), ("8080", "8080"), ("008080", "8080"), ("0", "0"), ("65535", "65535")],
)
def test_normalize_port_rfc_3986_6_2_3(port, expected):
    assert normalize_port(port, SCHEMES["http"]) == expected


@pytest.mark.parametrize("port", ["65536", "99999999999999999999999"])
def test_ports_above_65535_are_errors(port):
    with pytest.raises(IRIError) as info:
        normalize_port(port, SCHEMES["http"])
    assert info.value.component == "port"


@pytest.mark.parametrize(
    "iri, expected",
    [
        ("http://h.example", "http://h.example/"),  # RFC 9110 4.2.3: empty path is "/"
        ("http://h.example?q", "http://h.example/?q"),
        ("ldap://h.example", "ldap://h.example"),  # no such rule for ldap
        ("file://localhost/etc/x", "file:///etc/x"),  # RFC 8089 2
        ("file://localhost:1/x", "file://localhost:1/x"),
        ("mailto:Joe@EXAMPLE.org,x@B%C3%BCcher.example", "mailto:Joe@example.org,x@xn--bcher-kva.example"),  # RFC 6068 6
        ("mailto:%22a@b%22@Example.org", "mailto:%22a@b%22@Example.org"),  # quoted local part: left alone
        ("urn:ISBN:0-395-36341-1", "urn:isbn:0-395-36341-1"),  # RFC 8141 3.1: the NID, not the NSS
        ("urn:isbn:ABC", "urn:isbn:ABC"),
        ("unknown://H.example:80", "unknown://h.example:80"),  # no row: the syntax form only
    ],
)
def test_scheme_rules(iri, expected):
    assert scheme_form(iri) == expected


@pytest.mark.parametrize("iri", ["http:/x", "https:x", "ws://", "http://:80/"])
def test_web_schemes_need_a_host(iri):
    with pytest.raises(IRIError) as info:
        scheme_form(iri)
    assert info.value.component == "host"


def test_unknown_rule_fields_default_to_the_generic_syntax():
    rule = SchemeRule()
    assert (rule.default_port, rule.empty_path_is_slash, rule.dns_host, rule.host_required, rule.special) == (
        None, False, False, False, None,
    )
