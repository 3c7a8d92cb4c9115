"""Link graphs: every node in its canonical form, duplicate edges merged.

``scrapy-iri graph IN OUT`` reads a collected link graph (CSV or TSV with a
``source`` and a ``target`` column, or JSON Lines objects with those keys),
canonicalizes both ends of every edge at a rung of the comparison ladder and
writes each distinct canonical edge once, in first-seen order, as CSV.

Memory grows with the distinct nodes and edges kept for de-duplication, not
with the input: a node is a 16-byte BLAKE2b digest of its canonical form
mapped to a number, an edge is the pair of its nodes' numbers packed in one
int, and the cache of canonical forms is a bounded LRU. Two distinct nodes
share a digest with probability 2**-128; among n nodes, below n**2 / 2**129.
Bad rows are reported with their line numbers and counted, never dropped
silently. See docs/graph.md.
"""

from __future__ import annotations

import argparse
import csv
import errno
import gzip
import io
import json
import os
import re
import stat
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from functools import lru_cache
from hashlib import blake2b
from pathlib import Path
from typing import Any, TextIO

from .errors import IRIError
from .ladder import EquivalenceStore, Rung, canonicalize

__all__ = [
    "BadEdge",
    "GraphError",
    "GraphNormalizer",
    "GraphSummary",
    "normalize_graph",
    "normalize_graph_file",
    "register",
]

DEFAULT_CACHE_SIZE = 250_000  # about 60 MB with URLs of typical length: see docs/graph.md
FORMATS = ("csv", "tsv", "jsonl")
_SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
_PROGRESS_EVERY = 8192  # rows between two looks at the clock
_BUFFER = 1 << 20


class GraphError(Exception):
    """A fatal problem: unreadable input, a header without the columns, a failing store, --fail-fast."""


class BadEdge(ValueError):
    """An edge with an end that is not a valid absolute IRI (the message names which end)."""


@dataclass
class GraphSummary:
    """What a run read and wrote. Nodes are counted over valid edges only."""

    edges_in: int = 0  # valid edges read
    edges_out: int = 0  # distinct canonical edges written
    nodes_in: int = 0  # distinct original node strings
    nodes_out: int = 0  # distinct canonical nodes
    aliases: int = 0  # distinct originals that differ from their canonical form
    bad_rows: int = 0
    seconds: float = 0.0

    @property
    def duplicate_edges(self) -> int:
        """Edges merged into an earlier one (after canonicalization)."""
        return self.edges_in - self.edges_out

    @property
    def nodes_merged(self) -> int:
        """Distinct originals that collapsed into another one's canonical form."""
        return self.nodes_in - self.nodes_out

    @property
    def rows(self) -> int:
        return self.edges_in + self.bad_rows


class _Node:
    """A cached canonical form (and its CSV field), or why there is none; ``number`` once counted."""

    __slots__ = ("canon", "error", "field", "number")

    def __init__(self, canon: str | None, error: str | None = None) -> None:
        self.canon = canon
        self.error = error
        self.field = canon if canon is None else _csv_field(canon)
        self.number: int | None = None


_NEEDS_QUOTES = re.compile(r'[,"\r\n]')


def _csv_field(text: str) -> str:
    """``text`` as a CSV field: quoted when it holds a comma, a quote or a line break
    (``csv.writer`` would leave a lone CR unquoted with a ``\\n`` line terminator)."""
    return '"' + text.replace('"', '""') + '"' if _NEEDS_QUOTES.search(text) else text


def _digest(text: str) -> bytes:
    return blake2b(text.encode("utf-8"), digest_size=16).digest()


