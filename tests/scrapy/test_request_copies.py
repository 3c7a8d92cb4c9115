"""Requests users copy and vary: a copy that differs from its original in what identity covers is another request.

``Request.replace`` copies ``meta``, and with it the identity the original
carries. The copy may be another request (another method, a body added or
removed, redirects handled by the spider): it must be filed on its own, as
Scrapy's fingerprinter files it. Copies that change nothing identity covers
stay duplicates.
"""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.http import FormRequest, JsonRequest
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from scrapy_iri import IRIDupeFilter

RUNGS = ["string", "syntax", "scheme", "protocol"]


class _Spider(Spider):
    name = "copies"


def _filter(rung: str, **settings: Any) -> tuple[IRIDupeFilter, Any]:
    crawler = get_crawler(
        _Spider, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_RUNG": rung, "IRI_STORE": "memory:", **settings}
    )
    return build_from_crawler(IRIDupeFilter, crawler), crawler.request_fingerprinter


@pytest.mark.parametrize("rung", RUNGS)
@pytest.mark.parametrize(
    "vary",
    [
        lambda r: r.replace(method="HEAD"),
        lambda r: r.replace(method="POST"),
        lambda r: r.replace(method="POST", body=b"a=1"),
        lambda r: r.replace(method="POST", body=b"a=1").replace(body=b"a=2"),
        lambda r: r.replace(method="PUT", body=b"").replace(method="DELETE"),
    ],
    ids=["head", "post-empty", "post-body", "post-other-body", "delete"],
)
def test_a_copy_with_another_method_or_body_is_another_request(rung: str, vary) -> None:
    df, fingerprinter = _filter(rung)
    original = Request("http://a.example/p")
    assert not df.request_seen(original)
    copy = vary(original)
    assert copy.meta is not original.meta
    assert fingerprinter.fingerprint(copy) != fingerprinter.fingerprint(original)
    assert not df.request_seen(copy)
    assert df.request_seen(vary(Request("http://a.example/p")))  # the same variation again: a duplicate


@pytest.mark.parametrize("rung", RUNGS)
def test_two_posts_to_one_url_with_different_bodies_stay_apart(rung: str) -> None:
    df, fingerprinter = _filter(rung)
    forms = [FormRequest("http://a.example/f", formdata={"q": q}) for q in ("1", "2", "1")]
    assert [df.request_seen(r) for r in forms] == [False, False, True]
    posted = JsonRequest("http://a.example/f", data={"q": "1"})
    assert not df.request_seen(posted)  # another body: JSON, not a form
    assert fingerprinter.fingerprint(forms[0]) == fingerprinter.fingerprint(forms[2])
    assert fingerprinter.fingerprint(forms[0]) != fingerprinter.fingerprint(forms[1])


@pytest.mark.parametrize("rung", RUNGS)
def test_a_copy_that_changes_nothing_identity_covers_is_a_duplicate(rung: str) -> None:
    df, _ = _filter(rung)
    original = Request("http://a.example/p", headers={"Accept": "text/html"})
    assert not df.request_seen(original)
    assert df.request_seen(original.replace(headers={"Accept": "*/*"}, priority=5, callback=print))
    assert df.request_seen(original.replace(url="HTTP://A.example/p") if rung not in ("string",) else original.copy())


@pytest.mark.parametrize("rung", RUNGS)
def test_replace_url_gets_the_new_urls_identity(rung: str) -> None:
    df, fingerprinter = _filter(rung)
    original = Request("http://a.example/p")
    assert not df.request_seen(original)
    moved = original.replace(url="http://a.example/q")
    assert fingerprinter.fingerprint(moved) == fingerprinter.fingerprint(Request("http://a.example/q"))
    assert not df.request_seen(moved)
    back = moved.replace(url="http://a.example/p")
    assert df.request_seen(back)


def test_redirect_handling_changed_in_a_copy_is_seen_by_the_protocol_rung() -> None:
    from scrapy_iri.scrapy._identity import META_IDENTITY

    df, fingerprinter = _filter("protocol")
    original = Request("http://a.example/p")
    fingerprinter.fingerprint(original)
    assert original.meta[META_IDENTITY].mergeable
    for meta in ({"dont_redirect": True}, {"handle_httpstatus_list": [301]}, {"handle_httpstatus_all": True}):
        copy = original.replace(meta={**original.meta, **meta})
        fingerprinter.fingerprint(copy)
        assert not copy.meta[META_IDENTITY].mergeable, meta
