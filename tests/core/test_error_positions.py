"""Every IRIError names its component and points at the offending character of the string given.

Where no single character is at fault (an invalid IDN label, a port above
65535, a name too long for DNS) it points at the first character of the
offending label or component. Lenient input is preprocessed first, but the
position is in the string the caller gave.
"""

from __future__ import annotations

import re

import pytest
from adversarial import hostile_iris
from hypothesis import HealthCheck, example, given, settings

from scrapy_iri import IRIError, canonicalize, equivalent, parse, resolve, to_iri, to_uri
from scrapy_iri._ladder import lowest_common_rung

# (input, component, what starts at the position); strict parsing at the scheme rung
STRICT = [
    ("1http://a/", "scheme", "1http"),
    ("ht tp://a/", "scheme", " tp"),
    ("hé://a/", "scheme", "é:"),
    ("http://u[@a/", "userinfo", "[@"),
    ("http://u%zz@a/", "userinfo", "%zz"),
    ("http://a b/", "host", " b/"),
    ("http://a\\b/c", "host", "\\b"),
    ("http://[::1/", "host", "[::1"),
    ("http://[fe80::1%25eth0]/", "host", "[fe80"),
    ("http://[::1]x/", "host", "x/"),
    ("http://a.\u0378.com/", "host", "\u0378.com"),  # unassigned: UTS #46 disallows it
    ("http://ab.xn--zz.com/", "host", "xn--zz"),  # not an A-label
    ("http://ab.%FF.com/", "host", "%FF"),  # escaped octets that are not UTF-8
    ("http://ab.c%C3%A9%FF.com/", "host", "%FF.com"),
    ("http://a%20b.c\u00e9/", "host", "%20b"),  # an escaped space stays a space: no host name
    ("http://a\uff0fb.com/", "host", "\uff0fb"),  # UTS #46 maps it to '/'
    ("http://x.a\u200cb.example/", "host", "a\u200cb"),  # ZWNJ out of context: the label
    ("http://x.1\u05d0.com/", "host", "1\u05d0"),  # bidi rule: the label
    ("http://x.\u0301a/", "host", "\u0301a"),  # a combining mark starts the label
    ("http://x." + "\u00e9" * 70 + ".com/", "host", "\u00e9" * 70),  # label above 63 octets
    ("http://" + "\u00e9." * 200 + "com/", "host", "\u00e9.\u00e9"),  # name above 253: the host
    ("http://\u00ad/", "host", "\u00ad/"),  # maps to nothing
    ("http:x", "host", "x"),  # no authority: where it should be
    ("http:///p", "host", "/p"),
    ("mailto:a@b.c,d@x\u0378.com", "host", "\u0378.com"),  # a mailto domain, in the path
    ("http://a:+80/", "port", "+80"),
    ("http://a:8a/", "port", "a/"),
    ("http://a:65536/", "port", "65536"),
    ("http://u@[::1]:099999/", "port", "099999"),
    ("http://a/b c", "path", " c"),
    ("http://a/%", "path", "%"),
    ("http://a/\x00", "path", "\x00"),
    ("http://a/\ud800", "path", "\ud800"),
    ("http://a/?q\x7f", "query", "\x7f"),
    ("http://a/?%G0", "query", "%G0"),
    ("http://a/#f\u202e", "fragment", "\u202e"),
    ("http://a/#%", "fragment", "%"),
]
# the same faults behind text that preprocessing trims, drops or encodes
LENIENT = [
    ("  \thttp://a:+80/", "port", "+80"),
    ("http://u@v@a:8a/", "port", "a/"),  # '@' in the userinfo becomes %40 before the port
    ("http://\u00e9\u00e9 x:65536/", "port", "65536"),
    ("http://a\t.\n\u0378.com/", "host", "\u0378.com"),
    ("  http://\t x.\u0378.com/", "host", "\u0378.com"),
    ("http://a b.c\u00e9/", "host", " b"),  # the space, encoded as %20
    ("http://\"x\".a.\u0378/", "host", "\u0378/"),
    ("mailto:<a>@b.c,d@x\u0378.com", "host", "\u0378.com"),
    ("\x00http://[::1/", "host", "[::1"),
    ("h\u00e9://a/", "scheme", "\u00e9:"),
]


