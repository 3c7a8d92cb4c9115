"""Where scrapy-iri agrees with Scrapy's canonicalization (w3lib.url.canonicalize_url), and where not.

Every case of ../shared/corpora/peers/w3lib_canonicalize_url.json must have a
verdict below; a new case fails the test until someone decides. ``AGREE``
cases assert w3lib's expected value; the others assert the value the specs
give and that it differs from w3lib's.
"""

from __future__ import annotations

import json

import pytest
from corpora import corpus_params

from scrapy_iri import IRIError, canonicalize

AGREE = "agree"
AGREE_LENIENT = "agree after 3987bis sec. 7 preprocessing (lenient=True)"
ORDER = "query parameter order is significant (3987bis 5.3: never merged below protocol)"
EMPTY = "empty and blank query parts are significant (5.3.3: delimiters with empty components stay)"
RESERVED = "a reserved character and its escape differ (RFC 3986 2.2, 6.2.2.2)"
PLUS = "'+' and '%20' in a query are different URIs (RFC 3986 6.2.2.2); w3lib merges both to '+'"
CHARSET = "scrapy-iri maps queries with UTF-8 (3987bis 3.3); document-charset queries (3.5) are not supported"
RELATIVE = "a relative reference has no identity until resolved (3987bis 5.1): IRIError"
BYTES = "scrapy-iri takes str, not bytes: TypeError"
IDN = "invalid host names: scrapy-iri maps what IDNA2008 accepts and rejects the rest"

# (input, options) -> (verdict, our canonical form when it differs, lenient?)
VERDICTS: dict[tuple[str, str], tuple[str, object]] = {}


def verdict(input_: object, options: dict, why: str, ours: object = None) -> None:
    VERDICTS[(json.dumps(input_, sort_keys=True), json.dumps(options, sort_keys=True))] = (why, ours)


E = "http://www.example.com"
for text in [
    f"{E}/", f"{E}", f"{E}/do?a=1&b=2&c=3", "http://www.example.com:8888/do?a=1&b=2&c=3",
    "http://www.example.com:/do?a=1&b=2&c=3", f"{E}/résumé", f"{E}/r%c3%a9sum%c3%a9", f"{E}/a%a3do",
    f"{E}/a%a3do?q=r%c3%a9sum%c3%a9", f"{E}/a%a3do?q=r%e9sum%e9", f"{E}/do?k=b%a3", f"{E}/do?k=r%c3%a9sum%c3%a9",
    "http://user:pass@www.example.com:81/do?now=1", "http://user:pass@www.example.com/do?a=1#frag",
    "http://[::1]/do?a=1#frag",
    "http://www.simplybedrooms.com/White-Bedroom-Furniture/Bedroom-Mirror:-Josephine-Cheval-Mirror.html",
    f"{E}/caf%E9-con-leche.htm", "http://www.EXAMPLE.com/", "sftp://UsEr:PaSsWoRd@www.EXAMPLE.com/",
    "http://www.bücher.de?q=bücher", "http://www.bücher.de:8080/?q=bücher", "http://user@例え.jp/path",
    "http://user:pass@例え.jp:8080/p", "http://foo.com/AC%2FDC+rocks%3f/?yeah=1", "http://foo.com/AC%2FDC/",
    f"{E}/dir;x/a%7Eb", f"{E}/path/to/%23/foo/bar", f"{E}/path/to/%23/foo/bar#frag",
    f"{E}/path/to/%23/foo/bar?url=http%3A%2F%2Fwww.example.com%2Fpath%2Fto%2F%23%2Fbar%2Ffoo",
    f"{E}/path/to/%23/foo/bar?url=http%3A%2F%2Fwww.example.com%2F%2Fpath%2Fto%2F%23%2Fbar%2Ffoo#frag",
]:
    verdict(text, {}, AGREE)
for text in ["http://user:pass@www.example.com/do?a=1#frag", "http://[::1]/do?a=1#frag", f"{E}/path/to/%23/foo/bar#frag",
             f"{E}/path/to/%23/foo/bar?url=http%3A%2F%2Fwww.example.com%2F%2Fpath%2Fto%2F%23%2Fbar%2Ffoo#frag"]:
    verdict(text, {"keep_fragments": True}, AGREE)
verdict(f"{E}/résumé?q=résumé", {}, AGREE)
for text in [f"{E}/résumé?q=résumé", f"{E}/caf%e9-con-leche.htm", f"{E}/a%a3do?q=r%c3%a9sum%c3%a9"]:
    for options in ({"input_wrapper": "urlparse"}, {"input_wrapper": "parse_url"}):
        verdict(text, options, AGREE)
for text in [f"{E}/path;params?x=1#frag", f"{E}/a;b/c;params?x=1", f"{E}/a;b/c", f"{E}/abc/def?x=1"]:
    verdict(text, {"input_wrapper": "parse_url"}, AGREE)
# With latin1 as the w3lib query encoding, characters outside latin-1 still go as UTF-8.
verdict(f"{E}/résumé?currency=€", {"encoding": "latin1"}, AGREE)
verdict(f"{E}/résumé?country=Россия", {"encoding": "latin1"}, AGREE)

