"""The links of an HTML document, resolved as a browser resolves them.

The document is decoded as a browser decodes it (a byte-order mark, else
the HTTP charset, else a ``<meta>`` charset in its first 1024 bytes, else
UTF-8 when it is valid UTF-8, else windows-1252; labels as the WHATWG
Encoding standard reads them) and parsed by lxml (libxml2's HTML parser,
as Scrapy parses), which decodes character references. Every link of
:data:`LINK_ATTRIBUTES`, every candidate of a ``srcset`` and SVG's
``xlink:href`` is resolved (RFC 3986 5.2, lenient input as in 3987bis
sec. 7) against the document's base: its first ``<base href>`` resolved
against its URL, else its URL. An http(s) link with a non-ASCII
query in a document whose charset is not Unicode has that query encoded
in the document's charset (3987bis 3.5), as browsers submit it.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from typing import Any

from .._mapping import is_unicode_charset, query_in_charset
from .._parse import parse, recompose
from .._resolve import keep_apart_from_authority, remove_dot_segments, resolve_components
from ..errors import GraphError, IRIError

# element -> the attributes holding a link, as Common Crawl's WAT records name them (A@/href ...)
LINK_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "a": ("href",),
    "area": ("href",),
    "link": ("href",),
    "img": ("src",),
    "script": ("src",),
    "iframe": ("src",),
    "frame": ("src",),
    "form": ("action",),
    "embed": ("src",),
    "source": ("src",),
    "video": ("src", "poster"),
    "audio": ("src",),
    "track": ("src",),
    "input": ("src",),
    "object": ("data",),
    "blockquote": ("cite",),
    "q": ("cite",),
    "ins": ("cite",),
    "del": ("cite",),
    "body": ("background",),
}
# candidate lists of images, and SVG's links (xlink:href only inside <svg>, when there is no href)
SRCSET = frozenset({"srcset", "imagesrcset"})
SVG_HREF = frozenset({"xlink:href"})
_MORE: dict[str, tuple[str, ...]] = {
    "img": ("srcset",),
    "source": ("srcset",),
    "link": ("imagesrcset",),
    "a": ("xlink:href",),
    "image": ("xlink:href",),
}
# tag -> (its link attributes: first those holding one URL, then those read with more care (srcset,
# xlink:href), the latter)
_TAGS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    tag: ({**LINK_ATTRIBUTES, "image": ("href",)}.get(tag, ()) + _MORE.get(tag, ()), _MORE.get(tag, ()))
    for tag in (*LINK_ATTRIBUTES, *_MORE)
}
PATHS = {(tag, attr): f"{tag.upper()}@/{attr}" for tag, (attrs, _) in _TAGS.items() for attr in attrs}
_HTML_SPACE = " \t\n\f\r"
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


def _lxml() -> Any:
    try:
        import lxml.html
    except ImportError:
        raise GraphError("reading web archives needs lxml: pip install 'scrapy-iri[archive]'") from None
    return lxml.html


# WHATWG Encoding labels whose decoder is not Python's codec of the same name (or that Python lacks)
_WHATWG: dict[str, str] = {
    "latin-1": "cp1252", "iso8859-1": "cp1252", "ascii": "cp1252", "iso8859-9": "cp1254",
    "iso8859-11": "cp874", "tis-620": "cp874", "windows-874": "cp874",
    "iso-8859-8-i": "iso8859-8", "x-mac-cyrillic": "mac-cyrillic", "x-mac-roman": "mac-roman",
    "euc_kr": "cp949", "ks_c_5601-1987": "cp949", "windows-949": "cp949",
    "x-sjis": "shift_jis", "windows-31j": "cp932",
    "gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030", "big5": "big5hkscs",
    "x-user-defined": "cp1252",
}
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_BE, "utf-16-be"), (codecs.BOM_UTF16_LE, "utf-16-le"))


def _codec(label: str) -> str | None:
    """The Python codec that decodes as a browser decodes the WHATWG label ``label``; None: no such."""
    label = label.strip().lower()
    try:
        name = codecs.lookup(_WHATWG.get(label, label)).name
    except LookupError:
        return None
    return _WHATWG.get(name, name)


def charset_of(body: bytes, declared: str | None) -> str:
    """The encoding a browser decodes ``body`` with (a Python codec name): a byte-order mark, else
    the HTTP charset, else a ``<meta>`` charset (UTF-16 there means UTF-8), else UTF-8 when the body
    is valid UTF-8, else windows-1252."""
    for mark, name in _BOMS:
        if body.startswith(mark):
            return name
    if declared and (name := _codec(declared)) is not None:
        return name
    meta = _meta_charset(body)
    if meta and (name := _codec(meta)) is not None:
        return "utf-8" if name.startswith(("utf-16", "utf-32")) else name
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return "cp1252"
    return "utf-8"


def _meta_charset(body: bytes) -> str | None:
    found = _META_CHARSET.search(body[:1024])
    return found.group(1).decode("ascii") if found else None


# A reference of these characters only (ASCII, no space, no backslash, no "%") is one that lenient
# parsing leaves as it is: resolving it is string work on the base's parts (RFC 3986 5.2.2).
_PLAIN = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?#]*\Z")
_WEB_SCHEME = re.compile(r"https?://[^/?#]")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


class Resolver:
    """References resolved against one base, parsed once."""

    def __init__(self, base: str, charset: str = "utf-8") -> None:
        self.base = parse(base, lenient=True)
        if self.base.scheme is None:
            raise IRIError("the base must be an absolute IRI (it has no scheme)", "scheme", 0)
        self.charset = None if is_unicode_charset(charset) else charset
        ref = self.base
        self.origin = None
        if ref.host is not None and ref.path.startswith("/") and _PLAIN.match(recompose(ref)):
            self.origin = recompose(ref._replace(path="", query=None, fragment=None))
            self.directory = ref.path[: ref.path.rfind("/") + 1]
            ref = ref._replace(path=remove_dot_segments(ref.path), fragment=None)
            self.document = recompose(ref)
            self.without_query = recompose(ref._replace(query=None))

    def __call__(self, reference: str) -> str:
        if self.origin is not None and _PLAIN.match(reference):
            found = self._plain(reference)
            if found is not None:
                return found
        return self._resolve(reference)

    def _plain(self, reference: str) -> str | None:
        """RFC 3986 5.2.2 for a plain reference against a plain base with an authority; None: not here."""
        first = reference[:1]
        if first == "#":
            return self.document + reference
        if first == "?":
            return self.without_query + reference
        if not reference:
            return self.document
        if reference.startswith("//"):
            return None
        cut = len(reference)
        for mark in "?#":
            found = reference.find(mark)
            if 0 <= found < cut:
                cut = found
        path, rest = reference[:cut], reference[cut:]
        if _SCHEME.match(reference):
            if not _WEB_SCHEME.match(reference):
                return None
            start = reference.find("/", reference.find("//") + 2)
            if "@" in reference[: start if 0 <= start < cut else cut]:
                return None  # userinfo: lenient parsing may encode it
            if start < 0 or start > cut:
                return reference
            return reference[:start] + remove_dot_segments(reference[start:cut]) + rest
        if first == "/":
            return self.origin + remove_dot_segments(path) + rest
        return self.origin + remove_dot_segments(self.directory + path) + rest

    def _resolve(self, reference: str) -> str:
        target = resolve_components(self.base, parse(reference, lenient=True, base_scheme=self.base.scheme))
        query = target.query
        if (
            self.charset is not None
            and query is not None
            and not query.isascii()
            and (target.scheme or "").lower() in ("http", "https")
        ):
            target = target._replace(query=query_in_charset(query, self.charset))
        return recompose(target._replace(path=keep_apart_from_authority(target.path, target.host)))


def shown(value: str, limit: int = 200) -> str:
    """``repr(value)`` for a message, cut after ``limit`` characters (the length said): a 1 MB URL is
    named, not copied into every report of it."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}... ({len(value):,} characters)"


