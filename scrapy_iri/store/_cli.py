"""``scrapy-iri store stats|explain|export|forget``: look into an equivalence store.

The store is named by ``--store URI`` (the store-URI syntax of
``IRI_STORE``: ``sqlite:///path``, ``redis://...``; see
:func:`scrapy_iri.store.parse_store_uri`), else by the ``IRI_STORE``
environment variable, else it is the one a crawl in the current Scrapy
project wrote (``.scrapy/iri/<spider>.sqlite`` next to ``scrapy.cfg``;
``--spider NAME`` picks one). Exit codes: 0 success (``explain A B``:
merged), 1 ``explain A B``: not merged, 2 usage error, no such store, a store that
fails, or an ``explain`` URL that is not an IRI.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
from pathlib import Path
from typing import TextIO

from .._cli import positive_number, whole_number
from ..errors import ScrapyIRIError
from . import REDIS_SCHEMES, StoreError, open_store, parse_store_uri, spider_store_name
from ._learner import EquivalenceStore
from ._rules import LearningPolicy


def _positive_seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds above 0, got {value!r}")
    return number


def _project_store(spider: str | None, err: TextIO) -> str:
    """The store a crawl in the current Scrapy project wrote: ``.scrapy/iri/<spider>.sqlite``."""
    from scrapy.utils.conf import closest_scrapy_cfg

    cfg = closest_scrapy_cfg()
    if not cfg:
        raise StoreError(
            "no store given: use --store URI (or set IRI_STORE), or run this inside a Scrapy project"
            f" (no scrapy.cfg in {os.getcwd()} or above)"
        )
    directory = Path(cfg).parent / ".scrapy" / "iri"
    if spider is not None:
        path = directory / spider_store_name(spider)
        if not path.exists():
            raise StoreError(f"no store for spider {spider!r}: looked for {path}")
        found = [path]
    else:
        found = sorted(directory.glob("*.sqlite"))
    if not found:
        raise StoreError(
            f"no store given and no crawl's store in {directory}: use --store URI (a crawl with JOBDIR"
            " keeps its store in JOBDIR/iri-store.sqlite)"
        )
    if len(found) > 1:
        names = ", ".join(path.stem for path in found)
        raise StoreError(f"several crawls' stores in {directory} ({names}): pick one with --spider NAME")
    print(f"scrapy-iri store: using {found[0]}", file=err)
    return f"sqlite:///{found[0]}"


def _redis_namespace(uri: str, err: TextIO, *, create: bool = False) -> str:
    """A Redis store URI with its namespace: the one the server holds, else an error listing them;
    a namespace given that holds no store is an error too, unless ``create``."""
    from urllib.parse import urlencode

    from ._redis.connection import client_from_url, redact, split_uri

    url, options = split_uri(uri)
    if "namespace" in options and create:
        return uri
    client = client_from_url(url)
    try:
        suffix = b":store:epoch"
        keys = [key for key in client.scan_iter(match="*:store:epoch", count=1000) if key.endswith(suffix)]
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.type(key)
        # a store's epoch is a string: a key of that name of another type is another application's
        found = sorted(
            key[: -len(suffix)].decode("utf-8", "replace")
            for key, kind in zip(keys, pipe.execute() if keys else [])
            if kind in (b"string", "string")
        )
    except Exception as exc:  # unreachable, refused, wrong password: one line, not a traceback
        raise StoreError(f"cannot list the stores at {url}: {exc}") from None
    finally:
        client.close()
    if "namespace" in options:
        if options["namespace"] in found:
            return uri
        listed = ", ".join(repr(name) for name in found) or "none"
        raise StoreError(
            f"no store in namespace {options['namespace']!r} at {redact(url)} (the stores there: {listed})"
        )
    if len(found) == 1:
        print(f"scrapy-iri store: using namespace {found[0]!r}", file=err)
        return f"{uri}{'&' if '?' in uri else '?'}{urlencode({'namespace': found[0]})}"
    if not found:
        raise StoreError(f"no scrapy-iri store at {url} (no key *:store:epoch): give ?namespace=NS")
    listed = ", ".join(repr(name) for name in found)
    raise StoreError(f"several stores at {url}, give one with ?namespace=NS: {listed}")


def resolve_uri(uri: str, err: TextIO, *, create: bool = False) -> str:
    """The store ``uri`` names, checked before it is opened: a Redis URI gets the namespace the
    server holds (or names a store there); a SQLite file to create needs its directory."""
    parsed = parse_store_uri(uri)
    if parsed.scheme in REDIS_SCHEMES:
        return _redis_namespace(parsed.uri, err, create=create)
    if parsed.path is not None and create and not parsed.path.exists():
        if not parsed.path.parent.is_dir():
            raise StoreError(f"no directory {parsed.path.parent} for a new store {parsed.path}: create it first")
        print(f"scrapy-iri store: a new store at {parsed.path}", file=err)
    return uri


def _uri(args: argparse.Namespace, err: TextIO, create: bool = False) -> str:
    uri = args.store or os.environ.get("IRI_STORE")
    if uri and args.spider is not None:
        raise StoreError("--spider picks a store of the current Scrapy project: give it without --store/IRI_STORE")
    if not uri:
        return _project_store(args.spider, err)
    return resolve_uri(uri, err, create=create)


def _open(args: argparse.Namespace, err: TextIO, *, create: bool = False) -> EquivalenceStore:
    store = open_store(_uri(args, err, create), create=create)  # judged with the policy the crawl recorded
    overrides = {
        name: value
        for name, value in (("min_observations", args.min_observations), ("rule_ttl", args.rule_ttl))
        if value is not None
    }
    if overrides:
        store.policy = dataclasses.replace(store.policy, **overrides)
    return store


def cmd_stats(store: EquivalenceStore, args: argparse.Namespace, out: TextIO) -> int:
    for name, value in store.stats().items():
        print(f"{name}\t{value}", file=out)
    return 0


def cmd_explain(store: EquivalenceStore, args: argparse.Namespace, out: TextIO) -> int:
    from .._ladder import canonicalize
    from ..errors import IRIError

    for name, url in (("URL", args.url), ("OTHER", args.other)):
        if url is None:
            continue
        try:
            canonicalize(url, "scheme", lenient=True)
        except IRIError as exc:
            raise StoreError(f"{name} {_cut(url)!r} is not an IRI: {_cut(str(exc), 300)}") from None
    explanation = store.explain(args.url, args.other)
    print(explanation, file=out)
    return 0 if args.other is None or explanation.merged else 1


def _cut(text: str, limit: int = 200) -> str:
    """``text`` for a message, cut to about ``limit`` characters (a 1 MB URL is not echoed whole)."""
    return text if len(text) <= limit else f"{text[: limit - 30]}... ({len(text):,} characters)"


def cmd_export(store: EquivalenceStore, args: argparse.Namespace, out: TextIO) -> int:
    if args.format == "parquet":
        from ._export import write_parquet

        store_file = getattr(store, "path", None)
        if store_file is not None and Path(args.output).resolve() == Path(store_file).resolve():
            raise StoreError(f"{args.output} is the store itself: choose another --output file")
        rows = write_parquet(store, args.output)
        print(f"wrote {rows} aliases to {args.output}", file=out)
        return 0
    for entry in store.export(evidence=args.evidence):
        print(json.dumps(entry, sort_keys=True, ensure_ascii=False), file=out)
    return 0


def cmd_forget(store: EquivalenceStore, args: argparse.Namespace, out: TextIO) -> int:
    removed = sum(store.forget(url) for url in args.urls)
    removed += sum(store.forget_host(host) for host in args.host)
    print(f"forgot {removed} entries", file=out)
    return 0


def check_learn_inputs(args: argparse.Namespace, err: TextIO) -> None:
    """Refuse, before any store is opened or made, inputs that ``store learn`` cannot read (raises
    :class:`StoreError`); name the files of a directory that are not archives or indexes."""
    from ..graph._archive import listed
    from ..graph._learn import capture_files

    try:
        args.checked = capture_files(args.files)
        taken = {file.path for file in args.checked}
        if args.bad_records:
            from ..graph._outputs import _not_the_input

            for name in args.files:
                _not_the_input(name, [("--bad-records", args.bad_records)])
    except ScrapyIRIError as exc:
        raise StoreError(str(exc)) from None
    for name in args.files:
        if os.path.isdir(name):
            entries = sorted(os.path.join(name, entry) for entry in os.listdir(name))
            passed = [path for path in entries if path not in taken]
            if len(passed) == len(entries):
                raise StoreError(f"{name}: a directory without WARC, WAT, CDX or CDXJ files")
            if passed:
                print(f"scrapy-iri store: {len(passed):,} files in {name} are not WARC, WAT, CDX or CDXJ,"
                      f" not read: {listed(passed)}", file=err)


def cmd_learn(store: EquivalenceStore, args: argparse.Namespace, out: TextIO) -> int:
    from ..graph._learn import LearnProgress, learn_files

    err = args.err
    shown = 0

    def on_bad(where: str, reason: str) -> None:
        nonlocal shown
        if shown < args.max_reported:
            print(f"scrapy-iri: {where}: {reason}", file=err)
        shown += 1

    try:
        progress = None
        if args.progress or (not args.quiet and _isatty(err)):
            progress = LearnProgress(err, len(args.checked))
        summary, reading = learn_files(
            store, args.checked, on_bad=on_bad,
            progress=None if progress is None else progress.on_learned,
            on_read=None if progress is None else progress.on_read,
        )
        if progress is not None:
            progress.done()
    except OSError as exc:
        raise StoreError(f"{exc.filename or ''}: {exc.strerror or exc}") from None
    except ScrapyIRIError as exc:
        raise StoreError(str(exc)) from None
    if args.bad_records:
        _write_bad_records(args.bad_records, reading.bad)
    if shown > args.max_reported:
        kept = f" (all kept in {args.bad_records})" if args.bad_records else " (--bad-records FILE keeps them all)"
        print(f"scrapy-iri: {shown - args.max_reported:,} more bad records not shown{kept}", file=err)
    print(f"learned from {reading.files} files: {summary.observations:,} captures", file=out)
    for name, value in summary.as_dict().items():
        if name != "observations":
            print(f"{name}\t{value}", file=out)
    print(f"bad records\t{len(reading.bad)}", file=out)
    for why, count in sorted(reading.skipped.items()):  # read, and nothing to learn from them
        print(f"skipped: {why}\t{count}", file=out)
    return 1 if reading.bad else 0


def _write_bad_records(name: str, bad: list[tuple[str, str]]) -> None:
    """CSV ``where,reason`` (``where``: file:offset, or file:line of an index), written whole or not at all."""
    import csv

    from ..graph._outputs import _output

    try:
        with _output(name, None) as stream:
            writer = csv.writer(stream, lineterminator="\n")
            writer.writerow(["where", "reason"])
            writer.writerows(bad)
    except OSError as exc:
        raise StoreError(f"--bad-records {exc.filename or name}: {exc.strerror or exc}") from None


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


#: the subcommands that write the store
WRITING = ("forget", "learn")
#: seconds a writing subcommand waits for another process's write transaction (a crawl's commit)
WRITER_WAIT = 5.0
#: seconds a writing subcommand keeps trying to commit its last changes to a file locked meanwhile
COMMIT_WAIT = 30.0


def _check_writable(store: EquivalenceStore) -> None:
    """Refuse to start writing a SQLite file this process cannot write: read-only here, or held by
    another process's write transaction for longer than :data:`WRITER_WAIT`."""
    storage = store.storage
    path = getattr(storage, "path", None)
    if getattr(storage, "read_only", False):
        raise StoreError(f"{path} is read-only here: nothing was changed")
    writable = getattr(storage, "writable", None)
    if writable is not None and not writable(WRITER_WAIT):
        raise StoreError(
            f"{path} is locked by another process writing it (a crawl?): nothing was changed; run this again when it is done"
        )


