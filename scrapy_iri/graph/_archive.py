"""Web archives as link graphs: WARC and WAT files (a directory or glob of them)."""

from __future__ import annotations

import glob
import json
import os
import re
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import GraphError, IRIError
from ._source import ARCHIVE_COLUMNS, GraphInput
from ._links import Resolver, html_links, shown
from ._normalize import _csv_field
from . import _warc
from ._warc import BadRecord, Record, records

_SNIFF = 64


def _head(name: str) -> bytes:
    """The first bytes of a file, gunzipped when it is gzip (what is there of them)."""
    try:
        with open(name, "rb") as f:
            start = f.read(_SNIFF * 16)
    except OSError:
        return b""
    if start[:2] == b"\x1f\x8b":
        try:
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(start, _SNIFF)
        except zlib.error:
            return b""
    return start[:_SNIFF]


def is_archive(name: str) -> bool:
    """Whether ``name`` is a WARC (or WAT) file, by its content: it starts with ``WARC/1.``."""
    return os.path.isfile(name) and _head(name).startswith(b"WARC/1.")


def archive_files(name: str) -> list[str]:
    """The archives ``name`` names: a file, a directory's WARC files (name order), or a glob's."""
    if os.path.isdir(name):
        found = sorted(os.path.join(name, entry) for entry in os.listdir(name))
        files = [path for path in found if is_archive(path)]
        if not files:
            raise GraphError(f"{name}: a directory without WARC or WAT files")
        return files
    if os.path.exists(name):
        return [name]
    matched = sorted(path for path in glob.glob(name) if os.path.isfile(path))
    if not matched:
        raise GraphError(f"{name}: no such file, and no file matches it as a glob")
    return matched


def passed_over(name: str) -> list[str]:
    """The files of directory ``name`` that :func:`archive_files` does not read (not WARC or WAT)."""
    if not os.path.isdir(name):
        return []
    found = sorted(os.path.join(name, entry) for entry in os.listdir(name))
    return [path for path in found if not is_archive(path)]


def listed(files: list[str]) -> str:
    """The first five of ``files``, and how many more, for a message."""
    return ", ".join(files[:5]) + (f" and {len(files) - 5:,} more" if len(files) > 5 else "")


# --- HTTP messages in response records ------------------------------------------


@dataclass
class HTTPResponse:
    status: int
    headers: dict[str, list[str]]  # names lowercased
    body: bytes | None  # None: not kept (too large)

    def header(self, name: str) -> str | None:
        values = self.headers.get(name)
        return values[0] if values else None

    def content_type(self) -> tuple[str, str | None]:
        """The media type (lowercased, '' when none) and the charset parameter."""
        return content_type(self.header("content-type"))


def content_type(value: str | None) -> tuple[str, str | None]:
    """A ``Content-Type`` value's media type (lowercased, '' when none) and its charset parameter."""
    kind, _, params = (value or "").partition(";")
    charset = None
    for param in params.split(";"):
        name, _, arg = param.partition("=")
        if name.strip().lower() == "charset":
            charset = arg.strip().strip("\"'") or None
    return kind.strip().lower(), charset


def head_lines(head: bytes) -> list[str]:
    """An HTTP head's lines: split at CRLF or LF only, decoded as UTF-8 (what browsers do with a
    ``Location``), its bytes that are not UTF-8 kept as lone surrogates, which no IRI holds."""
    return head.decode("utf-8", "surrogateescape").replace("\r\n", "\n").split("\n") if head else []


def http_response(block: bytes) -> HTTPResponse | str:
    """The HTTP response in a record's block, or why there is none."""
    end = block.find(b"\r\n\r\n")
    cut = 4
    if end < 0:
        end, cut = block.find(b"\n\n"), 2
    if end < 0:
        end, cut = len(block), 0
    lines = head_lines(block[:end])
    if not lines or not lines[0].startswith("HTTP/"):
        return "the record's block is not an HTTP response"
    fields = lines[0].split(None, 2)
    if len(fields) < 2 or not (fields[1].isascii() and fields[1].isdigit() and len(fields[1]) == 3):
        return f"bad HTTP status line {lines[0][:80]!r}"
    headers: dict[str, list[str]] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers.setdefault(name.strip().lower(), []).append(value.strip())
    return HTTPResponse(int(fields[1]), headers, block[end + cut :])