def html_links(url: str, body: bytes, declared: str | None) -> Iterator[tuple[str, str | None, str]]:
    """(path such as ``A@/href``, the resolved link or None, the raw value or why it is bad) for
    every link of the document at ``url``; a bad ``<base href>`` comes first as (``BASE@/href``,
    None, why), and the links are then resolved against ``url``, as a browser does."""
    html = _lxml()
    charset = charset_of(body, declared)
    if charset != "utf-8":  # decoded here, as a browser decodes (errors replaced): libxml2 lacks some codecs
        body = body.decode(charset, "replace").removeprefix("\ufeff").encode("utf-8", "surrogatepass")
    try:
        parser = html.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True)
        root = html.document_fromstring(body, parser=parser)
    except Exception as exc:  # lxml's ParserError (an empty document), ValueError, XMLSyntaxError
        yield "HTML", None, f"not parsable as HTML: {exc}"
        return
    base_url = url
    for element in root.iter("base"):
        href = element.get("href")
        if href is None:
            continue
        href = href.strip(_HTML_SPACE)
        if href:
            try:
                base_url = Resolver(url)(href)
                Resolver(base_url)
            except IRIError as exc:
                base_url = url
                why = f"<base href={shown(href)}> is not a URL ({exc}): links resolved against {shown(url)}"
                yield "BASE@/href", None, why
        break
    resolve = Resolver(base_url, charset)
    paths = PATHS
    for element in root.iter(*_TAGS):
        tag = element.tag
        attrs, other = _TAGS[tag]
        for attr in attrs:
            value = element.get(attr)
            if value is None:
                continue
            if attr in other:
                if attr in SVG_HREF and (element.get("href") is not None or not _in_svg(element)):
                    continue  # SVG's xlink:href: only in <svg>, and href wins over it
                values = _srcset_urls(value) if attr in SRCSET else (value.strip(_HTML_SPACE),)
            else:
                values = (value.strip(_HTML_SPACE),)
            for value in values:
                try:
                    yield paths[tag, attr], resolve(value), value
                except (IRIError, ValueError) as exc:  # ValueError: a NUL or lone surrogate lxml passed on
                    yield paths[tag, attr], None, f"link {shown(value)} is not an IRI reference: {exc}"


def _in_svg(element: Any) -> bool:
    return next(element.iterancestors("svg"), None) is not None


def _srcset_urls(value: str) -> list[str]:
    """The URLs of a ``srcset`` (HTML, "parse a srcset attribute"): each candidate's URL, without
    its width or density descriptors; a URL may hold commas, except at its end."""
    urls = []
    pos, end = 0, len(value)
    while True:
        while pos < end and (value[pos] in _HTML_SPACE or value[pos] == ","):
            pos += 1
        if pos >= end:
            return urls
        start = pos
        while pos < end and value[pos] not in _HTML_SPACE:
            pos += 1
        url = value[start:pos]
        if url.endswith(","):
            urls.append(url.rstrip(","))
            continue
        urls.append(url)
        in_parens = False  # the descriptors: up to a comma outside parentheses
        while pos < end:
            char = value[pos]
            if char == "(":
                in_parens = True
            elif char == ")":
                in_parens = False
            elif char == "," and not in_parens:
                break
            pos += 1
