"""scrapy-iri benchmarks: one command, three sections, side by side with the alternatives.

    .venv/bin/python benchmarks/run.py            # the full run (a few minutes)
    .venv/bin/python benchmarks/run.py --quick    # smaller inputs, fewer repeats (~1 minute)
    .venv/bin/python benchmarks/run.py --cpu-time # CPU time, not wall time: for a shared machine

Writes ``latest.json`` (every figure), ``latest.md`` (the tables, with the
machine) and ``latest.svg`` (a chart) into ``$TMPDIR/scrapy-iri-bench/``;
``--save`` writes them into the tracked ``benchmarks/results/`` instead
(``--output DIR`` anywhere else). Not part of the test
suite: nothing here asserts a timing; the speed targets are reported as
met or not.

1. Canonicalization throughput at the scheme rung (fragment dropped, as for
   a network action) on the realworld corpora, a crawl-like stream with
   repeats and a generated IRI-heavy set: scrapy-iri (strict and lenient)
   against w3lib's ``canonicalize_url`` (what Scrapy fingerprints),
   ``url_normalize`` and ada-url's ``normalize_url``. Caches of scrapy-iri
   are cleared before every timed pass: each pass starts cold.
2. Retained memory per seen request: Scrapy's ``RFPDupeFilter`` against
   ``scrapy_iri.IRIDupeFilter`` (tracemalloc, and the RSS as a cross-check).
3. Equivalence store lookup latency (``representative()``), memory and SQLite.

Sections whose code or inputs are missing are skipped with the reason.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import traceback
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import datasets  # noqa: E402
import report  # noqa: E402


class Skip(Exception):
    """A section (or part of one) cannot run here; the message says why."""


# -- the machine --------------------------------------------------------------


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for name in ("scrapy-iri", "idna", "w3lib", "url-normalize", "ada-url", "scrapy"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    commit = None
    try:
        commit = subprocess.run(
            ["git", "-C", str(HERE.parent), "describe", "--always", "--dirty"],
            capture_output=True, text=True, timeout=10, check=False,
        ).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "cpu": cpu,
        "logical_cpus": os.cpu_count(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "os": platform.platform(),
        "packages": versions,
        "commit": commit,
        "load_average_at_start": _loadavg(),
    }


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


# -- section 1: canonicalization ------------------------------------------------


BASELINE = "scrapy_iri_baseline"
"""Import name of the older core that ``--baseline GITREF`` extracts next to the current one."""


def _clear_scrapy_iri_caches() -> None:
    """Empty every functools cache of the scrapy_iri core (memo, host names): a cold start."""
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] in ("scrapy_iri", BASELINE):
            for value in list(vars(module).values()):
                clear = getattr(value, "cache_clear", None)
                if callable(clear):
                    clear()


def load_baseline(ref: str, into: Path) -> Any:
    """The core package as of git ``ref``, imported as :data:`BASELINE` (relative imports only)."""
    import importlib
    import io
    import tarfile

    archive = subprocess.run(
        ["git", "-C", str(HERE.parent), "archive", ref, "scrapy_iri"],
        capture_output=True, timeout=60, check=False,
    )
    if archive.returncode != 0:
        raise Skip(f"git archive {ref} failed: {archive.stderr.decode(errors='replace').strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        try:
            tar.extractall(into, filter="data")
        except TypeError:  # Python without extraction filters (before 3.10.12 / 3.11.4)
            tar.extractall(into)  # noqa: S202 - our own repository's archive
    (into / "scrapy_iri").rename(into / BASELINE)
    sys.path.insert(0, str(into))
    return importlib.import_module(BASELINE)


def canonicalizers(baseline: tuple[str, Any] | None = None) -> tuple[dict[str, Callable[[str], Any]], dict[str, str]]:
    """name -> function of one URL, and name -> why it is missing."""
    funcs: dict[str, Callable[[str], Any]] = {}
    missing: dict[str, str] = {}
    if baseline is not None:
        ref, old = baseline
        old_scheme = old.Rung.SCHEME
        funcs[f"scrapy-iri @{ref} strict"] = lambda url: old.canonicalize(url, old_scheme, keep_fragment=False)
        funcs[f"scrapy-iri @{ref} lenient"] = lambda url: old.canonicalize(
            url, old_scheme, keep_fragment=False, lenient=True
        )
    from scrapy_iri import Rung, canonicalize

    scheme = Rung.SCHEME
    funcs["scrapy-iri strict"] = lambda url: canonicalize(url, scheme, keep_fragment=False)
    funcs["scrapy-iri lenient"] = lambda url: canonicalize(url, scheme, keep_fragment=False, lenient=True)
    try:
        from scrapy_iri._ladder import canonicalize_step_by_step
    except ImportError:  # a version without fast paths (e.g. measuring an older commit)
        pass
    else:
        funcs["scrapy-iri lenient, reference path"] = lambda url: canonicalize_step_by_step(
            url, scheme, keep_fragment=False, lenient=True
        )
    try:
        from w3lib.url import canonicalize_url

        funcs["w3lib canonicalize_url"] = canonicalize_url
    except ImportError as exc:
        missing["w3lib canonicalize_url"] = f"not installed ({exc}); pip install 'scrapy-iri[bench]'"
    try:
        from url_normalize import url_normalize

        funcs["url-normalize"] = url_normalize
    except ImportError as exc:
        missing["url-normalize"] = f"not installed ({exc}); pip install 'scrapy-iri[bench]'"
    try:
        import ada_url

        funcs["ada-url normalize_url"] = ada_url.normalize_url
    except ImportError as exc:
        missing["ada-url normalize_url"] = f"not installed ({exc}); pip install 'scrapy-iri[bench]'"
    return funcs, missing


CLOCK: Callable[[], float] = time.perf_counter
"""The clock of section 1: wall time, or the process's CPU time with ``--cpu-time``."""


