"""Request identity at a rung of the ladder, and the fingerprinter built on it.

A request's identity is its method, the canonical form of its URL at the
configured rung and its body, as in Scrapy (which uses w3lib's
``canonicalize_url`` instead of the ladder). The fingerprint is a 20-byte
BLAKE2b digest of the three, the size of Scrapy's SHA-1 fingerprints, so
the HTTP cache, media pipelines and anything else that keys on
``crawler.request_fingerprinter`` share the dupefilter's identity.

A URL that cannot be canonicalized (not an IRI even after lenient
preprocessing, an invalid IDN, a port above 65535) keeps the identity of
the string rung: the URL as given.

Requests with Scrapy's ``verbatim_url`` meta key are compared at the
configured rung too: Scrapy fingerprints them verbatim so that w3lib's
canonicalization (which sorts queries) cannot merge them, but the ladder
never merges URLs the specs keep apart. Set ``IRI_RUNG = "string"`` to
compare exact URLs.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from scrapy_iri import IRIError, Rung, canonicalize

from ._settings import (
    SCRAPY_REQUEST_FINGERPRINTER_CLASS,
    IRISettings,
    fallback_class,
)

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from scrapy_iri._ladder import EquivalenceStore

FINGERPRINT_SIZE = 20
_PERSON = b"scrapy-iri/1"


@dataclass(frozen=True, slots=True)
class RequestIdentity:
    """What the fingerprinter learned about one request.

    ``fingerprint`` covers the method, the URL's form at ``rung`` and the
    body. ``rung`` is the configured rung, or the string rung when the URL
    could not be canonicalized (``error`` says why). ``tag`` packs a
    short hash of the URL's form at each rung below the configured one, so
    that the dupefilter can tell which rung merged a duplicate without
    keeping any URL (see :func:`merging_rung`).
    """

    fingerprint: bytes
    rung: Rung
    tag: int
    error: str | None = None


def _tag_bits(rung: Rung) -> int:
    """Bits of the tag given to each rung below ``rung`` (32 bits shared)."""
    return 32 // int(rung) if rung else 0


def pack_tag(forms: list[str], rung: Rung) -> int:
    """Short hashes of ``forms[r]`` for each rung ``r`` below ``rung``, packed into 32 bits."""
    bits = _tag_bits(rung)
    if not bits:
        return 0
    mask = (1 << bits) - 1
    tag = 0
    for level in range(int(rung)):
        tag |= (zlib.crc32(forms[level].encode("utf-8", "surrogatepass")) & mask) << (bits * level)
    return tag


def merging_rung(tag_a: int, tag_b: int, rung: Rung) -> Rung:
    """The lowest rung at which two requests with the same fingerprint at ``rung`` agree.

    Forms only ever merge going up the ladder, so the first rung whose short
    hashes agree is the answer (a chance agreement of the hashes, 1 in 2**16
    at the scheme rung, reports a lower rung than the true one).
    """
    bits = _tag_bits(rung)
    if not bits:
        return rung
    mask = (1 << bits) - 1
    for level in range(int(rung)):
        shift = bits * level
        if (tag_a >> shift) & mask == (tag_b >> shift) & mask:
            return Rung(level)
    return rung


def digest(method: str, url: str, body: bytes) -> bytes:
    """The 20-byte fingerprint of a method, a URL form and a body (length-prefixed, unambiguous)."""
    method_bytes = method.encode("utf-8", "surrogatepass")
    url_bytes = url.encode("utf-8", "surrogatepass")
    h = hashlib.blake2b(digest_size=FINGERPRINT_SIZE, person=_PERSON)
    h.update(len(method_bytes).to_bytes(4, "big"))
    h.update(method_bytes)
    h.update(len(url_bytes).to_bytes(4, "big"))
    h.update(url_bytes)
    h.update(body)
    return h.digest()


def string_form(url: str, keep_fragment: bool) -> str:
    """The string rung: the URL as given, without its fragment for a network action."""
    return url if keep_fragment else url.partition("#")[0]


def url_forms(
    url: str,
    rung: Rung,
    *,
    keep_fragment: bool,
    lenient: bool,
    store: EquivalenceStore | None = None,
) -> list[str]:
    """The URL's canonical forms from the string rung up to ``rung``; raises :class:`IRIError`.

    Each form is computed from the one below it (the scheme form of ``x`` is
    the scheme form of the syntax form of ``x``), so the ladder is climbed
    once.
    """
    forms = [string_form(url, keep_fragment)]
    if rung >= Rung.SYNTAX:
        forms.append(canonicalize(url, Rung.SYNTAX, keep_fragment=keep_fragment, lenient=lenient))
    if rung >= Rung.SCHEME:
        forms.append(canonicalize(forms[-1], Rung.SCHEME))
    if rung >= Rung.PROTOCOL:
        if store is None:
            raise ValueError("the protocol rung needs an equivalence store")
        # forms[-1] already is the scheme form: the protocol form is its representative
        forms.append(store.representative(forms[-1]))
    return forms


# request -> {configuration: identity}; shared by every fingerprinter of the
# process with the same configuration, and dropped with the request.
_cache: WeakKeyDictionary[Request, dict[tuple[Any, ...], RequestIdentity]] = WeakKeyDictionary()


class IRIRequestFingerprinter:
    """Request fingerprinter (:setting:`REQUEST_FINGERPRINTER_CLASS`) at the ``IRI_RUNG`` rung.

    Enabled by the :class:`~scrapy_iri.Addon`. The fingerprinter it replaced
    is kept in ``IRI_FALLBACK_REQUEST_FINGERPRINTER_CLASS`` and reachable as
    :attr:`fallback`; with ``IRI_COMPAT = "w3lib"`` every fingerprint is the
    fallback's, byte for byte (Scrapy's own, by default).
    """

    def __init__(self, crawler: Crawler | None = None) -> None:
        self._crawler = crawler
        self.config = IRISettings.from_settings(crawler.settings) if crawler is not None else IRISettings()
        self.rung: Rung = self.config.rung
        self._fallback: Any = None
        self._store: EquivalenceStore | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @property
    def fallback(self) -> Any:
        """The fingerprinter this one replaced (built on first use)."""
        if self._fallback is None:
            from scrapy.utils.misc import build_from_crawler

            settings = self._crawler.settings if self._crawler is not None else None
            if settings is None:
                from scrapy.utils.request import RequestFingerprinter

                self._fallback = RequestFingerprinter()
            else:
                cls = fallback_class(
                    settings,
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
        return self.identity(request).fingerprint

    def identity(self, request: Request) -> RequestIdentity:
        """The request's identity at the configured rung (cached while the request lives)."""
        store = self._get_store() if self.rung is Rung.PROTOCOL else None
        key = (self.rung, self.config.keep_fragments, self.config.lenient, id(store))
        per_request = _cache.setdefault(request, {})
        identity = per_request.get(key)
        if identity is None:
            identity = self._compute(request, store)
            per_request[key] = identity
        return identity

    def _compute(self, request: Request, store: EquivalenceStore | None) -> RequestIdentity:
        rung = self.rung
        keep_fragment = self.config.keep_fragments
        if rung is Rung.STRING:
            form = string_form(request.url, keep_fragment)
            return RequestIdentity(digest(request.method, form, request.body), Rung.STRING, 0)
        # Scrapy sends a verbatim_url request exactly as written: no lenient
        # preprocessing ('\\' -> '/', trimming) may merge it with another URL.
        lenient = self.config.lenient and not request.meta.get("verbatim_url")
        try:
            forms = url_forms(request.url, rung, keep_fragment=keep_fragment, lenient=lenient, store=store)
        except IRIError as exc:
            form = string_form(request.url, keep_fragment)
            return RequestIdentity(digest(request.method, form, request.body), Rung.STRING, 0, str(exc))
        return RequestIdentity(digest(request.method, forms[-1], request.body), rung, pack_tag(forms, rung))

    def _get_store(self) -> EquivalenceStore:
        if self._store is None:
            if self._crawler is None:
                raise ValueError("the protocol rung needs a crawler (to find its equivalence store)")
            from ._settings import crawler_store

            self._store = crawler_store(self._crawler)
        return self._store
