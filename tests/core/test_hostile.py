"""Hostile sizes get an answer: a result or an IRIError, never another exception.

How long the answers take is measured by ``benchmarks/hostile_bench.py``
(docs/performance.md), not asserted here.
"""

from __future__ import annotations

import pytest

from scrapy_iri import IRIError, canonicalize, parse, resolve, to_display, to_iri, to_uri

MB = 1_000_000

FAMILIES = {
    "dot segments": "http://a.example" + "/a/b/../." * (MB // 9) + "/x",
    "escapes": "http://a.example/" + "%C3%A9%41%2f%e2%80%ae" * (MB // 21),
    "long host": "http://" + "a" * MB + ".example/",
    "IDN labels": "http://" + "xn--bcher-kva." * (MB // 14) + "example/",
    "non-ASCII host": "http://" + "ü" * (MB // 2) + ".example/",
    "escaped host": "http://" + "%C3%BC" * (MB // 6) + ".example/",
    "at signs": "http://" + "u@" * (MB // 2) + "a.example/",
    "bidi text": "http://a.example/" + "שלום/abc/" * (MB // 13),
    "long query": "http://a.example/?" + "k=v&" * (MB // 4),
}

OPERATIONS = {
    "parse": parse,
    "canonicalize": canonicalize,
    "canonicalize lenient": lambda s: canonicalize(s, lenient=True),
    "to_uri": to_uri,
    "to_iri": to_iri,
    "to_display": to_display,
    "resolve": lambda s: resolve("http://b.example/c", s),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_every_operation_answers_at_one_megabyte(family):
    text = FAMILIES[family]
    for name, op in OPERATIONS.items():
        try:
            result = op(text)
        except IRIError as exc:
            assert exc.component, (family, name)
            continue
        assert result is not None, (family, name)


def test_long_idn_hosts_are_refused_as_host_errors():
    for family in ("IDN labels", "non-ASCII host", "escaped host"):
        with pytest.raises(IRIError) as info:
            canonicalize(FAMILIES[family])
        assert info.value.component == "host"
        assert "DNS allows" in str(info.value)


def test_dot_segments_at_one_megabyte():
    assert canonicalize("http://a.com" + "/a" * 500_000 + "/.") == "http://a.com" + "/a" * 500_000 + "/"
    assert canonicalize(FAMILIES["dot segments"]) == "http://a.example" + "/a" * (MB // 9) + "/x"
