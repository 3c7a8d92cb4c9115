"""The dupefilter: rung statistics, dont_filter, JOBDIR, logging, invalid URLs, compat."""

from __future__ import annotations

import hashlib
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy import Request
from scrapy.dupefilters import RFPDupeFilter
from scrapy.utils.request import RequestFingerprinter

from scrapy_iri.scrapy._dupefilter import SEEN_FILE, IRIDupeFilter
from scrapy_iri.scrapy._seen import RECORD_SIZE
from scrapy_iri.scrapy._settings import IRISettingsError


def request(url, **kwargs):
    """A request for exactly ``url`` (``Request`` would lowercase hosts and drop an empty ``?``)."""
    return Request(url, meta={"verbatim_url": True}, **kwargs)


def filtered(df, urls, make=request):
    """Feed ``urls`` as the scheduler does; return the ones filtered."""
    spider = df.crawler.spidercls.from_crawler(df.crawler)
    out = []
    for url in urls:
        req = make(url)
        if df.request_seen(req):
            df.log(req, spider)
            out.append(url)
    return out


def stats(df):
    return {k: v for k, v in df.crawler.stats.get_stats().items() if k.startswith(("iri/", "dupefilter/"))}


def test_duplicates_count_under_the_lowest_rung_that_merged_them(make_dupefilter):
    df = make_dupefilter()
    dupes = filtered(
        df,
        [
            "http://a.example/~x",
            "http://a.example/~x",  # string
            "http://A.example/%7Ex",  # syntax
            "http://a.example:80/~x",  # scheme
            "http://b%C3%BCcher.example/",
            "http://xn--bcher-kva.example/",  # scheme: the host is decoded and IDNA-mapped
            "http://a.example/~x?",  # an empty query is another URL
        ],
    )
    assert dupes == [
        "http://a.example/~x",
        "http://A.example/%7Ex",
        "http://a.example:80/~x",
        "http://xn--bcher-kva.example/",
    ]
    assert stats(df) == {
        "dupefilter/filtered": 4,
        "iri/filtered/string": 1,
        "iri/filtered/syntax": 1,
        "iri/filtered/scheme": 2,
    }


def test_the_rung_is_relative_to_the_request_that_was_kept(make_dupefilter):
    df = make_dupefilter()
    filtered(df, ["http://a.example/%7Ex", "http://a.example/~x", "http://a.example/~x"])
    # the second "~x" is the same string as a filtered request, but what it
    # merges with is the kept "%7Ex": the syntax rung did it
    assert stats(df)["iri/filtered/syntax"] == 2


def test_at_the_syntax_rung_default_ports_are_kept_apart(make_dupefilter):
    df = make_dupefilter(IRI_RUNG="syntax")
    assert filtered(df, ["http://a.example/", "http://a.example:80/", "http://A.EXAMPLE/"]) == ["http://A.EXAMPLE/"]
    assert stats(df)["iri/filtered/syntax"] == 1


def test_invalid_urls_are_compared_as_given_counted_and_never_dropped(make_dupefilter, caplog):
    df = make_dupefilter()
    with caplog.at_level(logging.DEBUG, logger="scrapy_iri"):
        assert filtered(df, ["http://xn--zz.example/", "http://XN--ZZ.example/", "http://xn--zz.example/"]) == [
            "http://xn--zz.example/"
        ]
    assert stats(df)["iri/invalid_url"] == 3
    assert stats(df)["iri/filtered/string"] == 1
    # the dupefilter's own warnings (Scrapy's get_crawler picks the aiohttp handler, which the add-on reports)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and r.name.endswith("_dupefilter")]
    assert len(warnings) == 1 and "not a valid IRI" in warnings[0].getMessage()


SCRAPY_FIRST = (
    "Filtered duplicate request: <GET http://A.example/> - no more duplicates will be shown"
    " (see DUPEFILTER_DEBUG to show all duplicates)"
)


def test_duplicates_are_logged_as_scrapy_logs_them_the_rung_is_in_the_stats(make_dupefilter, caplog):
    df = make_dupefilter()
    with caplog.at_level(logging.DEBUG):
        filtered(df, ["http://a.example/", "http://A.example/", "http://a.example:80/"])
    records = [r for r in caplog.records if "Filtered duplicate" in r.getMessage()]
    assert [(r.name, r.levelno, r.getMessage()) for r in records] == [("scrapy.dupefilters", logging.DEBUG, SCRAPY_FIRST)]
    assert stats(df) == {"dupefilter/filtered": 2, "iri/filtered/syntax": 1, "iri/filtered/scheme": 1}


