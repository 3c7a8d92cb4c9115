"""Canonicalizing edges: GraphNormalizer, its node cache and compact edge de-duplication, the summary."""

from __future__ import annotations

import gzip
import os
import re
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from functools import lru_cache
from hashlib import blake2b
from typing import Any, TextIO

from .._ladder import Representatives, Rung
from ..errors import BadEdge, GraphError
from ._outputs import _not_the_input, _output, _same_files
from ._engines import ENGINES, engine_rows
from ._nodes import canonical_or_error, iri_form
from ._parquet import ParquetEdges, is_parquet_name, parquet_rows, row_text
from ._readers import _READERS, FORMATS, Row, _open_input, detect_format

DEFAULT_CACHE_SIZE = 250_000  # about 60 MB with URLs of typical length: see docs/graph.md
_PROGRESS_EVERY = 8192  # rows between two looks at the clock


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


FORMS = ("uri", "iri")


class _Node:
    """A cached canonical form (and its CSV field), or why there is none; ``number`` once counted."""

    __slots__ = ("canon", "error", "field", "number", "shown")

    def __init__(self, canon: str | None, error: str | None = None, shown: str | None = None) -> None:
        self.canon = canon
        self.error = error
        self.shown = shown or canon  # as written out: the canonical URI, or its IRI form
        self.field = canon if canon is None else _csv_field(self.shown)  # type: ignore[arg-type]
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
    ``form="iri"`` writes the nodes of file outputs in IRI form (3987bis 3.7);
    edges are merged on the canonical URI either way.
    """

    def __init__(
        self,
        rung: Rung | str = Rung.SCHEME,
        *,
        keep_fragment: bool = False,
        lenient: bool = True,
        store: Representatives | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        on_alias: Callable[[str, str], Any] | None = None,
        form: str = "uri",
    ) -> None:
        self.rung = level = Rung.parse(rung)
        if form not in FORMS:
            raise ValueError(f"form must be one of {', '.join(FORMS)}, not {form!r}")
        show = iri_form if form == "iri" else None
        if level is Rung.PROTOCOL and store is None:
            raise ValueError("the protocol rung needs an equivalence store: pass store=")
        self.on_alias = on_alias
        self.edges_in = 0
        self.bad_rows = 0
        self.aliases = 0
        self._edges: set[int] = set()  # node number pairs: source << 32 | target
        self._nodes_in: set[bytes] = set()  # digests of the originals
        self._numbers: dict[bytes, int] = {}  # digest of a canonical form -> its node number
        self._show = show

        def compute(raw: str) -> _Node:
            canon, error = canonical_or_error(raw, level, keep_fragment, lenient, store)
            return _Node(canon, error, show(canon) if show is not None and canon is not None else None)

        self._lookup = lru_cache(maxsize=cache_size)(compute) if cache_size > 0 else compute

        def known(raw: str, canon: str) -> _Node:  # a node an engine computed (the LRU keeps its number)
            return _Node(canon, None, show(canon) if show is not None else None)

        self._node = lru_cache(maxsize=cache_size)(known) if cache_size > 0 else known

    def _engine_node(self, canon: str | None, error: str | None) -> _Node:
        """The node of a value an engine canonicalized: ``canon``, or ``error`` when it has none."""
        show = self._show
        return _Node(canon, error, show(canon) if show is not None and canon is not None else None)

    def add(self, source: str, target: str) -> tuple[str, str] | None:
        pair = self._add(source, target)
        return None if pair is None else (pair[0].canon, pair[1].canon)  # type: ignore[return-value]

    def _add_computed(self, source: str, target: str, s_canon: str, t_canon: str) -> tuple[_Node, _Node] | None:
        """:meth:`_add` for an edge whose ends an engine has canonicalized already."""
        return self._add_nodes(source, target, self._node(source, s_canon), self._node(target, t_canon))

    def _add(self, source: str, target: str) -> tuple[_Node, _Node] | None:
        return self._add_nodes(source, target, self._lookup(source), self._lookup(target))

    def _add_nodes(self, source: str, target: str, s: _Node, t: _Node) -> tuple[_Node, _Node] | None:
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
    store: Representatives | None = None,
    cache_size: int = DEFAULT_CACHE_SIZE,
    on_bad: Callable[[int, str, str, str], Any] | None = None,
    on_alias: Callable[[str, str], Any] | None = None,
) -> Iterator[tuple[str, str]]:
    """Stream the distinct canonical edges of ``edges`` (see :class:`GraphNormalizer`)."""
    normalizer = GraphNormalizer(
        rung, keep_fragment=keep_fragment, lenient=lenient, store=store, cache_size=cache_size, on_alias=on_alias
    )
    return normalizer.normalize(edges, on_bad)


class _Counted:
    """Rows passed through, counted, with a look at the progress every few thousand."""

    def __init__(
        self,
        rows: Iterator[Row],
        progress: Callable[[int, int | None, int | None], Any] | None,
        tell: Callable[[], int | None],
        total: int | None,
    ) -> None:
        self.source, self.progress, self.tell, self.total = rows, progress, tell, total
        self.rows = 0

    def __iter__(self) -> Iterator[Row]:
        progress = self.progress
        count = 0
        for row in self.source:
            count += 1
            if progress is not None and not count % _PROGRESS_EVERY:
                self.rows = count
                progress(count, self.tell(), self.total)
            yield row
        self.rows = count


def _is_parquet_out(name: str) -> bool:
    return name != "-" and is_parquet_name(name)


def normalize_graph_file(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    rung: Rung | str = Rung.SCHEME,
    *,
    fmt: str | None = None,
    keep_fragment: bool = False,
    lenient: bool = True,
    store: Representatives | str | None = None,
    cache_size: int = DEFAULT_CACHE_SIZE,
    aliases: str | os.PathLike[str] | None = None,
    bad_rows: str | os.PathLike[str] | None = None,
    fail_fast: bool = False,
    form: str = "uri",
    engine: str = "local",
    workers: int | None = None,
    identity: bool = False,
    on_bad: Callable[[int, str], Any] | None = None,
    progress: Callable[[int, int | None, int | None], Any] | None = None,
    on_stage: Callable[[str], Any] | None = None,
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
    FIFO) is written directly. ``form="iri"`` writes nodes in IRI form (see
    :class:`GraphNormalizer`). ``progress(rows, position, size)`` is called
    every few thousand rows and once at the end.
    """
    src, dst = os.fspath(src), os.fspath(dst)
    outputs = {"OUT": dst, "--aliases": aliases, "--bad-rows": bad_rows}
    named = [(label, os.fspath(value)) for label, value in outputs.items() if value is not None]
    to_stdout = [label for label, value in named if value == "-"]
    if len(to_stdout) > 1:
        raise GraphError(f"{' and '.join(to_stdout)} cannot both be stdout")
    _not_the_input(src, named)
    _same_files(named)
    fmt = fmt or detect_format(src)
    if fmt not in FORMATS:
        raise GraphError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if fmt == "parquet" and src == "-":
        raise GraphError("Parquet cannot be read from stdin: name the file or directory")
    if engine not in ENGINES:
        raise GraphError(f"unknown engine {engine!r}: choose one of {', '.join(ENGINES)}")
    if engine != "local" and store is not None and not isinstance(store, str):
        raise GraphError(f"--engine {engine}: give the store as a URI, which every worker opens")
    started = time.perf_counter()
    opened = None
    if isinstance(store, str) and engine == "local" and Rung.parse(rung) is Rung.PROTOCOL:
        from ..store import open_store

        try:
            opened = store = open_store(store, create=False)
        except (ValueError, OSError) as exc:
            raise GraphError(f"store {store}: {exc}") from None
    computed = engine != "local" or identity  # canonical forms come with the rows
    normalizer = GraphNormalizer(
        Rung.SCHEME if computed else rung,
        keep_fragment=keep_fragment,
        lenient=lenient,
        store=None if computed else store,  # type: ignore[arg-type]
        cache_size=cache_size,
        form=form,
    )
    normalizer.rung = Rung.parse(rung)
    name = "<stdin>" if src == "-" else src
    try:
        with ExitStack() as stack:
            if opened is not None and hasattr(opened, "close"):
                stack.callback(opened.close)
            tell: Callable[[], int | None] = lambda: None  # noqa: E731
            total = None
            if fmt == "parquet":
                header, rows = parquet_rows(src)
            else:
                # JSON Lines ends lines with LF only (a CR is JSON whitespace); CSV and TSV with CR, LF or CRLF.
                newline = "\n" if fmt == "jsonl" else ""
                text, position_of, total, closing = _open_input(src, stdin if stdin is not None else sys.stdin, newline)
                if closing:
                    stack.callback(text.close)
                header, rows = _READERS[fmt](iter(text), name)  # the header is checked before any output exists
                if position_of is not None:
                    tell = position_of.tell
            counted = _Counted(rows, progress, tell, total)
            if not computed:
                items: Iterator[Any] = ((*row, None, None) for row in counted)
            elif engine == "local":
                items = ((*row, row[1], row[2]) for row in counted)
            else:
                options = {
                    "rung": Rung.parse(rung),
                    "keep_fragment": keep_fragment,
                    "lenient": lenient,
                    "store": store if Rung.parse(rung) is Rung.PROTOCOL else None,
                    "aliases": None,
                    "cache_size": cache_size or 0,
                    "identity": identity,
                }
                items = (
                    (*row, None, None)
                    for row in engine_rows(
                        engine, counted, normalizer, workers=workers, options=options, cache_size=cache_size,
                        on_stage=on_stage,
                    )
                )
            if _is_parquet_out(dst):
                edges_out = ParquetEdges(dst)
                stack.push(lambda kind, exc, tb: edges_out.abort() if kind is not None else edges_out.commit())

                def write_edge(s: _Node, t: _Node) -> None:
                    edges_out.write(s.shown, t.shown)  # type: ignore[arg-type]

            else:
                out = stack.enter_context(_output(dst, stdout))
                write = out.write
                write("source,target\n")

                def write_edge(s: _Node, t: _Node) -> None:
                    write(f"{s.field},{t.field}\n")

            if aliases is not None:
                alias_write = stack.enter_context(_output(os.fspath(aliases), stdout)).write
                alias_write("original,canonical\n")

                def write_alias(original: str, canon: str) -> None:
                    shown = iri_form(canon) if form == "iri" else canon
                    alias_write(f"{_csv_field(original)},{_csv_field(shown)}\n")

                normalizer.on_alias = write_alias
            rejects = None
            if bad_rows is not None:
                # kept when the run fails (--fail-fast shows the row that stopped it)
                rejects = stack.enter_context(
                    _output(os.fspath(bad_rows), stdout, errors="surrogateescape", keep_on_error=True)
                )
                rejects.write(header)
            add = normalizer._add
            add_computed = normalizer._add_computed
            for line, source, target, raw, problem, s_canon, t_canon in items:
                if problem is None:
                    try:
                        pair = add(source, target) if s_canon is None else add_computed(source, target, s_canon, t_canon)
                    except BadEdge as exc:
                        problem = str(exc)
                    else:
                        if pair is not None:
                            write_edge(*pair)
                        continue
                else:
                    normalizer.bad_rows += 1
                if rejects is not None:
                    if not raw:  # a Parquet row: its ends as CSV
                        raw = row_text(source, target)
                    rejects.write(raw if raw.endswith(("\n", "\r")) else raw + "\n")
                if on_bad is not None:
                    on_bad(line, problem)
                if fail_fast:
                    raise GraphError(f"{name}:{line}: stopped at the first bad row (--fail-fast)")
            if progress is not None:
                progress(counted.rows, tell(), total)
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:  # a truncated or corrupt gzip stream
        raise GraphError(f"{name}: {exc}") from exc
    return normalizer.summary(time.perf_counter() - started)
