"""``normalize_graph_file``: one run from an input file to the output files, in small parts."""

from __future__ import annotations

import gzip
import lzma
import os
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, TextIO

from .._ladder import Representatives, Rung
from ..errors import BadEdge, GraphError
from ._engines import ENGINES, engine_rows
from ._inputs import ARCHIVE_FORMATS, FORMATS, GraphInput, detect_format, open_input
from ._readers import CorruptBzip2
from ._revisits import Originals
from ._normalize import DEFAULT_CACHE_SIZE, GraphNormalizer, GraphSummary, _csv_field
from ._nodes import iri_form
from ._outputs import _not_the_input, _output, _same_files
from ._parquet import ParquetEdges, is_parquet_name

_PROGRESS_EVERY = 8192  # rows between two looks at the clock
REDIRECTS = ("skip", "edges")


@dataclass(frozen=True)
class GraphOptions:
    """How a file is normalized (the keyword arguments of :func:`normalize_graph_file`)."""

    rung: Rung | str = Rung.SCHEME
    fmt: str | None = None
    keep_fragment: bool = False
    lenient: bool = True
    store: Representatives | str | None = None
    cache_size: int = DEFAULT_CACHE_SIZE
    aliases: str | os.PathLike[str] | None = None
    bad_rows: str | os.PathLike[str] | None = None
    fail_fast: bool = False
    form: str = "uri"
    engine: str = "local"
    workers: int | None = None
    identity: bool = False
    redirects: str = "skip"

    def __post_init__(self) -> None:
        object.__setattr__(self, "rung", Rung.parse(self.rung))
        if self.engine not in ENGINES:
            raise GraphError(f"unknown engine {self.engine!r}: choose one of {', '.join(ENGINES)}")
        if self.fmt is not None and self.fmt not in FORMATS:
            raise GraphError(f"unknown format {self.fmt!r}: choose one of {', '.join(FORMATS)}")
        if self.redirects not in REDIRECTS:
            raise GraphError(f"redirects must be one of {', '.join(REDIRECTS)}, not {self.redirects!r}")
        if self.engine != "local" and self.store is not None and not isinstance(self.store, str):
            raise GraphError(f"--engine {self.engine}: give the store as a URI, which every worker opens")


@dataclass
class Hooks:
    """Who hears of a run: bad rows, progress, stages; the standard streams for ``-``."""

    on_bad: Callable[[Any, str], Any] | None = None
    progress: Callable[[int, int | None, int | None], Any] | None = None
    on_stage: Callable[[str], Any] | None = None
    stdin: Any = None
    stdout: TextIO | None = None


def normalize_graph_file(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    rung: Rung | str = Rung.SCHEME,
    *,
    on_bad: Callable[[Any, str], Any] | None = None,
    progress: Callable[[int, int | None, int | None], Any] | None = None,
    on_stage: Callable[[str], Any] | None = None,
    stdin: Any = None,
    stdout: TextIO | None = None,
    **options: Any,
) -> GraphSummary:
    """Read the graph in ``src``, write the canonical one to ``dst``; ``-`` is stdin/stdout.

    ``options`` are the fields of :class:`GraphOptions`. ``src`` is an edge
    file (CSV, TSV, JSON Lines, Parquet) or a web archive (WARC, WAT; a
    directory or glob of them), whose HTML captures give the links.
    ``on_bad(where, reason)`` hears of each bad row (``where``: a line
    number, or ``file:offset`` in an archive); ``bad_rows`` keeps them all.
    ``fail_fast`` raises :class:`GraphError` at the first. An output that
    is a regular file (or new) is written to a temporary name next to the
    file it resolves to and renamed onto that at the end, so a failed run
    leaves no partial ``dst`` or ``aliases`` (``bad_rows`` is kept).
    ``progress(rows, position, size)`` is called every few thousand rows
    and once at the end.
    """
    run = GraphOptions(rung=rung, **options)
    return _Run(os.fspath(src), os.fspath(dst), run, Hooks(on_bad, progress, on_stage, stdin, stdout)).run()


