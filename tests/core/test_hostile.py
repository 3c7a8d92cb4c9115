"""Hostile sizes get an answer: a result or an IRIError, never another exception.

How long the answers take is measured by ``benchmarks/hostile_bench.py``
(docs/performance.md), not asserted here.
"""

from __future__ import annotations

import gc
import tracemalloc

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
    "10^5 labels": "http://" + "a." * 100_000 + "example/",
    "10^5 ../": "http://a.example/" + "../" * 100_000 + "x",
    "10^5 encoded ../": "http://a.example/" + "%2e%2E/" * 100_000 + "x",
    "10^5 bare %": "http://a.example/" + "%" * 100_000,
    "10^5 escapes of ASCII": "http://a.example/?" + "%3d%41" * 100_000,
    "nested brackets": "http://" + "[" * 100_000 + "]" * 100_000 + "/",
    "long userinfo": "http://" + "u:" * (MB // 2) + "@a.example/",
    "long port": "http://a.example:" + "9" * MB + "/",
    "long scheme": "h" * MB + "://a.example/",
    "long fragment": "http://a.example/#" + "#" * MB,
    "backslashes": "http:" + "\\a" * (MB // 2),
    "controls": "http://a.example/" + "\t\x00" * (MB // 2),
    "full-width dots": "http://" + "a\u3002" * (MB // 2) + "jp/",
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


@pytest.mark.parametrize("family", FAMILIES)
def test_hostile_input_memory_is_linear_and_leaves_nothing_behind(family):
    """At its peak an operation holds a bounded multiple of its input (tracemalloc counts every
    allocation: deterministic, not a timing); afterwards it leaves less than 64 kB behind, so no
    cache keeps a huge key or value."""
    text = FAMILIES[family][:50_000] + FAMILIES[family][-20:]  # far above every cache's key limit
    octets = len(text.encode("utf-8", "surrogatepass"))
    for name, op in OPERATIONS.items():  # warm up: imports, compiled patterns, small cache entries
        try:
            op(text[:1000])
        except IRIError:
            pass
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for name, op in OPERATIONS.items():
            tracemalloc.reset_peak()
            try:
                op(text)
            except IRIError:
                pass
            peak = tracemalloc.get_traced_memory()[1] - before
            assert peak < 100 * octets, (family, name, peak / octets)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 64_000, (family, kept)
