"""Host names (3987bis 3.4, 5.3.2.1, 5.3.3; draft-ietf-idn-uri; RFC 1034, 5891, 5952; UTS #46)."""

from __future__ import annotations

import pytest

from scrapy_iri import IRIError
from scrapy_iri import _host as host


@pytest.mark.parametrize(
    "given, expected",
    [
        ("Example.COM", "example.com"),  # 5.3.2.1: ASCII letters lowercased
        ("BÜCHER.example", "b%C3%9Ccher.example"),  # non-ASCII encoded, never case-mapped here
        ("b%c3%bccher.example", "b%C3%BCcher.example"),  # hex digits uppercased
        ("%41%2e%2F", "a.%2F"),  # unreserved escapes decoded, then lowercased; '/' stays escaped
        ("[2001:DB8::1]", "[2001:db8::1]"),  # IP literal: hex digits lowercased only
    ],
)
def test_normalize_host_syntax(given, expected):
    assert host.normalize_host_syntax(given) == expected


@pytest.mark.parametrize(
    "given, expected",
    [
        ("bücher.example", "xn--bcher-kva.example"),
        ("BÜCHER.example", "xn--bcher-kva.example"),  # UTS #46 maps case
        ("b%C3%BCcher.example", "xn--bcher-kva.example"),  # draft-ietf-idn-uri: escapes decoded first
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("faß.de", "xn--fa-hia.de"),  # non-transitional: not fass.de (IDNA2003 would merge them)
        ("例え\u3002jp", "xn--r8jz45g.jp"),  # U+3002 IDEOGRAPHIC FULL STOP is a label separator
        ("Example.COM.", "example.com."),  # the trailing dot is kept: another name to HTTP
        ("under_score.example", "under_score.example"),  # DNS allows more than LDH in ASCII labels
    ],
)
def test_normalize_dns_host(given, expected):
    assert host.normalize_dns_host(given) == expected


@pytest.mark.parametrize(
    "given",
    [
        "xn--zz.example",  # RFC 5891 5.4: not a valid A-label
        "☃.com",  # IDNA2008 disallows symbols
        "%E2%98%83.com",
        "%C3.example",  # escapes that are not UTF-8
        "ex\uff0fample.com",  # U+FF0F maps to '/' under UTS #46: never add a delimiter
        "a\u00a0b.com",  # U+00A0 maps to a space
    ],
)
def test_normalize_dns_host_errors(given):
    with pytest.raises(IRIError) as info:
        host.normalize_dns_host(given)
    assert info.value.component == "host"


def test_dns_length_limits_apply_where_idna_runs():
    label63 = "ü" + "a" * 55  # A-label "xn--" + 59 octets: 63
    assert len(host.normalize_dns_host(label63 + ".example").split(".")[0]) == 63
    with pytest.raises(IRIError, match="DNS allows 63"):
        host.normalize_dns_host("ü" + "a" * 63 + ".example")  # RFC 1034 3.1: 63 octets per label
    name = ".".join(["ü" + "a" * 40] * 7)  # mapped: 7 * 41 + 6 = 293 characters
    with pytest.raises(IRIError, match="DNS allows 253"):
        host.normalize_dns_host(name)
    with pytest.raises(IRIError, match="DNS allows 253"):
        host.normalize_dns_host("\u0628" + "\u0660" * 10_000)  # refused before IDNA's checks run
    with pytest.raises(IRIError, match="DNS allows 253"):
        host.normalize_dns_host("%C3%BC" * 200_000 + ".example")  # before the escapes are decoded
    with pytest.raises(IRIError, match="DNS allows"):
        host.normalize_dns_host("xn--bcher-kva." * 30 + "example")
    # ASCII names without IDN labels are not IDNA's business: left as they are
    long_ascii = "a" * 300 + ".example"
    assert host.normalize_dns_host(long_ascii) == long_ascii


def test_dns_length_check_is_sound_for_ignored_characters():
    # UTS #46 drops U+00AD SOFT HYPHEN: a name may be spelt longer than it is
    padded = "b\u00adücher.example"
    assert host.normalize_dns_host(padded) == "xn--bcher-kva.example"
    assert host.normalize_dns_host("ü" + "\u00ad" * 300 + ".example") == "xn--tda.example"


def test_host_caches_keep_only_short_hosts():
    long_host = "ü" * (host.HOST_CACHE_MAX_LENGTH + 1)
    before = host._reg_name_encoded_cached.cache_info().currsize
    host.normalize_host_syntax(long_host)
    assert host._reg_name_encoded_cached.cache_info().currsize == before
    before = host._normalize_dns_host_cached.cache_info().currsize
    with pytest.raises(IRIError):
        host.normalize_dns_host("a" + "\u00ad" * host.HOST_CACHE_MAX_LENGTH + "ü" * 70)
    assert host.normalize_dns_host("A%2f" * 100) == "a%2F" * 100  # 400 characters: computed, not kept
    assert host._normalize_dns_host_cached.cache_info().currsize == before
    host.normalize_dns_host("bücher.example")
    assert host.normalize_dns_host("bücher.example") == "xn--bcher-kva.example"
    assert host._normalize_dns_host_cached.cache_info().hits >= 1


@pytest.mark.parametrize(
    "literal, expected",
    [
        ("[2001:0db8:0000:0000:0000:0000:0000:0001]", "[2001:db8::1]"),  # RFC 5952 4.1, 4.2.1
        ("[2001:db8:0:0:1:0:0:1]", "[2001:db8::1:0:0:1]"),  # 4.2.3: the first of equal runs
        ("[2001:DB8::1]", "[2001:db8::1]"),  # 4.3: lowercase
        ("[2001:db8:0:1:1:1:1:1]", "[2001:db8:0:1:1:1:1:1]"),  # 4.2.2: no '::' for one field
        ("[::ffff:c000:0201]", "[::ffff:192.0.2.1]"),  # 5: IPv4-mapped as a dotted quad
        ("[v1.Fe:x]", "[v1.Fe:x]"),  # IPvFuture as it is
    ],
)
def test_ip_literal_rfc5952(literal, expected):
    assert host.ip_literal_rfc5952(literal) == expected


@pytest.mark.parametrize(
    "given, expected",
    [
        ("xn--99zt52a.example.org", "納豆.example.org"),  # 3987bis 3.7.1
        ("XN--BCHER-KVA.example", "bücher.example"),
        ("xn--zz.example", "xn--zz.example"),  # not valid: kept
        ("example.org", "example.org"),
        ("xn--" + "a" * 70 + ".example", "xn--" + "a" * 70 + ".example"),  # longer than a label can be
    ],
)
def test_to_unicode_host(given, expected):
    assert host.to_unicode_host(given) == expected