def _timed_pass(func: Callable[[str], Any], urls: list[str]) -> tuple[float, int]:
    errors = 0
    clock = CLOCK
    start = clock()
    for url in urls:
        try:
            func(url)
        except Exception:  # noqa: BLE001 - counting failures of any library
            errors += 1
    return clock() - start, errors


def bench_canonicalization(quick: bool, baseline: tuple[str, Any] | None = None) -> dict[str, Any]:
    kasztp = datasets.kasztp()
    inputs: dict[str, tuple[list[str], str]] = {
        "kasztp": (kasztp, "ada_kasztp.txt: real https URLs, all unique (the issue's 48k list)"),
        "crawl stream": (
            datasets.crawl_stream(kasztp, size=50_000 if quick else 200_000),
            "Zipf(1.1) draws from the kasztp list, seeded: repeats as in a crawl's links",
        ),
        "IRI-heavy": (
            datasets.iri_heavy(kasztp, size=5_000 if quick else 20_000),
            "kasztp URLs with Unicode path words, IDN hosts, Unicode queries, mixed-case schemes (generated, seeded)",
        ),
    }
    for name, loader, what in (
        ("userbait", datasets.userbait, "ada_userbait.txt: messy phishing and benign URLs"),
        ("citizenlab", datasets.citizenlab, "citizenlab test lists: mixed http/https, many bare origins"),
    ):
        try:
            inputs[name] = (loader(), what)
        except datasets.MissingCorpus as exc:
            print(f"  skipping {name}: {exc}", file=sys.stderr)
    funcs, missing = canonicalizers(baseline)
    repeats = 2 if quick else 5
    out: dict[str, Any] = {
        "repeats": repeats,
        "clock": "cpu" if CLOCK is time.process_time else "wall",
        "missing": missing,
        "datasets": {},
    }
    for data_name, (urls, what) in inputs.items():
        print(f"  {data_name}: {len(urls):,} URLs", file=sys.stderr)
        timings: dict[str, list[float]] = {name: [] for name in funcs}
        errors: dict[str, int] = {}
        # Round robin: a load spike on a shared machine hits every contender alike.
        for _ in range(repeats):
            for name, func in funcs.items():
                _clear_scrapy_iri_caches()
                gc.collect()
                elapsed, errors[name] = _timed_pass(func, urls)
                timings[name].append(elapsed)
        results = {}
        for name, passes in timings.items():
            best = min(passes)
            results[name] = {
                "us_per_url": round(best / len(urls) * 1e6, 3),
                "best_s": round(best, 4),
                "median_s": round(statistics.median(passes), 4),
                "errors": errors[name],
            }
        out["datasets"][data_name] = {
            "what": what,
            "size": len(urls),
            "unique": len(set(urls)),
            "results": results,
        }
    return out


