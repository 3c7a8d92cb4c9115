"""Requests that Scrapy's commands and components build: identities for them, never a crash or a drop."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.datatypes import SequenceExclude

from scrapy_iri.scrapy._identity import component_request, protocol_mergeable


@pytest.mark.parametrize(
    ("listed", "mergeable"),
    [
        (SequenceExclude(range(300, 400)), True),  # scrapy fetch and shell: every status but 3xx, redirects followed
        (SequenceExclude(range(400, 600)), False),  # every status but errors: redirects handled by the callback
        (range(200, 300), True),
        ([301], False),
        ((404, 500), True),
        (frozenset({308}), False),
    ],
)
def test_handle_httpstatus_list_may_be_any_container(listed, mergeable):
    """Scrapy asks ``status in handle_httpstatus_list``; the commands set a ``SequenceExclude``, which cannot be iterated."""
    assert protocol_mergeable(Request("http://a.example/", meta={"handle_httpstatus_list": listed})) is mergeable


def test_a_component_request_is_one_with_no_callback():
    assert component_request(Request("http://a.example/robots.txt", callback=NO_CALLBACK))
    assert component_request(Request("http://a.example/robots.txt", callback=NO_CALLBACK).replace(url="http://b.example/"))
    assert not component_request(Request("http://a.example/"))