class GraphNormalizer:
    """Canonicalizes edges one at a time and remembers which it has seen.

    ``add(source, target)`` returns the canonical edge the first time it is
    seen and ``None`` for a duplicate; it raises :class:`BadEdge` when an end
    is not a valid absolute IRI. Defaults suit collected link graphs: the
    scheme rung, fragments dropped (they name no separate resource), lenient
    input (3987bis sec. 7, which never changes a valid IRI). ``on_alias`` is
    called once per distinct original that differs from its canonical form.
    """

    def __init__(
        self,
        rung: Rung | str = Rung.SCHEME,
        *,
        keep_fragment: bool = False,
        lenient: bool = True,
        store: EquivalenceStore | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        on_alias: Callable[[str, str], Any] | None = None,
    ) -> None:
        self.rung = level = Rung.parse(rung)
        if level is Rung.PROTOCOL and store is None:
            raise ValueError("the protocol rung needs an equivalence store: pass store=")
        self.on_alias = on_alias
        self.edges_in = 0
        self.bad_rows = 0
        self.aliases = 0
        self._edges: set[int] = set()  # node number pairs: source << 32 | target
        self._nodes_in: set[bytes] = set()  # digests of the originals
        self._numbers: dict[bytes, int] = {}  # digest of a canonical form -> its node number

        def compute(raw: str) -> _Node:
            if not isinstance(raw, str):
                raise TypeError(f"a node must be a str, not {type(raw).__name__}")
            if not raw or raw.isspace():
                return _Node(None, "empty")
            if not raw.isascii():
                try:
                    raw.encode("utf-8")
                except UnicodeEncodeError:
                    return _Node(None, "invalid UTF-8 in the input")
            try:
                return _Node(canonicalize(raw, level, keep_fragment=keep_fragment, lenient=lenient, store=store))
            except IRIError as exc:
                return _Node(None, str(exc))
            except Exception as exc:  # the store failed (only the protocol rung calls out)
                if store is None:
                    raise
                raise GraphError(f"the equivalence store failed: {exc}") from exc

        self._lookup = lru_cache(maxsize=cache_size)(compute) if cache_size > 0 else compute

    def add(self, source: str, target: str) -> tuple[str, str] | None:
        pair = self._add(source, target)
        return None if pair is None else (pair[0].canon, pair[1].canon)  # type: ignore[return-value]

    def _add(self, source: str, target: str) -> tuple[_Node, _Node] | None:
        s = self._lookup(source)
        t = self._lookup(target)
        first, second = s.number, t.number
        if first is None or second is None:  # a bad node, or a cache entry not counted yet
            if s.canon is None or t.canon is None:
                self.bad_rows += 1
                problems = [f"{end}: {node.error}" for end, node in (("source", s), ("target", t)) if node.error]
                raise BadEdge("; ".join(problems))
            if first is None:
                first = self._count(source, s)
            if second is None:
                second = self._count(target, t)
        self.edges_in += 1
        edges = self._edges
        size = len(edges)
        edges.add(first << 32 | second)
        return None if len(edges) == size else (s, t)

    def _count(self, raw: str, node: _Node) -> int:
        """The node number of a cache entry's canonical form, at its first use in a
        valid edge (again after an eviction); counts the original and its alias."""
        canon = node.canon
        assert canon is not None
        key = _digest(canon)
        numbers = self._numbers
        number = numbers.get(key)
        if number is None:
            number = len(numbers)
            if number >> 32:
                raise GraphError("more than 2**32 distinct nodes")
            numbers[key] = number
        node.number = number
        if canon != raw:
            key = _digest(raw)
        if key not in self._nodes_in:
            self._nodes_in.add(key)
            if canon != raw:
                self.aliases += 1
                if self.on_alias is not None:
                    self.on_alias(raw, canon)
        return number

    def normalize(
        self, edges: Iterable[tuple[str, str]], on_bad: Callable[[int, str, str, str], Any] | None = None
    ) -> Iterator[tuple[str, str]]:
        """The distinct canonical edges, first-seen order. A bad edge goes to
        ``on_bad(index, source, target, reason)`` (0-based index) or raises :class:`BadEdge`."""
        for index, (source, target) in enumerate(edges):
            try:
                edge = self.add(source, target)
            except BadEdge as exc:
                if on_bad is None:
                    raise
                on_bad(index, source, target, str(exc))
                continue
            if edge is not None:
                yield edge

    def summary(self, seconds: float = 0.0) -> GraphSummary:
        return GraphSummary(
            self.edges_in,
            len(self._edges),
            len(self._nodes_in),
            len(self._numbers),
            self.aliases,
            self.bad_rows,
            seconds,
        )


def normalize_graph(
    edges: Iterable[tuple[str, str]],
    rung: Rung | str = Rung.SCHEME,
    *,
    keep_fragment: bool = False,
    lenient: bool = True,
    store: EquivalenceStore | None = None,
    cache_size: int = DEFAULT_CACHE_SIZE,
    on_bad: Callable[[int, str, str, str], Any] | None = None,
    on_alias: Callable[[str, str], Any] | None = None,
) -> Iterator[tuple[str, str]]:
    """Stream the distinct canonical edges of ``edges`` (see :class:`GraphNormalizer`)."""
    normalizer = GraphNormalizer(
        rung, keep_fragment=keep_fragment, lenient=lenient, store=store, cache_size=cache_size, on_alias=on_alias
    )
    return normalizer.normalize(edges, on_bad)


