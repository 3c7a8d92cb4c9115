"""Fixtures of the Scrapy plugin tests: crawlers with the add-on, their dupefilters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from scrapy import Spider
from scrapy.core.scheduler import Scheduler
from scrapy.crawler import Crawler
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

ADDON = {"ADDONS": {"scrapy_iri.Addon": 0}}


class NamedSpider(Spider):
    name = "plugin-tests"


@pytest.fixture
def make_crawler() -> Callable[..., Crawler]:
    """``make_crawler(**settings)``: a crawler with the add-on and the given project settings.

    These tests are about the string, syntax and scheme rungs: ``rung``
    defaults to ``"scheme"`` (``None`` keeps the add-on's default, the
    protocol rung, with an in-memory store unless ``IRI_STORE`` is given).
    """

    def make(addon: bool = True, rung: str | None = "scheme", **settings: Any) -> Crawler:
        if rung is not None:
            settings.setdefault("IRI_RUNG", rung)
        else:
            settings.setdefault("IRI_STORE", "memory:")
        return get_crawler(NamedSpider, {**(ADDON if addon else {}), **settings})

    return make


@pytest.fixture
def make_dupefilter(make_crawler: Callable[..., Crawler]) -> Callable[..., Any]:
    """``make_dupefilter(**settings)``: the dupefilter a scheduler of such a crawler builds."""

    def make(**settings: Any) -> Any:
        crawler = make_crawler(**settings)
        return build_from_crawler(Scheduler, crawler).df

    return make
