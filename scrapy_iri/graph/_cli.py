"""The ``scrapy-iri graph`` subcommand: arguments, progress line, summary."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, TextIO

from .._cli import _rung, positive_number, whole_number
from .._ladder import Rung
from ..errors import GraphError
from ._engines import ENGINES
from ._inputs import FORMATS, name_suffix
from ._normalize import DEFAULT_CACHE_SIZE, GraphSummary
from ._run import normalize_graph_file


# --- command line ------------------------------------------------------------


def register(subparsers: Any) -> None:
    """Add the ``graph`` subcommand to the ``scrapy-iri`` parser."""
    p = subparsers.add_parser(
        "graph",
        help="canonicalize every node of a link graph and merge duplicate edges",
        description=(
            "Read a link graph (CSV or TSV with 'source' and 'target' header columns, JSON Lines "
            "objects with those keys, or Parquet: a file or a directory of part files) or web archives "
            "(WARC or WAT files, a directory or a glob of them: the links of their HTML captures), write "
            "source,target with every node in its canonical form and each distinct edge once, in "
            "first-seen order, as CSV (or Parquet: OUT named *.parquet, or a directory). Names ending "
            "in .gz, .bz2 or .xz are (de)compressed. "
            "Exit codes: 0 ok, 1 some rows were bad (reported, skipped), 2 usage or fatal error."
        ),
    )
    p.add_argument("input", metavar="IN", help="the link graph; '-' reads stdin")
    p.add_argument(
        "output", metavar="OUT", help="where the edges go: CSV, '-' for stdout; *.parquet or DIR/ for Parquet"
    )
    p.add_argument("--format", choices=FORMATS, help="input format (default: from IN's name; CSV for '-')")
    p.add_argument(
        "--rung",
        type=_rung,
        default=None,
        help="rung: string, syntax, scheme or protocol (default: scheme; protocol with --store)",
    )
    p.add_argument(
        "--store",
        metavar="URI",
        help="equivalence store for the protocol rung (sqlite:///path, memory:); for a web archive IN, "
        "the protocol rung without --store first learns from IN's own redirects",
    )
    p.add_argument(
        "--redirects",
        choices=("skip", "edges"),
        default="skip",
        help="web archives: redirect records are no links (skip, the default) or edges of their own "
        "kind, path REDIRECT@/3xx (edges)",
    )
    p.add_argument(
        "--form",
        choices=("uri", "iri"),
        default="uri",
        help="write nodes as URIs (default) or in IRI form, 3987bis 3.7 (merging is the same)",
    )
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="where nodes are canonicalized: this process (default), a local Dask cluster or a local Spark session",
    )
    p.add_argument(
        "--workers", type=positive_number, default=None, metavar="N", help="Dask or Spark workers (default: the CPUs)"
    )
    p.add_argument("--identity-kernel", action="store_true", help=argparse.SUPPRESS)  # engine overhead (benchmarks)
    p.add_argument("--keep-fragment", action="store_true", help="keep fragments (default: dropped)")
    p.add_argument("--strict", action="store_true", help="no 3987bis sec. 7 preprocessing of messy input")
    p.add_argument("--aliases", metavar="FILE", help="write CSV original,canonical for every original that changed")
    p.add_argument("--bad-rows", metavar="FILE", help="copy the original text of every bad row here")
    p.add_argument("--fail-fast", action="store_true", help="stop at the first bad row (exit 2, no OUT written)")
    p.add_argument(
        "--max-reported", type=whole_number, default=20, metavar="N", help="bad rows reported on stderr (default: 20)"
    )
    p.add_argument(
        "--cache-size",
        type=whole_number,
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


@contextmanager
def _py4j_unheard(err: TextIO) -> Iterator[None]:
    """Py4J logs to the root logger, with a traceback, each call to the JVM that Ctrl-C breaks off: a
    run on Spark shows the log as Python would, without Py4J's records."""
    root = logging.getLogger()
    if root.handlers:
        yield
        return
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter(logging.BASIC_FORMAT))
    handler.addFilter(lambda record: f"{os.sep}py4j{os.sep}" not in record.pathname and not record.name.startswith("py4j"))
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _open_store(uri: str, err: TextIO) -> tuple[Any, str]:
    """The store at ``uri`` (the syntax of ``IRI_STORE`` and ``store --store``) and its URI as
    resolved (a Redis namespace found); never creates one: a mistyped path or namespace is an error."""
    from ..store import open_store
    from ..store._cli import backend_errors, describe, resolve_uri

    try:
        resolved = resolve_uri(uri, err)
        return open_store(resolved, create=False), resolved
    except ValueError as exc:  # StoreError is a ValueError
        raise GraphError(f"--store {uri}: {exc}") from None
    except backend_errors() as exc:
        raise GraphError(f"--store {uri}: {describe(exc)}") from None


_WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EPIPE})


def _store_errors(args: argparse.Namespace) -> tuple[type[BaseException], ...]:
    if not args.store:
        return ()
    from ..store._cli import backend_errors

    return backend_errors()