def test_dupefilter_debug_logs_every_duplicate_with_its_referer(make_dupefilter, caplog):
    df = make_dupefilter(DUPEFILTER_DEBUG=True)
    with caplog.at_level(logging.DEBUG):
        filtered(df, ["http://a.example/", "http://A.example/", "http://a.example:80/"])
    messages = [r.getMessage() for r in caplog.records if r.name == "scrapy.dupefilters"]
    assert messages == [
        "Filtered duplicate request: <GET http://A.example/> (referer: None)",
        "Filtered duplicate request: <GET http://a.example:80/> (referer: None)",
    ]


def test_no_len_so_scrapy_redis_style_truth_tests_work(make_dupefilter):
    df = make_dupefilter()
    assert not hasattr(df, "__len__") and bool(df)


def test_jobdir_persists_and_resumes_the_seen_set(make_dupefilter, tmp_path):
    jobdir = str(tmp_path / "job")
    df = make_dupefilter(JOBDIR=jobdir)
    filtered(df, ["http://a.example/1", "http://a.example/2", "http://a.example/2"])
    df.close("shutdown")
    resumed = make_dupefilter(JOBDIR=jobdir)
    assert filtered(resumed, ["http://A.example:80/1", "http://a.example/%32", "http://a.example/3"]) == [
        "http://A.example:80/1",
        "http://a.example/%32",
    ]
    assert stats(resumed)["iri/filtered/scheme"] == 1  # the tags survive the restart
    assert stats(resumed)["iri/filtered/syntax"] == 1
    resumed.close("finished")
    data = (tmp_path / "job" / SEEN_FILE).read_bytes()
    header_size = int.from_bytes(data[:2], "big")
    assert data[2:].startswith(b"scrapy-iri seen v2 rung=scheme")
    assert len(data) == 2 + header_size + 3 * (2 + RECORD_SIZE)  # Scrapy's framing: one header, 3 records


def test_jobdir_with_a_record_cut_short_resumes(make_dupefilter, tmp_path):
    jobdir = tmp_path / "job"
    df = make_dupefilter(JOBDIR=str(jobdir))
    filtered(df, ["http://a.example/1", "http://a.example/2"])
    df.close("shutdown")
    path = jobdir / SEEN_FILE
    path.write_bytes(path.read_bytes()[:-3])  # unclean shutdown mid-record
    resumed = make_dupefilter(JOBDIR=str(jobdir))
    assert filtered(resumed, ["http://a.example/1", "http://a.example/2", "http://a.example/2"]) == [
        "http://a.example/1",
        "http://a.example/2",
    ]
    resumed.close("finished")
    again = make_dupefilter(JOBDIR=str(jobdir))
    assert filtered(again, ["http://a.example/1", "http://a.example/2"]) == [
        "http://a.example/1",
        "http://a.example/2",
    ]
    again.close("finished")


def test_jobdir_written_with_another_rung_is_refused(make_dupefilter, tmp_path):
    jobdir = str(tmp_path / "job")
    make_dupefilter(JOBDIR=jobdir).close("shutdown")
    with pytest.raises(IRISettingsError, match="resume the job with the same IRI_"):
        make_dupefilter(JOBDIR=jobdir, IRI_RUNG="syntax")


def test_compat_delegates_to_scrapys_filter(make_dupefilter, tmp_path):
    df = make_dupefilter(IRI_COMPAT="w3lib", JOBDIR=str(tmp_path))
    assert isinstance(df.fallback, RFPDupeFilter)
    assert isinstance(df.fallback.fingerprinter.fallback, RequestFingerprinter)
    # Scrapy's identity: the query order merges, the default port does not
    urls = ["http://a.example/?a=1&b=2", "http://a.example/?b=2&a=1", "http://a.example:80/?a=1&b=2"]
    assert filtered(df, urls, make=Request) == ["http://a.example/?b=2&a=1"]
    df.close("finished")
    assert (tmp_path / "requests.seen").exists()  # Scrapy's own JOBDIR file
    assert df.crawler.stats.get_value("dupefilter/filtered") == 1


class HeaderFingerprinter(RequestFingerprinter):
    """A fingerprinter set above the add-on that adds a header to the identity."""

    def fingerprint(self, request):
        return super().fingerprint(request) + request.headers.get("X-Variant", b"")


class CaseFoldingFingerprinter:
    """A project's fingerprinter that merges URLs differing in case only (Scrapy's own test has one)."""

    def fingerprint(self, request):
        return hashlib.sha1(request.url.lower().encode()).digest()


