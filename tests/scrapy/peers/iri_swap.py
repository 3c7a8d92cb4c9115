"""pytest plugin (``-p iri_swap``): run Scrapy's or scrapy-redis's own tests with scrapy-iri's drop-ins.

Loaded before the peer's conftest and test modules, it puts scrapy-iri's
classes where the peer's tests and settings find theirs, the way a user
swaps one class for another:

* ``scrapy.dupefilters.RFPDupeFilter`` and ``scrapy_redis.dupefilter.RFPDupeFilter``
  -> ``IRIDupeFilter`` (so the default ``DUPEFILTER_CLASS`` of both);
* ``scrapy.utils.request.RequestFingerprinter`` -> ``IRIRequestFingerprinter``
  (the default ``REQUEST_FINGERPRINTER_CLASS``);
* ``LinkExtractor`` / ``LxmlLinkExtractor`` -> ``IRILinkExtractor`` (also ``CrawlSpider``'s default);
* ``RedirectMiddleware`` -> the same with ``IRILocationMiddleware``'s ``Location`` mapping first,
  as the add-on orders them.

``IRI_SWAP=none`` loads nothing (the peer's own classes: the baseline). The
plugin also runs nose-style ``setup()`` methods, which scrapy-redis 0.9.1's
tests still use and pytest 8 no longer calls.
"""

from __future__ import annotations

import os

import pytest

SWAP = os.environ.get("IRI_SWAP", "all") != "none"


def _swap() -> None:
    import scrapy.downloadermiddlewares.redirect as redirect
    import scrapy.dupefilters
    import scrapy.linkextractors
    import scrapy.linkextractors.lxmlhtml
    import scrapy.spiders.crawl
    import scrapy.utils.request

    from scrapy_iri import IRIDupeFilter, IRILinkExtractor, IRIRequestFingerprinter
    from scrapy_iri.scrapy import IRILocationMiddleware

    class RedirectMiddleware(redirect.RedirectMiddleware):
        """Scrapy's RedirectMiddleware after IRILocationMiddleware, as the add-on orders them."""

        def process_response(self, request, response, spider=None):  # type: ignore[no-untyped-def]
            crawler = getattr(self, "crawler", None)
            if crawler is not None and crawler.stats is not None:
                response = IRILocationMiddleware(crawler).process_response(request, response)
            return super().process_response(request, response)

    # the peer's warnings name the class a user configured: Scrapy's, which this one stands for
    RedirectMiddleware.__module__ = redirect.RedirectMiddleware.__module__
    RedirectMiddleware.__qualname__ = redirect.RedirectMiddleware.__qualname__

    scrapy.dupefilters.RFPDupeFilter = IRIDupeFilter  # type: ignore[misc]
    scrapy.utils.request.RequestFingerprinter = IRIRequestFingerprinter  # type: ignore[misc]
    scrapy.linkextractors.LinkExtractor = IRILinkExtractor  # type: ignore[misc]
    scrapy.linkextractors.lxmlhtml.LxmlLinkExtractor = IRILinkExtractor  # type: ignore[misc]
    scrapy.spiders.crawl.LinkExtractor = IRILinkExtractor  # type: ignore[misc]
    scrapy.spiders.crawl._default_link_extractor = IRILinkExtractor()
    redirect.RedirectMiddleware = RedirectMiddleware  # type: ignore[misc]
    try:
        import scrapy_redis.dupefilter
    except ImportError:
        return
    scrapy_redis.dupefilter.RFPDupeFilter = IRIDupeFilter  # type: ignore[misc]


if SWAP:
    _swap()


@pytest.fixture(autouse=True)
def _nose_setup(request: pytest.FixtureRequest) -> None:
    instance = request.instance
    if instance is not None and callable(getattr(instance, "setup", None)) and not hasattr(instance, "setup_method"):
        instance.setup()