# --- files -----------------------------------------------------------------

# A reader checks the header at once, then streams (line, source, target, original text, problem).
Row = tuple[int, str, str, str, "str | None"]
Reader = Callable[[Iterator[str], str], tuple[str, Iterator[Row]]]
_EMPTY = "empty input: expected a header with 'source' and 'target' columns"


def detect_format(name: str) -> str:
    """``csv``, ``tsv`` or ``jsonl`` from a file name (``.gz`` looked through); ``-`` is CSV."""
    if name == "-":
        return "csv"
    path = Path(name.lower())
    if path.suffix == ".gz":
        path = path.with_suffix("")
    try:
        return _SUFFIXES[path.suffix]
    except KeyError:
        choices = ",".join(FORMATS)
        raise GraphError(f"{name}: cannot tell the format from the name: use --format {{{choices}}}") from None


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
    if hasattr(raw, "peek") and raw.peek(2)[:2] == b"\x1f\x8b":
        stream = gzip.GzipFile(fileobj=raw, mode="rb")
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", errors="surrogateescape", newline=newline)
    return text, (raw if total is not None else None), total, closing


def _rename_target(name: str) -> tuple[str, os.stat_result | None] | None:
    """Where a temporary file is renamed to for ``name``: the resolved path (so a
    symlink keeps pointing at the new content) and the existing file's status, or
    None when ``name`` exists but is no regular file (a device, a FIFO): that is
    written directly, never replaced."""
    try:
        info = os.stat(name)  # follows symlinks
    except FileNotFoundError:
        return os.path.realpath(name), None  # a new file, or what a dangling symlink names
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, name) from None
    if not stat.S_ISREG(info.st_mode):
        return None
    target = os.path.realpath(name)
    try:
        same = os.path.samestat(os.stat(target), info)
    except OSError:
        same = False
    return (target, info) if same else None  # e.g. /proc/self/fd/N of a deleted file: write through it


def _temporary(target: str, name: str) -> tuple[str, int]:
    directory, base = os.path.split(target)
    for attempt in range(100):
        tmp = os.path.join(directory, f".{base}.{os.getpid()}.{attempt}.part")
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
        except FileExistsError:
            continue
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, name) from None
    raise OSError(errno.EEXIST, "cannot create a temporary file next to it", name)


@contextmanager
def _output(
    name: str, stdout: TextIO | None, *, errors: str = "strict", keep_on_error: bool = False
) -> Iterator[TextIO]:
    """A text stream for ``name``: stdout for ``-``; for a regular file (or a new
    one), a temporary file in the resolved target's directory that replaces it
    only when the block ends without an exception (or, with ``keep_on_error``,
    in any case); anything else (``/dev/null``, a FIFO) is written directly.
    Gzip-compressed when the name ends in ``.gz``."""
    if name == "-":
        stream = stdout if stdout is not None else sys.stdout
        yield stream
        stream.flush()
        return
    found = _rename_target(name)
    tmp = target = None
    if found is None:
        try:
            file = open(name, "wb", buffering=_BUFFER)  # noqa: SIM115 - closed below
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, name) from None
    else:
        target, info = found
        tmp, fd = _temporary(target, name)
        if info is not None:  # keep the permissions of the file it replaces
            with suppress(OSError):
                os.fchmod(fd, stat.S_IMODE(info.st_mode) & 0o777)
        file = os.fdopen(fd, "wb", buffering=_BUFFER)
    stream = None

    def finish() -> None:
        assert stream is not None
        stream.close()  # a GzipFile writes its trailer but leaves ``file`` open
        file.close()
        if tmp is not None:
            os.replace(tmp, target)  # type: ignore[arg-type]

    try:
        binary: Any = file
        base = os.path.basename(name)
        if base.lower().endswith(".gz"):
            binary = gzip.GzipFile(filename=base[:-3], mode="wb", compresslevel=6, fileobj=file)
        stream = io.TextIOWrapper(binary, encoding="utf-8", errors=errors, newline="")
        try:
            yield stream
        except BaseException:
            if keep_on_error:
                finish()
            raise
        finish()
    except BaseException:
        with suppress(Exception):
            if stream is not None:
                stream.close()
        with suppress(Exception):
            file.close()
        if tmp is not None:
            with suppress(OSError):
                os.unlink(tmp)
        raise