for text in ["http://exa\tmple.com/a\r\nb?q=a\tb", f"{E}/a do?a=1", f"{E}/a %20do?a=1", f"{E}/a do£.html?a=1",
             " https://example.com", "https://example.com ", " https://example.com "]:
    verdict(text, {}, AGREE_LENIENT)

verdict(f"{E}/do?c=1&b=2&a=3", {}, ORDER, f"{E}/do?c=1&b=2&a=3")
verdict(f"{E}/do?c=1;b=2;a=3", {"query_separator": ";"}, ORDER, f"{E}/do?c=1;b=2;a=3")
verdict(f"{E}/do?c=3&b=5&b=2&a=50", {}, ORDER, f"{E}/do?c=3&b=5&b=2&a=50")
verdict(f"{E}/do?price=£500&a=5&z=3", {}, ORDER, f"{E}/do?price=%C2%A3500&a=5&z=3")
verdict("http://はじめよう.みんな/?query=サ&maxResults=5", {}, ORDER,
        "http://xn--p8j9a0d9c9a.xn--q9jyb4c/?query=%E3%82%B5&maxResults=5")
verdict(f"{E}/do?&a=1", {}, EMPTY, f"{E}/do?&a=1")
verdict(f"{E}/do?b=&a=2", {"keep_blank_values": False}, EMPTY, f"{E}/do?b=&a=2")
verdict(f"{E}/do?b=&a=2", {}, EMPTY, f"{E}/do?b=&a=2")
verdict(f"{E}/do?b=&c&a=2", {"keep_blank_values": False}, EMPTY, f"{E}/do?b=&c&a=2")
verdict(f"{E}/do?b=&c&a=2", {}, EMPTY, f"{E}/do?b=&c&a=2")
verdict(f"{E}/do?1750,4", {}, RESERVED, f"{E}/do?1750,4")
verdict("https://example.com/a%23b%2cc#bash", {}, RESERVED, "https://example.com/a%23b%2Cc")
verdict(f"{E}/do?q=a space&a=1", {}, PLUS, ("lenient", f"{E}/do?q=a%20space&a=1"))
verdict(f"{E}/do?q=a+space&a=1", {}, PLUS, f"{E}/do?q=a+space&a=1")
verdict(f"{E}/do?q=a%20space&a=1", {}, PLUS, f"{E}/do?q=a%20space&a=1")
verdict(f"{E}/résumé?q=résumé", {"encoding": "latin1"}, CHARSET, f"{E}/r%C3%A9sum%C3%A9?q=r%C3%A9sum%C3%A9")
verdict(f"{E}/résumé?country=Россия", {"encoding": "cp1251"}, CHARSET,
        f"{E}/r%C3%A9sum%C3%A9?country=%D0%A0%D0%BE%D1%81%D1%81%D0%B8%D1%8F")
for text in ["a#frag", "a?b=1#frag", "?b=1"]:
    verdict(text, {}, RELATIVE, IRIError)
verdict("a#frag", {"keep_fragments": True}, RELATIVE, IRIError)
verdict("http://.éxamplé.com/résumé?q=résumé", {}, IDN, "http://.xn--xampl-9raf.com/r%C3%A9sum%C3%A9?q=r%C3%A9sum%C3%A9")
verdict("http://www." + "éxamplé" * 11 + ".com/résumé?q=résumé", {}, IDN, IRIError)  # a 77-letter label


def _key(case: dict) -> tuple[str, str]:
    return json.dumps(case["input"], sort_keys=True), json.dumps(case["options"], sort_keys=True)


def _our_form(text: str, case: dict, lenient: bool = False) -> str:
    return canonicalize(text, "scheme", keep_fragment=case["options"].get("keep_fragments", False), lenient=lenient)


CASES = corpus_params("peers/w3lib_canonicalize_url.json", lambda d: d["cases"], ids=lambda c: f"line{c['line']}")


@pytest.mark.parametrize("case", CASES)
def test_w3lib_case(case):
    if isinstance(case["input"], dict):  # {"$bytes_hex": ...}
        with pytest.raises(TypeError):
            canonicalize(bytes.fromhex(case["input"]["$bytes_hex"]))  # type: ignore[arg-type]
        return
    assert _key(case) in VERDICTS, f"no verdict for {case['input']!r} {case['options']}: decide and add one"
    why, ours = VERDICTS[_key(case)]
    text = case["input"]
    if why == AGREE:
        assert _our_form(text, case) == case["expected"]
    elif why == AGREE_LENIENT:
        with pytest.raises(IRIError):
            _our_form(text, case)
        assert _our_form(text, case, lenient=True) == case["expected"]
    elif ours is IRIError:
        with pytest.raises(IRIError):
            _our_form(text, case, lenient=True)
    else:
        lenient = isinstance(ours, tuple)
        expected = ours[1] if lenient else ours
        assert _our_form(text, case, lenient=lenient) == expected
        assert expected != case["expected"], f"verdict says we differ from w3lib ({why})"


def test_every_verdict_is_used():
    cases = [c.values[0] for c in CASES if c.values[0] is not None]
    if not cases:
        pytest.skip("corpus absent")
    keys = {_key(c) for c in cases}
    assert set(VERDICTS) <= keys
