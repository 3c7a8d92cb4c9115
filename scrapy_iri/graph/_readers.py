"""Reading link graphs: CSV, TSV and JSON Lines records, gzip, line numbers, record caps."""

from __future__ import annotations

import csv
import bz2
import gzip
import lzma
import io
import json
import os
import stat
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from ..errors import GraphError


MAGIC_BYTES = 6
"""The first bytes of a file that :func:`compression` looks at."""


def compression(start: bytes) -> str | None:
    """``gzip``, ``bzip2`` or ``xz`` when a file's first bytes are that compression's magic number, else None."""
    if start[:2] == b"\x1f\x8b":
        return "gzip"
    if start[:3] == b"BZh":
        return "bzip2"
    if start[:6] == b"\xfd7zXZ\x00":
        return "xz"
    return None


class CorruptBzip2(Exception):
    """bzip2 data that does not decompress (the ``bz2`` module says only ``OSError("Invalid data stream")``)."""


def _bzip2_checked(method: Callable[..., Any]) -> Callable[..., Any]:
    def checked(self: Any, *args: Any) -> Any:
        try:
            return method(self, *args)
        except OSError as exc:
            if exc.errno is None and exc.filename is None:  # the decompressor's, not the file's
                raise CorruptBzip2(str(exc)) from exc
            raise

    return checked


class _Bzip2File(bz2.BZ2File):
    """A :class:`bz2.BZ2File` whose corrupt data is a :class:`CorruptBzip2`."""

    read = _bzip2_checked(bz2.BZ2File.read)
    read1 = _bzip2_checked(bz2.BZ2File.read1)
    readinto = _bzip2_checked(bz2.BZ2File.readinto)
    readline = _bzip2_checked(bz2.BZ2File.readline)
    peek = _bzip2_checked(bz2.BZ2File.peek)


_UNPACKERS: dict[str, Callable[[Any], Any]] = {
    "gzip": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    "bzip2": lambda raw: _Bzip2File(raw, mode="rb"),
    "xz": lambda raw: lzma.LZMAFile(raw, mode="rb"),
}
OPENERS: dict[str | None, Callable[..., Any]] = {None: open, "gzip": gzip.open, "bzip2": bz2.open, "xz": lzma.open}
"""The ``open`` of each :func:`compression` (None: not compressed)."""

_SUFFIXES = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
}
_BUFFER = 1 << 20


# --- files -----------------------------------------------------------------

# A reader checks the header at once, then streams (line, source, target, original text, problem).
Row = tuple[int, str, str, str, "str | None"]
Reader = Callable[[Iterator[str], str], tuple[str, Iterator[Row]]]
_EMPTY = "empty input: expected a header with 'source' and 'target' columns"


def _columns(header: list[str], name: str) -> tuple[int, int]:
    names = [field.strip().lower() for field in header]
    found = []
    for column in ("source", "target"):
        count = names.count(column)
        if count != 1:
            shown = ",".join(header) if any(header) else "(empty)"
            problem = "no" if count == 0 else "more than one"
            raise GraphError(f"{name}:1: the header has {problem} {column!r} column (header: {shown})")
        found.append(names.index(column))
    return found[0], found[1]


# A record may run over this many physical lines or characters at most: past
# either, an opening quote is taken to be unbalanced (see _csv_record).
_MAX_RECORD_LINES = 1000
_MAX_RECORD_CHARS = 1 << 20


def _csv_record(line: str, lines: Iterator[str]) -> tuple[list[str], list[str] | None, str | None]:
    """A record with quotes: (its physical lines, fields or None, error).

    The csv module reads it (strict), pulling more lines from ``lines`` only
    while a quoted field is open. A field is quoted only when it starts with
    ``"``; a ``"`` inside an unquoted field is a literal character, as in the
    csv module. A record may span at most ``_MAX_RECORD_LINES`` lines and
    ``_MAX_RECORD_CHARS`` characters.
    """
    parts = [line]
    status: list[str] = []  # "capped" or "eof" when the feed stopped early

    def feed() -> Iterator[str]:
        yield line
        size = len(line)
        while True:
            if len(parts) >= _MAX_RECORD_LINES or size >= _MAX_RECORD_CHARS:
                status.append("capped")
                return
            more = next(lines, None)
            if more is None:
                status.append("eof")
                return
            parts.append(more)
            size += len(more)
            yield more

    try:
        return parts, next(csv.reader(feed(), strict=True), []), None
    except csv.Error as exc:
        if status == ["capped"]:
            limit = f"{_MAX_RECORD_LINES:,} lines or {_MAX_RECORD_CHARS >> 20} MiB"
            return parts, None, f"CSV: a quoted field runs over more than {limit} (is a quote missing?)"
        if status == ["eof"]:
            return parts, None, "CSV: a quoted field is still open at the end of the input (is a quote missing?)"
        return parts, None, f"CSV: {exc}"


def _line_breaks(parts: list[str]) -> int:
    """The line numbers a record's lines advance past its first: LF line ends only
    (a CRLF is one); a lone CR inside a quoted field does not count."""
    return sum(1 for part in parts[:-1] if part.endswith("\n"))


def _pushback(lines: Iterator[str], pending: list[str]) -> Iterator[str]:
    """``lines``, with the lines in ``pending`` (a stack: the last one first) read before."""
    while True:
        while pending:
            yield pending.pop()
        raw = next(lines, None)
        if raw is None:
            return
        yield raw


