"""The protocol rung's settings: read once, validated at start, one learning policy from the first use of the store."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from scrapy_iri.scrapy._redirects import RedirectLearningMiddleware
from scrapy_iri.scrapy._settings import learning_policy
from scrapy_iri.scrapy._crawl import crawler_store
from scrapy_iri.scrapy._settings import DEFAULTS, IRISettings, IRISettingsError
from scrapy_iri.store import LearningPolicy


class ProtocolSpider(Spider):
    name = "protocol-settings"


def crawler(**settings: Any) -> Crawler:
    """A crawler with the add-on (protocol rung) and an in-memory store."""
    return get_crawler(ProtocolSpider, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_STORE": "memory:", **settings})


def test_the_defaults() -> None:
    config = IRISettings.from_settings(Settings())
    assert config.learning_policy() == LearningPolicy()
    assert (config.verify_share, config.rewrite) == (DEFAULTS["IRI_VERIFY_SHARE"], DEFAULTS["IRI_REWRITE"])
    assert LearningPolicy().min_observations == DEFAULTS["IRI_RULE_MIN_OBSERVATIONS"] == 3
    assert LearningPolicy().rule_ttl == DEFAULTS["IRI_RULE_TTL"]
    assert LearningPolicy().alias_ttl == DEFAULTS["IRI_ALIAS_TTL"] == 7 * 86400
    assert LearningPolicy().sink_fanin == DEFAULTS["IRI_SINK_FANIN"]
    assert LearningPolicy().max_chain == DEFAULTS["IRI_MAX_ALIAS_CHAIN"]
    assert LearningPolicy().cross_site_aliases is DEFAULTS["IRI_CROSS_SITE_ALIASES"]


def test_values_as_settings_files_and_the_command_line_give_them() -> None:
    settings = Settings(
        {
            "IRI_RULE_MIN_OBSERVATIONS": "5",
            "IRI_RULE_TTL": "3600.5",
            "IRI_VERIFY_SHARE": "0",
            "IRI_SINK_FANIN": 7.0,
            "IRI_MAX_ALIAS_CHAIN": 10,
            "IRI_CROSS_SITE_ALIASES": "True",
            "IRI_REWRITE": "0",
        }
    )
    config = IRISettings.from_settings(settings)
    assert learning_policy(settings) == LearningPolicy(
        min_observations=5, rule_ttl=3600.5, sink_fanin=7, max_chain=10, cross_site_aliases=True
    )
    assert config.verify_share == 0.0 and config.rewrite is False


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("IRI_RULE_MIN_OBSERVATIONS", 0, "IRI_RULE_MIN_OBSERVATIONS must be at least 1, got 0"),
        ("IRI_RULE_MIN_OBSERVATIONS", "three", "IRI_RULE_MIN_OBSERVATIONS: expected a whole number, got 'three'"),
        ("IRI_RULE_MIN_OBSERVATIONS", 2.5, "IRI_RULE_MIN_OBSERVATIONS: expected a whole number"),
        ("IRI_RULE_MIN_OBSERVATIONS", True, "IRI_RULE_MIN_OBSERVATIONS: expected a whole number"),
        ("IRI_RULE_TTL", 0, "IRI_RULE_TTL must be positive, got 0"),
        ("IRI_RULE_TTL", -1, "IRI_RULE_TTL must be positive"),
        ("IRI_RULE_TTL", "a month", "IRI_RULE_TTL: expected a number, got 'a month'"),
        ("IRI_RULE_TTL", float("nan"), "IRI_RULE_TTL must be positive"),
        ("IRI_ALIAS_TTL", 0, "IRI_ALIAS_TTL must be positive, got 0"),
        ("IRI_ALIAS_TTL", "a week", "IRI_ALIAS_TTL: expected a number, got 'a week'"),
        ("IRI_VERIFY_SHARE", 1.5, "IRI_VERIFY_SHARE must be between 0 and 1, got 1.5"),
        ("IRI_VERIFY_SHARE", -0.1, "IRI_VERIFY_SHARE must be between 0 and 1"),
        ("IRI_VERIFY_SHARE", "10%", "IRI_VERIFY_SHARE: expected a number"),
        ("IRI_SINK_FANIN", 1, "IRI_SINK_FANIN must be at least 2, got 1"),
        ("IRI_MAX_ALIAS_CHAIN", 0, "IRI_MAX_ALIAS_CHAIN must be at least 1"),
        ("IRI_MAX_ALIAS_CHAIN", float("inf"), "IRI_MAX_ALIAS_CHAIN: expected a whole number"),
        ("IRI_CROSS_SITE_ALIASES", "sometimes", "IRI_CROSS_SITE_ALIASES"),
        ("IRI_REWRITE", "maybe", "IRI_REWRITE"),
        ("IRI_STORE_RULE_CACHE", 0, "IRI_STORE_RULE_CACHE must be at least 1, got 0"),
        ("IRI_STORE_CACHE_SIZE", "big", "IRI_STORE_CACHE_SIZE: expected a whole number"),
    ],
)
def test_a_bad_value_stops_the_crawl_at_start_naming_the_setting(name: str, value: Any, message: str) -> None:
    with pytest.raises(IRISettingsError) as error:
        IRISettings.from_settings(Settings({name: value}))
    assert message in str(error.value)
    with pytest.raises(IRISettingsError, match=name):  # the add-on checks them before the crawl starts
        crawler(**{name: value})


def test_the_store_has_the_crawl_policy_from_its_first_use() -> None:
    """The fingerprinter opens the store before the middleware exists: it already has the crawl's policy."""
    c = crawler(IRI_RULE_MIN_OBSERVATIONS=2, IRI_SINK_FANIN=9, IRI_RULE_TTL=60, IRI_ALIAS_TTL=3600)
    store = crawler_store(c)
    expected = LearningPolicy(min_observations=2, sink_fanin=9, rule_ttl=60, alias_ttl=3600)
    assert store.policy == expected
    # two observations make a rule at once, for every user of the store
    for i in range(1, 3):
        store.record_redirect(f"http://a.example/topic-{i}", 301, f"http://a.example/topic-{i}/")
    assert store.representative("http://a.example/topic-9") == "http://a.example/topic-9/"
    middleware = RedirectLearningMiddleware.from_crawler(c)
    assert middleware.store is store and store.policy == expected


def test_the_middleware_reads_verification_and_rewriting_from_the_settings() -> None:
    middleware = RedirectLearningMiddleware.from_crawler(crawler(IRI_VERIFY_SHARE="0.25", IRI_REWRITE=False))
    assert middleware.verify_share == 0.25 and middleware.rewrite is False


def test_the_store_caches_are_sized_by_the_settings(tmp_path) -> None:
    c = crawler(IRI_STORE=f"sqlite:///{tmp_path}/s.db", IRI_STORE_CACHE_SIZE=100, IRI_STORE_RULE_CACHE=7)
    storage = crawler_store(c).storage
    assert storage.cached.aliases.size == 100 and storage.cached.rules.size == 7  # type: ignore[attr-defined]
