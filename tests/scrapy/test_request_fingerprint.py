"""The request fingerprinter: the ladder's identity, shared with Scrapy's HTTP cache."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.extensions.httpcache import FilesystemCacheStorage
from scrapy.http import HtmlResponse
from scrapy.utils.request import RequestFingerprinter

from scrapy_iri import Rung
from scrapy_iri.scrapy._identity import (
    FINGERPRINT_SIZE,
    merging_rung,
    pack_tag,
    url_forms,
)

ALIASES = [  # one resource, many spellings: one fingerprint at the scheme rung
    "http://xn--bcher-kva.example/katalog/",
    "HTTP://XN--BCHER-KVA.EXAMPLE:80/katalog/",
    "http://b%C3%BCcher.example/katalog/",
    "http://xn--bcher-kva.example/%6Batalog/",
    "http://xn--bcher-kva.example/a/../katalog/",
    "http://xn--bcher-kva.example/katalog/#frag",
]

APART = [  # pairs the specs keep apart: never one fingerprint below the protocol rung
    ("http://news.example/a?x=1&y=2", "http://news.example/a?y=2&x=1"),
    ("http://news.example/Page", "http://news.example/page"),
    ("http://news.example/files/a%2Fb", "http://news.example/files/a/b"),
    ("http://news.example/caf%E9", "http://news.example/caf%C3%A9"),
    ("http://news.example/edition", "https://news.example/edition"),
    ("http://xn--fa-hia.example/", "http://fass.example/"),
    ("http://news.example/", "http://www.news.example/"),
    ("http://news.example/p", "http://news.example/p/"),
]


@pytest.fixture
def fingerprinter(make_crawler):
    return make_crawler().request_fingerprinter


def test_aliases_share_one_fingerprint(fingerprinter):
    prints = {fingerprinter.fingerprint(Request(url)) for url in ALIASES}
    assert len(prints) == 1
    assert len(prints.pop()) == FINGERPRINT_SIZE == 20  # Scrapy's size


@pytest.mark.parametrize(("a", "b"), APART)
def test_pairs_the_specs_keep_apart_stay_apart(fingerprinter, a, b):
    assert fingerprinter.fingerprint(Request(a)) != fingerprinter.fingerprint(Request(b))


def test_method_and_body_are_part_of_the_identity(fingerprinter):
    get = fingerprinter.fingerprint(Request("http://a.example/"))
    post = fingerprinter.fingerprint(Request("http://a.example/", method="POST"))
    post_body = fingerprinter.fingerprint(Request("http://a.example/", method="POST", body=b"x"))
    assert len({get, post, post_body}) == 3


def test_fragments_count_with_keep_fragments(make_crawler):
    fingerprinter = make_crawler(IRI_KEEP_FRAGMENTS=True).request_fingerprinter
    a = fingerprinter.fingerprint(Request("http://a.example/#x"))
    assert a != fingerprinter.fingerprint(Request("http://a.example/#y"))
    assert a == fingerprinter.fingerprint(Request("HTTP://A.example:80/#x"))


def test_each_rung_merges_more(make_crawler):
    def same(rung, a, b):
        fp = make_crawler(IRI_RUNG=rung).request_fingerprinter
        return fp.fingerprint(Request(a)) == fp.fingerprint(Request(b))

    assert not same("string", "http://a.example/%7e", "http://a.example/~")
    assert same("syntax", "http://a.example/%7e", "http://a.example/~")
    assert not same("syntax", "http://a.example:80/", "http://a.example/")
    assert same("scheme", "http://a.example:80/", "http://a.example/")


def test_an_invalid_url_keeps_the_string_identity(fingerprinter):
    identity = fingerprinter.identity(Request("http://xn--zz.example/"))
    assert identity.rung is Rung.STRING and "A-label" in identity.error
    assert fingerprinter.fingerprint(Request("http://xn--zz.example/")) == identity.fingerprint


def test_identity_is_cached_per_request(fingerprinter):
    request = Request("http://a.example/")
    assert fingerprinter.identity(request) is fingerprinter.identity(request)


def test_compat_gives_scrapys_fingerprints_byte_for_byte(make_crawler):
    fingerprinter = make_crawler(IRI_COMPAT="w3lib").request_fingerprinter
    scrapy = RequestFingerprinter()
    for url in ALIASES + [a for pair in APART for a in pair]:
        assert fingerprinter.fingerprint(Request(url)) == scrapy.fingerprint(Request(url))
    assert isinstance(fingerprinter.fallback, RequestFingerprinter)


def test_tags_tell_the_lowest_rung_that_merges(make_crawler):
    def tag(url, rung):
        forms = url_forms(url, rung, keep_fragment=False, lenient=True)
        return pack_tag(forms, rung)

    first = tag("http://a.example/~x", Rung.SCHEME)
    assert merging_rung(first, tag("http://a.example/~x", Rung.SCHEME), Rung.SCHEME) is Rung.STRING
    assert merging_rung(first, tag("http://A.example/%7Ex", Rung.SCHEME), Rung.SCHEME) is Rung.SYNTAX
    assert merging_rung(first, tag("http://a.example:80/~x", Rung.SCHEME), Rung.SCHEME) is Rung.SCHEME
    assert merging_rung(0, 0, Rung.STRING) is Rung.STRING


def test_http_cache_finds_a_response_stored_under_an_alias(make_crawler, tmp_path):
    """Scrapy's HTTP cache keys on the crawler's fingerprinter: aliases hit the same entry."""
    crawler = make_crawler(HTTPCACHE_DIR=str(tmp_path), HTTPCACHE_EXPIRATION_SECS=0)
    spider = crawler.spidercls.from_crawler(crawler)
    storage = FilesystemCacheStorage(crawler.settings)
    storage.open_spider(spider)
    stored = Request("http://b%C3%BCcher.example/katalog/")
    storage.store_response(spider, stored, HtmlResponse(stored.url, body=b"<p>cached</p>", request=stored))
    hit = storage.retrieve_response(spider, Request("HTTP://XN--BCHER-KVA.EXAMPLE:80/%6Batalog/"))
    assert hit is not None and hit.body == b"<p>cached</p>"
    assert storage.retrieve_response(spider, Request("http://fass.example/")) is None


_STABLE_CHILD = """
import json, sys
from scrapy import Request
from scrapy.http import FormRequest
from scrapy.utils.test import get_crawler
out = {}
for rung in ("string", "syntax", "scheme", "protocol"):
    crawler = get_crawler(settings_dict={"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_RUNG": rung, "IRI_STORE": "memory:"})
    fp = crawler.request_fingerprinter
    requests = [Request("HTTP://B%C3%BCcher.example:80/%7Ex?b=2&a=1#f"), Request("http://faß.example/", method="HEAD"),
                FormRequest("http://a.example/f", formdata={"q": "1"}), Request("http://a.example/%zz")]
    out[rung] = [fp.fingerprint(r).hex() if isinstance(fp.fingerprint(r), bytes) else None for r in requests]
print(json.dumps(out))
"""


def test_fingerprints_are_20_bytes_and_the_same_in_every_process():
    """The HTTP cache and JOBDIR outlive a process: another process, another hash seed, the same bytes."""
    import json
    import os
    import subprocess
    import sys

    runs = []
    for seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", _STABLE_CHILD], capture_output=True, text=True, timeout=300,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert runs[0] == runs[1]
    for rung, fingerprints in runs[0].items():
        assert all(f is not None and len(bytes.fromhex(f)) == 20 for f in fingerprints), rung
        assert len(set(fingerprints)) == len(fingerprints), rung