def _check_written(store: EquivalenceStore) -> None:
    """Commit what the subcommand changed, trying for up to :data:`COMMIT_WAIT` seconds; raise if some
    of it could not be (the file locked since by another process)."""
    import time

    deadline = time.monotonic() + COMMIT_WAIT
    store.flush()
    while getattr(store.storage, "pending", 0) and time.monotonic() < deadline:
        time.sleep(0.2)
        store.flush()
    pending = getattr(store.storage, "pending", 0)
    if pending:
        where = getattr(store.storage, "path", None) or "the store"
        raise StoreError(f"{where} is locked by another process writing it: {pending:,} changes not written")


def _close(store: EquivalenceStore, err: TextIO, failed: bool, failures: tuple[type[BaseException], ...]) -> None:
    """Close the store; after a failure, at once and without a word of what it could not write (the
    error said it)."""
    import logging

    quiet = logging.getLogger("scrapy_iri.store")
    level = quiet.level
    if failed:
        if hasattr(store.storage, "close_wait"):
            store.storage.close_wait = 0.0
        quiet.setLevel(logging.CRITICAL)
    try:
        store.close()
    except failures as exc:
        if not failed:
            print(f"scrapy-iri store: closing the store failed: {describe(exc)}", file=err)
    finally:
        quiet.setLevel(level)


