"""The request fingerprinter: the crawl's request identity as Scrapy's ``REQUEST_FINGERPRINTER_CLASS``.

The fingerprint is the 20-byte BLAKE2b digest of :mod:`._identity`, the
size of Scrapy's SHA-1 fingerprints, so the HTTP cache, media pipelines and
anything else that keys on ``crawler.request_fingerprinter`` share the
dupefilter's identity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._identity import RequestIdentities, RequestIdentity
from ._settings import SCRAPY_REQUEST_FINGERPRINTER_CLASS, IRISettings, fallback_class

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from scrapy_iri import Rung


class IRIRequestFingerprinter:
    """Request fingerprinter (:setting:`REQUEST_FINGERPRINTER_CLASS`) at the ``IRI_RUNG`` rung.

    Enabled by the :class:`~scrapy_iri.Addon`. The fingerprint is the
    identity the crawl object's identity function gives (see
    :class:`RequestIdentities`). The fingerprinter it replaced is kept in
    ``IRI_FALLBACK_REQUEST_FINGERPRINTER_CLASS`` and reachable as
    :attr:`fallback`; with ``IRI_COMPAT = "w3lib"`` every fingerprint is the
    fallback's, byte for byte (Scrapy's own, by default).
    """

    def __init__(self, crawler: Crawler | None = None, *, identities: RequestIdentities | None = None) -> None:
        self._crawler = crawler
        if identities is None:
            identities = RequestIdentities(IRISettings.from_settings(crawler.settings) if crawler is not None else IRISettings())
        self.identities = identities
        self.config = identities.config
        self.rung: Rung = identities.rung
        self._fallback: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        from ._crawl import IRICrawl

        return cls(crawler, identities=IRICrawl.of(crawler).identities)

    @property
    def fallback(self) -> Any:
        """The fingerprinter this one replaced (built on first use)."""
        if self._fallback is None:
            from scrapy.utils.misc import build_from_crawler

            if self._crawler is None:
                from scrapy.utils.request import RequestFingerprinter

                self._fallback = RequestFingerprinter()
            else:
                cls = fallback_class(
                    self._crawler.settings,
                    "IRI_FALLBACK_REQUEST_FINGERPRINTER_CLASS",
                    SCRAPY_REQUEST_FINGERPRINTER_CLASS,
                    IRIRequestFingerprinter,
                )
                self._fallback = build_from_crawler(cls, self._crawler)
        return self._fallback

    def fingerprint(self, request: Request) -> bytes:
        """20 bytes identifying the request (Scrapy's fingerprint with ``IRI_COMPAT``)."""
        if self.config.compat:
            return self.fallback.fingerprint(request)
        return self.identities.of(request).fingerprint

    def identity(self, request: Request) -> RequestIdentity:
        """The request's identity (:meth:`RequestIdentities.of`)."""
        return self.identities.of(request)
