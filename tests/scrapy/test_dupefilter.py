"""The dupefilter: rung statistics, dont_filter, JOBDIR, logging, invalid URLs, compat."""

from __future__ import annotations

import logging

import pytest
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


def test_log_names_the_rung_first_duplicate_only_by_default(make_dupefilter, caplog):
    df = make_dupefilter()
    with caplog.at_level(logging.DEBUG, logger="scrapy_iri"):
        filtered(df, ["http://a.example/", "http://A.example/", "http://a.example:80/"])
    messages = [r.getMessage() for r in caplog.records if "Filtered duplicate" in r.getMessage()]
    assert len(messages) == 1
    assert "(syntax rung)" in messages[0] and "no more duplicates" in messages[0]


def test_dupefilter_debug_logs_every_duplicate_with_its_rung(make_dupefilter, caplog):
    df = make_dupefilter(DUPEFILTER_DEBUG=True)
    with caplog.at_level(logging.DEBUG, logger="scrapy_iri"):
        filtered(df, ["http://a.example/", "http://A.example/", "http://a.example:80/"])
    messages = [r.getMessage() for r in caplog.records if "Filtered duplicate" in r.getMessage()]
    assert len(messages) == 2
    assert "(syntax rung)" in messages[0] and "(scheme rung)" in messages[1]
    assert "referer" in messages[1]


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
    assert (tmp_path / "job" / SEEN_FILE).stat().st_size % RECORD_SIZE != 0  # header + 3 records


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


def test_a_users_fingerprinter_and_the_ladder_must_both_agree(make_dupefilter):
    df = make_dupefilter(REQUEST_FINGERPRINTER_CLASS=f"{__name__}.HeaderFingerprinter")
    assert isinstance(df, IRIDupeFilter) and df.outer_fingerprinter is not None
    seen = [
        df.request_seen(request("http://a.example/x", headers={"X-Variant": "1"})),
        df.request_seen(request("http://a.example/x", headers={"X-Variant": "2"})),  # theirs differs
        df.request_seen(request("http://a.example/x?", headers={"X-Variant": "1"})),  # ours differs
        df.request_seen(request("http://A.example/x", headers={"X-Variant": "1"})),
    ]
    assert seen == [False, False, False, False]  # the last: theirs is verbatim, so the case counts
    assert df.request_seen(request("http://a.example/x", headers={"X-Variant": "2"}))


def test_protocol_rung_counts_merges_the_store_learned(make_dupefilter):
    from scrapy_iri.scrapy._resources import crawler_store

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