def _error(call, text: str) -> IRIError:
    with pytest.raises(IRIError) as info:
        call(text)
    return info.value


@pytest.mark.parametrize("text, component, at", STRICT)
def test_strict_errors_point_at_the_offending_character(text, component, at):
    exc = _error(canonicalize, text)
    assert exc.component == component, str(exc)
    assert exc.position is not None and text[exc.position :].startswith(at), (str(exc), text[exc.position :])


@pytest.mark.parametrize("text, component, at", LENIENT)
def test_lenient_errors_point_into_the_string_given(text, component, at):
    exc = _error(lambda s: canonicalize(s, lenient=True), text)
    assert exc.component == component, str(exc)
    assert text[exc.position :].startswith(at), (str(exc), text[exc.position :])


def test_relative_paths_with_a_colon_point_at_it():
    for text in ("./a:b", "a/b:c"):
        parse(text)  # a valid relative reference
    exc = _error(parse, ":b")
    assert (exc.component, exc.position) == ("path", 0)
    exc = _error(parse, "%41:b")  # read as a scheme, which '%' cannot start
    assert (exc.component, exc.position) == ("scheme", 0)


def test_to_uri_places_host_errors_as_canonicalize_does():
    for text in ("http://a.\u0378.com/", "http://x.1\u05d0.com/é", "ws://a\u200cb.é/"):
        position = _error(canonicalize, text).position
        assert position is not None and _error(to_uri, text).position == position


_CHARACTER = re.compile(r"character (?:'(.+)' \(U\+([0-9A-F]{4,6})\)|U\+([0-9A-F]{4,6}))")


def _check_position(text: str, exc: IRIError) -> None:
    assert exc.component in {"scheme", "userinfo", "host", "port", "path", "query", "fragment"}, str(exc)
    assert isinstance(exc.position, int) and 0 <= exc.position <= len(text), (text, str(exc))
    m = _CHARACTER.search(exc.reason)
    if m is not None and "lone surrogate" not in exc.reason:
        assert text[exc.position] == chr(int(m.group(2) or m.group(3), 16)), (text, str(exc))
    if exc.reason.startswith("'%' not followed"):
        assert text[exc.position] == "%", (text, str(exc))


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(hostile_iris())
@example("http://ab.c%C3%A9%FF.com/")
@example("mailto:%3Ca%3E@b.c,d@x\u0378.com")
def test_every_error_has_a_component_and_a_position_in_the_input(text):
    for call in (
        lambda s: parse(s),
        lambda s: canonicalize(s, "syntax"),
        lambda s: canonicalize(s, "scheme", keep_fragment=False),
        lambda s: canonicalize(s, "scheme", lenient=True),
        lambda s: to_uri(s),
        lambda s: to_uri(s, lenient=True),
        lambda s: to_iri(s),
        lambda s: resolve("http://b.example/c", s, lenient=True),
    ):
        try:
            call(text)
        except IRIError as exc:
            _check_position(text, exc)


def test_iri_errors_survive_pickling_and_copying():
    """Dask, Spark and multiprocessing ship exceptions between processes by pickling them."""
    import copy
    import pickle

    exc = _error(canonicalize, "http://ab.xn--zz.com/")
    for clone in (pickle.loads(pickle.dumps(exc)), copy.copy(exc), copy.deepcopy(exc)):
        assert type(clone) is IRIError
        assert (str(clone), clone.reason, clone.component, clone.position) == (str(exc), exc.reason, exc.component, exc.position)


@pytest.mark.parametrize("compare", [equivalent, lowest_common_rung])
def test_a_comparison_names_the_iri_at_fault(compare):
    good, bad = "http://example.com/", "http://exa mple.com/"
    with pytest.raises(IRIError) as first:
        compare(bad, good)
    with pytest.raises(IRIError) as second:
        compare(good, bad)
    assert first.value.reason.startswith("in a: ") and second.value.reason.startswith("in b: ")
    for error in (first.value, second.value):
        assert error.component == "host" and bad[error.position] == " "
