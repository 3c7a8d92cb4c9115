"""CanonicalizeURLsPipeline: URL fields in canonical form, originals kept on request, bad values kept."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import scrapy
from scrapy.utils.misc import build_from_crawler

from scrapy_iri.scrapy._pipelines import CanonicalizeURLsPipeline


def pipeline(make_crawler, **settings):
    crawler = make_crawler(**settings)
    return build_from_crawler(CanonicalizeURLsPipeline, crawler), crawler.stats


def test_fields_are_canonicalized_in_place(make_crawler):
    pipe, stats = pipeline(make_crawler, IRI_URL_FIELDS=["url", "images"])
    item = {
        "url": "HTTP://BÜCHER.example:80/a/../%7Eb#frag",
        "images": ["http://b%C3%BCcher.example/x.png", "http://faß.example/y.png"],
        "title": "HTTP://NOT.A.URL.FIELD/",
    }
    assert pipe.process_item(item) is item
    assert item == {
        "url": "http://xn--bcher-kva.example/~b#frag",
        "images": ["http://xn--bcher-kva.example/x.png", "http://xn--fa-hia.example/y.png"],
        "title": "HTTP://NOT.A.URL.FIELD/",
    }
    assert stats.get_value("iri/pipeline/invalid") is None


def test_rung_and_fragments_are_configurable(make_crawler):
    pipe, _ = pipeline(make_crawler, IRI_URL_FIELDS="url", IRI_URL_RUNG="syntax", IRI_URL_KEEP_FRAGMENTS=False)
    item = {"url": "HTTP://a.example:80/%7e#x"}
    pipe.process_item(item)
    assert item["url"] == "http://a.example:80/~"


def test_originals_are_kept_when_asked(make_crawler):
    pipe, _ = pipeline(make_crawler, IRI_URL_FIELDS=["url", "other"], IRI_URL_KEEP_ORIGINAL=True)
    item = {"url": "HTTP://a.example/", "other": "http://a.example/"}
    pipe.process_item(item)
    assert item == {
        "url": "http://a.example/",
        "url_original": "HTTP://a.example/",
        "other": "http://a.example/",
        "other_original": "http://a.example/",
    }


class Product(scrapy.Item):
    url = scrapy.Field()


@dataclass
class Page:
    url: str
    url_original: str | None = None


def test_item_classes_work_and_a_missing_original_field_is_reported_once(make_crawler, caplog):
    pipe, _ = pipeline(make_crawler, IRI_URL_FIELDS=["url"], IRI_URL_KEEP_ORIGINAL=True)
    page = pipe.process_item(Page("HTTP://A.example/"))
    assert (page.url, page.url_original) == ("http://a.example/", "HTTP://A.example/")
    with caplog.at_level(logging.ERROR):
        first = pipe.process_item(Product(url="HTTP://A.example/"))
        pipe.process_item(Product(url="HTTP://B.example/"))
    assert first["url"] == "http://a.example/"
    assert caplog.text.count("has no field 'url_original'") == 1


def test_invalid_values_are_counted_logged_and_kept(make_crawler, caplog):
    pipe, stats = pipeline(make_crawler, IRI_URL_FIELDS=["url", "links"])
    item = {"url": "http://☃.example/", "links": ["http://ok.example", 42, "not a url"]}
    with caplog.at_level(logging.WARNING):
        assert pipe.process_item(item) is item
    assert item == {"url": "http://☃.example/", "links": ["http://ok.example/", 42, "not a url"]}
    assert stats.get_value("iri/pipeline/invalid") == 3
    assert caplog.text.count("is not a valid IRI") == 3


def test_strict_mode_rejects_what_lenient_mode_repairs(make_crawler):
    lenient, _ = pipeline(make_crawler, IRI_URL_FIELDS=["url"])
    strict, stats = pipeline(make_crawler, IRI_URL_FIELDS=["url"], IRI_LENIENT=False)
    assert lenient.process_item({"url": " http://a.example/a b "}) == {"url": "http://a.example/a%20b"}
    assert strict.process_item({"url": " http://a.example/a b "}) == {"url": " http://a.example/a b "}
    assert stats.get_value("iri/pipeline/invalid") == 1


def test_no_fields_no_work(make_crawler):
    pipe, _ = pipeline(make_crawler)
    item = {"url": "HTTP://A.example/"}
    assert pipe.process_item(item) == {"url": "HTTP://A.example/"}