def _check_outputs(src: str, dst: str, options: GraphOptions) -> None:
    outputs = {"OUT": dst, "--aliases": options.aliases, "--bad-rows": options.bad_rows}
    named = [(label, os.fspath(value)) for label, value in outputs.items() if value is not None]
    to_stdout = [label for label, value in named if value == "-"]
    if len(to_stdout) > 1:
        raise GraphError(f"{' and '.join(to_stdout)} cannot both be stdout")
    _not_the_input(src, named)
    _same_files(named)


class _Counted:
    """Rows passed through, counted, with a look at the progress every few thousand."""

    def __init__(self, source: GraphInput, progress: Callable[[int, int | None, int | None], Any] | None) -> None:
        self.source, self.progress = source, progress
        self.rows = 0

    def __iter__(self) -> Iterator[Any]:
        progress, tell, total = self.progress, self.source.tell, self.source.total
        count = 0
        for row in self.source.rows:
            count += 1
            if progress is not None and not count % _PROGRESS_EVERY:
                self.rows = count
                progress(count, tell(), total)
            yield row
        self.rows = count


class _Edges:
    """Where distinct edges go: CSV (a file or stdout) or Parquet, with the input's columns."""

    def __init__(self, dst: str, columns: tuple[str, ...], stdout: TextIO | None, stack: ExitStack) -> None:
        self.extra = len(columns) > 2
        if dst != "-" and is_parquet_name(dst):
            parquet = ParquetEdges(dst, columns)
            stack.push(lambda kind, exc, tb: parquet.abort() if kind is not None else parquet.commit())
            self.write = self._parquet_writer(parquet)
        else:
            out = stack.enter_context(_output(dst, stdout))
            out.write(",".join(columns) + "\n")
            self.write = self._csv_writer(out.write)

    def _parquet_writer(self, parquet: ParquetEdges) -> Callable[..., None]:
        if not self.extra:
            return lambda row, s, t: parquet.write(s.shown, t.shown)
        return lambda row, s, t: parquet.write(s.shown, t.shown, row[5], row[6], row[1], row[2])

    def _csv_writer(self, write: Callable[[str], Any]) -> Callable[..., None]:
        if not self.extra:
            return lambda row, s, t: write(f"{s.field},{t.field}\n")
        field = _csv_field
        return lambda row, s, t: write(
            f"{s.field},{t.field},{field(row[5])},{row[6]},{field(row[1])},{field(row[2])}\n"
        )


