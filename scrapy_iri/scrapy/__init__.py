"""The Scrapy components of scrapy-iri (importing them imports Scrapy).

- :mod:`._addon`: ``Addon``, which turns everything on;
- :mod:`._settings`: the ``IRI_*`` settings and their defaults, parsed once;
- :mod:`._crawl`: ``IRICrawl``, the crawl object: what one crawl's components share;
- :mod:`._identity`: ``RequestIdentity``, computed once per request, and the identity function;
- :mod:`._fingerprint`: ``IRIRequestFingerprinter``;
- :mod:`._dupefilter`: ``IRIDupeFilter``, with the compact seen set of :mod:`._seen`;
- :mod:`._redirects`: the protocol rung's middleware, adapting Scrapy's hooks to :mod:`._plan`;
- :mod:`._location`: ``IRILocationMiddleware`` (redirects to IRIs);
- :mod:`._links`: ``IRILinkExtractor``, ``iri_request``;
- :mod:`._pipelines`: ``CanonicalizeURLsPipeline``;
- :mod:`._compat`: Scrapy's present identity, for migrating users;
- :mod:`._redis_config`, :mod:`._redis_crawl`, :mod:`._redis_seen`: crawls shared through Redis.
"""

from ._addon import Addon
from ._dupefilter import IRIDupeFilter
from ._fingerprint import IRIRequestFingerprinter
from ._identity import RequestIdentity
from ._links import IRILinkExtractor, ascii_domains, iri_request
from ._location import IRILocationMiddleware
from ._pipelines import CanonicalizeURLsPipeline
from ._redirects import RedirectLearningMiddleware
from ._verbatim import VerbatimLinkMiddleware

__all__ = [
    "Addon",
    "CanonicalizeURLsPipeline",
    "IRIDupeFilter",
    "IRILinkExtractor",
    "IRILocationMiddleware",
    "IRIRequestFingerprinter",
    "RedirectLearningMiddleware",
    "RequestIdentity",
    "VerbatimLinkMiddleware",
    "ascii_domains",
    "iri_request",
]
