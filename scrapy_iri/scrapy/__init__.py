"""The Scrapy components of scrapy-iri (importing them imports Scrapy).

- :mod:`.addon`: ``Addon``, which turns everything on;
- :mod:`.dupefilter`: ``IRIDupeFilter``, with the compact seen set of :mod:`.seen`;
- :mod:`.fingerprint`: ``IRIRequestFingerprinter`` and request identity;
- :mod:`.links`: ``IRILinkExtractor``, ``iri_request``;
- :mod:`.pipelines`: ``CanonicalizeURLsPipeline``;
- :mod:`.compat`: Scrapy's present identity, for migrating users;
- :mod:`.settings`: the ``IRI_*`` settings and their defaults.
"""