class _Run:
    """One run: the outputs checked, the store opened (or learned), the input read, the edges merged."""

    def __init__(self, src: str, dst: str, options: GraphOptions, hooks: Hooks) -> None:
        self.src, self.dst, self.options, self.hooks = src, dst, options, hooks
        self.name = "<stdin>" if src == "-" else src
        self.rejected: list[tuple[str, str]] = []  # (file:offset, reason): what the learning pass could not learn

    def run(self) -> GraphSummary:
        options = self.options
        _check_outputs(self.src, self.dst, options)
        fmt = options.fmt or detect_format(self.src)
        if fmt == "parquet" and self.src == "-":
            raise GraphError("Parquet cannot be read from stdin: name the file or directory")
        if fmt in ARCHIVE_FORMATS and self.src == "-":
            raise GraphError("a web archive cannot be read from stdin: name the file, directory or glob")
        started = time.perf_counter()
        try:
            with ExitStack() as stack:
                if fmt in ARCHIVE_FORMATS and options.engine != "local":
                    store, normalizer, source = self._split(stack)
                else:
                    store = self._store(stack, fmt)
                    normalizer = self._normalizer(store)
                    source = open_input(self.src, fmt, self.hooks.stdin, stack, redirects=options.redirects)
                self._merge(source, normalizer, store, stack)
        except (EOFError, gzip.BadGzipFile, zlib.error, lzma.LZMAError) as exc:  # truncated or corrupt compression
            raise GraphError(f"{self.name}: {exc}") from exc
        except CorruptBzip2 as exc:
            raise GraphError(f"{self.name}: corrupt bzip2 data") from exc
        summary = normalizer.summary(time.perf_counter() - started)
        summary.skipped = source.skipped
        return summary

    def _store(self, stack: ExitStack, fmt: str) -> Representatives | str | None:
        """The store the protocol rung looks up: opened here for the local engine."""
        options = self.options
        store = options.store
        if options.rung is not Rung.PROTOCOL:
            return None
        if store is None:
            if fmt not in ARCHIVE_FORMATS:
                raise GraphError("the protocol rung needs an equivalence store: pass store=")
            from ._learn import learned_store

            learned = learned_store(self.src, self.hooks.on_stage)
            self.rejected = learned.rejected
            return learned
        if isinstance(store, str) and options.engine == "local":
            from ..store import open_store

            try:
                opened = open_store(store, create=False)
            except (ValueError, OSError) as exc:
                raise GraphError(f"store {store}: {exc}") from None
            if hasattr(opened, "close"):
                stack.callback(opened.close)
            return opened
        return store

    def _split(self, stack: ExitStack) -> tuple[Any, GraphNormalizer, GraphInput]:
        """Archives on Dask or Spark: in pieces, each read, parsed and canonicalized on a worker; the
        protocol rung without a store learned first from the pieces' captures."""
        from . import _split
        from ._archive import archive_files
        from ._engines import in_order, start
        from ._links import _lxml

        options, stage = self.options, self.hooks.on_stage or (lambda text: None)
        engine = options.engine
        _lxml()  # a clear error when the parser is missing
        files = archive_files(self.src)
        runner = start(engine, options.workers, stage)
        stack.callback(runner.close)
        stage(f"finding record boundaries in {len(files):,} archive file{'s' if len(files) != 1 else ''}")
        found = _split.pieces(files, _split.PIECE_BYTES)
        total = sum(piece.end - piece.start for piece in found)
        stage(f"{len(found):,} pieces on {engine}")
        store = options.store
        if options.rung is Rung.PROTOCOL and store is None:
            stage(f"learning the protocol rung from the captures in {self.src}, on {engine}")
            directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="scrapy-iri-learned-"))
            captures = in_order(runner, engine, _split.piece_learning, found)
            store, self.rejected = _split.learned_file(captures, total, directory, self.hooks.progress)
        normalizer = self._normalizer(store)
        stage(f"reading, parsing and canonicalizing on {engine}")

        def on_repeated(count: int) -> None:
            normalizer.edges_in += count

        originals = Originals(list(dict.fromkeys(piece.location for piece in found)))
        links = in_order(runner, engine, _split.piece_links, found, options.redirects, self._engine_options(store),
                         originals)
        source = _split.split_input(links, found, normalizer.node, on_repeated)
        return store, normalizer, source

    def _normalizer(self, store: Any) -> GraphNormalizer:
        options = self.options
        lookup = None
        if options.identity:
            lookup = _identity
        elif options.engine != "local":
            lookup = _unused
        normalizer = GraphNormalizer(
            options.rung,
            keep_fragment=options.keep_fragment,
            lenient=options.lenient,
            store=None if lookup is not None or isinstance(store, str) else store,
            cache_size=options.cache_size,
            form=options.form,
            lookup=lookup,
        )
        return normalizer

    def _engine_items(self, rows: Any, normalizer: GraphNormalizer, store: Any) -> Iterator[tuple[Any, Any, Any]]:
        """(row, source node, target node): nodes the engine made (None for a row the reader found bad)."""
        options = self.options
        return engine_rows(
            options.engine, iter(rows), normalizer.node, workers=options.workers, options=self._engine_options(store),
            cache_size=options.cache_size, on_stage=self.hooks.on_stage,
        )

    def _engine_options(self, store: Any) -> dict[str, Any]:
        """What a worker's kernel is made with (:func:`scrapy_iri.graph._arrow._kernel`)."""
        options = self.options
        return {
            "rung": options.rung,
            "keep_fragment": options.keep_fragment,
            "lenient": options.lenient,
            "store": store,
            "aliases": None,
            "cache_size": options.cache_size or 0,
            "identity": options.identity,
        }

    def _write_aliases(self, normalizer: GraphNormalizer, stack: ExitStack) -> None:
        options = self.options
        if options.aliases is None:
            return
        write = stack.enter_context(_output(os.fspath(options.aliases), self.hooks.stdout)).write
        write("original,canonical\n")
        iri = options.form == "iri"

        def on_alias(original: str, canon: str) -> None:
            write(f"{_csv_field(original)},{_csv_field(iri_form(canon) if iri else canon)}\n")

        normalizer.on_alias = on_alias

    def _merge(self, source: GraphInput, normalizer: GraphNormalizer, store: Any, stack: ExitStack) -> None:
        options, hooks = self.options, self.hooks
        counted = _Counted(source, hooks.progress)
        write_edge = _Edges(self.dst, source.columns, hooks.stdout, stack).write
        self._write_aliases(normalizer, stack)
        rejects = None
        if options.bad_rows is not None:  # kept when the run fails (--fail-fast shows the row that stopped it)
            rejects = stack.enter_context(
                _output(os.fspath(options.bad_rows), hooks.stdout, errors="surrogateescape", keep_on_error=True)
            )
            rejects.write(source.header)
        reject, on_bad = source.reject, hooks.on_bad

        def bad(row: tuple[Any, ...], problem: str) -> None:
            if rejects is not None:
                rejects.write(reject(row, problem))
            if on_bad is not None:
                on_bad(row[0], problem)
            if options.fail_fast:
                where = row[0] if isinstance(row[0], str) else f"{self.name}:{row[0]}"
                raise GraphError(f"{where}: stopped at the first bad row (--fail-fast)")

        told = self._report_rejected(normalizer, bad)
        if options.engine == "local":
            items: Iterator[tuple[Any, Any, Any]] = _local_items(counted, normalizer)
        elif source.made:
            items = iter(counted)
        else:
            items = self._engine_items(counted, normalizer, store)
        add_nodes = normalizer.add_nodes
        for row, s, t in items:
            if row[4] is None:
                try:
                    pair = add_nodes(row[1], row[2], s, t)
                except BadEdge as exc:
                    bad(row, str(exc))
                else:
                    if pair is not None:
                        write_edge(row, *pair)
            elif told and (row[0], row[4]) in told:
                told.remove((row[0], row[4]))  # the learning pass reported this record, for this reason
            else:
                normalizer.bad_rows += 1
                bad(row, row[4])
        if hooks.progress is not None:
            hooks.progress(counted.rows, source.tell(), source.total)

    def _report_rejected(self, normalizer: GraphNormalizer,
                         bad: Callable[[tuple[Any, ...], str], None]) -> set[tuple[str, str]]:
        """The learning pass's bad records and captures as bad rows, before the links; returns them,
        so that the link pass does not report a record again for the same reason."""
        if self.rejected and self.hooks.on_stage is not None:
            count = len(self.rejected)
            self.hooks.on_stage(f"{count:,} record{'s' if count != 1 else ''} of the archive taught the protocol"
                                " rung nothing (bad records or captures): reported as bad rows")
        for where, reason in self.rejected:
            path, _, offset = where.rpartition(":")
            normalizer.bad_rows += 1
            bad((where, "", "", f"{_csv_field(path)},{offset}", reason, "", ""), reason)
        return set(self.rejected)


def _local_items(rows: Any, normalizer: GraphNormalizer) -> Iterator[tuple[Any, Any, Any]]:
    """(row, source node, target node), the nodes looked up here (None for a row the reader found bad)."""
    node = normalizer.node_of
    for row in rows:
        if row[4] is None:
            yield row, node(row[1]), node(row[2])
        else:
            yield row, None, None


def _identity(raw: str) -> tuple[str | None, str | None]:
    return raw, None


def _unused(raw: str) -> tuple[str | None, str | None]:
    raise AssertionError("an engine run has its nodes made by the engine")
