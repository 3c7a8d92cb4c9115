"""The protocol rung from an archive's own captures: observations from WARC, WAT and CDX(J), in date order.

Every HTTP capture is an observation: a 3xx with its ``Location`` (resolved
against the capture's URL) is a redirect, any other status an answer (a
later 200 ends what an earlier 301 taught). ``Set-Cookie`` and ``Vary``
make a capture's context, as at crawl time; ``Cache-Control: max-age`` or
``Expires`` its ``max_age``. The captures are learned in date order (a
stable sort: captures of one second keep their file order) through
:meth:`scrapy_iri.store.EquivalenceStore.learn`, the learner of a live
crawl with its safety.
"""

from __future__ import annotations

import gc
import gzip
import heapq
import json
import lzma
import os
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from itertools import chain, repeat
from typing import Any

from ..errors import GraphError, IRIError
from ._archive import REDIRECT_STATUSES, NoLocation, _get, _Missing, archive_files, head_lines, one_location
from ._heads import heads
from ._links import Resolver, shown
from ._readers import MAGIC_BYTES, OPENERS, compression
from ._warc import BadRecord

# an absolute http(s) URL that resolution leaves as it is: plain characters, no userinfo, no dot segments
_ABSOLUTE = re.compile(r"https?://[A-Za-z0-9.-]+(:[0-9]*)?(/(?![.]{1,2}(?:[/?#]|\Z))[A-Za-z0-9.\-_~!$&'()*+,;=:@]*)*([?#][A-Za-z0-9\-._~!$&'()*+,;=:@/?#]*)?\Z")
_MAX_AGE = re.compile(r"max-age\s*=\s*\"?(\d+)", re.I)
_CDX_DEFAULT = "N b a m s k r M S V g".split()  # Common Crawl's CDX columns, when a file has no header


@dataclass(slots=True)
class Capture:
    """What one capture says, before it becomes an :class:`Observation`."""

    time: float
    url: str
    status: int
    target: str | None = None
    location: str | None = None
    context: frozenset[str] = frozenset()
    max_age: float | None = None


@dataclass
class Reading:
    """Bad records and lines met while reading captures: (where, reason), and a count of the rest."""

    bad: list[tuple[str, str]] = field(default_factory=list)
    on_bad: Callable[[str, str], Any] | None = None
    files: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    def add(self, where: str, reason: str) -> None:
        self.bad.append((where, reason))
        if self.on_bad is not None:
            self.on_bad(where, reason)


_DAYS: dict[str, float | None] = {}
_SECOND = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T([0-9]{2}):([0-9]{2}):([0-9]{2})Z\Z")


def _day_start(day: str, midnight: str, parse: Callable[[str], float | None]) -> float | None:
    """The epoch of ``day`` + ``midnight`` by ``parse``, remembered per day (the two date forms never share a key)."""
    start = _DAYS.get(day, -1.0)
    if start == -1.0:
        if len(_DAYS) > 4096:
            _DAYS.clear()
        start = _DAYS[day] = parse(day + midnight)
    return start


_LAST: tuple[str, float | None] = ("", None)  # the last date read and its epoch: captures come a second at a time


def _epoch(date: str) -> float | None:
    """Seconds since the epoch of a WARC-Date (ISO 8601) or a CDX timestamp (``YYYYMMDDhhmmss``)."""
    global _LAST
    last = _LAST
    if last[0] == date:
        return last[1]
    when = _epoch_of(date)
    _LAST = (date, when)
    return when


def _epoch_of(date: str) -> float | None:
    date = date.strip()
    second = _SECOND.match(date)
    if second is not None:  # WARC's usual form: the day's start once, then its seconds
        start = _day_start(date[:10], "T00:00:00Z", _iso_epoch)
        hour, minute, sec = int(second[1]), int(second[2]), int(second[3])
        if start is None or hour > 23 or minute > 59 or sec > 59:
            return _iso_epoch(date)
        return start + (hour * 3600 + minute * 60 + sec)
    if date.isdigit():
        digits = (date + "0101000000")[:14] if len(date) < 14 else date[:14]
        # a CDX timestamp whose fields are in range (strptime reads those by position): the day's start
        # once, then its seconds
        if len(digits) == 14 and digits.isascii() and "01" <= digits[4:6] <= "12" and "01" <= digits[6:8] <= "31":
            start = _day_start(digits[:8], "000000", _stamp_epoch)
            hour, minute, sec = int(digits[8:10]), int(digits[10:12]), int(digits[12:14])
            if start is not None and hour < 24 and minute < 60 and sec < 60:
                return start + (hour * 3600 + minute * 60 + sec)
        return _stamp_epoch(digits)
    return _iso_epoch(date)