def handle(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run one ``store`` subcommand."""
    if args.action == "forget" and not (args.urls or args.host):
        print("scrapy-iri store forget: give URLs or --host HOST", file=err)
        return 2
    if args.action == "export" and args.format == "parquet" and not args.output:
        print("scrapy-iri store export: --format parquet writes a file: give --output FILE", file=err)
        return 2
    args.err = err
    failures = backend_errors()
    try:
        if args.action == "learn":
            check_learn_inputs(args, err)
        store = _open(args, err, create=args.action == "learn")
    except StoreError as exc:
        print(f"scrapy-iri store: {exc}", file=err)
        return 2
    except failures as exc:
        print(f"scrapy-iri store: cannot open the store: {describe(exc)}", file=err)
        return 2
    failed = True
    try:
        if args.action in WRITING:
            _check_writable(store)
        status = args.store_handler(store, args, out)
        if args.action in WRITING:
            _check_written(store)
        failed = False
        return status
    except StoreError as exc:
        print(f"scrapy-iri store: {exc}", file=err)
        return 2
    except failures as exc:  # a damaged file, a server gone: one line, not a traceback
        print(f"scrapy-iri store: the store failed: {describe(exc)}", file=err)
        return 2
    finally:
        _close(store, err, failed, failures)


def backend_errors() -> tuple[type[BaseException], ...]:
    """What a store backend raises when its file or server fails (besides :class:`StoreError`)."""
    import sqlite3

    found: list[type[BaseException]] = [sqlite3.Error, OSError]
    try:
        from redis.exceptions import RedisError
    except ImportError:
        pass
    else:
        found.append(RedisError)
    return tuple(found)


def describe(exc: BaseException) -> str:
    """One line for a backend error: its kind and message."""
    text = getattr(exc, "strerror", None) or str(exc) or "no detail"
    where = getattr(exc, "filename", None)
    return f"{type(exc).__name__}: {where + ': ' if isinstance(where, str) else ''}{text}"


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``store`` command to the ``scrapy-iri`` parser."""
    parser = subparsers.add_parser("store", help="inspect or edit a protocol-rung equivalence store")
    parser.add_argument(
        "--store", metavar="URI",
        help="sqlite:///path, redis://host:port/db?namespace=NS... (default: $IRI_STORE, else the current"
        " Scrapy project's .scrapy/iri/<spider>.sqlite)",
    )
    parser.add_argument("--spider", metavar="NAME", help="the store of spider NAME in the current Scrapy project")
    defaults = LearningPolicy()
    parser.add_argument(
        "--min-observations", type=positive_number, default=None, metavar="K",
        help="judge rules as a crawl with IRI_RULE_MIN_OBSERVATIONS = K does "
        f"(default: the crawl's, recorded in the store, else {defaults.min_observations})",
    )
    parser.add_argument(
        "--rule-ttl", type=_positive_seconds, default=None, metavar="SECONDS",
        help="judge rules as a crawl with IRI_RULE_TTL = SECONDS does (default: the crawl's, else 30 days)",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    stats = actions.add_parser("stats", help="counts of aliases, rules, sinks and evidence")
    stats.set_defaults(store_handler=cmd_stats)

    explain = actions.add_parser("explain", help="why URL resolves where it does (and whether it merges with OTHER)")
    explain.add_argument("url", metavar="URL")
    explain.add_argument("other", metavar="OTHER", nargs="?")
    explain.set_defaults(store_handler=cmd_explain)

    export = actions.add_parser("export", help="aliases, rules and sinks as JSON lines, or the alias table in Parquet")
    export.add_argument("--evidence", action="store_true", help="include the evidence log")
    export.add_argument(
        "--format", choices=["jsonl", "parquet"], default="jsonl",
        help="jsonl (default): every entry on stdout; parquet: the resolved alias table (alias, representative)"
        " for joins in graph pipelines, written to --output (needs pyarrow: scrapy-iri[arrow])",
    )
    export.add_argument("--output", metavar="FILE", help="where --format parquet writes")
    export.set_defaults(store_handler=cmd_export)

    forget = actions.add_parser("forget", help="forget what was learned from URLs or on hosts")
    forget.add_argument("urls", metavar="URL", nargs="*")
    forget.add_argument(
        "--host", action="append", default=[], metavar="HOST",
        help="forget every alias and rule of HOST (its default ports), HOST:PORT or HOST:* (every port)",
    )
    forget.set_defaults(store_handler=cmd_forget)

    learn = actions.add_parser(
        "learn",
        help="learn from web archives: WARC and WAT response records, CDX and CDXJ lines (captures in date order)",
    )
    learn.add_argument("files", metavar="FILE", nargs="+", help="WARC, WAT, CDX or CDXJ files, directories or globs")
    learn.add_argument(
        "--max-reported", type=whole_number, default=20, metavar="N", help="bad records reported on stderr (default: 20)"
    )
    learn.add_argument(
        "--progress", action="store_true",
        help="progress on stderr every 2 seconds: files and captures read, then captures learned (default: on a terminal)",
    )
    learn.add_argument(
        "--bad-records", metavar="FILE",
        help="write every bad record or line here, CSV where,reason (stderr shows --max-reported of them)",
    )
    learn.add_argument("-q", "--quiet", action="store_true", help="no progress")
    learn.set_defaults(store_handler=cmd_learn)

    parser.set_defaults(handler=handle)