def test_a_users_fingerprinter_decides_on_the_canonical_request(make_dupefilter):
    df = make_dupefilter(REQUEST_FINGERPRINTER_CLASS=f"{__name__}.HeaderFingerprinter")
    assert isinstance(df, IRIDupeFilter) and df.user_fingerprinter is not None
    seen = [
        df.request_seen(request("http://a.example/x", headers={"X-Variant": "1"})),
        df.request_seen(request("http://a.example/x", headers={"X-Variant": "2"})),  # theirs keeps it apart
        df.request_seen(request("http://a.example/x?", headers={"X-Variant": "1"})),  # the ladder keeps it apart
        df.request_seen(request("http://A.example:80/x", headers={"X-Variant": "1"})),  # the ladder merges it
    ]
    assert seen == [False, False, False, True]
    assert df.request_seen(request("http://a.example/x", headers={"X-Variant": "2"}))


def test_a_users_fingerprinter_keeps_its_power_to_merge(make_dupefilter):
    df = make_dupefilter(REQUEST_FINGERPRINTER_CLASS=f"{__name__}.CaseFoldingFingerprinter")
    assert df.fingerprinter is df.crawler.request_fingerprinter  # as Scrapy's RFPDupeFilter holds it
    urls = ["http://a.example/index.html", "http://a.example/INDEX.html", "http://A.EXAMPLE:80/Index.html", "http://a.example/other"]
    assert filtered(df, urls) == ["http://a.example/INDEX.html", "http://A.EXAMPLE:80/Index.html"]
    assert stats(df) == {"dupefilter/filtered": 2, "iri/filtered/fingerprinter": 2}


def test_a_subclass_request_fingerprint_decides_with_scrapys_warning(make_dupefilter):
    from scrapy.exceptions import ScrapyDeprecationWarning
    from scrapy.utils.misc import build_from_crawler

    class Legacy(IRIDupeFilter):
        def request_fingerprint(self, request):
            return request.url.lower()  # not even hex: it is hashed into a key, never trusted as one

    df = make_dupefilter()
    with pytest.warns(ScrapyDeprecationWarning, match=r"Overriding RFPDupeFilter\.request_fingerprint\(\) is deprecated"):
        legacy = build_from_crawler(Legacy, df.crawler)
    assert not legacy.request_seen(Request("http://a.example/index.html"))
    assert legacy.request_seen(Request("http://a.example/INDEX.html"))
    assert not legacy.request_seen(Request("http://a.example/index.htm"))  # no prefix of the URL decides


def test_fingerprints_and_request_fingerprint_agree(make_dupefilter):
    from scrapy.exceptions import ScrapyDeprecationWarning

    df = make_dupefilter()
    r = request("http://a.example/x")
    df.request_seen(r)
    with pytest.warns(ScrapyDeprecationWarning, match="fingerprints is deprecated"):
        assert df.fingerprints == {df.request_fingerprint(r)} == {df.request_fingerprint(request("http://A.example:80/x"))}


class FakeRedis:
    """What scrapy-redis's filter needs of a Redis client (its own tests use such a double)."""

    def __init__(self):
        self.sets = {}

    def sadd(self, key, member):
        members = self.sets.setdefault(key, set())
        added = member not in members
        members.add(member)
        return int(added)

    def delete(self, key):
        self.sets.pop(key, None)

    def smembers(self, key):
        return set(self.sets.get(key, ()))


def test_scrapy_redis_constructor_server_key_debug():
    server = FakeRedis()
    df = IRIDupeFilter(server, "spider:dupefilter", debug=True)
    assert (df.server, df.key, df.debug) == (server, "spider:dupefilter", True)
    assert not df.request_seen(Request("http://a.example/x"))
    assert df.request_seen(Request("http://A.example:80/x"))
    assert not df.request_seen(Request("http://a.example/x", method="POST"))
    assert server.sets["spider:dupefilter"] == {df.request_fingerprint(Request("http://a.example/x")), df.request_fingerprint(Request("http://a.example/x", method="POST"))}
    df.close()
    assert "spider:dupefilter" not in server.sets  # as scrapy-redis's filter: close clears
    positional = IRIDupeFilter(server, "k")
    assert positional.key == "k" and positional.debug is False


def test_a_crawler_given_to_the_constructor_is_refused_with_the_way_to_build_it(make_crawler):
    with pytest.raises(TypeError, match=r"from_crawler\(crawler\)"):
        IRIDupeFilter(make_crawler())