def _stamp_epoch(digits: str) -> float | None:
    try:
        return datetime.strptime(digits, "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def _iso_epoch(date: str) -> float | None:
    try:
        parsed = datetime.fromisoformat(date.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).timestamp()


# the response headers a capture reads, and their first three letters: the other lines are not split
_WANTED = ("location", "cache-control", "expires", "date", "set-cookie", "vary")
_STARTS = frozenset(name[:3] for name in _WANTED)


def _http_head(block: bytes) -> tuple[int, dict[str, list[str]]] | str:
    """The status and the :data:`_WANTED` headers of the HTTP response in a block, as
    :func:`~scrapy_iri.graph._archive.http_response` reads them, or why there is none."""
    end = block.find(b"\r\n\r\n")
    if end < 0:
        end = block.find(b"\n\n")
    lines = head_lines(block[: end if end >= 0 else len(block)])
    headers: dict[str, list[str]] = {}
    for line in lines[1:]:
        if line[:3].lower() in _STARTS or line[:1].isspace():
            name, sep, value = line.partition(":")
            if sep:
                name = name.strip().lower()
                if name in _WANTED:
                    headers.setdefault(name, []).append(value.strip())
    return _status(lines[0] if lines else "", headers)


def _status(line: str, headers: dict[str, list[str]]) -> tuple[int, dict[str, list[str]]] | str:
    if not line.startswith("HTTP/"):
        return "the record's block is not an HTTP response"
    fields = line.split(None, 2)
    if len(fields) < 2 or not (fields[1].isascii() and fields[1].isdigit() and len(fields[1]) == 3):
        return f"bad HTTP status line {line[:80]!r}"
    return int(fields[1]), headers


def _header(headers: dict[str, list[str]], name: str) -> str | None:
    values = headers.get(name)
    return values[0] if values else None


def _max_age(headers: dict[str, list[str]]) -> float | None:
    if "cache-control" not in headers and "expires" not in headers:
        return None
    cache = ", ".join(headers.get("cache-control", []))
    found = _MAX_AGE.search(cache)
    if found:
        return float(found.group(1))
    expires, date = _header(headers, "expires"), _header(headers, "date")
    if expires and date:
        try:
            return max(0.0, (parsedate_to_datetime(expires) - parsedate_to_datetime(date)).total_seconds())
        except (TypeError, ValueError, IndexError):
            return None
    return None


_CLEAN: frozenset[str] = frozenset()


def _capture(url: str, when: float, status: int, headers: dict[str, list[str]]) -> Capture | str:
    """A capture from a response's status and headers (names lowercased), or why it teaches nothing."""
    if "set-cookie" in headers or "vary" in headers:
        from ..store import context_flags

        context = context_flags(set_cookie="set-cookie" in headers, vary=headers.get("vary", []))
    else:
        context = _CLEAN
    if status not in REDIRECT_STATUSES:  # an answer, 300 and 304 included: no Location to follow
        return Capture(when, url, status, None, None, context)
    try:
        location = one_location(status, headers.get("location"))
        target = location if _ABSOLUTE.match(location) else Resolver(url)(location)
    except NoLocation as exc:
        return str(exc)
    except IRIError as exc:
        return f"Location {shown(location)} is not an IRI reference: {exc}"
    return Capture(when, url, status, target, location, context, _max_age(headers))


def warc_captures(path: str, reading: Reading, span: tuple[int, int] | None = None,
                  name: str | None = None) -> Iterator[Capture]:
    """The HTTP captures of a WARC or WAT file (of bytes ``span`` of it: whole records); bad records
    and captures are reported as ``name:offset`` (``name``: ``path`` unless given)."""
    label = path if name is None else name
    with open(path, "rb") as file:
        for item in heads(file) if span is None else heads(file, *span):
            if isinstance(item, BadRecord):
                reading.add(f"{label}:{item.offset}", item.reason)
                continue
            offset, headers, block = item
            kind = headers.get("warc-type", "").lower()
            if kind in ("response", "revisit"):  # a revisit: a capture at its own URI and date
                uri = headers.get("warc-target-uri", "")
                if uri[:1] == "<" and uri[-1:] == ">":
                    uri = uri[1:-1]
                if uri.partition(":")[0].lower() not in ("http", "https"):
                    continue
                response = _http_head(block)
                if kind == "revisit" and isinstance(response, str):
                    response = "a revisit without its HTTP response head: its status is not known"
                when = _epoch(headers.get("warc-date", ""))
                if isinstance(response, str) or when is None:
                    reading.add(f"{label}:{offset}", response if isinstance(response, str) else "no valid WARC-Date")
                    continue
                found = _capture(uri, when, *response)
            elif kind == "metadata" and block[:1] == b"{":
                found = _wat_capture(block)
                if found is None:
                    continue
            else:
                continue
            if isinstance(found, str):
                reading.add(f"{label}:{offset}", found)
            else:
                yield found


def _wat_capture(block: bytes) -> Capture | str | None:
    try:
        data = json.loads(block)
        warc = _get(data, "Envelope", "WARC-Header-Metadata")
        if warc.get("WARC-Type") not in ("response", "revisit"):  # a revisit: a capture at its own URI and date
            return None
        url, date = _get(warc, "WARC-Target-URI"), _get(warc, "WARC-Date")
        http = _get(data, "Envelope", "Payload-Metadata", "HTTP-Response-Metadata")
        status = int(_get(http, "Response-Message", "Status"))
        raw_headers = http.get("Headers") or {}
    except _Missing as exc:
        return f"WAT: no {exc}"
    except (ValueError, TypeError, AttributeError) as exc:
        return f"WAT: unexpected layout: {exc}"
    when = _epoch(str(date))
    if when is None or not isinstance(url, str):
        return "WAT: no valid WARC-Date or WARC-Target-URI"
    headers: dict[str, list[str]] = {}
    for name, value in raw_headers.items():
        headers.setdefault(str(name).lower(), []).extend(value if isinstance(value, list) else [str(value)])
    return _capture(url, when, status, headers)


def cdx_captures(path: str, reading: Reading, packed: str | None | bool = True, kind: str = "") -> Iterator[Capture]:
    """The captures of a CDX (with or without its `` CDX`` header line) or CDXJ file, plain or
    compressed (``packed``: its :func:`~scrapy_iri.graph._readers.compression`, True to look);
    a file cut off or damaged inside is one bad record where its readable lines end. In a file
    known as CDXJ (``kind``) every line is read as CDXJ, else a line with a JSON object."""
    json_lines = kind == "cdxj"
    columns = _CDX_DEFAULT
    number = 0
    if packed is True:
        packed = _compression_of(path)
    with OPENERS[packed or None](path, "rt", encoding="utf-8", errors="replace") as lines:
        try:
            for number, line in enumerate(lines, 1):
                line = line.rstrip("\r\n")
                if not line.strip():
                    continue
                if number == 1 and line.startswith(" CDX "):
                    columns = line.split()[1:]
                    continue
                found = _cdxj(line) if json_lines or " {" in line else _cdx(line, columns)
                if isinstance(found, str):
                    reading.add(f"{path}:{number}", found)
                elif found is None:
                    reading.skipped["index lines without a status or a redirect's target"] += 1
                else:
                    yield found
        except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
            reading.add(f"{path}:{number + 1}", f"the file is cut off or damaged after line {number:,}: {exc}")


def _cdx(line: str, columns: list[str]) -> Capture | str | None:
    fields = line.split(" ")
    if len(fields) < len(columns):
        return f"a CDX line with {len(fields)} fields, fewer than the {len(columns)} columns"
    values: dict[str, str] = {}
    for name, value in zip(columns, fields):
        values.setdefault(name, value)
    url, stamp, status = values.get("a", ""), values.get("b", ""), values.get("s", "-")
    if not status.isdigit():
        return None  # a revisit or a capture without a status: nothing to learn
    when = _epoch(stamp)
    if when is None or not url:
        return f"a CDX line without a valid timestamp ({stamp!r}) or URL"
    headers: dict[str, list[str]] = {}
    redirect = values.get("r", "-")
    if redirect not in ("-", ""):
        headers["location"] = [re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*)%3A//", r"\1://", redirect)]
    elif int(status) in REDIRECT_STATUSES:
        return None  # an index without the redirect's target: nothing to learn from it
    return _capture(url, when, int(status), headers)


_JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean",
               type(None): "null"}


