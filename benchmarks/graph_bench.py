"""Benchmark of ``scrapy-iri graph`` against calling ``canonicalize()`` alone.

The link graph is built deterministically from two public corpora:

* ``oxiri_relative_urls_cc_10k.csv``: ``base,relative`` pairs from Common
  Crawl; each becomes the edge ``base -> resolve(base, relative)`` (split on
  the first comma, resolved with ``lenient=True``, failures skipped);
* ``ada_kasztp.txt``: 48,010 real URLs, paired into edges by a seeded
  generator with Zipf-like popularity (home pages and navigation come back
  very often), repeated edges, and spellings real pages use for one target
  (upper-case scheme and host, explicit default port, fragments).

The graph (about 200,000 edges) is written to a temporary CSV; the benchmark
then times

* ``canonicalize() alone``: ``canonicalize(url, "scheme", keep_fragment=False,
  lenient=True)`` on every end of every edge, in order, in one process, from
  a list in memory: no I/O, no cache, no de-duplication;
* ``canonicalize() on distinct URLs``: the same on each distinct URL once
  (what a perfect cache would leave to do);
* ``graph (in process)``: :func:`scrapy_iri.graph.normalize_graph_file`;
* ``scrapy-iri graph``: the console script as a subprocess (wall clock,
  interpreter start-up and imports included).

and reports each as a ratio to ``canonicalize() alone`` (target <= 3x).
Prints a table; ``--json PATH`` also writes the figures there.

``--engines`` runs the engine comparison instead: one graph of
1,500,000 edges from the real URL corpora (all four files of
``realworld/``) with random aliases (other spellings of the same URL),
given to ``scrapy-iri graph --engine local|dask|spark`` as subprocesses,
each also with its identity kernel (the same job without
canonicalization: the engine's own overhead). For each job: wall time,
CPU seconds summed over the process tree (every process sampled every
0.1 s: the driver, Dask's scheduler and workers, Spark's JVM and Python
workers), the peak of the tree's summed RSS, and CPU microseconds per
URL (two per edge). All jobs check that their output equals the local
engine's, byte for byte.

    .venv/bin/python benchmarks/graph_bench.py [--edges N] [--repeat K] [--json PATH]
    nice .venv/bin/python benchmarks/graph_bench.py --engines [--edges N] [--json PATH]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
import tracemalloc
from bisect import bisect
from itertools import accumulate
from pathlib import Path

from scrapy_iri import IRIError, canonicalize, resolve
from scrapy_iri.graph import DEFAULT_CACHE_SIZE, GraphNormalizer, normalize_graph_file

ROOT = Path(__file__).resolve().parents[1]
CORPORA = Path(os.environ.get("SCRAPY_IRI_CORPORA", ROOT.parent / "shared" / "corpora"))
SCRIPT = Path(sys.executable).parent / "scrapy-iri"
SEED = 20240607


def _lines(relative: str) -> list[str]:
    path = CORPORA / relative
    if not path.exists():
        sys.exit(f"graph_bench: {relative} not found under {CORPORA} (set SCRAPY_IRI_CORPORA)")
    return path.read_text(encoding="utf-8-sig").splitlines()  # ada_kasztp.txt starts with a BOM


def _variant(url: str, rng: random.Random) -> str:
    """Another spelling of ``url`` that real pages use and the scheme rung merges."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    host, slash, path = rest.partition("/")
    choice = rng.randrange(4)
    if choice == 0:
        return f"{scheme.upper()}://{host.upper()}{slash}{path}"
    if choice == 1 and ":" not in host and "@" not in host:
        port = {"http": ":80", "https": ":443"}.get(scheme.lower(), "")
        return f"{scheme}://{host}{port}{slash}{path}"
    if choice == 2 and "#" not in url:
        return f"{url}#{rng.choice(['top', 'main', 'content', 'comments'])}"
    return url


