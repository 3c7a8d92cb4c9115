"""``scrapy-iri store stats|explain|export|forget``: look into an equivalence store.

The store is named by ``--store URI`` (``sqlite:///path``; a plain file path
is read as a SQLite store), else by the ``IRI_STORE`` environment variable.
Exit codes: 0 success (``explain A B``: merged), 1 ``explain A B``: not
merged, 2 usage error or no such store.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path
from typing import TextIO

from . import StoreError, open_store
from ._base import EquivalenceStore
from ._rules import LearningPolicy


def _uri(value: str | None) -> str:
    uri = value or os.environ.get("IRI_STORE")
    if not uri:
        raise StoreError("no store given: use --store sqlite:///path (or set IRI_STORE)")
    if ":" not in uri.partition("/")[0] or len(uri.partition(":")[0]) == 1:  # a path (C:\\ included)
        uri = "sqlite:" + uri
    return uri


def _open(args: argparse.Namespace, *, create: bool = False) -> EquivalenceStore:
    store = open_store(_uri(args.store), create=create)  # judged with the policy the crawl recorded
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
    explanation = store.explain(args.url, args.other)
    print(explanation, file=out)
    return 0 if args.other is None or explanation.merged else 1


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


def handle(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run one ``store`` subcommand."""
    if args.action == "forget" and not (args.urls or args.host):
        print("scrapy-iri store forget: give URLs or --host HOST", file=err)
        return 2
    if args.action == "export" and args.format == "parquet" and not args.output:
        print("scrapy-iri store export: --format parquet writes a file: give --output FILE", file=err)
        return 2
    try:
        store = _open(args)
    except StoreError as exc:
        print(f"scrapy-iri store: {exc}", file=err)
        return 2
    try:
        return args.store_handler(store, args, out)
    except StoreError as exc:
        print(f"scrapy-iri store: {exc}", file=err)
        return 2
    finally:
        store.close()


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``store`` command to the ``scrapy-iri`` parser."""
    parser = subparsers.add_parser("store", help="inspect or edit a protocol-rung equivalence store")
    parser.add_argument("--store", metavar="URI", help="sqlite:///path or a file path (default: $IRI_STORE)")
    defaults = LearningPolicy()
    parser.add_argument(
        "--min-observations", type=int, default=None, metavar="K",
        help="judge rules as a crawl with IRI_RULE_MIN_OBSERVATIONS = K does "
        f"(default: the crawl's, recorded in the store, else {defaults.min_observations})",
    )
    parser.add_argument(
        "--rule-ttl", type=float, default=None, metavar="SECONDS",
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
    forget.add_argument("--host", action="append", default=[], help="forget every alias and rule of HOST")
    forget.set_defaults(store_handler=cmd_forget)

    parser.set_defaults(handler=handle)