def _cdxj(line: str) -> Capture | str | None:
    key, stamp, rest = (line.split(" ", 2) + ["", ""])[:3]
    try:
        data = json.loads(rest)
    except ValueError as exc:
        return f"CDXJ: the JSON does not parse: {exc}"
    if not isinstance(data, dict):
        return f"CDXJ: the JSON block is {_JSON_KINDS.get(type(data), 'not an object')}, not an object"
    if not isinstance(data.get("url"), str):
        return "CDXJ: no 'url'"
    status = str(data.get("status", "-"))
    if not status.isdigit():
        return None
    when = _epoch(stamp)
    if when is None:
        return f"CDXJ: a timestamp that is not one ({stamp!r})"
    headers: dict[str, list[str]] = {}
    if isinstance(data.get("redirect"), str):
        headers["location"] = [data["redirect"]]
    elif int(status) in REDIRECT_STATUSES:
        return None  # pywb's CDXJ keeps no redirect target: nothing to learn from it
    return _capture(data["url"], when, int(status), headers)


def _compression_of(path: str) -> str | None:
    with open(path, "rb") as f:
        return compression(f.read(MAGIC_BYTES))


ACCEPTED = ("WARC or WAT archives (.warc, .warc.gz, .wat.gz) and CDX or CDXJ indexes of them (plain, gzip, bzip2 or xz),"
            " known by their content")