def build_edges(size: int, seed: int = SEED) -> tuple[list[tuple[str, str]], dict[str, int]]:
    rng = random.Random(seed)
    edges: list[tuple[str, str]] = []
    resolved = skipped = 0
    for line in _lines("realworld/oxiri_relative_urls_cc_10k.csv")[1:]:
        base, sep, relative = line.partition(",")
        if not sep:
            skipped += 1
            continue
        try:
            edges.append((base, resolve(base, relative, lenient=True)))
            resolved += 1
        except IRIError:
            skipped += 1
    pages = [url for url in _lines("realworld/ada_kasztp.txt") if url]
    rng.shuffle(pages)
    # Zipf-like popularity: rank r is drawn with probability ~ 1/r.
    cumulative = list(accumulate(1.0 / rank for rank in range(1, len(pages) + 1)))
    total = cumulative[-1]

    def popular() -> str:
        return pages[min(bisect(cumulative, rng.random() * total), len(pages) - 1)]

    first_generated = len(edges)
    while len(edges) < size:
        roll = rng.random()
        if roll < 0.15 and len(edges) > first_generated:  # the same link again (another page of a site)
            edges.append(edges[rng.randrange(first_generated, len(edges))])
            continue
        source = pages[rng.randrange(len(pages))] if roll < 0.6 else popular()
        target = popular() if rng.random() < 0.7 else pages[rng.randrange(len(pages))]
        if rng.random() < 0.3:
            target = _variant(target, rng)
        if rng.random() < 0.1:
            source = _variant(source, rng)
        edges.append((source, target))
    return edges, {"oxiri_pairs_resolved": resolved, "oxiri_pairs_skipped": skipped}


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def canonicalize_all(urls: list[str]) -> int:
    bad = 0
    for url in urls:
        try:
            canonicalize(url, "scheme", keep_fragment=False, lenient=True)
        except IRIError:
            bad += 1
    return bad