_CHUNK_START = re.compile(rb"[0-9A-Fa-f]+[ \t]*(;[^\r\n]*)?\r\n")


def _dechunk(body: bytes) -> bytes | str:
    out = []
    pos = 0
    while True:
        end = body.find(b"\r\n", pos)
        if end < 0:
            return "chunked body cut off"
        size_text = body[pos:end].split(b";")[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            return f"bad chunk size {size_text[:20]!r}"
        if size == 0:
            return b"".join(out)
        out.append(body[end + 2 : end + 2 + size])
        pos = end + 2 + size + 2


def _zlib_header(body: bytes) -> bool:
    """Whether ``body`` starts with a zlib header (RFC 1950 2.2: deflate, a check that divides by 31)."""
    return len(body) >= 2 and body[0] & 0x0F == 8 and (body[0] << 8 | body[1]) % 31 == 0


def decoded_body(response: HTTPResponse, limit: int) -> bytes | str:
    """The payload without its transfer and content codings (at most ``limit`` bytes), or why not."""
    body = response.body or b""
    if "chunked" in (response.header("transfer-encoding") or "").lower() and _CHUNK_START.match(body):
        body = _dechunk(body)  # a body that does not start as chunks was stored decoded (as warcio reads it)
        if isinstance(body, str):
            return body
    coding = (response.header("content-encoding") or "").strip().lower()
    if coding in ("gzip", "x-gzip", "deflate"):
        # deflate is zlib-wrapped by the standard and raw from some servers: browsers read both
        wbits = 16 + zlib.MAX_WBITS if "gzip" in coding else zlib.MAX_WBITS if _zlib_header(body) else -zlib.MAX_WBITS
        try:
            inflater = zlib.decompressobj(wbits)
            body = inflater.decompress(body, limit)
        except zlib.error as exc:
            return f"Content-Encoding {coding}: {exc}"
        if inflater.unconsumed_tail:
            return f"decoded body over {limit >> 20} MiB"
    elif coding not in ("", "identity"):
        return f"Content-Encoding {coding} is not read"
    return body


def _html_type(kind: str, body: bytes) -> bool:
    if kind:
        return kind in ("text/html", "application/xhtml+xml")
    start = body[:512].lstrip().lower()
    return start.startswith((b"<!doctype html", b"<html"))


# --- rows: (where, source, target, raw, problem, path, date) ----------------------------

BAD_HEADER = "file,offset,source,target,path,reason\n"
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]{0,31}):")
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
"""The statuses of a redirect (a ``Location`` to follow); other 3xx (300, 304...) are answers."""
_WEB = ("http", "https")


def _reject(row: tuple[Any, ...], problem: str) -> str:
    return f"{row[3]},{_csv_field(row[1])},{_csv_field(row[2])},{_csv_field(row[5])},{_csv_field(problem)}\n"


class _Missing(Exception):
    pass


def _get(obj: Any, *keys: str) -> Any:
    """``obj[k1][k2]...``, or :class:`_Missing` naming the dotted path that is not there."""
    for depth, key in enumerate(keys):
        if not isinstance(obj, dict) or key not in obj:
            raise _Missing(".".join(keys[: depth + 1]))
        obj = obj[key]
    return obj


class NoLocation(ValueError):
    """Why a redirect has no ``Location`` to follow."""


def one_location(status: int, locations: list[str] | None) -> str:
    """The ``Location`` of a redirect, stripped; :class:`NoLocation` when it has none, or two that differ
    (which browsers refuse to follow: a guess could merge what differs)."""
    if not locations:
        raise NoLocation(f"a {status} redirect without a Location")
    if len(locations) > 1:
        distinct = list(dict.fromkeys(str(value).strip() for value in locations))
        if len(distinct) > 1:
            named = ", ".join(shown(value) for value in distinct[:3])
            raise NoLocation(f"a {status} redirect with {len(distinct)} different Locations: {named}")
    return str(locations[0]).strip()


def target_uri(record: Record) -> str:
    """A record's ``WARC-Target-URI`` (WARC/1.0 writers may put it in angle brackets)."""
    uri = record.header("warc-target-uri")
    return uri[1:-1] if uri.startswith("<") and uri.endswith(">") else uri


# a file given as an archive (by name, or matched by a glob) that holds nothing: said, not passed over
EMPTY = BadRecord("0", "an empty file: no WARC or WAT record")