"""What ``store learn`` reads, as its errors say."""

_SNIFF_BYTES = 1 << 16  # the text of a file looked at to tell an index
_SNIFF_LINES = 64  # its first non-blank lines, of which one at least must be an index line
_URLISH = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:|[^\s/]+[.][^\s/]+(/|\Z)")


def _start(path: str) -> tuple[bytes, str | None]:
    """A file's first bytes, decompressed (gunzipped member after member), and its compression."""
    with open(path, "rb") as f:
        raw = f.read(_SNIFF_BYTES)
        packed = compression(raw[:MAGIC_BYTES])
        if packed in ("bzip2", "xz"):
            f.seek(0)
            try:
                with OPENERS[packed](f, "rb") as unpacked:
                    return unpacked.read(_SNIFF_BYTES), packed
            except (OSError, EOFError, lzma.LZMAError) as exc:
                raise ValueError(f"compressed data that does not decompress: {exc}") from None
    if packed != "gzip":
        return raw, packed
    text = b""
    while raw[:2] == b"\x1f\x8b" and len(text) < _SNIFF_BYTES:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            text += inflater.decompress(raw, _SNIFF_BYTES - len(text))
        except zlib.error as exc:
            if not text:
                raise ValueError(f"gzip data that does not decompress: {exc}") from None
            break
        if not inflater.eof or text.startswith(b"WARC/1."):
            break
        raw = inflater.unused_data
    return text, packed


def index_line(line: str) -> str | None:
    """``cdx`` or ``cdxj`` when ``line`` is an index line as :func:`cdx_captures` reads it without a
    header (a key, a timestamp, then the original URL or a JSON object), else None."""
    fields = line.split(" ", 2)
    if len(fields) < 3 or not fields[0] or fields[0][0] in "{[\"":
        return None
    stamp, rest = fields[1], fields[2]
    if not (stamp.isascii() and stamp.isdigit() and 4 <= len(stamp) <= 14) or _epoch(stamp) is None:
        return None
    if rest[:1] == "{":
        try:
            data = json.loads(rest)
        except ValueError:
            return None
        return "cdxj" if isinstance(data, dict) and isinstance(data.get("url"), str) else None
    return "cdx" if _URLISH.match(rest.split(" ", 1)[0]) else None


class _NoCaptures(Exception):
    """Why a file is none of WARC, WAT, CDX and CDXJ."""