def _same_files(outputs: list[tuple[str, str]]) -> None:
    """Refuse two outputs (label, name) that are one regular (or new) file: they would overwrite each other."""
    seen: dict[str, tuple[str, str]] = {}
    for label, name in outputs:
        if name == "-":
            continue
        found = _rename_target(name)
        if found is None:  # /dev/null twice is fine
            continue
        other = seen.setdefault(found[0], (label, name))
        if other[0] != label:
            raise GraphError(f"{other[0]} {other[1]} and {label} {name} are the same file")


def normalize_graph_file(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    rung: Rung | str = Rung.SCHEME,
    *,
    fmt: str | None = None,
    keep_fragment: bool = False,
    lenient: bool = True,
    store: EquivalenceStore | None = None,
    cache_size: int = DEFAULT_CACHE_SIZE,
    aliases: str | os.PathLike[str] | None = None,
    bad_rows: str | os.PathLike[str] | None = None,
    fail_fast: bool = False,
    on_bad: Callable[[int, str], Any] | None = None,
    progress: Callable[[int, int | None, int | None], Any] | None = None,
    stdin: Any = None,
    stdout: TextIO | None = None,
) -> GraphSummary:
    """Read the graph in ``src``, write the canonical one to ``dst`` (CSV); ``-`` is stdin/stdout.

    ``on_bad(line, reason)`` hears of each bad row; ``bad_rows`` keeps their
    original text (after the input's header line, for CSV and TSV).
    ``fail_fast`` raises :class:`GraphError` at the first. An output that is
    a regular file (or new) is written to a temporary name next to the file
    it resolves to and renamed onto that at the end, so a failed run leaves
    no partial ``dst`` or ``aliases`` (``bad_rows`` is kept) and a symlink
    keeps pointing at the new content; any other output (``/dev/null``, a
    FIFO) is written directly. ``progress(rows, position, size)`` is called
    every few thousand rows and once at the end.
    """
    src, dst = os.fspath(src), os.fspath(dst)
    outputs = {"OUT": dst, "--aliases": aliases, "--bad-rows": bad_rows}
    named = [(label, os.fspath(value)) for label, value in outputs.items() if value is not None]
    to_stdout = [label for label, value in named if value == "-"]
    if len(to_stdout) > 1:
        raise GraphError(f"{' and '.join(to_stdout)} cannot both be stdout")
    _same_files(named)
    fmt = fmt or detect_format(src)
    if fmt not in _READERS:
        raise GraphError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    started = time.perf_counter()
    normalizer = GraphNormalizer(rung, keep_fragment=keep_fragment, lenient=lenient, store=store, cache_size=cache_size)
    name = "<stdin>" if src == "-" else src
    try:
        with ExitStack() as stack:
            # JSON Lines ends lines with LF only (a CR is JSON whitespace); CSV and TSV with CR, LF or CRLF.
            newline = "\n" if fmt == "jsonl" else ""
            text, position_of, total, closing = _open_input(src, stdin if stdin is not None else sys.stdin, newline)
            if closing:
                stack.callback(text.close)
            header, rows = _READERS[fmt](iter(text), name)  # the header is checked before any output exists
            out = stack.enter_context(_output(dst, stdout))
            write = out.write
            write("source,target\n")
            if aliases is not None:
                alias_write = stack.enter_context(_output(os.fspath(aliases), stdout)).write
                alias_write("original,canonical\n")

                def write_alias(original: str, canon: str) -> None:
                    alias_write(f"{_csv_field(original)},{_csv_field(canon)}\n")

                normalizer.on_alias = write_alias
            rejects = None
            if bad_rows is not None:
                # kept when the run fails (--fail-fast shows the row that stopped it)
                rejects = stack.enter_context(
                    _output(os.fspath(bad_rows), stdout, errors="surrogateescape", keep_on_error=True)
                )
                rejects.write(header)
            add = normalizer._add
            count = 0
            tell = position_of.tell if position_of is not None else (lambda: None)
            for line, source, target, raw, problem in rows:
                count += 1
                if progress is not None and not count % _PROGRESS_EVERY:
                    progress(count, tell(), total)
                if problem is None:
                    try:
                        pair = add(source, target)
                    except BadEdge as exc:
                        problem = str(exc)
                    else:
                        if pair is not None:
                            write(f"{pair[0].field},{pair[1].field}\n")
                        continue
                else:
                    normalizer.bad_rows += 1
                if rejects is not None:
                    rejects.write(raw if raw.endswith(("\n", "\r")) else raw + "\n")
                if on_bad is not None:
                    on_bad(line, problem)
                if fail_fast:
                    raise GraphError(f"{name}:{line}: stopped at the first bad row (--fail-fast)")
            if progress is not None:
                progress(count, tell(), total)
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:  # a truncated or corrupt gzip stream
        raise GraphError(f"{name}: {exc}") from exc
    return normalizer.summary(time.perf_counter() - started)