class ArchiveRows:
    """The link rows of archive files, the records they skip (counted), and how far the reading is."""

    def __init__(self, files: list[str], redirects: str = "skip", pieces: list[Any] | None = None,
                 originals: Any = None) -> None:
        self.files = files
        self.redirects = redirects == "edges"
        # where the records revisits refer to are: the whole input's, when this reads pieces of it
        self.originals = originals
        self.skipped: Counter[str] = Counter()
        self.pieces = pieces  # the files' pieces (:class:`~scrapy_iri.graph._pieces.Piece`), when not read whole
        self.total = (sum(os.path.getsize(path) for path in files) if pieces is None
                      else sum(piece.end - piece.start for piece in pieces))
        self.done = 0
        self.current: Any = None
        self.start = 0

    def tell(self) -> int:
        position = self.current.tell() - self.start if self.current is not None and not self.current.closed else 0
        return self.done + position

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        if self.pieces is not None:
            from ._pieces import span_records

            for piece in self.pieces:
                with open(piece.location, "rb") as file:
                    self.current, self.start = file, piece.start
                    if piece.end == 0:
                        yield from self._rows(piece.path, EMPTY)
                    for record in span_records(file, piece.start, piece.end):
                        yield from self._rows(piece.path, record)
                self.done += piece.end - piece.start
                self.current, self.start = None, 0
            return
        for path in self.files:
            with open(path, "rb") as file:
                self.current = file
                if not os.fstat(file.fileno()).st_size:
                    yield from self._rows(path, EMPTY)
                for record in records(file):
                    yield from self._rows(path, record)
            self.done += os.path.getsize(path)
            self.current = None

    def _rows(self, path: str, record: Record | BadRecord) -> Iterator[tuple[Any, ...]]:
        where, raw = f"{path}:{record.offset}", f"{_csv_field(path)},{record.offset}"
        if isinstance(record, BadRecord):
            yield where, "", "", raw, record.reason, "", ""
            return
        kind = record.header("warc-type").lower()
        try:
            if kind == "response":
                yield from self._response(where, raw, record)
            elif kind == "resource":
                yield from self._resource(where, raw, record)
            elif kind == "revisit":
                yield from self._revisit(where, raw, record)
            elif kind == "metadata" and (record.block or b"")[:1] == b"{":
                yield from self._wat(where, raw, record)
            else:
                self.skipped[f"{kind or 'untyped'} records"] += 1
        except _Bad as exc:
            yield where, exc.source, "", raw, str(exc), exc.path, ""

    def _web_uri(self, record: Record, kind: str) -> str | None:
        """The record's http(s) URI; None when it has another scheme (counted); no scheme is bad."""
        uri = target_uri(record)
        found = _SCHEME.match(uri)
        if found is None:
            raise _Bad(f"WARC-Target-URI {shown(uri)} is not an absolute URI (no scheme)", uri)
        scheme = found.group(1).lower()
        if scheme not in _WEB:
            self.skipped[f"{kind} not over HTTP ({scheme} scheme)"] += 1
            return None
        return uri

    def _response(self, where: str, raw: str, record: Record) -> Iterator[tuple[Any, ...]]:
        uri = self._web_uri(record, "responses")
        if uri is None:
            return
        response = http_response(record.block if record.block is not None else record.head)
        if isinstance(response, str):
            raise _Bad(response, uri)
        date = record.header("warc-date")
        if response.status in REDIRECT_STATUSES:
            yield from self._redirect(where, raw, uri, response.status, response.headers.get("location"), date)
            return
        if not 200 <= response.status < 300:
            self.skipped["responses other than 2xx and redirects"] += 1
            return
        yield from self._page(where, raw, uri, date, response, record)

    def _revisit(self, where: str, raw: str, record: Record) -> Iterator[tuple[Any, ...]]:
        """A ``revisit``: a capture at its own URI and date of the payload of the record it refers to.
        Its own HTTP head (a deduplicating crawler writes it) says the status and the headers; without
        one, or when it is a 304 (not modified), the original's do."""
        uri = self._web_uri(record, "revisits")
        if uri is None:
            return
        own = http_response(record.block if record.block is not None else record.head)
        date = record.header("warc-date")
        if not isinstance(own, str):
            if own.status in REDIRECT_STATUSES:
                yield from self._redirect(where, raw, uri, own.status, own.headers.get("location"), date)
                return
            if not (200 <= own.status < 300 or own.status == 304):  # 304: the server's "not modified"
                self.skipped["revisits other than 2xx and redirects"] += 1
                return
        if self.originals is None:
            from ._revisits import Originals

            self.originals = Originals(self.files)
        original = self.originals.find(record.headers)
        if isinstance(original, str):
            raise _Bad(original, uri)
        theirs = http_response(original.block if original.block is not None else original.head)
        if isinstance(theirs, str):
            if original.header("warc-type").lower() != "resource":
                raise _Bad(f"the record this revisit refers to: {theirs}", uri)
            theirs = HTTPResponse(200, {"content-type": [original.header("content-type")]}, original.block)
        if isinstance(own, str) or own.status == 304:  # the original's answer holds
            if theirs.status in REDIRECT_STATUSES:
                yield from self._redirect(where, raw, uri, theirs.status, theirs.headers.get("location"), date)
                return
            if not 200 <= theirs.status < 300:
                self.skipped["revisits other than 2xx and redirects"] += 1
                return
            own = theirs
        yield from self._page(where, raw, uri, date, HTTPResponse(own.status, own.headers, theirs.body), original)

    def _page(self, where: str, raw: str, uri: str, date: str, response: HTTPResponse,
              record: Record) -> Iterator[tuple[Any, ...]]:
        """The links of a 2xx response's document, if it is HTML."""
        kind, charset = response.content_type()
        if not _html_type(kind, response.body or b""):
            self.skipped["responses that are not HTML"] += 1
            return
        if record.block is None:
            raise _Bad(f"an HTML body of {record.length:,} bytes, over the {_warc.MAX_BLOCK:,} bytes read", uri)
        body = decoded_body(response, _warc.MAX_BLOCK)
        if isinstance(body, str):
            raise _Bad(body, uri)
        if not body.strip():
            self.skipped["empty HTML documents"] += 1
            return
        yield from self._links(where, raw, uri, date, html_links(uri, body, charset))

    def _resource(self, where: str, raw: str, record: Record) -> Iterator[tuple[Any, ...]]:
        """A ``resource`` record: the document itself, typed by the record's Content-Type."""
        uri = self._web_uri(record, "resources")
        if uri is None:
            return
        kind, charset = content_type(record.header("content-type"))
        body = record.block if record.block is not None else record.head
        if not _html_type(kind, body):
            self.skipped["resources that are not HTML"] += 1
            return
        if record.block is None:
            raise _Bad(f"an HTML body of {record.length:,} bytes, over the {_warc.MAX_BLOCK:,} bytes read", uri)
        if not body.strip():
            self.skipped["empty HTML documents"] += 1
            return
        yield from self._links(where, raw, uri, record.header("warc-date"), html_links(uri, body, charset))

    def _redirect(
        self, where: str, raw: str, uri: str, status: int, locations: list[str] | None, date: str
    ) -> Iterator[tuple[Any, ...]]:
        path = f"REDIRECT@/{status}"
        try:
            try:
                location = one_location(status, locations)
            except NoLocation as exc:
                raise _Bad(str(exc), uri, path) from None
            try:
                target = Resolver(uri)(location)
            except ValueError as exc:  # an IRIError, or a lone surrogate: bytes that are not UTF-8
                raise _Bad(f"Location {shown(location)} is not an IRI reference: {exc}", uri, path) from None
        except _Bad:
            if self.redirects:
                raise
            self.skipped["redirects without a usable Location"] += 1
            return
        if not self.redirects:
            self.skipped["redirects (not links)"] += 1
            return
        yield where, uri, target, raw, None, path, date

    def _links(
        self, where: str, raw: str, uri: str, date: str, links: Iterator[tuple[str, str | None, str]]
    ) -> Iterator[tuple[Any, ...]]:
        try:
            for path, target, value in links:
                if target is None:
                    yield where, uri, "", raw, value, path, date
                else:
                    yield where, uri, target, raw, None, path, date
        except IRIError as exc:  # the document's own URL is no base
            raise _Bad(f"WARC-Target-URI {shown(uri)} is not a URL: {exc}", uri) from None

    def _wat(self, where: str, raw: str, record: Record) -> Iterator[tuple[Any, ...]]:
        try:
            envelope = _get(json.loads(record.block or b""), "Envelope")
        except ValueError as exc:
            raise _Bad(f"WAT: a JSON payload that does not parse: {exc}") from None
        except _Missing as exc:
            raise _Bad(f"WAT: no {exc}") from None
        try:
            warc = _get(envelope, "WARC-Header-Metadata")
            kind = _get(warc, "WARC-Type")
            if kind not in ("response", "revisit"):
                self.skipped["WAT records of other than responses"] += 1
                return
            uri, date = _get(warc, "WARC-Target-URI"), warc.get("WARC-Date", "")
            http = _get(envelope, "Payload-Metadata", "HTTP-Response-Metadata")
            status = int(_get(http, "Response-Message", "Status"))
            if status in REDIRECT_STATUSES:
                headers = http.get("Headers") or {}
                locations = [one for name, value in headers.items() if str(name).lower() == "location"
                             for one in (value if isinstance(value, list) else [value])]
                yield from self._redirect(where, raw, uri, status, locations, date)
                return
            if kind == "revisit":  # the payload, and so the links, are the original's: not in the WAT
                raise _Bad("WAT: a revisit record: its links are those of the record it refers to,"
                           " which a WAT does not hold", uri if isinstance(uri, str) else "")
            page = http.get("HTML-Metadata")
            if page is None:
                self.skipped["WAT records without HTML metadata"] += 1
                return
            head = page.get("Head") or {}
            base = head.get("Base")
            # every <link> and <script src> is under Head (Link, Scripts), the other links under Links;
            # a list that would be empty is left out
            lists = (head.get("Link", []), head.get("Scripts", []), page.get("Links", []))
        except _Missing as exc:
            raise _Bad(f"WAT: no Envelope.{exc}") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise _Bad(f"WAT: unexpected layout: {exc}") from None
        if not isinstance(uri, str) or not all(isinstance(found, list) for found in lists):
            raise _Bad("WAT: WARC-Target-URI is not a string, or Head.Link, Head.Scripts or Links not a list")
        links = [link for found in lists for link in found]
        yield from self._links(where, raw, uri, date, _wat_links(uri, base, links))