def retained_memory(edges: list[tuple[str, str]], cache_size: int) -> tuple[int, GraphNormalizer]:
    """Bytes a normalizer holds after reading ``edges`` (tracemalloc; the core's caches warm already)."""
    normalizer = GraphNormalizer(cache_size=cache_size)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for source, target in edges:
            try:
                normalizer.add(source, target)
            except ValueError:
                pass
        return tracemalloc.get_traced_memory()[0] - before, normalizer
    finally:
        tracemalloc.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edges", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement; the best is kept")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write the figures here")
    parser.add_argument("--engines", action="store_true", help="compare the engines (see the module docstring)")
    args = parser.parse_args()
    if args.engines:
        return engines_main(args)

    edges, corpus_info = build_edges(args.edges)
    urls = [url for edge in edges for url in edge]
    with tempfile.TemporaryDirectory() as tmp:
        graph_in = Path(tmp) / "graph.csv"
        graph_out = Path(tmp) / "canonical.csv"
        with graph_in.open("w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(("source", "target"))
            writer.writerows(edges)
        size = graph_in.stat().st_size

        alone = _best(lambda: canonicalize_all(urls), args.repeat)
        distinct_urls = list(dict.fromkeys(urls))
        distinct = _best(lambda: canonicalize_all(distinct_urls), args.repeat)
        summaries = []
        in_process = _best(lambda: summaries.append(normalize_graph_file(graph_in, graph_out)), args.repeat)
        summary = summaries[-1]

        def run_script(*extra: str) -> None:
            result = subprocess.run(
                [str(SCRIPT), "graph", str(graph_in), str(graph_out), "--quiet", *extra],
                capture_output=True,
                text=True,
            )
            if result.returncode not in (0, 1):
                sys.exit(f"graph_bench: scrapy-iri graph failed:\n{result.stderr}")

        script = _best(run_script, args.repeat)
        script_aliases = _best(lambda: run_script("--aliases", str(Path(tmp) / "aliases.csv")), args.repeat)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import scrapy_iri._cli, scrapy_iri.graph"], check=True)
        startup = time.perf_counter() - started
        no_cache = _best(lambda: normalize_graph_file(graph_in, graph_out, cache_size=0), 1)

    state_bytes, normalizer = retained_memory(edges, cache_size=0)
    cached_bytes, _ = retained_memory(edges, cache_size=DEFAULT_CACHE_SIZE)
    counted = normalizer.summary()
    per_edge = state_bytes / counted.edges_out
    per_cache_entry = (cached_bytes - state_bytes) / min(len(distinct_urls), DEFAULT_CACHE_SIZE)
    rows = [
        ("canonicalize() alone (baseline)", alone),
        ("canonicalize() on distinct URLs", distinct),
        ("graph, in process", in_process),
        ("graph, in process, --cache-size 0", no_cache),
        ("scrapy-iri graph (subprocess)", script),
        ("scrapy-iri graph --aliases (subprocess)", script_aliases),
    ]
    print(
        f"link graph: {len(edges):,} edges ({corpus_info['oxiri_pairs_resolved']:,} from oxiri pairs), "
        f"{len(urls):,} URL occurrences, {len(distinct_urls):,} distinct, {size / 1e6:.1f} MB CSV"
    )
    print(
        f"output: {summary.edges_out:,} edges ({summary.duplicate_edges:,} duplicates merged), "
        f"{summary.nodes_in:,} -> {summary.nodes_out:,} nodes ({summary.nodes_merged:,} merged), "
        f"{summary.bad_rows:,} bad rows"
    )
    print()
    print(f"{'what':<42}{'seconds':>9}{'ratio':>8}{'URLs/s':>12}")
    for label, seconds in rows:
        print(f"{label:<42}{seconds:>9.3f}{seconds / alone:>7.2f}x{len(urls) / seconds:>12,.0f}")
    print(f"\n(interpreter start-up and imports, included in the subprocess rows: {startup:.3f} s)")
    print(
        f"memory: de-duplication state {state_bytes / 1e6:.1f} MB for {counted.edges_out:,} edges and "
        f"{counted.nodes_in:,} original nodes ({per_edge:.0f} bytes per distinct edge, nodes included); "
        f"cache {per_cache_entry:.0f} bytes per entry"
    )
    verdict = "PASS" if script / alone <= 3.0 else "FAIL"
    print(f"target: scrapy-iri graph <= 3x canonicalize() alone: {script / alone:.2f}x {verdict}")

    if args.json is None:
        return 0 if verdict == "PASS" else 1
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "benchmark": "graph",
                "python": platform.python_version(),
                "machine": platform.machine(),
                "edges": len(edges),
                "url_occurrences": len(urls),
                "distinct_urls": len(distinct_urls),
                "input_bytes": size,
                "corpus": corpus_info,
                "summary": {
                    "edges_in": summary.edges_in,
                    "edges_out": summary.edges_out,
                    "duplicate_edges": summary.duplicate_edges,
                    "nodes_in": summary.nodes_in,
                    "nodes_out": summary.nodes_out,
                    "nodes_merged": summary.nodes_merged,
                    "bad_rows": summary.bad_rows,
                },
                "seconds": {label: round(seconds, 4) for label, seconds in rows},
                "ratio_to_canonicalize_alone": {label: round(seconds / alone, 3) for label, seconds in rows},
                "startup_seconds": round(startup, 4),
                "dedup_state_bytes": state_bytes,
                "bytes_per_distinct_edge_nodes_included": round(per_edge, 1),
                "bytes_per_cache_entry": round(per_cache_entry, 1),
                "target_ratio": 3.0,
                "pass": verdict == "PASS",
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {args.json}")
    return 0 if verdict == "PASS" else 1


# --- the engines ------------------------------------------------------------------


def corpus_urls() -> list[str]:
    """Every URL of the four real-world corpora, in a fixed order, each once."""
    urls = [u for u in _lines("realworld/ada_kasztp.txt") if u]
    urls += [u for u in _lines("realworld/ada_userbait.txt") if u]
    for line in _lines("realworld/citizenlab_test_lists_urls.tsv")[1:]:
        fields = line.split("\t")
        if len(fields) >= 2 and fields[1]:
            urls.append(fields[1])
    for line in _lines("realworld/oxiri_relative_urls_cc_10k.csv")[1:]:
        base, sep, relative = line.partition(",")
        if sep:
            urls.append(base)
            try:
                urls.append(resolve(base, relative, lenient=True))
            except IRIError:
                pass
    return list(dict.fromkeys(urls))


def engine_graph(size: int, seed: int = SEED) -> list[tuple[str, str]]:
    """``size`` edges over the corpus URLs: Zipf-like targets, and one edge in three naming an end by an alias."""
    rng = random.Random(seed)
    pages = corpus_urls()
    rng.shuffle(pages)
    cumulative = list(accumulate(1.0 / rank for rank in range(1, len(pages) + 1)))
    total = cumulative[-1]
    edges = []
    for _ in range(size):
        source = pages[rng.randrange(len(pages))]
        target = pages[min(bisect(cumulative, rng.random() * total), len(pages) - 1)]
        if rng.random() < 0.33:
            target = _variant(target, rng)
        if rng.random() < 0.1:
            source = _variant(source, rng)
        edges.append((source, target))
    return edges


def measure(command: list[str]) -> dict[str, float]:
    """Run ``command``: wall seconds, CPU seconds over its process tree, peak summed RSS (sampled every 0.1 s)."""
    import psutil

    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    root = psutil.Process(process.pid)
    cpu: dict[tuple[int, float], float] = {}
    peak = 0
    while process.poll() is None:
        rss = 0
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            tree = []
        for proc in tree:
            try:
                with proc.oneshot():
                    times = proc.cpu_times()
                    cpu[(proc.pid, proc.create_time())] = times.user + times.system
                    rss += proc.memory_info().rss
            except psutil.Error:
                continue
        peak = max(peak, rss)
        time.sleep(0.1)
    wall = time.perf_counter() - started
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    if process.returncode not in (0, 1):
        sys.exit(f"graph_bench: {' '.join(command)} failed ({process.returncode}):\n{stderr[-3000:]}")
    return {"wall_s": wall, "cpu_s": sum(cpu.values()), "peak_rss_mb": peak / 1e6}


def engines_main(args: argparse.Namespace) -> int:
    edges = engine_graph(args.edges if args.edges != 200_000 else 1_500_000)
    urls = 2 * len(edges)
    jobs = [
        ("local", []),
        ("dask, 1 worker", ["--engine", "dask", "--workers", "1"]),
        ("dask, 2 workers", ["--engine", "dask", "--workers", "2"]),
        ("spark local[2], mapInArrow", ["--engine", "spark", "--workers", "2"]),
    ]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        graph_in = Path(tmp) / "graph.csv"
        with graph_in.open("w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(("source", "target"))
            writer.writerows(edges)
        print(f"engine graph: {len(edges):,} edges, {urls:,} URL occurrences, "
              f"{len(set(u for e in edges for u in e)):,} distinct, {graph_in.stat().st_size / 1e6:.0f} MB CSV")
        reference = None
        print(f"{'job':<34}{'kernel':>10}{'wall s':>9}{'CPU s':>9}{'CPU µs/URL':>12}{'peak RSS MB':>13}")
        for label, options in jobs:
            for kernel in ("canonical", "identity"):
                out = Path(tmp) / "out.csv"
                command = [str(SCRIPT), "graph", str(graph_in), str(out), "-q", *options]
                if kernel == "identity":
                    command.append("--identity-kernel")
                figures = measure(command)
                if kernel == "canonical":
                    content = out.read_bytes()
                    if reference is None:
                        reference = content
                    elif content != reference:
                        sys.exit(f"graph_bench: {label}: the output differs from the local engine's")
                figures["cpu_us_per_url"] = figures["cpu_s"] / urls * 1e6
                results.append({"job": label, "kernel": kernel, **{k: round(v, 3) for k, v in figures.items()}})
                print(f"{label:<34}{kernel:>10}{figures['wall_s']:>9.1f}{figures['cpu_s']:>9.1f}"
                      f"{figures['cpu_us_per_url']:>12.2f}{figures['peak_rss_mb']:>13,.0f}", flush=True)
    local = next(r for r in results if r["job"] == "local" and r["kernel"] == "canonical")["cpu_us_per_url"]
    verdicts = {}
    for label, limit in (("dask, 2 workers", 1.5), ("dask, 1 worker", 1.5), ("spark local[2], mapInArrow", 3.0)):
        mine = next(r for r in results if r["job"] == label and r["kernel"] == "canonical")["cpu_us_per_url"]
        verdicts[label] = {"ratio": round(mine / local, 2), "target": limit, "pass": mine / local <= limit}
        print(f"target: {label} CPU per URL <= {limit}x local: {mine / local:.2f}x "
              f"{'PASS' if mine / local <= limit else 'FAIL'}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"benchmark": "graph engines", "python": platform.python_version(),
                                         "cpus": os.cpu_count(), "edges": len(edges), "url_occurrences": urls,
                                         "jobs": results, "targets": verdicts}, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