def test_scrapy_redis_from_settings(redis_url):
    from scrapy.settings import Settings

    df = IRIDupeFilter.from_settings(Settings({"REDIS_URL": redis_url, "DUPEFILTER_DEBUG": True, "IRI_RUNG": "protocol"}))
    assert df.key.startswith("dupefilter:") and df.debug
    assert not df.request_seen(Request("http://a.example/x"))
    assert df.request_seen(Request("http://a.example:80/x"))
    assert df.server.scard(df.key) == 1
    df.clear()
    assert df.server.exists(df.key) == 0


def test_a_job_scrapy_started_resumes_with_the_drop_in(make_dupefilter, tmp_path):
    from scrapy.utils.misc import build_from_crawler
    from scrapy.utils.test import get_crawler

    jobdir = str(tmp_path / "job")
    scrapy_df = build_from_crawler(RFPDupeFilter, get_crawler(settings_dict={"JOBDIR": jobdir}))
    for url in ("http://a.example/1", "http://a.example/2?b=1&a=2"):
        assert not scrapy_df.request_seen(Request(url))
    scrapy_df.close("shutdown")
    df = make_dupefilter(JOBDIR=jobdir)
    assert filtered(df, ["http://a.example/1", "http://a.example/2?b=1&a=2", "http://a.example/3", "http://a.example/3"], make=Request) == [
        "http://a.example/1",
        "http://a.example/2?b=1&a=2",
        "http://a.example/3",
    ]
    df.close("shutdown")
    again = make_dupefilter(JOBDIR=jobdir)  # the same file, now with the drop-in's records after Scrapy's
    assert filtered(again, ["http://a.example/1", "http://a.example/3", "http://a.example/4"], make=Request) == [
        "http://a.example/1",
        "http://a.example/3",
    ]
    again.close("finished")


def test_protocol_rung_counts_merges_the_store_learned(make_dupefilter):
    from scrapy_iri.scrapy._crawl import crawler_store

    df = make_dupefilter(rung=None, IRI_STORE="memory:")  # the add-on's default: protocol
    store = crawler_store(df.crawler)
    store.record_redirect("http://shop.example/old", 301, "http://shop.example/new")
    assert filtered(df, ["http://shop.example/new", "http://SHOP.example/old", "http://shop.example/new"]) == [
        "http://SHOP.example/old",
        "http://shop.example/new",
    ]
    assert stats(df) == {"dupefilter/filtered": 2, "iri/filtered/protocol": 1, "iri/filtered/string": 1}


def test_verbatim_requests_are_not_preprocessed_leniently(make_dupefilter):
    # Scrapy sends a verbatim URL as written: '\\' is not '/' on the wire
    df = make_dupefilter()
    assert not df.request_seen(Request("http://a.example/b/c"))
    assert not df.request_seen(request("http://a.example/b\\c"))
    assert df.crawler.stats.get_value("iri/invalid_url") == 1  # compared as given


def test_an_absurd_port_does_not_crash_the_filter(make_dupefilter):
    df = make_dupefilter()
    url = "http://a.example:" + "1" * 5000 + "/"
    assert not df.request_seen(request(url))
    assert df.request_seen(request(url))


SPELLINGS = st.sampled_from(["http://a.example", "HTTP://A.EXAMPLE", "http://a.example:80", "http://b.example"])
PATHS = st.sampled_from(["/Index.html", "/index.html", "/%7Eu/", "/~u/", "/x?b=1&a=2", "/x?a=2&b=1", "/e?", "/e"])


@given(st.lists(st.tuples(SPELLINGS, PATHS), min_size=1, max_size=30))
@settings(max_examples=60, deadline=None)
def test_duplicate_exactly_when_the_users_fingerprint_of_the_canonical_url_was_seen(pairs):
    from scrapy.utils.test import get_crawler
    from scrapy.utils.misc import build_from_crawler
    from scrapy.core.scheduler import Scheduler

    from scrapy_iri import canonicalize

    crawler = get_crawler(settings_dict={
        "ADDONS": {"scrapy_iri.Addon": 0},
        "IRI_RUNG": "scheme",
        "REQUEST_FINGERPRINTER_CLASS": f"{__name__}.CaseFoldingFingerprinter",
    })
    df = build_from_crawler(Scheduler, crawler).df
    seen: set[str] = set()
    for host, path in pairs:
        url = host + path
        expected_key = canonicalize(url, "scheme", keep_fragment=False).lower()
        assert df.request_seen(request(url)) == (expected_key in seen), url
        seen.add(expected_key)
