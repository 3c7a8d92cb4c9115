"""IRI-correct link following: a drop-in ``LinkExtractor`` and a ``Request`` helper.

Scrapy's ``Request`` and ``LinkExtractor`` pass every URL through w3lib's
``safe_url_string``, which maps host names with IDNA2003 (``faß.de``
becomes ``fass.de``, another site) and leaves percent-encoded UTF-8 hosts
encoded (unresolvable). Here raw ``href`` values are resolved against the
document's base (RFC 3986 5.2, ``<base href>`` aware) as IRIs, then mapped
to URIs (3987bis 3): UTF-8 percent-encoding, IDNA2008/UTS #46 A-labels,
and, for http(s) links in documents whose charset is not Unicode, the
query in the document's charset (3987bis 3.5, as browsers do). Scrapy
leaves such ASCII URIs untouched, so the request fetches the right host.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin
from weakref import WeakKeyDictionary

from lxml import etree
from scrapy import Request
from scrapy.http import TextResponse
from scrapy.link import Link
from scrapy.linkextractors import LinkExtractor
from scrapy.linkextractors.lxmlhtml import LxmlParserLinkExtractor
from scrapy.utils.misc import arg_to_iter, rel_has_nofollow
from scrapy.utils.python import unique as unique_list
from w3lib.html import strip_html5_whitespace
from w3lib.url import safe_url_string

from scrapy_iri import IRIError, IRIReference, Rung, canonicalize, parse, resolve, to_uri
from scrapy_iri._mapping import is_unicode_charset, query_in_charset

from ._pending import remember

if TYPE_CHECKING:
    from collections.abc import Iterable

    from parsel import Selector
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

INVALID_STAT = "iri/links/invalid"
_text_content = etree.XPath("string()")


# -- IRI -> the URI a request should carry




def _fetchable_host(ref: IRIReference) -> IRIReference:
    """The host as resolvers take it: percent-encoded UTF-8 decoded to A-labels, ASCII lowercased.

    Both are what the scheme rung does to DNS hosts (and the syntax rung,
    scheme-independently, to ASCII letters); the rest of the URI is kept.
    """
    host = ref.host
    if not host:
        return ref
    if "%" in host:
        return ref._replace(host=parse(canonicalize(ref.unsplit(), Rung.SCHEME)).host)
    lowered = host.lower()
    return ref if lowered == host else ref._replace(host=lowered)


_NEEDS_HOST = frozenset({"http", "https", "ws", "wss", "ftp"})


def request_url(iri: str, *, encoding: str | None = None, lenient: bool = True) -> str:
    """The ASCII URI to request for an absolute IRI (raises :class:`~scrapy_iri.IRIError`).

    ``encoding`` is the charset of the document the IRI came from: for
    http(s) IRIs, a non-Unicode charset encodes the query (3987bis 3.5).
    """
    ref = parse(iri, lenient=lenient)
    if ref.scheme is None:
        raise IRIError("a relative reference cannot be requested: give a base", "scheme", 0)
    if (
        ref.query is not None
        and not ref.query.isascii()
        and ref.scheme.lower() in ("http", "https")
        and not is_unicode_charset(encoding)
    ):
        ref = ref._replace(query=query_in_charset(ref.query, encoding or "utf-8"))
    if not ref.host and ref.scheme.lower() in _NEEDS_HOST:
        raise IRIError(f"a {ref.scheme.lower()} URL needs a host", "host", len(ref.scheme) + 1)
    if ref.scheme != ref.scheme.lower():  # schemes are case-insensitive; Scrapy filters on lowercase
        ref = ref._replace(scheme=ref.scheme.lower())
    uri = to_uri(ref.unsplit())
    host = ref.host
    if host and host.isascii() and ("%" in host or host != host.lower()):
        mapped = parse(uri)
        return _fetchable_host(mapped).unsplit()
    return uri


# -- the document's base URL


_bases: WeakKeyDictionary[Response, str] = WeakKeyDictionary()


def base_url(response: Response) -> str:
    """The base IRI of a document: its first ``<base href>`` resolved against its URL, else its URL.

    Unlike Scrapy's ``get_base_url``, the ``href`` is not passed through
    ``safe_url_string`` (IDNA2003) and the whole document is searched.
    """
    cached = _bases.get(response)
    if cached is not None:
        return cached
    base = response.url
    if isinstance(response, TextResponse):
        try:
            hrefs = response.xpath("(//base[@href])[1]/@href").getall()
        except (ValueError, etree.LxmlError):
            hrefs = []
        href = strip_html5_whitespace(hrefs[0]) if hrefs else ""
        if href:
            try:
                base = resolve(response.url, href, lenient=True)
            except IRIError:
                base = response.url
    _bases[response] = base
    return base


# -- Request helper


def iri_request(
    iri: str,
    *,
    base: str | Response | None = None,
    request_cls: type[Request] = Request,
    **kwargs: Any,
) -> Request:
    """A ``Request`` for an IRI, with the right URI (raises :class:`~scrapy_iri.IRIError`).

    ``base`` resolves a relative reference: a URL, or a response (its
    ``<base href>`` counts, and its encoding becomes the default
    ``encoding``, as in ``response.follow``). Other keyword arguments go to
    the request class; ``encoding`` also encodes a non-ASCII http(s) query
    (3987bis 3.5).

    The few correct URIs that ``Request`` would still rewrite (an empty
    query ``?`` dropped, ``'`` in a query encoded, an empty port or
    fragment dropped) get Scrapy's ``verbatim_url`` meta key, so the URI is
    requested as it is.
    """
    if base is not None and not isinstance(base, str):
        if isinstance(base, TextResponse):
            kwargs.setdefault("encoding", base.encoding)
        base = base_url(base)
    absolute = resolve(base, iri, lenient=True) if base is not None else iri
    url = request_url(absolute, encoding=kwargs.get("encoding"))
    if safe_url_string(url, kwargs.get("encoding") or "utf-8") != url:
        kwargs["meta"] = {**(kwargs.get("meta") or {}), "verbatim_url": True}
    try:
        return request_cls(url, **kwargs)
    except ValueError as exc:  # e.g. Scrapy refuses mailto:, tel:, javascript: URLs
        raise IRIError(f"Scrapy cannot request {url!r}: {exc}", "scheme", 0) from exc


def ascii_domains(domains: str | Iterable[str]) -> set[str]:
    """Domains as given plus their A-label forms (``bücher.example`` -> ``xn--bcher-kva.example``).

    Useful for ``allowed_domains``: links and requests carry A-labels.
    """
    out: set[str] = set()
    for domain in arg_to_iter(domains):
        out.add(domain)
        try:
            out.add(parse(canonicalize(f"http://{domain.strip()}/", Rung.SCHEME)).host or domain)
        except IRIError:
            pass
    return out


# -- the link extractor


class _IRIParserLinkExtractor(LxmlParserLinkExtractor):
    """Scrapy's lxml link walker, with IRI resolution and mapping instead of ``safe_url_string``."""

    def __init__(self, parent: LxmlParserLinkExtractor, owner: IRILinkExtractor) -> None:
        super().__init__(
            tag=parent.scan_tag,
            attr=parent.scan_attr,
            process=parent.process_attr,
            unique=parent.unique,
            strip=parent.strip,
            canonicalized=True,
        )
        self.owner = owner
        self.link_key = owner.link_key

    def _extract_links(
        self,
        selector: Selector,
        response_url: str,
        response_encoding: str,
        base_url: str,
    ) -> list[Link]:
        """Every link of ``selector``, in document order; duplicates are dropped after filtering."""
        links: list[Link] = []
        for el, _, value in self._iter_links(selector.root):
            if self.strip:
                value = strip_html5_whitespace(value)  # noqa: PLW2901
            url = self._url(value, response_url, response_encoding, base_url)
            if url is not None:
                links.append(Link(url, _text_content(el) or "", nofollow=rel_has_nofollow(el.get("rel"))))
        return links

    def _url(self, value: str, response_url: str, encoding: str, base_url: str) -> str | None:
        """The URI to request for an ``href``; ``None`` when ``process_value`` drops it.

        A value that is not an IRI even leniently is counted and then
        followed as Scrapy's extractor would (a drop-in never loses a link).
        """
        custom: Any = None  # what process_value made of the link, when it changed it
        try:
            absolute = resolve(base_url, _same_scheme_relative(value, base_url), lenient=True)
            processed = self.process_attr(absolute)
            if processed is None:
                return None
            if processed is not absolute:  # process_value may return a relative reference
                custom = processed
                processed = resolve(response_url, str(processed), lenient=True)
            return _without_empty_fragment(request_url(processed, encoding=encoding))
        except IRIError as exc:
            self.owner.invalid(value if custom is None else custom, exc)
        return _scrapy_url(self.process_attr, value, custom, response_url, encoding, base_url)