# -- section 2: dupefilter memory -------------------------------------------------


def _rss_bytes() -> int | None:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def _build_dupefilters() -> dict[str, Any]:
    try:
        from scrapy.dupefilters import RFPDupeFilter
        from scrapy.utils.misc import build_from_crawler
        from scrapy.utils.test import get_crawler
    except ImportError as exc:
        raise Skip(f"Scrapy is not installed ({exc})") from exc
    builders: dict[str, Callable[[], Any]] = {
        report.RFP: lambda: build_from_crawler(RFPDupeFilter, get_crawler()),
    }
    try:
        from scrapy_iri.scrapy._dupefilter import IRIDupeFilter  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - the add-on's module may be unfinished
        reason = f"scrapy_iri.scrapy._dupefilter cannot be imported: {exc!r}"

        def unavailable() -> Any:
            raise Skip(reason)

        builders[report.IRI] = unavailable
    else:

        def build_iri(**settings: Any) -> Any:
            from scrapy.utils.misc import load_object

            # IRI_STORE: in memory, so that the benchmark writes no file (the default is .scrapy/iri/).
            crawler = get_crawler(
                settings_dict={"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_STORE": "memory:", **settings}
            )
            return build_from_crawler(load_object(crawler.settings.get("DUPEFILTER_CLASS")), crawler)

        builders[report.IRI] = build_iri  # the add-on's defaults
        builders[report.IRI_SCHEME] = lambda: build_iri(IRI_RUNG="scheme")
    return builders


def _feed(dupefilter: Any, urls: list[str], checkpoints: dict[int, Callable[[], None]]) -> int:
    """``request_seen()`` for a new ``Request`` of each URL; returns how many were reported seen."""
    from scrapy import Request

    duplicates = 0
    for index, url in enumerate(urls, 1):
        if dupefilter.request_seen(Request(url)):
            duplicates += 1
        hook = checkpoints.get(index)
        if hook is not None:
            hook()
    return duplicates