def _wat_links(uri: str, base: Any, links: list[Any]) -> Iterator[tuple[str, str | None, str]]:
    """A WAT record's links as :func:`html_links` gives them (WAT keeps them as written)."""
    resolve = Resolver(uri)
    if isinstance(base, str) and base.strip():
        try:
            resolve = Resolver(resolve(base.strip()))
        except IRIError as exc:
            why = f"<base href={shown(base)}> is not a URL ({exc}): links resolved against {shown(uri)}"
            yield "BASE@/href", None, why
    for link in links:
        # a CSS url() of a <style> block has its URL under "href" (path STYLE/#text)
        found = (link.get("url") if "url" in link else link.get("href")) if isinstance(link, dict) else None
        if not isinstance(found, str):
            yield "WAT", None, f"WAT: a link without a 'url' string: {str(link)[:80]}"
            continue
        path = link.get("path") if isinstance(link.get("path"), str) else "WAT"
        value = found.strip(" \t\n\f\r")
        try:
            yield path, resolve(value), value
        except (IRIError, ValueError) as exc:
            yield path, None, f"link {shown(value)} is not an IRI reference: {exc}"


class _Bad(Exception):
    def __init__(self, reason: str, source: str = "", path: str = "") -> None:
        super().__init__(reason)
        self.source, self.path = source, path


def archive_links(name: str, *, redirects: str = "skip") -> Iterator[tuple[str, str, str, str, str, str | None]]:
    """Every link of the archives ``name`` names (a file, a directory, a glob), not canonicalized:
    ``(source, target, path, date, where, problem)``, ``problem`` None for a link and the reason
    for a bad record or link (then ``target`` is empty), ``where`` is ``file:offset``."""
    for row in ArchiveRows(archive_files(name), redirects):
        yield row[1], row[2], row[5], row[6], row[0], row[4]


def archive_input(name: str, *, redirects: str = "skip") -> GraphInput:
    """The links of the archives ``name`` names, as ``graph`` rows."""
    from ._links import _lxml

    _lxml()  # a clear error when the parser is missing
    rows = ArchiveRows(archive_files(name), redirects)
    return GraphInput(iter(rows), BAD_HEADER, _reject, ARCHIVE_COLUMNS, rows.tell, rows.total, rows.skipped)