_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")
_SPECIAL = ("http:", "https:", "ftp:", "ws:", "wss:")


def _same_scheme_relative(value: str, base: str) -> str:
    """``http:page`` in an http page is ``page`` (RFC 3986 5.2.2's non-strict parsers, browsers, Scrapy).

    Only for the hierarchical network schemes, and only without ``//``: with
    an authority the reference is absolute anyway.
    """
    value = value.translate(_TAB_NEWLINE)  # lenient preprocessing drops them anyway (3987bis 7)
    scheme, colon, rest = value.partition(":")
    if (
        colon
        and not rest.startswith("//")
        and f"{scheme.lower()}:" in _SPECIAL
        and base[: len(scheme) + 1].lower() == f"{scheme.lower()}:"
    ):
        first_segment = re.split(r"[/?#]", rest, maxsplit=1)[0]
        # "./" keeps a colon from reading as a scheme, and a leading space inside the reference
        return f"./{rest}" if ":" in first_segment or rest[:1].isspace() else rest
    return value


def _without_empty_fragment(url: str) -> str:
    """``page#`` is ``page``: an empty fragment names no part of it (and Scrapy drops it too)."""
    return url[:-1] if url.endswith("#") and url.index("#") == len(url) - 1 else url


def _scrapy_url(
    process: Any, value: str, custom: Any, response_url: str, encoding: str, base_url: str
) -> str | None:
    """The URL Scrapy's extractor makes of a value that is not an IRI (``None``: it skips it too).

    ``custom`` is what ``process_value`` returned for it, if it changed it.
    """
    try:
        if custom is None:
            custom = process(urljoin(base_url, value))
            if custom is None:
                return None
        return urljoin(response_url, safe_url_string(custom, encoding=encoding))
    except ValueError:
        return None