def bench_dupefilter_memory(quick: bool, baseline: tuple[str, Any] | None = None) -> dict[str, Any]:
    import logging

    # The one invalid URL of the list is logged once per filter; the counts are what matters here.
    logging.getLogger("scrapy_iri").setLevel(logging.ERROR)
    builders = _build_dupefilters()
    kasztp = datasets.kasztp()
    count = 50_000 if quick else 200_000
    urls = datasets.distinct_requests(kasztp, count)
    # Warm-up requests: every host of the list once, none equal to a measured request.
    warm_up = [url.replace("?n=", "?w=").replace("&n=", "&w=") for url in datasets.distinct_requests(kasztp, len(kasztp))]
    half = count // 2
    out: dict[str, Any] = {
        "requests": count,
        "how": (
            "scrapy-iri IRIDupeFilter runs with the add-on's defaults (protocol rung, lenient, fragments "
            "dropped) and an in-memory store; the second row at the scheme rung. "
            f"{count:,} distinct GET requests (kasztp URLs, each with a unique query parameter) fed to "
            "request_seen() of a new filter, each Request built in the loop and dropped. Before that, "
            f"a throwaway filter of the same class sees {len(warm_up):,} other requests on the same hosts, "
            "so the process-wide bounded caches (host names, memo) are warm and not counted as per-request "
            "memory ('warm-up' column: what they and the throwaway filter's leftovers hold). 'bytes/request' = "
            "tracemalloc traced memory after gc, (at N - at 0) / N; 'marginal' = (at N - at N/2) / (N/2). "
            "RSS delta and µs per request from a separate run without tracemalloc (µs include building the "
            "Request, which costs the same for both; the RSS delta is only a cross-check: the allocator "
            "reuses memory freed by the warm-up, so it can read low)."
        ),
        "filters": {},
    }
    for name, build in builders.items():
        print(f"  {name}: {count:,} requests", file=sys.stderr)
        try:
            _clear_scrapy_iri_caches()
            gc.collect()
            tracemalloc.start()
            before_warm_up = tracemalloc.get_traced_memory()[0]
            throwaway = build()
            _feed(throwaway, warm_up, {})
            del throwaway
            gc.collect()
            warm_up_bytes = tracemalloc.get_traced_memory()[0] - before_warm_up
            tracemalloc.stop()
            # Untraced run: speed and RSS.
            dupefilter = build()
            gc.collect()
            rss0 = _rss_bytes()
            start = time.perf_counter()
            duplicates = _feed(dupefilter, urls, {})
            elapsed = time.perf_counter() - start
            gc.collect()
            rss1 = _rss_bytes()
            extra = {}
            seen = getattr(dupefilter, "seen", None)
            if hasattr(seen, "nbytes"):
                extra["seen_set_nbytes_per_request"] = round(seen.nbytes / count, 1)
            del dupefilter, seen
            gc.collect()
            # Traced run: retained memory.
            dupefilter = build()
            gc.collect()
            marks: dict[str, int] = {}

            def mark(label: str) -> Callable[[], None]:
                def hook() -> None:
                    gc.collect()
                    marks[label] = tracemalloc.get_traced_memory()[0]

                return hook

            tracemalloc.start()
            try:
                mark("0")()
                _feed(dupefilter, urls, {half: mark("half"), count: mark("all")})
            finally:
                tracemalloc.stop()
            del dupefilter
            gc.collect()
        except Skip as exc:
            out["filters"][name] = {"skipped": str(exc)}
            continue
        except Exception as exc:  # noqa: BLE001 - report, do not crash the other sections
            out["filters"][name] = {"skipped": f"failed: {exc!r}", "traceback": traceback.format_exc(limit=4)}
            continue
        out["filters"][name] = {
            "bytes_per_request": round((marks["all"] - marks["0"]) / count, 1),
            "marginal_bytes_per_request": round((marks["all"] - marks["half"]) / (count - half), 1),
            "rss_delta_bytes_per_request": None if rss0 is None or rss1 is None else round((rss1 - rss0) / count, 1),
            "us_per_request": round(elapsed / count * 1e6, 2),
            "warm_up_bytes": warm_up_bytes,
            "duplicates_reported": duplicates,
            **extra,
        }
    return out


# -- section 3: store lookups --------------------------------------------------------


