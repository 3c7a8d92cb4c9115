"""Request identity at a rung of the ladder: computed once per request, read by every component.

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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from scrapy.http.request import NO_CALLBACK

from scrapy_iri import IRIError, Rung, canonicalize
from scrapy_iri.store._forms import SchemeForm

from ._settings import IRISettings

if TYPE_CHECKING:
    from scrapy import Request

    from scrapy_iri._ladder import Representatives

FINGERPRINT_SIZE = 20
_PERSON = b"scrapy-iri/1"


#: ``request.meta`` key holding the request's :class:`RequestIdentity` (picklable)
META_IDENTITY = "iri_identity"

#: redirect statuses (a request that handles them itself is never merged by the protocol rung)
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class RequestIdentity(NamedTuple):
    """A request's identity, computed once when it is scheduled and carried in ``request.meta``.

    ``fingerprint`` covers the method, the URL's form at ``rung`` and the
    body; it is what the dupefilter files the request under. ``rung`` is the
    configured rung, or the string rung when the URL could not be
    canonicalized (``error`` says why). ``tag`` packs a short hash of the
    URL's form at each rung below the configured one (see
    :func:`merging_rung`).

    At the protocol rung, ``form`` is the URL's scheme form (no fragment:
    the form the store and the middleware use, never computed again),
    ``representative`` the URL the store resolved it to when the request was
    scheduled and ``rules`` the rules that merge relies on (their ``str``).

    ``canonical`` is the URL's form at ``rung``: what the request is filed
    under (the fingerprint's URL). ``url`` is the URL the request is sent as and ``sent_form`` its scheme
    form (``form``, or the representative it was rewritten to); ``chain`` holds the
    fingerprints filed by the earlier hops of its redirect chain and
    ``filings`` the representatives they were filed under when those were
    not their own URL: a hop landing on one of them is the same request, not
    a duplicate. ``method`` and ``mergeable`` (whether the protocol rung may
    file it under its representative) say which request it was computed for:
    a copy (``Request.replace``) with another method or redirect handling gets
    its own identity.

    A named tuple (immutable and picklable, like the meta it lives in): made
    once per request, it costs a third of a frozen dataclass.
    """

    url: str
    fingerprint: bytes
    rung: Rung
    tag: int
    error: str | None = None
    form: SchemeForm | None = None
    representative: str | None = None
    rules: tuple[str, ...] = ()
    chain: tuple[bytes, ...] = ()
    filings: tuple[str, ...] = ()
    config: tuple[Any, ...] = ()
    rewritten_to: SchemeForm | None = None
    canonical: str = ""
    method: str = "GET"
    mergeable: bool = False

    @property
    def sent_form(self) -> SchemeForm | None:
        """The scheme form of the URL the request is sent as."""
        return self.rewritten_to if self.rewritten_to is not None else self.form

    @property
    def merged(self) -> bool:
        """Whether the protocol rung filed the request under another URL than its own."""
        return self.representative is not None and self.representative != self.form

    def sent_as(self, url: str) -> RequestIdentity:
        """The same identity for the request rewritten to ``url``, a store URL (it stays filed where it was)."""
        return self._replace(url=url, rewritten_to=SchemeForm(url))


def protocol_mergeable(request: Request) -> bool:
    """Whether the protocol rung may file this request under its representative.

    GET/HEAD requests whose redirects Scrapy follows: the chain of one that
    is sent as it is passes the dupefilter wherever it lands on its own
    identity. Other requests keep the identity of their scheme form.
    """
    meta = request.meta
    if request.method not in ("GET", "HEAD") or meta.get("dont_redirect") or meta.get("handle_httpstatus_all"):
        return False
    listed = meta.get("handle_httpstatus_list")  # any container: ``scrapy fetch`` and ``shell`` set a SequenceExclude
    return not listed or not any(status in listed for status in _REDIRECTS)


def component_request(request: Request) -> bool:
    """Whether a component downloads this request for itself (``robots.txt``, media files), not for the spider.

    Scrapy marks those with ``callback=NO_CALLBACK`` and sends them past the
    scheduler and its dupefilter. Dropping one as a duplicate fails its
    component: Scrapy's robots.txt middleware then obeys no rules for that
    host, so such a request is never dropped and makes no later one a duplicate.
    """
    return request.callback is NO_CALLBACK


def protocol_rewritable(request: Request) -> bool:
    """Whether the protocol rung may send this request to its representative instead of its URL."""
    meta = request.meta
    return protocol_mergeable(request) and not meta.get("verbatim_url") and not meta.get("iri_dont_rewrite")


def _redirected_from(request: Request, carried: RequestIdentity) -> bool:
    """Whether ``request`` is a redirect hop of the request ``carried`` was computed for."""
    hops = request.meta.get("redirect_urls")
    return bool(hops) and hops[-1] == carried.url and request.url not in hops


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


def url_forms(url: str, rung: Rung, *, keep_fragment: bool, lenient: bool) -> list[str]:
    """The URL's canonical forms from the string rung up to ``rung`` (at most the scheme rung); raises :class:`IRIError`.

    Each form is computed from the one below it (the scheme form of ``x`` is
    the scheme form of the syntax form of ``x``), so the ladder is climbed
    once. The protocol form is the store's representative of the scheme form.
    """
    forms = [string_form(url, keep_fragment)]
    if rung >= Rung.SYNTAX:
        forms.append(canonicalize(url, Rung.SYNTAX, keep_fragment=keep_fragment, lenient=lenient))
    if rung >= Rung.SCHEME:
        forms.append(canonicalize(forms[-1], Rung.SCHEME))
    return forms


class RequestIdentities:
    """The identity function of a crawl: a request's :class:`RequestIdentity`, computed once.

    ``store`` returns the crawl's equivalence store (called on the first
    request at the protocol rung).
    """

    def __init__(self, config: IRISettings, store: Callable[[], Representatives] | None = None) -> None:
        self.config = config
        self.rung: Rung = config.rung
        self._store_getter = store
        self._store: Representatives | None = None
        self._config_key = (self.rung, config.keep_fragments, config.lenient)

    def of(self, request: Request) -> RequestIdentity:
        """The request's identity: the one it carries, else computed now and attached to it.

        A request carries its identity in ``request.meta[META_IDENTITY]``
        from the moment it is first scheduled; a redirect of it (whose meta
        is a copy) gets its own identity, which remembers the chain's.
        """
        carried = request.meta.get(META_IDENTITY)
        if isinstance(carried, RequestIdentity):
            if (
                carried.url == request.url
                and carried.method == request.method
                and carried.config == self._config_key
                and not request.body
                and (self.rung is not Rung.PROTOCOL or carried.mergeable == protocol_mergeable(request))
            ):
                return carried
            if not _redirected_from(request, carried):
                carried = None
        else:
            carried = None
        identity = self._compute(request)
        if carried is not None:
            filings = carried.filings + ((carried.representative,) if carried.merged else ())
            identity = identity._replace(chain=(*carried.chain, carried.fingerprint), filings=filings)
        if not request.body:
            request.meta[META_IDENTITY] = identity
        return identity

    def _compute(self, request: Request) -> RequestIdentity:
        rung = self.rung
        keep_fragment = self.config.keep_fragments
        url = request.url
        if rung is Rung.STRING:
            form = string_form(url, keep_fragment)
            return RequestIdentity(
                url,
                digest(request.method, form, request.body),
                Rung.STRING,
                0,
                config=self._config_key,
                canonical=form,
                method=request.method,
            )
        # Scrapy sends a verbatim_url request exactly as written: no lenient
        # preprocessing ('\\' -> '/', trimming) may merge it with another URL.
        lenient = self.config.lenient and not request.meta.get("verbatim_url")
        try:
            forms = url_forms(url, rung, keep_fragment=keep_fragment, lenient=lenient)
        except IRIError as exc:
            form = string_form(url, keep_fragment)
            fingerprint = digest(request.method, form, request.body)
            return RequestIdentity(
                url,
                fingerprint,
                Rung.STRING,
                0,
                str(exc),
                config=self._config_key,
                canonical=form,
                method=request.method,
                mergeable=rung is Rung.PROTOCOL and protocol_mergeable(request),
            )
        if rung is not Rung.PROTOCOL:
            fingerprint = digest(request.method, forms[-1], request.body)
            return RequestIdentity(
                url,
                fingerprint,
                rung,
                pack_tag(forms, rung),
                config=self._config_key,
                canonical=forms[-1],
                method=request.method,
            )
        base, _, fragment = forms[-1].partition("#")
        base = SchemeForm(base)
        mergeable = protocol_mergeable(request)
        if mergeable:
            resolution = self.store.resolve(base)
            representative = resolution.representative
            rules = tuple(str(rule) for rule in resolution.rules) if resolution.steps else ()
        else:
            representative, rules = base, ()
        protocol = representative + ("#" + fragment if keep_fragment and fragment else "")
        forms.append(protocol)
        return RequestIdentity(
            url,
            digest(request.method, protocol, request.body),
            rung,
            pack_tag(forms, rung),
            form=base,
            representative=representative,
            rules=rules,
            config=self._config_key,
            canonical=protocol,
            method=request.method,
            mergeable=mergeable,
        )

    @property
    def store(self) -> Representatives:
        if self._store is None:
            if self._store_getter is None:
                raise ValueError("the protocol rung needs a crawler (to find its equivalence store)")
            self._store = self._store_getter()
        return self._store
