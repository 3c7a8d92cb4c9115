"""The peers' own tests that scrapy-iri's drop-ins fail on purpose, each with the reason (data).

Keys are pytest node ids in the peer's source tree. Anything else that fails
with the drop-ins in place is a bug (see tests/scrapy/test_peer_suites.py).
The reasons are explained for users in docs/scrapy-plugin.md ("What differs
from Scrapy on purpose").
"""

from __future__ import annotations

QUERY_ORDER = (
    "query order kept: LinkExtractor(canonicalize=True) sorts the query with w3lib, but"
    " /p?b=2&a=1 and /p?a=1&b=2 may be two resources (the ladder never reorders a query)"
)
DIGEST = (
    "fingerprints are BLAKE2b digests of the method, the URL's canonical form at the rung and the"
    " body, not SHA-1 of w3lib's canonical JSON: the bytes differ, the size (20) is Scrapy's"
)
FROM_CRAWLER = (
    "from_crawler builds the filter as Scrapy's does (its seen set local, or shared through Redis"
    " with IRI_STORE = 'redis://...'); scrapy-redis's from_crawler is its from_settings, a fresh"
    " Redis set dupefilter:<timestamp> that no other process shares. from_settings and"
    " from_spider are scrapy-redis's"
)

SCRAPY: dict[str, str] = {
    "tests/test_utils_request.py::TestRequestFingerprinter::test_fingerprint": DIGEST,
    "tests/test_linkextractors.py::TestLxmlLinkExtractor::test_link_extractor_aggregation": QUERY_ORDER,
    "tests/test_linkextractors.py::TestLxmlLinkExtractor::test_canonicalize_once_per_link": QUERY_ORDER,
}

SCRAPY_REDIS: dict[str, str] = {
    "tests/test_dupefilter.py::TestFromMethods::test_from_crawler": FROM_CRAWLER,
}
