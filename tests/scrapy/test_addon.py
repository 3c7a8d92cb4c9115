"""The add-on: what it enables, what it keeps as fallbacks, what it rejects."""

from __future__ import annotations

import logging

import pytest
from scrapy.utils.misc import load_object

from scrapy_iri import Rung
from scrapy_iri.scrapy._dupefilter import IRIDupeFilter
from scrapy_iri.scrapy._fingerprint import IRIRequestFingerprinter
from scrapy_iri.scrapy._pipelines import CanonicalizeURLsPipeline
from scrapy_iri.scrapy._settings import DEFAULTS, IRISettings, IRISettingsError, store_uri


def test_addon_alone_enables_dupefilter_and_fingerprinter(make_crawler, make_dupefilter):
    crawler = make_crawler()
    assert load_object(crawler.settings["DUPEFILTER_CLASS"]) is IRIDupeFilter
    assert load_object(crawler.settings["REQUEST_FINGERPRINTER_CLASS"]) is IRIRequestFingerprinter
    assert isinstance(crawler.request_fingerprinter, IRIRequestFingerprinter)
    assert isinstance(make_dupefilter(), IRIDupeFilter)
    assert crawler.settings.getpriority("DUPEFILTER_CLASS") == 15  # "addon": users can override


def test_addon_keeps_the_replaced_classes_as_fallbacks(make_crawler):
    settings = make_crawler().settings
    assert settings["IRI_FALLBACK_DUPEFILTER_CLASS"] == "scrapy.dupefilters.RFPDupeFilter"
    assert settings["IRI_FALLBACK_REQUEST_FINGERPRINTER_CLASS"] == "scrapy.utils.request.RequestFingerprinter"


def test_a_fallback_the_user_set_is_left_alone(make_crawler):
    settings = make_crawler(IRI_FALLBACK_DUPEFILTER_CLASS="scrapy.dupefilters.BaseDupeFilter").settings
    assert settings["IRI_FALLBACK_DUPEFILTER_CLASS"] == "scrapy.dupefilters.BaseDupeFilter"


def test_project_settings_win_over_the_addon_with_a_warning(make_crawler, caplog):
    with caplog.at_level(logging.WARNING):
        crawler = make_crawler(DUPEFILTER_CLASS="scrapy.dupefilters.BaseDupeFilter")
    assert crawler.settings["DUPEFILTER_CLASS"] == "scrapy.dupefilters.BaseDupeFilter"
    assert "DUPEFILTER_CLASS" in caplog.text and "not used" in caplog.text


def test_our_own_class_set_by_the_user_is_not_its_own_fallback(make_crawler, caplog):
    with caplog.at_level(logging.WARNING):
        crawler = make_crawler(DUPEFILTER_CLASS="scrapy_iri.IRIDupeFilter")
    assert crawler.settings["IRI_FALLBACK_DUPEFILTER_CLASS"] is None
    assert "not used" not in caplog.text


def test_pipeline_is_enabled_only_with_url_fields(make_crawler):
    def pipelines(crawler):
        return {load_object(k): v for k, v in crawler.settings.getdict("ITEM_PIPELINES").items()}

    assert CanonicalizeURLsPipeline not in pipelines(make_crawler())
    crawler = make_crawler(IRI_URL_FIELDS=["url"], IRI_URL_PIPELINE_ORDER=123)
    assert pipelines(crawler)[CanonicalizeURLsPipeline] == 123


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("IRI_RUNG", "dns", "IRI_RUNG: unknown rung 'dns'"),
        ("IRI_URL_RUNG", "w3lib", "IRI_URL_RUNG: unknown rung"),
        ("IRI_COMPAT", "scrapy", "IRI_COMPAT: unknown mode 'scrapy'"),
        ("IRI_KEEP_FRAGMENTS", "maybe", "IRI_KEEP_FRAGMENTS"),
        ("IRI_STORE", "/tmp/store.db", "IRI_STORE: '/tmp/store.db' is not a store URI: for a SQLite file write 'sqlite:////tmp/store.db'"),
        ("IRI_URL_FIELDS", 42, "IRI_URL_FIELDS"),
    ],
)
def test_bad_values_stop_the_crawl_at_start(make_crawler, name, value, message):
    with pytest.raises(IRISettingsError, match=message):
        make_crawler(**{name: value})


def test_settings_are_read_with_their_defaults(make_crawler):
    assert IRISettings.from_settings(make_crawler(addon=False, rung=None).settings) == IRISettings(store="memory:")
    assert IRISettings().rung is Rung.parse(DEFAULTS["IRI_RUNG"]) is Rung.SCHEME
    config = IRISettings.from_settings(make_crawler(rung=None).settings)
    assert config.rung is Rung.PROTOCOL  # the add-on's default
    assert config.keep_fragments is False and config.compat is None
    custom = IRISettings.from_settings(
        make_crawler(
            IRI_RUNG="Syntax",
            IRI_KEEP_FRAGMENTS="True",
            IRI_URL_FIELDS="url, image_url",
            IRI_COMPAT="w3lib",
        ).settings
    )
    assert custom.rung is Rung.SYNTAX and custom.url_rung is Rung.SYNTAX
    assert custom.keep_fragments is True
    assert custom.url_fields == ("url", "image_url")
    assert custom.compat == "w3lib"


def test_store_uri_defaults_to_jobdir_else_the_data_directory(make_crawler, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert store_uri(make_crawler(JOBDIR=str(tmp_path / "job")).settings, "s") == (
        f"sqlite:///{(tmp_path / 'job' / 'iri-store.sqlite').resolve()}"
    )
    uri = store_uri(make_crawler().settings, "myspider")
    assert uri.startswith("sqlite:////") and uri.endswith("/.scrapy/iri/myspider.sqlite")
    assert store_uri(make_crawler(IRI_STORE="memory:").settings, "s") == "memory:"