def _csv_rows(lines: Iterator[str], name: str) -> tuple[str, Iterator[Row]]:
    first = next(lines, "")
    if not first:
        raise GraphError(f"{name}: {_EMPTY}")
    if '"' in first:
        parts, header, error = _csv_record(first, lines)
        if header is None:
            raise GraphError(f"{name}:1: unreadable header: {error}")
        header_raw, number = "".join(parts), 1 + _line_breaks(parts)
    else:
        header_raw, number, header = first, 1, first.rstrip("\r\n").split(",")
    si, ti = _columns(header, name)
    width = len(header)

    def rows(number: int) -> Iterator[Row]:
        # ``number`` is the line of ``raw``: LF line ends count, and a lone CR where it ends a record.
        source = lines
        pending: list[str] | None = None
        reader = csv.reader
        while True:
            for raw in source:
                number += 1
                if '"' not in raw:  # the common case: no quoting, the fields are between the commas
                    fields = raw.rstrip("\r\n").split(",")
                    if len(fields) == width:
                        yield number, fields[si], fields[ti], raw, None
                    elif fields != [""]:  # an empty line holds no edge
                        yield number, "", "", raw, f"expected {width} fields, found {len(fields)}"
                    continue
                try:  # most quoted records end on their line (if not, strict mode fails at its end)
                    parts, record, error = [raw], next(reader((raw,), strict=True)), None
                except csv.Error:
                    parts, record, error = _csv_record(raw, source)
                if record is not None and len(record) != width:
                    error = f"expected {width} fields, found {len(record)}"
                if error is None:
                    assert record is not None
                    yield number, record[si], record[ti], "".join(parts), None
                    number += _line_breaks(parts)
                    continue
                if len(parts) == 1:
                    yield number, "", "", raw, error
                    continue
                # A bad record over several lines: only its first line is bad, and
                # reading goes on at the next one, so one stray quote costs one row.
                spanned = f"read as one record over {len(parts):,} lines; only this line is skipped"
                yield number, "", "", raw, f"{error} ({spanned})"
                if pending is None:
                    pending = []
                    source = _pushback(source, pending)
                    pending.extend(reversed(parts[1:]))
                    break  # go on with the new source
                pending.extend(reversed(parts[1:]))
            else:
                return

    return header_raw, rows(number)


def _tsv_rows(lines: Iterator[str], name: str) -> tuple[str, Iterator[Row]]:
    first = next(lines, "")
    if not first:
        raise GraphError(f"{name}: {_EMPTY}")
    header = first.rstrip("\r\n").split("\t")
    si, ti = _columns(header, name)
    width = len(header)

    def rows() -> Iterator[Row]:
        for number, raw in enumerate(lines, 2):
            fields = raw.rstrip("\r\n").split("\t")
            if len(fields) == width:
                yield number, fields[si], fields[ti], raw, None
            elif fields != [""]:  # an empty line holds no edge
                yield number, "", "", raw, f"expected {width} tab-separated fields, found {len(fields)}"

    return first, rows()


def _jsonl_rows(lines: Iterator[str], name: str) -> tuple[str, Iterator[Row]]:
    def rows() -> Iterator[Row]:
        loads = json.loads
        for number, raw in enumerate(lines, 1):
            try:
                obj = loads(raw)
            except ValueError as exc:
                if raw.strip():  # an empty line holds no edge
                    yield number, "", "", raw, f"invalid JSON: {exc}"
                continue
            except RecursionError:  # arrays or objects nested deeper than the parser goes
                yield number, "", "", raw, "invalid JSON: nested too deeply"
                continue
            if type(obj) is not dict:
                yield number, "", "", raw, "not a JSON object"
                continue
            source = obj.get("source")
            target = obj.get("target")
            if type(source) is str and type(target) is str:
                yield number, source, target, raw, None
                continue
            problems = []
            for key, value in (("source", source), ("target", target)):
                if value is None and key not in obj:
                    problems.append(f"no {key!r} key")
                elif type(value) is not str:
                    problems.append(f"{key}: not a string")
            yield number, "", "", raw, "; ".join(problems)

    return "", rows()


_READERS: dict[str, Reader] = {"csv": _csv_rows, "tsv": _tsv_rows, "jsonl": _jsonl_rows}


def _open_input(name: str, stdin: Any, newline: str) -> tuple[TextIO, Any, int | None, bool]:
    """(text, binary file to ask for the position, total size or None, close it?)."""
    if name == "-":
        raw = getattr(stdin, "buffer", None)
        if raw is None:  # a text stream without bytes underneath (tests)
            return stdin, None, None, False
        closing = False
    else:
        raw = open(name, "rb", buffering=_BUFFER)  # noqa: SIM115 - closed by the caller
        closing = True
    total = None
    try:
        info = os.fstat(raw.fileno())
        if stat.S_ISREG(info.st_mode):
            total = info.st_size
    except (OSError, io.UnsupportedOperation, AttributeError):
        pass
    stream = raw
    packed = compression(raw.peek(MAGIC_BYTES)[:MAGIC_BYTES] if hasattr(raw, "peek") else b"")
    if packed is not None:
        stream = _UNPACKERS[packed](raw)
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", errors="surrogateescape", newline=newline)
    return text, (raw if total is not None else None), total, closing