@dataclass(frozen=True, slots=True)
class CaptureFile:
    """A file ``store learn`` reads, checked: its ``kind`` (``warc``: WARC or WAT, ``cdx``, ``cdxj``)
    and the compression of an index (:func:`~scrapy_iri.graph._readers.compression`)."""

    path: str
    kind: str
    packed: str | None = None


def capture_kind(path: str) -> str:
    """``warc`` (WARC or WAT), ``cdx`` or ``cdxj``, by the file's content: a ``WARC/1.`` record, a
    `` CDX`` header line, or an index line (:func:`index_line`) among its first non-blank lines.
    Anything else is a :class:`GraphError` naming the file and what is read."""
    return _checked(path).kind


def _checked(path: str) -> CaptureFile:
    try:
        return _kind(path)
    except _NoCaptures as exc:
        raise GraphError(f"{path}: {exc}") from None


def _kind(path: str) -> CaptureFile:
    """What ``path`` is, from its first bytes, read once."""
    try:
        start, packed = _start(path)
    except OSError as exc:
        raise _NoCaptures(f"cannot read it: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise _NoCaptures(_not_read(str(exc))) from None
    if packed in (None, "gzip") and start.startswith(b"WARC/1."):
        return CaptureFile(path, "warc", packed)
    text = start.decode("utf-8", "replace")
    lines = text.splitlines()
    if lines and lines[0].startswith(" CDX "):
        return CaptureFile(path, "cdx", packed)
    cut = len(text) >= _SNIFF_BYTES
    if cut and len(lines) > 1:
        lines.pop()  # cut off by the look
    lines = [line for line in lines if line.strip()]
    cut = cut or len(lines) > _SNIFF_LINES
    lines = lines[:_SNIFF_LINES]
    for line in lines:
        kind = index_line(line.rstrip("\r"))
        if kind is not None:
            return CaptureFile(path, kind, packed)
    if not lines:
        why = "an empty file"
    elif len(lines) == 1:
        why = "its first line is not a CDX or CDXJ line" if cut else "its line is not a CDX or CDXJ line"
    else:
        why = f"none of its {'first ' if cut else ''}{len(lines):,} lines is a CDX or CDXJ line"
    raise _NoCaptures(_not_read(why))


def _not_read(why: str) -> str:
    return f"not a WARC, WAT, CDX or CDXJ file ({why}): store learn reads {ACCEPTED}"


def _capture_file(path: str) -> CaptureFile | None:
    try:
        return _kind(path) if os.path.isfile(path) else None
    except _NoCaptures:
        return None


def capture_files(names: list[str | CaptureFile]) -> list[CaptureFile]:
    """The archive and index files ``names`` name, in order, each checked once: a directory's files that
    are WARC, WAT, CDX or CDXJ (the others passed over), a glob's matches (one that is none of them is
    a bad record when read, as in ``graph``), a file. A file named that is none of them is a
    :class:`GraphError`. Files already checked are kept as they are. A file named twice (again, through a
    link, in a directory and a glob) is read once."""
    found: list[CaptureFile] = []
    for name in names:
        if isinstance(name, CaptureFile):
            found.append(name)
        elif os.path.isdir(name):
            entries = sorted(os.path.join(name, entry) for entry in os.listdir(name))
            found.extend(checked for checked in map(_capture_file, entries) if checked is not None)
        elif os.path.exists(name):
            found.append(_checked(name))
        else:
            found.extend(CaptureFile(path, "") for path in archive_files(name))  # a glob's: checked when read
    seen: set[str] = set()
    once = []
    for file in found:
        real = os.path.realpath(file.path)
        if real not in seen:
            seen.add(real)
            once.append(file)
    return once


def file_captures(file: str | CaptureFile, reading: Reading) -> Iterator[Capture]:
    """The captures of one archive or index file, in file order; a file that is neither is one bad record."""
    checked = file if isinstance(file, CaptureFile) and file.kind else None
    path = file.path if isinstance(file, CaptureFile) else file
    if checked is None:
        try:
            checked = _kind(path)
        except _NoCaptures as exc:
            reading.add(f"{path}:0", str(exc))
            return iter(())
    if checked.kind == "warc":
        return warc_captures(path, reading)
    return cdx_captures(path, reading, checked.packed, checked.kind)


def captures_of(names: list[str | CaptureFile], reading: Reading) -> Iterator[Capture]:
    """The captures of archive and index files (directories and globs looked into), in file order."""
    for file in capture_files(names):
        reading.files += 1
        yield from file_captures(file, reading)


def _by_date(run: list[Capture]) -> list[Capture]:
    """A file's captures in date order: as they are when they already are, else a stable sort."""
    times = [capture.time for capture in run]
    if all(a <= b for a, b in zip(times, times[1:])):
        return run
    return [run[i] for i in sorted(range(len(run)), key=times.__getitem__)]


def ordered_captures(names: list[str | CaptureFile], reading: Reading,
                     on_read: Callable[[str, int, bool], Any] | None = None) -> Iterator[Capture]:
    """The captures of ``names`` in date order, as a stable sort of them in file order gives them.

    Each file's captures are one run, sorted only when they are not in date
    order already; runs that follow one another in time are chained, others
    merged (ties go to the earlier file). ``on_read(path, captures, done)``
    hears of every 16,384 captures read and of the end of each file.
    """
    return _in_date_order(((file, file_captures) for file in capture_files(names)), reading, on_read)


FileReader = Callable[[Any, Reading], Iterator[Capture]]


def _in_date_order(files: Iterator[tuple[Any, FileReader]], reading: Reading,
                   on_read: Callable[[str, int, bool], Any] | None = None) -> Iterator[Capture]:
    """The captures of ``files`` (each with its reader) in date order: see :func:`ordered_captures`."""
    runs: list[list[Capture]] = []
    kinds: list[str] = []
    collecting = gc.isenabled()
    if collecting:  # captures form no cycles: only the young objects are looked at, now and then
        gc.disable()
    try:
        _read_runs(files, reading, on_read, runs, kinds, collecting)
    finally:
        if collecting:
            gc.enable()
    if len(runs) == 1:
        yield from runs[0]
        return
    sources, preference = _sources(runs, kinds)
    tagged = [zip(run, repeat(sources[number])) for number, run in enumerate(runs)]
    if all(a[-1].time <= b[0].time for a, b in zip(runs, runs[1:])):
        yield from _once_each(chain.from_iterable(tagged), preference)
        return
    yield from _once_each(heapq.merge(*tagged, key=lambda pair: pair[0].time), preference)


_RANK = {"warc": 0, "wat": 1}  # whose capture is kept: a WARC's, a WAT's, then an index's (no headers)


def _sources(runs: list[list[Capture]], kinds: list[str]) -> tuple[list[int], list[tuple[int, int]]]:
    """The source of each file's run, and each source's rank (lower: preferred). A source is files of
    one kind that follow one another in time (a crawl's WARCs, in name order); a file of another kind,
    or one whose captures overlap in time those of every source of its kind so far (an index of the
    same crawl, a copy), starts a source of its own."""
    sources: list[int] = []
    preference: list[tuple[int, int]] = []
    ends: list[tuple[str, float]] = []  # each source's kind and last capture's date
    for run, kind in zip(runs, kinds):
        found = next((n for n, (k, last) in enumerate(ends) if k == kind and last <= run[0].time), None)
        if found is None:
            found = len(ends)
            ends.append((kind, run[-1].time))
            preference.append((_RANK.get(kind, 2), found))
        else:
            ends[found] = (kind, run[-1].time)
        sources.append(found)
    return sources, preference


def _once_each(tagged: Iterable[tuple[Capture, int]], preference: list[tuple[int, int]]) -> Iterator[Capture]:
    """The captures of several sources (:func:`_sources`; each capture tagged with its source) once each:
    a capture that several sources hold (the same URL, second, status and target: a crawl's WARCs and
    their CDX or CDXJ index side by side in one directory as wget writes them, a WARC and the WAT made of
    it, two indexes of one crawl, a copy) is learned from one source only, as evidence counted twice
    would let a rule pass its threshold on half its observations: from the source that holds it most
    often, a WARC before a WAT before an index (an index drops the headers that give a capture its
    context). A source's own repeats are kept."""
    group: list[tuple[Capture, int]] = []
    second = None
    for pair in tagged:
        now = int(pair[0].time)
        if now != second:
            yield from _group_once_each(group, preference)
            group, second = [], now
        group.append(pair)
    yield from _group_once_each(group, preference)


def _group_once_each(group: list[tuple[Capture, int]], preference: list[tuple[int, int]]) -> Iterator[Capture]:
    """:func:`_once_each` for the captures of one second, in their order."""
    if len({source for _, source in group}) < 2:
        for capture, _ in group:
            yield capture
        return
    held: dict[tuple[str, int, str | None], dict[int, list[int]]] = {}
    for place, (capture, source) in enumerate(group):
        key = (capture.url, capture.status, capture.target)
        held.setdefault(key, {}).setdefault(source, []).append(place)
    kept: set[int] = set()
    for by_source in held.values():
        chosen = min(by_source, key=lambda source: (-len(by_source[source]), preference[source]))
        kept.update(by_source[chosen])
    for place, (capture, _) in enumerate(group):
        if place in kept:
            yield capture


_WAT_RECORD = re.compile(rb'"WARC-Header-Metadata"|\r\nWARC-Type: *(?:response|revisit)\r\n', re.IGNORECASE)


def _flavour(path: str) -> str:
    """``wat`` for a WAT file (its first record past the warcinfo holds an ``Envelope`` of metadata, not a
    response), else ``warc``."""
    try:
        with open(path, "rb") as f:
            packed = f.read(2) == b"\x1f\x8b"
            f.seek(0)
            text = (gzip.GzipFile(fileobj=f) if packed else f).read(_SNIFF_BYTES)
    except (OSError, EOFError, zlib.error):
        text = b""
    found = _WAT_RECORD.search(text)
    return "wat" if found is not None and found.group().startswith(b'"') else "warc"


def _read_runs(files: Iterator[tuple[Any, FileReader]], reading: Reading,
               on_read: Callable[[str, int, bool], Any] | None, runs: list[list[Capture]], kinds: list[str],
               collect: bool) -> None:
    for file, read in files:
        path = file.path if isinstance(file, CaptureFile) else file
        kind = "warc"
        if isinstance(file, CaptureFile):
            kind = file.kind or (_capture_file(file.path) or file).kind or "warc"
        if kind == "warc":
            kind = _flavour(path)
        reading.files += 1
        run: list[Capture] = []
        for capture in read(file, reading):
            run.append(capture)
            if not len(run) & 0x3FFF:
                if on_read is not None:
                    on_read(path, 0x4000, False)
                if collect:
                    gc.collect(1)
        if on_read is not None:
            on_read(path, len(run) & 0x3FFF, True)
        run = _by_date(run)
        if run:
            runs.append(run)
            kinds.append(kind)


def observations(names: list[str | CaptureFile], reading: Reading,
                 on_read: Callable[[str, int, bool], Any] | None = None) -> Iterator[Any]:
    """Every capture of ``names`` as an :class:`~scrapy_iri.store.Observation`, in date order."""
    return as_observations(ordered_captures(names, reading, on_read))


def as_observations(captures: Iterator[Capture]) -> Iterator[Any]:
    """``captures`` as :class:`~scrapy_iri.store.Observation`\\ s."""
    from ..store import Observation

    for c in captures:
        yield Observation(c.url, c.status, c.target, c.context, c.location, c.time, c.max_age)


def learn_files(store: Any, names: list[str | CaptureFile], *, on_bad: Callable[[str, str], Any] | None = None,
                progress: Callable[[int], None] | None = None,
                on_read: Callable[[str, int, bool], Any] | None = None) -> tuple[Any, Reading]:
    """Learn ``store`` from the captures of ``names`` (names, or files :func:`capture_files` checked):
    (its :class:`LearnSummary`, what was bad).

    The captures reach ``store.learn`` as a stream, in date order; ``on_read`` hears of the
    captures read (:func:`ordered_captures`), ``progress(n)`` of the captures learned.
    """
    reading = Reading(on_bad=on_bad)
    summary = store.learn(observations(names, reading, on_read), progress=progress)
    return summary, reading


_LEARNED: dict[tuple[Any, ...], tuple[Any, list[tuple[str, str]]]] = {}


class LearnedStore:
    """The store an archive's own captures teach, learned in memory once per process that looks up.

    It travels to Dask and Spark workers as the names of its files (and
    their sizes and times, so a changed file is learned again), and every
    worker learns exactly what this process learns: the same captures, in
    the same order, through the same learner. Every file is read as WARC
    or WAT, as ``graph`` reads its links; :attr:`rejected` is what could
    not be learned.
    """

    def __init__(self, names: list[str]) -> None:
        files = []
        for name in names:
            files.extend(archive_files(name) if os.path.isdir(name) or not os.path.exists(name) else [name])
        self.names = tuple(files)
        self.files = tuple(os.path.abspath(path) for path in files)
        stamps = tuple((os.path.getsize(path), os.stat(path).st_mtime_ns) for path in self.files)
        self.cache_key = ("learned", self.files, stamps)

    def _learned(self) -> tuple[Any, list[tuple[str, str]]]:
        found = _LEARNED.get(self.cache_key)
        if found is None:
            from ..store import open_store

            store = open_store("memory:")
            reading = Reading()
            ordered = _in_date_order(((path, warc_captures) for path in self.files), reading)
            last: list[float] = []

            def tracked() -> Iterator[Capture]:
                capture = None
                for capture in ordered:
                    yield capture
                if capture is not None:
                    last.append(capture.time)

            store.learn(as_observations(tracked()))
            # the graph is the archive's as of its last capture: lifetimes and rule ages count to then
            if last:
                store.clock = lambda: last[0]
            found = (store, reading.bad)
            _LEARNED.clear()  # one archive's store at a time per process
            _LEARNED[self.cache_key] = found
        return found

    def store(self) -> Any:
        return self._learned()[0]

    @property
    def rejected(self) -> list[tuple[str, str]]:
        """The bad records and the captures that teach nothing, as ``(file:offset, reason)`` in file order,
        the files named as given (as ``graph`` reports its bad rows)."""
        names = dict(zip(self.files, self.names))
        rejected = []
        for where, reason in self._learned()[1]:
            path, _, offset = where.rpartition(":")
            rejected.append((f"{names.get(path, path)}:{offset}", reason))
        return rejected

    def representative(self, url: str) -> str:
        return self.store().representative(url)


def learned_store(src: str, on_stage: Callable[[str], Any] | None) -> LearnedStore:
    """The store ``src``'s own captures teach (the first pass of the protocol rung without a store)."""
    if on_stage is not None:
        on_stage(f"learning the protocol rung from the captures in {src}")
    learned = LearnedStore([src])
    learned.store()
    return learned


class LearnProgress:
    """Progress of ``store learn`` on stderr, in the manner of Scrapy's log of its stats: a line every
    ``every`` seconds (files and captures read, then captures learned, each with its rate), and a last one."""

    def __init__(self, err: Any, files: int, every: float = 2.0) -> None:
        import time

        self.err, self.files, self.every = err, files, every
        self.clock = time.perf_counter
        self.started = self.last = self.clock()
        self.read = self.captures = self.learned = 0
        self.reading_done: float | None = None
        self.shown = ""

    def on_read(self, path: str, captures: int, done: bool) -> None:
        """``captures`` more captures read from ``path`` (``done``: the file is read)."""
        self.read += done
        self.captures += captures
        self._tick()

    def on_learned(self, done: int) -> None:
        if self.reading_done is None:
            self.reading_done = self.clock()
        self.learned = done
        self._tick()

    def _tick(self, force: bool = False) -> None:
        now = self.clock()
        if force or now - self.last >= self.every:
            self.last = now
            line = self.line(now)
            if line != self.shown:
                print(f"scrapy-iri: store learn: {line}", file=self.err, flush=True)
            self.shown = line

    def line(self, now: float) -> str:
        if self.reading_done is None:
            rate = self.captures / max(now - self.started, 1e-9)
            return f"read {self.read:,} of {self.files:,} files, {self.captures:,} captures (at {rate:,.0f} captures/s)"
        rate = self.learned / max(now - self.reading_done, 1e-9)
        return f"learned {self.learned:,} of {self.captures:,} captures (at {rate:,.0f} captures/s)"

    def done(self) -> None:
        self._tick(force=True)