def bench_store(quick: bool, baseline: tuple[str, Any] | None = None) -> dict[str, Any]:
    try:
        from scrapy_iri.store import open_store
    except Exception as exc:  # noqa: BLE001
        raise Skip(f"scrapy_iri.store.open_store cannot be imported: {exc!r}") from exc
    aliases = 1_000 if quick else 10_000
    lookups = 20_000 if quick else 100_000
    sources = [f"http://h{i}.example/old/{i}" for i in range(aliases)]
    targets = [f"http://h{i}.example/new/{i}" for i in range(aliases)]
    kinds = {
        "hit (an alias)": sources,
        "miss, known host": [f"http://h{i}.example/other/{i}" for i in range(aliases)],
        "miss, unknown host": [f"http://u{i}.example/old/{i}" for i in range(aliases)],
    }
    out: dict[str, Any] = {
        "aliases": aliases,
        "lookups_per_kind": lookups,
        "how": (
            f"{aliases:,} permanent redirects recorded (http://h<i>.example/old/<i> -> /new/<i>, one per "
            "host, clean context; the store also weighs its rule guesses at each of these origins, so "
            "lookups on them go through the rule check), then representative() on scheme-form URLs: "
            "µs per call, best of 3 passes"
        ),
        "backends": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        uris = {"memory:": "memory:", "sqlite": f"sqlite:///{tmp}/bench.db"}
        for label, uri in uris.items():
            print(f"  store {label}", file=sys.stderr)
            try:
                store = open_store(uri)
                start = time.perf_counter()
                for src, tgt in zip(sources, targets):
                    store.record_redirect(src, 301, tgt)
                store.flush()
                record_us = (time.perf_counter() - start) / aliases * 1e6
                if label == "sqlite":
                    store.close()
                    start = time.perf_counter()
                    store = open_store(uri, create=False)
                    reopen_s = time.perf_counter() - start
                else:
                    reopen_s = None
                check = store.representative(sources[0])
                result: dict[str, Any] = {
                    "record_redirect_us": round(record_us, 1),
                    "hit_maps_to_target": check == targets[0],
                }
                if reopen_s is not None:
                    result["reopen_s"] = round(reopen_s, 4)
                for kind, urls in kinds.items():
                    batch = (urls * (lookups // len(urls) + 1))[:lookups]
                    best = min(_timed_pass(store.representative, batch)[0] for _ in range(3))
                    result[kind] = round(best / lookups * 1e6, 2)
                store.close()
            except Exception as exc:  # noqa: BLE001 - another engineer's work, maybe unfinished
                out["backends"][label] = {"skipped": f"failed: {exc!r}"}
                continue
            out["backends"][label] = result
    return out


# -- the command -------------------------------------------------------------------------


SECTIONS: dict[str, Callable[..., dict[str, Any]]] = {
    "canonicalization": bench_canonicalization,
    "dupefilter_memory": bench_dupefilter_memory,
    "store_lookup": bench_store,
}


#: where results go unless --save or --output says otherwise: never a tracked file
UNTRACKED = Path(tempfile.gettempdir()) / "scrapy-iri-bench"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs and fewer repeats")
    parser.add_argument("--only", choices=sorted(SECTIONS), action="append", help="run only these sections")
    parser.add_argument(
        "--output", type=Path, default=None,
        help=f"directory of latest.{{json,md,svg}} (default: {UNTRACKED}; with --save: benchmarks/results)",
    )
    parser.add_argument("--save", action="store_true", help="write the tracked benchmarks/results/ files")
    parser.add_argument("--name", default="latest", help="base name of the output files")
    parser.add_argument(
        "--cpu-time", action="store_true",
        help="time sections 1 and 3 by the process's CPU time, not wall time (on a machine shared with other jobs)",
    )
    parser.add_argument(
        "--baseline", metavar="GITREF",
        help="also time the core as of this commit (e.g. HEAD~1), side by side in section 1",
    )
    args = parser.parse_args(argv)
    global CLOCK
    if args.cpu_time:
        CLOCK = time.process_time
    if args.output is None:
        args.output = HERE / "results" if args.save else UNTRACKED
    elif args.save:
        parser.error("--save writes benchmarks/results/: give --output or --save, not both")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            baseline = (args.baseline, load_baseline(args.baseline, Path(tmp))) if args.baseline else None
        except Skip as exc:
            parser.error(str(exc))
        return _run(args, baseline)


def _run(args: argparse.Namespace, baseline: tuple[str, Any] | None) -> int:
    results: dict[str, Any] = {
        "command": "python benchmarks/run.py"
        + (" --quick" if args.quick else "")
        + (" --cpu-time" if args.cpu_time else "")
        + "".join(f" --only {name}" for name in args.only or ())
        + (f" --baseline {args.baseline}" if args.baseline else ""),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": machine(),
        "sections": {},
    }
    for name, section in SECTIONS.items():
        if args.only and name not in args.only:
            continue
        print(f"[{name}]", file=sys.stderr)
        start = time.perf_counter()
        try:
            results["sections"][name] = section(args.quick, baseline)
        except (Skip, datasets.MissingCorpus) as exc:
            print(f"  skipped: {exc}", file=sys.stderr)
            results["sections"][name] = {"skipped": str(exc)}
        results["sections"][name]["seconds"] = round(time.perf_counter() - start, 1)
    results["machine"]["load_average_at_end"] = _loadavg()
    results["targets"] = report.targets(results)

    args.output.mkdir(parents=True, exist_ok=True)
    json_path = args.output / f"{args.name}.json"
    md_path = args.output / f"{args.name}.md"
    svg_path = args.output / f"{args.name}.svg"
    json_path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    svg_path.write_text(report.svg(results), encoding="utf-8")
    md_path.write_text(report.markdown(results, svg_path.name), encoding="utf-8")
    print(md_path.read_text(encoding="utf-8"))
    print(f"wrote {json_path}, {md_path}, {svg_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