# --- command line ------------------------------------------------------------


def _rung(value: str) -> Rung:
    try:
        return Rung.parse(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _count(value: str) -> int:
    try:
        number = int(value.replace("_", ""))
    except ValueError:
        number = -1
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {value!r}")
    return number


def register(subparsers: Any) -> None:
    """Add the ``graph`` subcommand to the ``scrapy-iri`` parser."""
    p = subparsers.add_parser(
        "graph",
        help="canonicalize every node of a link graph and merge duplicate edges",
        description=(
            "Read a link graph (CSV or TSV with 'source' and 'target' header columns, or JSON Lines "
            "objects with those keys), write CSV source,target with every node in its canonical form "
            "and each distinct edge once, in first-seen order. Names ending in .gz are (de)compressed. "
            "Exit codes: 0 ok, 1 some rows were bad (reported, skipped), 2 usage or fatal error."
        ),
    )
    p.add_argument("input", metavar="IN", help="the link graph; '-' reads stdin")
    p.add_argument("output", metavar="OUT", help="where the CSV goes; '-' writes stdout")
    p.add_argument("--format", choices=FORMATS, help="input format (default: from IN's name; CSV for '-')")
    p.add_argument(
        "--rung",
        type=_rung,
        default=None,
        help="rung: string, syntax, scheme or protocol (default: scheme; protocol with --store)",
    )
    p.add_argument("--store", metavar="URI", help="equivalence store for the protocol rung (sqlite:///path, memory:)")
    p.add_argument("--keep-fragment", action="store_true", help="keep fragments (default: dropped)")
    p.add_argument("--strict", action="store_true", help="no 3987bis sec. 7 preprocessing of messy input")
    p.add_argument("--aliases", metavar="FILE", help="write CSV original,canonical for every original that changed")
    p.add_argument("--bad-rows", metavar="FILE", help="copy the original text of every bad row here")
    p.add_argument("--fail-fast", action="store_true", help="stop at the first bad row (exit 2, no OUT written)")
    p.add_argument(
        "--max-reported", type=_count, default=20, metavar="N", help="bad rows reported on stderr (default: 20)"
    )
    p.add_argument(
        "--cache-size",
        type=_count,
        default=DEFAULT_CACHE_SIZE,
        metavar="N",
        help=f"canonical forms cached, LRU (default: {DEFAULT_CACHE_SIZE:_}; 0: none)",
    )
    p.add_argument("--progress", action="store_true", help="always show progress on stderr (default: on a terminal)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress and no summary (bad rows still reported)")
    p.set_defaults(handler=cmd_graph)


class _Progress:
    """A progress line on stderr: redrawn in place on a terminal, a line every few seconds otherwise.

    On a terminal it appears only for large inputs (1 MiB or more, or of
    unknown size) that have already taken half a second; ``forced``
    (``--progress``) shows it whatever the input and the stream.
    """

    def __init__(self, err: TextIO, forced: bool) -> None:
        self.err = err
        self.forced = forced
        self.tty = _isatty(err)
        self.started = self.last = time.perf_counter()
        self.shown = False
        self.state: tuple[int, int | None, int | None] = (0, None, None)

    def __call__(self, rows: int, position: int | None, total: int | None) -> None:
        self.state = (rows, position, total)
        now = time.perf_counter()
        if not self.forced and ((total is not None and total < 1 << 20) or now - self.started < 0.5):
            return
        if self.shown and now - self.last < (0.25 if self.tty else 2.0):
            return
        self._draw(now)

    def _draw(self, now: float) -> None:
        self.last = now
        rows, position, total = self.state
        rate = rows / max(now - self.started, 1e-9)
        text = f"scrapy-iri: graph: {rows:,} rows, {rate:,.0f} rows/s"
        if position is not None and total:
            text += f", {position / 1e6:,.1f} of {total / 1e6:,.1f} MB read ({100 * position / total:.0f}%)"
        if self.tty:
            self.err.write(f"\r{text}\x1b[K")
            self.err.flush()
        else:
            print(text, file=self.err, flush=True)
        self.shown = True

    def clear(self) -> None:
        """Make room for a message on a terminal (the next update redraws the line)."""
        if self.shown and self.tty:
            self.err.write("\r\x1b[K")

    def done(self) -> None:
        """The final figures (when the line was shown at all), and the end of the line."""
        if self.shown or self.forced:
            self._draw(time.perf_counter())
        if self.shown and self.tty:
            self.err.write("\n")


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _open_store(uri: str) -> Any:
    try:
        from .store import open_store  # type: ignore[attr-defined]
    except ImportError:
        raise GraphError(
            "--store needs scrapy_iri.store.open_store, which this installation does not have yet"
        ) from None
    try:
        try:
            return open_store(uri, create=False)  # a mistyped path must not become an empty store
        except TypeError:  # a backend without the option
            return open_store(uri)
    except (ValueError, OSError) as exc:
        raise GraphError(f"--store {uri}: {exc}") from None


def cmd_graph(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    rung = args.rung if args.rung is not None else (Rung.PROTOCOL if args.store else Rung.SCHEME)
    if rung is Rung.PROTOCOL and not args.store:
        print("scrapy-iri: graph: the protocol rung needs a store: add --store URI", file=err)
        return 2
    if args.store and rung is not Rung.PROTOCOL:
        print(f"scrapy-iri: graph: --store is only used by the protocol rung, not {rung.name.lower()}", file=err)
        return 2
    suffix = Path(args.output.lower().removesuffix(".gz")).suffix
    if suffix in (".tsv", ".tab", ".jsonl", ".ndjson"):
        print(f"scrapy-iri: graph: OUT is always CSV: name it .csv, not {suffix}", file=err)
        return 2
    name = "<stdin>" if args.input == "-" else args.input
    reported = 0

    def on_bad(line: int, reason: str) -> None:
        nonlocal reported
        if reported < args.max_reported or args.fail_fast:
            if progress is not None:
                progress.clear()
            print(f"scrapy-iri: {name}:{line}: {reason}", file=err)
            reported += 1

    progress = None if args.quiet else _Progress(err, args.progress)
    if progress is not None and not (progress.forced or progress.tty):
        progress = None
    store = None
    try:
        if args.store:
            store = _open_store(args.store)
        summary = normalize_graph_file(
            args.input,
            args.output,
            rung,
            fmt=args.format,
            keep_fragment=args.keep_fragment,
            lenient=not args.strict,
            store=store,
            cache_size=args.cache_size,
            aliases=args.aliases,
            bad_rows=args.bad_rows,
            fail_fast=args.fail_fast,
            on_bad=on_bad,
            progress=progress,
            stdout=out,
        )
    except (GraphError, OSError, KeyboardInterrupt) as exc:
        if progress is not None:
            progress.clear()
        if isinstance(exc, KeyboardInterrupt):
            raise
        if isinstance(exc, OSError):
            where = f"{exc.filename}: " if exc.filename else ""
            print(f"scrapy-iri: {where}{exc.strerror or exc}", file=err)
        else:
            print(f"scrapy-iri: {exc}", file=err)
        return 2
    finally:
        if store is not None and hasattr(store, "close"):
            store.close()
    if progress is not None:
        progress.done()
    hidden = summary.bad_rows - reported
    if hidden > 0:
        kept = f" (all kept in {args.bad_rows})" if args.bad_rows else " (--bad-rows FILE keeps them all)"
        print(f"scrapy-iri: {name}: {hidden:,} more bad rows not shown{kept}", file=err)
    if not args.quiet:
        print(format_summary(summary, rung), file=err)
    return 1 if summary.bad_rows else 0


def format_summary(summary: GraphSummary, rung: Rung | str = Rung.SCHEME) -> str:
    rate = summary.rows / summary.seconds if summary.seconds > 0 else 0.0
    lines = [
        f"scrapy-iri: graph: {summary.rows:,} rows in {summary.seconds:.2f} s ({rate:,.0f} rows/s),"
        f" {Rung.parse(rung).name.lower()} rung"
    ]
    for label, value in (
        ("edges in", summary.edges_in),
        ("edges out", summary.edges_out),
        ("duplicate edges merged", summary.duplicate_edges),
        ("distinct nodes in", summary.nodes_in),
        ("distinct nodes out", summary.nodes_out),
        ("nodes merged", summary.nodes_merged),
        ("bad rows", summary.bad_rows),
    ):
        lines.append(f"  {label:<24}{value:>14,}")
    return "\n".join(lines)