def _archive_input(args: argparse.Namespace) -> bool:
    from ._inputs import ARCHIVE_FORMATS, detect_format

    if args.format is not None:
        return args.format in ARCHIVE_FORMATS
    try:
        return detect_format(args.input) in ARCHIVE_FORMATS
    except GraphError:
        return False


def cmd_graph(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    rung = args.rung if args.rung is not None else (Rung.PROTOCOL if args.store else Rung.SCHEME)
    if rung is Rung.PROTOCOL and not args.store and not _archive_input(args):
        print("scrapy-iri: graph: the protocol rung needs a store: add --store URI", file=err)
        return 2
    if args.store and rung is not Rung.PROTOCOL:
        print(f"scrapy-iri: graph: --store is only used by the protocol rung, not {rung.name.lower()}", file=err)
        return 2
    suffix = name_suffix(args.output)
    if suffix in (".tsv", ".tab", ".jsonl", ".ndjson"):
        print(f"scrapy-iri: graph: OUT is CSV or Parquet: name it .csv or .parquet, not {suffix}", file=err)
        return 2
    if args.workers is not None and args.engine == "local":
        print("scrapy-iri: graph: --workers is for --engine dask or spark", file=err)
        return 2
    name = "<stdin>" if args.input == "-" else args.input
    reported = 0

    def on_bad(line: int, reason: str) -> None:
        nonlocal reported
        if reported < args.max_reported or args.fail_fast:
            if progress is not None:
                progress.clear()
            where = line if isinstance(line, str) else f"{name}:{line}"
            print(f"scrapy-iri: {where}: {reason}", file=err)
            reported += 1

    progress = None if args.quiet else _Progress(err, args.progress)
    if progress is not None and not (progress.forced or progress.tty):
        progress = None
    def on_stage(message: str) -> None:
        if progress is not None:
            progress.clear()
            print(f"scrapy-iri: graph: {message}", file=err, flush=True)

    if args.store and args.store.strip().lower() in ("memory:", "memory://"):
        hint = " (without --store, the protocol rung learns from the archive's own redirects)" if _archive_input(args) else ""
        print(f"scrapy-iri: graph: --store {args.store} is a new, empty store: it merges nothing the scheme rung"
              f" does not{hint}", file=err)
    passed: list[str] = []
    if _archive_input(args):
        from ._archive import passed_over

        passed = passed_over(args.input)  # before the run: OUT may be written into that directory
    store: Any = None
    try:
        if args.store:
            store, resolved = _open_store(args.store, err)
            if args.engine != "local":  # every worker opens it from the URI: checked here first
                store.close()
                store = resolved
        with _py4j_unheard(err) if args.engine == "spark" else nullcontext():
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
                form=args.form,
                engine=args.engine,
                workers=args.workers,
                identity=args.identity_kernel,
                redirects=args.redirects,
                on_bad=on_bad,
                on_stage=on_stage,
                progress=progress,
                stdout=out,
            )
    except (GraphError, OSError, KeyboardInterrupt, *_store_errors(args)) as exc:
        if progress is not None:
            progress.clear()
        if isinstance(exc, KeyboardInterrupt):
            raise
        if not isinstance(exc, (GraphError, OSError)):  # the store's file or server failed mid-run
            from ..store._cli import describe

            print(f"scrapy-iri: --store {args.store}: the store failed: {describe(exc)}", file=err)
        elif isinstance(exc, OSError):
            where = f"{exc.filename}: " if exc.filename else ""
            if not where and exc.errno in _WRITE_ERRORS:
                where = "cannot write the output: "
            print(f"scrapy-iri: {where}{exc.strerror or exc}", file=err)
        else:
            print(f"scrapy-iri: {exc}", file=err)
        return 2
    finally:
        if store is not None and not isinstance(store, str) and hasattr(store, "close"):
            store.close()
    if progress is not None:
        progress.done()
    if passed:
        _count_passed_over(args.input, passed, summary, err)
    hidden = summary.bad_rows - reported
    if hidden > 0:
        kept = f" (all kept in {args.bad_rows})" if args.bad_rows else " (--bad-rows FILE keeps them all)"
        print(f"scrapy-iri: {name}: {hidden:,} more bad rows not shown{kept}", file=err)
    if not args.quiet:
        print(format_summary(summary, rung), file=err)
    return 1 if summary.bad_rows else 0


def _count_passed_over(name: str, files: list[str], summary: GraphSummary, err: TextIO) -> None:
    """Files of an archive directory that are not WARC or WAT: named on stderr and counted."""
    from ._archive import listed

    if files:
        print(f"scrapy-iri: graph: {len(files):,} files in {name} are not WARC or WAT, not read: {listed(files)}",
              file=err)
        summary.skipped["files that are not WARC or WAT"] += len(files)


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
    if summary.skipped:
        lines.append("  records without links (skipped, not bad):")
        width = max(40, *(len(reason) + 2 for reason in summary.skipped))
        for reason, count in sorted(summary.skipped.items()):
            lines.append(f"    {reason:<{width}}{count:>14,}")
    return "\n".join(lines)