def page_values(response: TextResponse, tags: frozenset[str], attrs: tuple[str, ...]) -> list[tuple[str, str]]:
    """``(raw value, text)`` of every ``tags``/``attrs`` link in ``response``, in document order."""
    out: list[tuple[str, str]] = []
    try:
        root = response.selector.root
        elements = root.iter() if hasattr(root, "iter") else ()
    except (ValueError, etree.LxmlError):
        return out
    for el in elements:
        tag = el.tag
        if not isinstance(tag, str) or tag.rpartition("}")[2].lower() not in tags:
            continue
        for attr in attrs:
            value = el.get(attr)
            if value is not None:
                out.append((value, _text_content(el) or ""))
    return out


def link_uri(value: str, base: str, encoding: str) -> str | None:
    """The URI :class:`IRILinkExtractor` requests for a raw link value (``None``: not an IRI)."""
    try:
        absolute = resolve(base, _same_scheme_relative(strip_html5_whitespace(value), base), lenient=True)
        return _without_empty_fragment(request_url(absolute, encoding=encoding))
    except IRIError:
        return None


class IRILinkExtractor(LinkExtractor):
    """Scrapy's ``LinkExtractor`` (same arguments, same ``extract_links`` contract) with correct URIs.

    Links are resolved against the document's base as IRIs and mapped to
    URIs with IDNA2008 hosts (see :mod:`scrapy_iri.scrapy._links`).
    ``allow_domains`` / ``deny_domains`` may be written with Unicode labels.
    ``unique=True`` drops links whose canonical forms at ``rung`` are equal
    (fragments count, as in Scrapy); ``canonicalize=True`` replaces each URL
    with its canonical form at ``rung`` without the fragment (instead of
    w3lib's ``canonicalize_url``, which sorts queries).

    Extra keyword arguments: ``rung`` (``"scheme"``, or ``"syntax"``,
    ``"string"``), and ``stats``: a stats collector in which links that are
    not IRIs even after lenient preprocessing count as
    ``iri/links/invalid`` (see :meth:`from_crawler`). Such links are
    logged at DEBUG, counted in :attr:`invalid_count` too, and then followed
    as Scrapy's extractor would: every link Scrapy's follows, this one
    follows, in the same order. Uniqueness is decided after filtering.
    """

    def __init__(
        self,
        *args: Any,
        rung: Rung | str = Rung.SCHEME,
        stats: StatsCollector | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.rung = Rung.parse(rung)
        if self.rung is Rung.PROTOCOL:
            raise ValueError("IRILinkExtractor: the protocol rung needs a crawl's store; use 'scheme'")
        self.stats = stats
        self.crawler: Crawler | None = None
        self.invalid_count = 0
        self.allow_domains = ascii_domains(self.allow_domains)
        self.deny_domains = ascii_domains(self.deny_domains)
        self.link_extractor = _IRIParserLinkExtractor(self.link_extractor, self)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> IRILinkExtractor:
        """An extractor counting invalid links in the crawler's stats.

        Safe to call from a spider's ``from_crawler``: the stats collector is
        looked up when the first invalid link is counted.
        """
        extractor = cls(*args, **kwargs)
        extractor.crawler = crawler
        return extractor

    def link_key(self, link: Link) -> str:
        """The key of ``unique``: the canonical form at the extractor's rung, fragment included."""
        try:
            return canonicalize(link.url, self.rung, keep_fragment=True)
        except IRIError:
            return link.url

    def invalid(self, value: Any, error: Exception) -> None:
        """Count and log a link that is not an IRI (it is then followed as Scrapy would)."""
        self.invalid_count += 1
        if self.stats is None and self.crawler is not None:
            self.stats = self.crawler.stats
        if self.stats is not None:
            self.stats.inc_value(INVALID_STAT)
        logger.debug(
            "Link that is not an IRI, followed as Scrapy would: %(value)r (%(error)s)",
            {"value": value, "error": error},
        )

    def _process_links(self, links: list[Link]) -> list[Link]:
        links = [link for link in links if self._link_allowed(link)]
        if self.canonicalize:
            for link in links:
                try:
                    link.url = canonicalize(link.url, self.rung, keep_fragment=False)
                except IRIError:
                    pass
        return self.link_extractor._process_links(links)

    def extract_links(self, response: TextResponse) -> list[Link]:
        """The links of ``response`` that match the extractor's arguments, as URIs."""
        base = base_url(response)
        if self.restrict_xpaths:
            docs = [subdoc for xpath in self.restrict_xpaths for subdoc in response.xpath(xpath)]
        else:
            docs = [response.selector]
        all_links: list[Link] = []
        for doc in docs:
            links = self._extract_links(doc, response.url, response.encoding, base)
            all_links.extend(self._process_links(links))
        if self.link_extractor.unique:
            all_links = unique_list(all_links, key=self.link_key)
        remember(response, all_links, base)
        return all_links
