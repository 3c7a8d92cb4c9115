"""The ladder's merges and traps, as tables: what each rung must merge, what no rung may merge.

Every expected merge is an equivalence a spec states (the section is named
beside it); every trap is a pair the specs let differ (ladder.md "Never
below the protocol rung", IDNA2008 vs UTS #46 transitional, WHATWG's
IPv4 shortcuts that the ladder does not take). Each pair is checked at
every rung, strict and lenient, both ways round; every form met is
checked for idempotence.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from adversarial import hostile_iris

from scrapy_iri import IRIError, Rung, canonicalize, equivalent
from scrapy_iri._ladder import lowest_common_rung

RUNGS = (Rung.STRING, Rung.SYNTAX, Rung.SCHEME)

# (a, b, the lowest rung that merges them)
MERGES = [
    ("HTTP://Example.COM/", "http://example.com/", Rung.SYNTAX),  # 3987bis 5.3.2.1
    ("SVN+SSH://a/b", "svn+ssh://a/b", Rung.SYNTAX),  # scheme case, '+' in a scheme
    ("http://a/%7e", "http://a/~", Rung.SYNTAX),  # RFC 3986 6.2.2.2
    ("http://a/%c3%a9", "http://a/é", Rung.SYNTAX),  # 5.3.2.3
    ("http://a/%ff", "http://a/%FF", Rung.SYNTAX),  # hex case of an octet that is not UTF-8 (6.2.2.1)
    ("http://a/b/%2e%2E/c", "http://a/c", Rung.SYNTAX),  # 6.2.2.2 then 6.2.2.3
    ("http://a/b/.%2e/c", "http://a/c", Rung.SYNTAX),
    ("http://a/b/%2E/c", "http://a/b/c", Rung.SYNTAX),
    ("http://%e4%be%8b.jp/", "http://%E4%BE%8B.jp/", Rung.SYNTAX),  # 6.2.2.1 in the host
    ("http://例.jp/", "http://%E4%BE%8B.jp/", Rung.SYNTAX),  # 5.3.2.3 in the host
    ("http://FAß.DE/", "http://faß.de/", Rung.SYNTAX),  # ASCII letters of a reg-name
    ("http://a%2Eb/", "http://a.b/", Rung.SYNTAX),  # unreserved escapes in the host
    ("http://[2001:DB8::1]/", "http://[2001:db8::1]/", Rung.SYNTAX),  # IP-literal hex digits
    ("http://u%41@a/", "http://uA@a/", Rung.SYNTAX),
    ("http://a/?%7E#%7e", "http://a/?~#~", Rung.SYNTAX),
    ("http://a/#a#b", "http://a/#a%23b", Rung.SYNTAX),  # 3987bis-03 ifragment '#', 3.3 mapping
    ("http://例.jp/", "http://xn--fsq.jp/", Rung.SCHEME),  # 3987bis 3.4, 5.3.3
    ("http://%E4%BE%8B.jp/", "http://xn--fsq.jp/", Rung.SCHEME),  # draft-ietf-idn-uri sec. 3
    ("http://faß.de/", "http://xn--fa-hia.de/", Rung.SCHEME),  # IDNA2008: ß is PVALID
    ("http://Σ.gr/", "http://σ.gr/", Rung.SCHEME),  # UTS #46 maps capital sigma to small sigma
    ("http://例え．jp/", "http://例え.jp/", Rung.SCHEME),  # UTS #46 maps U+FF0E to '.'
    ("http://例え。jp/", "http://例え｡jp/", Rung.SCHEME),  # ... and U+3002, U+FF61
    ("http://ｅｘａｍｐｌｅ.com/", "http://example.com/", Rung.SCHEME),  # UTS #46 width mapping
    ("http://a:/", "http://a/", Rung.SCHEME),  # RFC 3986 6.2.3
    ("http://a:80/", "http://a", Rung.SCHEME),
    ("http://a:0080/", "http://a/", Rung.SCHEME),
    ("https://a:443/", "https://a/", Rung.SCHEME),
    ("ws://a:80", "ws://a/", Rung.SCHEME),  # RFC 6455 3
    ("http://[::FFFF:0102:0304]/", "http://[::ffff:1.2.3.4]/", Rung.SCHEME),  # RFC 5952 5: one address
    ("http://[0:0:0:0:0:0:0:1]/", "http://[::1]/", Rung.SCHEME),  # RFC 5952 4.2
    ("http://[::1.2.3.4]/", "http://[::102:304]/", Rung.SCHEME),  # one address, two spellings
    ("file://localhost/x", "file:///x", Rung.SCHEME),  # RFC 8089 2
    ("mailto:a@EXAMPLE.com", "mailto:a@example.com", Rung.SCHEME),  # RFC 6068 2
    ("mailto:a@faß.de", "mailto:a@xn--fa-hia.de", Rung.SCHEME),
    ("urn:ISBN:1", "urn:isbn:1", Rung.SCHEME),  # RFC 8141 3.1
]

# pairs that must stay apart at every rung below protocol
TRAPS = [
    ("http://faß.de/", "http://fass.de/"),  # IDNA2008 vs IDNA2003 / UTS #46 transitional
    ("http://FAß.de/", "http://FASS.de/"),
    ("http://xn--fa-hia.de/", "http://fass.de/"),
    ("http://%C3%9F.de/", "http://ss.de/"),
    ("http://ς.gr/", "http://σ.gr/"),  # final sigma is PVALID in IDNA2008
    ("http://ς.gr/", "http://Σ.gr/"),
    ("http://\u0915\u094d\u200d\u0937.in/", "http://\u0915\u094d\u0937.in/"),  # ZWJ after a virama (CONTEXTJ)
    ("http://\u0628\u200c\u0628.ir/", "http://\u0628\u0628.ir/"),  # ZWNJ between joining letters
    ("http://pаypal.com/", "http://paypal.com/"),  # Cyrillic а: mixed script is another name
    ("http://0x7f.1/", "http://127.0.0.1/"),  # WHATWG IPv4 forms: the ladder takes no shortcut
    ("http://017700000001/", "http://127.0.0.1/"),
    ("http://127.1/", "http://127.0.0.1/"),
    ("http://1.2.3/", "http://1.2.0.3/"),
    ("http://127.0.0.1./", "http://127.0.0.1/"),
    ("http://a:0/", "http://a/"),
    ("http://a:/", "http://a:0/"),
    ("http://a:8080/", "http://a/"),
    ("http://a:443/", "https://a/"),
    ("ws://a/", "http://a/"),
    ("http://u%40v@a/", "http://u@a/"),
    ("http://u%3Av@a/", "http://u:v@a/"),  # a reserved delimiter vs its escape
    ("http://a:b@c/", "http://c/"),
    ("http://a%40b/", "http://a@b/"),
    ("http://a/%2e%2E", "http://a/%252e%252E"),
    ("http://a/..%2F", "http://a/"),  # '..%2F' is no dot segment
    ("http://a/b%2F..%2Fc", "http://a/c"),
    ("http://a/b/%C0%AE%C0%AE/c", "http://a/c"),  # overlong '.' is no dot
    ("http://a/%C0%AF", "http://a/%2F"),  # overlong '/'
    ("http://a/%2F", "http://a//"),
    ("http://a/%ED%A0%80", "http://a/%EF%BF%BD"),  # an encoded surrogate is not U+FFFD
    ("http://a/caf%C3%A9", "http://a/CAF%C3%89"),
    ("http://a/?a+b", "http://a/?a%20b"),  # '+' is not a space in a URI
    ("http://a/?a+b", "http://a/?a%2Bb"),  # ... nor its own escape (a sub-delim)
    ("http://a/?a=1&b=2", "http://a/?b=2&a=1"),
    ("http://a/?a=1&b=2", "http://a/?a=1;b=2"),
    ("http://a/?a=1&b=2", "http://a/?a=1%26b=2"),
    ("http://a/?a=1&&b=2", "http://a/?a=1&b=2"),
    ("http://a/?a=1&", "http://a/?a=1"),
    ("http://a/x?y", "http://a/x%3Fy"),
    ("http://a/x#y", "http://a/x%23y"),
    ("http://a/#a", "http://a/#A"),
    ("http://a/#a%23b", "http://a/#a%2523b"),
    ("http://a/?#", "http://a/"),
    ("file:///C:/x", "file:///c:/x"),  # drive letters: no case rule in RFC 8089
    ("file:///C:/x", "file://C:/x"),
    ("file://host/share", "file:///share"),
    ("file://localhost./x", "file:///x"),
    ("data:,A%20B", "data:,a%20b"),
    ("data:text/plain,a", "data:TEXT/plain,a"),  # no data: rule: nothing more is merged
    ("mailto:A@b.c", "mailto:a@b.c"),  # RFC 6068: local parts are case-sensitive
    ("mailto:a@b.c?subject=X", "mailto:a@b.c?subject=x"),
    ("urn:a:b/../c", "urn:a:c"),  # opaque paths keep their dots
    ("foo:a/./b", "foo:a/b"),
    ("svn+ssh://a/b", "svn+ssh://a/B"),
    ("foo://a/b/c", "foo://a/b%5Cc"),
    ("http://a/\ud7ff", "http://a/%EF%BF%BD"),  # the last ucschar below the surrogates vs U+FFFD
]
# Traps that only lenient input can spell (each side is preprocessed first).
LENIENT_TRAPS = [
    ("http://a/\x00b", "http://a/b"),  # NUL inside: encoded, never dropped
    ("http://a/b\x7fc", "http://a/bc"),
    ("http://a/b\x85c", "http://a/bc"),
    ("http://a/?a b", "http://a/?a+b"),
    ("foo://a/b\\c", "foo://a/b/c"),  # '\' is '/' in special schemes only
    ("file:///c|/x", "file:///c:/x"),
]


def _forms(text: str, rung: Rung, lenient: bool) -> str | None:
    try:
        return canonicalize(text, rung, lenient=lenient)
    except IRIError:
        return None


@pytest.mark.parametrize("a, b, lowest", MERGES)
def test_spec_equivalences_merge_from_their_rung_up(a, b, lowest):
    assert lowest_common_rung(a, b) is lowest
    assert lowest_common_rung(b, a) is lowest
    for rung in RUNGS:
        for lenient in (False, True):
            assert equivalent(a, b, rung, lenient=lenient) is (rung >= lowest)


@pytest.mark.parametrize("a, b", TRAPS + LENIENT_TRAPS)
def test_traps_stay_apart_at_every_rung(a, b):
    checked = 0
    for rung in RUNGS:
        for lenient in (False, True):
            fa, fb = _forms(a, rung, lenient), _forms(b, rung, lenient)
            if fa is None or fb is None:
                continue
            checked += 1
            assert fa != fb, (rung, lenient, fa)
            for text, form in ((a, fa), (b, fb)):
                assert canonicalize(form, rung) == form, (text, rung, lenient)
    assert checked >= (3 if (a, b) in LENIENT_TRAPS else 6)


def test_lenient_traps_are_not_iris():
    """They are traps of the preprocessing: strict parsing refuses one side."""
    for a, _ in LENIENT_TRAPS:
        with pytest.raises(IRIError):
            canonicalize(a)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(hostile_iris(), hostile_iris())
def test_equivalence_is_symmetric_and_grows_up_the_ladder(a, b):
    for lenient in (False, True):
        merged = [
            None if None in forms else forms[0] == forms[1]
            for forms in ((_forms(a, r, lenient), _forms(b, r, lenient)) for r in RUNGS)
        ]
        for low, high in zip(merged, merged[1:]):
            if low and high is not None:
                assert high
        try:
            assert lowest_common_rung(a, b, lenient=lenient) == lowest_common_rung(b, a, lenient=lenient)
        except IRIError:
            with pytest.raises(IRIError):
                lowest_common_rung(b, a, lenient=lenient)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(hostile_iris())
def test_forms_of_hostile_strings_are_idempotent_and_factor(text):
    for lenient in (False, True):
        syntax = _forms(text, Rung.SYNTAX, lenient)
        scheme = _forms(text, Rung.SCHEME, lenient)
        for form, rung in ((syntax, Rung.SYNTAX), (scheme, Rung.SCHEME)):
            if form is not None:
                assert form.isascii()
                assert canonicalize(form, rung) == form
        if syntax is not None:
            assert _forms(syntax, Rung.SCHEME, False) == scheme
