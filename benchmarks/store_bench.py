"""The SQLite equivalence store at scale: open time, memory per alias, lookup latency, learning throughput.

Builds a store of ``--aliases`` N exact aliases over 1,000 hosts (URLs of
60-70 characters), either through the bulk path
(:meth:`SQLiteStore.bulk_aliases`: aliases only), through ``record_redirect``
(each a clean 301, with its evidence, fan-in rows and the rule records it
counts for: about 197 per host, nearly all refuted candidates), or through
:meth:`EquivalenceStore.learn` (``--mode learn`` on SQLite, ``--mode
redis-learn`` on a private ``redis-server``: the same observations, the same
resulting store as ``record_redirect`` one at a time; ``--mode memory-learn``
into a store in memory, the learner alone, and nothing more is measured),
then measures in a fresh process:

* **open**: ``open_store(uri)`` wall time;
* **resident bytes per alias**: growth of the process's private resident
  memory (``RssAnon``) from before the open to after 200,000 lookups (the
  cache full), divided by N;
* **lookup hit / miss**: mean ``store.representative(url)`` time over 100,000
  random aliases (cold: each read from the file once, then warm: from the
  cache) and 100,000 unknown URLs; wall time, and CPU time of the process
  (steadier on a shared machine); and 10,000 aliases looked up again once the
  cache holds them all (``hit_cached``).

    nice .venv/bin/python benchmarks/store_bench.py --aliases 1000000 --mode bulk --dir /tmp/store-bench
    nice .venv/bin/python benchmarks/store_bench.py --aliases 1000000 --mode record --dir /tmp/store-bench
    nice .venv/bin/python benchmarks/store_bench.py --aliases 1000000 --mode redis
    nice .venv/bin/python benchmarks/store_bench.py --aliases 10000000 --mode bulk --record-more 100000
    nice .venv/bin/python benchmarks/store_bench.py --aliases 1000000 --mode learn --record-more 10000
    nice .venv/bin/python benchmarks/store_bench.py --aliases 1000000 --mode redis-learn --record-more 10000
    nice .venv/bin/python benchmarks/store_bench.py --aliases 100000 --mode memory-learn
    nice .venv/bin/python benchmarks/store_bench.py --aliases 20000 --mode memory-learn --web archive-10
    nice .venv/bin/python benchmarks/store_bench.py --aliases 20000 --mode learn --web archive-1000

``--record-more K`` adds K observations through ``record_redirect`` to the
store once it is built, and reports their throughput (learning at that
size; the store then holds N + K aliases, and the lookups are measured on
it).

``--web archive-10`` / ``archive-1000`` makes the learn modes learn N
observations an archive recorded on 10 or 1,000 sites that follow
conventions (:func:`archive_captures`) instead of N one-off moves, and
``--web realistic`` the record mix of ``archive_bench.py --mix realistic``
(:func:`realistic_captures`: pages, redirects, 302s and 404s); only the
learning rate is measured then.

``--breakdown`` (with ``--mode learn`` or ``memory-learn``) prints where
``learn()``'s CPU time goes instead: the chunk's keys, the read-ahead, the
kernel, the commits, and each SQL statement with its rows per observation.

``--mode redis`` writes the aliases into a private ``redis-server`` in the
Redis store's layout and measures opening a ``RedisStore`` on it the same way.

Results are merged into ``benchmarks/results/store.json`` (by mode and N).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
RESULTS = ROOT / "benchmarks" / "results" / "store.json"
HOSTS = 1000
LOOKUPS = 100_000


def source(i: int) -> str:
    return f"http://www.site{i % HOSTS}.example/section-{i % 97}/article-{i}.html"


def target(i: int) -> str:
    return f"http://www.site{i % HOSTS}.example/articles/{i}"


def archive_captures(n: int, hosts: int, seed: int = 1) -> list[Any]:
    """``n`` observations as a web archive records a crawl of ``hosts`` sites that follow conventions.

    Each capture asks for a page in some spelling and follows the site's
    permanent redirects one convention at a time (``http`` -> ``https``,
    ``www.`` -> apex, ``/Docs/`` -> ``/docs/``, ``index.html`` -> the
    directory, a slash added to a numbered directory), then records the page's
    200; a few captures meet a temporary redirect (302, never an alias), an
    error, or a page moved for good (a one-off 301 that refutes the
    conventions' candidates). Captures come in date order, one second apart.
    """
    from scrapy_iri.store import Observation

    rng = random.Random(seed)
    now = 1_700_000_000.0
    out: list[Any] = []
    while len(out) < n:
        host = f"site{rng.randrange(hosts)}.example"
        page = rng.randrange(20_000)
        path = f"/docs/part-{page % 40}/page-{page}/"
        final = f"https://{host}{path}"
        roll = rng.random()
        if roll < 0.05:  # a temporary redirect: never an alias, a counterexample to what it covers
            out.append(Observation(f"https://{host}/latest-{page % 7}", 302, final, time=now))
        elif roll < 0.07:
            out.append(Observation(f"https://{host}/missing-{page}", 404, time=now))
        elif roll < 0.10:  # a page moved for good: an alias, and the conventions it covers refuted
            out.append(Observation(f"https://{host}/old/page-{page}.html", 301, final, time=now))
        else:
            scheme = "http" if rng.random() < 0.6 else "https"
            www = "www." if rng.random() < 0.4 else ""
            docs = "/Docs" if rng.random() < 0.1 else "/docs"
            tail = rng.choice(["/", "", "/index.html"]) if rng.random() < 0.4 else "/"
            url = f"{scheme}://{www}{host}{docs}/part-{page % 40}/page-{page}{tail}"
            for step in (
                lambda u: u.replace("http://", "https://", 1),
                lambda u: u.replace("://www.", "://", 1),
                lambda u: u.replace("/Docs/", "/docs/", 1),
                lambda u: u[: -len("index.html")] if u.endswith("/index.html") else u,
                lambda u: u if u.endswith("/") else u + "/",
            ):
                hop = step(url)
                if hop != url:
                    now += 1.0
                    out.append(Observation(url, 301, hop, time=now))
                    url = hop
            out.append(Observation(final, 200, time=now))
        now += 1.0
    return out[:n]


def realistic_captures(n: int, hosts: int = 997, seed: int = 1) -> list[Any]:
    """``n`` observations of a crawl's archive, the fetches of ``archive_bench.py --mix realistic``
    (:func:`archive_bench.realistic_mix`), 20 captures a second."""
    from archive_bench import realistic_mix

    from scrapy_iri.store import Observation

    start = 1_704_067_200.0
    rng = random.Random(seed)
    return [Observation(url, status, location, time=start + i // 20)
            for i, _, _, url, status, location in realistic_mix(rng, n, hosts)]


def observations(web: str, n: int) -> list[Any]:
    """The ``n`` observations of a benchmark web: ``moves`` (one-off moves, each refuting two
    candidates: :func:`source` -> :func:`target`), ``archive-10`` or ``archive-1000`` (:func:`archive_captures`),
    ``realistic`` (:func:`realistic_captures`)."""
    from scrapy_iri.store import Observation

    if web == "moves":
        now = time.time()
        return [Observation(source(i), 301, target(i), time=now) for i in range(n)]
    if web == "realistic":
        return realistic_captures(n)
    return archive_captures(n, int(web.partition("-")[2]))


def breakdown(web: str, n: int, path: Path | None) -> dict[str, Any]:
    """``learn()`` of ``n`` observations of ``web`` into SQLite at ``path`` (memory: ``None``), its CPU
    time split: the chunk's keys, the read-ahead, the kernel, the commits (µs per observation), and
    each SQL statement's CPU time and rows (what ``--breakdown`` prints)."""
    import sqlite3

    from scrapy_iri.store import _bulk, open_store

    store = open_store("memory:" if path is None else f"sqlite:///{path}")
    parts: dict[str, float] = {}

    def timed(owner: Any, name: str, label: str) -> None:
        function = getattr(owner, name)

        def run(*args: Any, **kwargs: Any) -> Any:
            cpu = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                parts[label] = parts.get(label, 0.0) + time.process_time() - cpu

        setattr(owner, name, run)

    statements: dict[str, list[float]] = {}  # statement -> [CPU seconds, executions, rows of executemany]

    class Connection:  # the storage's connection, each statement's CPU time noted
        def __init__(self, db: sqlite3.Connection) -> None:
            self.db = db

        def __getattr__(self, name: str) -> Any:
            return getattr(self.db, name)

        def _noted(self, call: Any, sql: str, rows: int, *args: Any) -> Any:
            cpu = time.process_time()
            result = call(sql, *args)
            noted = statements.setdefault(" ".join(sql.split())[:70], [0.0, 0, 0])
            noted[0] += time.process_time() - cpu
            noted[1] += 1
            noted[2] += rows
            return result

        def execute(self, sql: str, *args: Any) -> Any:
            return self._noted(self.db.execute, sql, 0, *args)

        def executemany(self, sql: str, rows: Any) -> Any:
            rows = list(rows)
            return self._noted(self.db.executemany, sql, len(rows), rows)

    timed(_bulk, "prefetch_keys", "chunk keys")
    timed(store.storage, "prefetch", "read-ahead")
    timed(store, "_learn_chunk", "kernel")
    timed(store, "_write_unwritten", "rules written at a chunk's end")
    if path is not None:
        timed(store.storage, "flush", "commits")
        store.storage._db = Connection(store.storage._db)  # type: ignore[assignment]
    made = observations(web, n)
    cpu = time.process_time()
    store.learn(made)
    store.flush()
    cpu = time.process_time() - cpu
    found: dict[str, Any] = {"per_cpu_s": round(n / cpu), "cpu_us": round(cpu / n * 1e6, 1)}
    found.update({f"{label} µs": round(t / n * 1e6, 1) for label, t in parts.items()})
    for sql, (t, runs, rows) in sorted(statements.items(), key=lambda item: -item[1][0]):
        if t / n * 1e6 >= 0.1:
            found[f"SQL {sql}"] = f"{t / n * 1e6:.1f} µs, {runs:.0f} executions, {rows / n:.2f} rows written per observation"
    return found


def record_more(path: Path | str, n: int, more: int) -> dict[str, Any]:
    """``more`` observations through ``record_redirect`` into the store of ``n`` aliases: learning at that size."""
    from scrapy_iri.store import open_store

    uri = str(path) if str(path).startswith("redis://") else f"sqlite:///{path}"
    with open_store(uri) as store:
        started, cpu = time.perf_counter(), time.process_time()
        for i in range(n, n + more):
            store.record_redirect(source(i), 301, target(i))
        store.flush()
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"record_more": more, "record_more_per_s": round(more / seconds), "record_more_cpu_per_s": round(more / cpu)}


def build(path: Path, n: int, mode: str, web: str = "moves") -> dict[str, Any]:
    from scrapy_iri.store import Alias, open_store

    path.unlink(missing_ok=True)
    started = time.perf_counter()
    with open_store(f"sqlite:///{path}") as store:
        if mode == "bulk":
            now = time.time()
            store.bulk_aliases(Alias(source(i), target(i), 301, now) for i in range(n))  # type: ignore[attr-defined]
        elif mode == "learn":
            return learn_into(store, n, web) | {"file_mb": round(path.stat().st_size / 1e6)}
        else:
            for i in range(n):
                store.record_redirect(source(i), 301, target(i))
    seconds = time.perf_counter() - started
    return {"build_s": round(seconds, 1), "build_per_s": round(n / seconds), "file_mb": round(path.stat().st_size / 1e6)}


def learn_into(store: Any, n: int, web: str = "moves") -> dict[str, Any]:
    """Build a store with ``learn()`` from ``n`` observations of ``web`` (``moves``: ``n`` aliases): the
    bulk learning rate (wall and CPU; the observations are made before the clocks start)."""
    made = observations(web, n)
    started, cpu = time.perf_counter(), time.process_time()
    store.learn(made)
    store.flush()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"build_s": round(seconds, 1), "build_per_s": round(n / seconds), "build_cpu_per_s": round(n / cpu)}


def build_redis(url: str, n: int) -> dict[str, Any]:
    import json as _json

    import redis

    client = redis.Redis.from_url(url, socket_timeout=None)
    started = time.perf_counter()
    now = time.time()
    pipe = client.pipeline(transaction=False)
    for i in range(n):
        pipe.hset("bench:store:aliases", source(i), _json.dumps([target(i), 301, now]))
        if i % 10_000 == 9_999:
            pipe.execute()
    pipe.execute()
    client.set("bench:store:epoch", "bench")
    client.set("bench:store:layout", "2")
    used = int(client.info("memory")["used_memory"])
    return {"build_s": round(time.perf_counter() - started, 1), "redis_mb": round(used / 1e6)}


def _rss(kind: str = "RssAnon") -> int:
    """Private resident memory (``RssAnon``): what this process holds itself; ``RssFile``: the
    pages of files it maps (the store's file read through SQLite's memory map: shared, reclaimable)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(kind + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {kind} in /proc/self/status")


def measure(path: Path | str, n: int) -> dict[str, Any]:
    """In this (fresh) process: open, memory, lookups."""
    import scrapy_iri.store._redis  # noqa: F401 - imported before the baseline
    import scrapy_iri.store._sqlite  # noqa: F401
    from scrapy_iri.store import open_store

    rng = random.Random(1)
    hits = [source(rng.randrange(n)) for _ in range(LOOKUPS)]
    misses = [source(10**9 + rng.randrange(n)) for _ in range(LOOKUPS)]  # never learned (the store may hold more than n)
    before, before_file = _rss(), _rss("RssFile")
    started = time.perf_counter()
    uri = str(path) if str(path).startswith("redis://") else f"sqlite:///{path}"
    store = open_store(uri, create=False)
    open_s = time.perf_counter() - started
    result: dict[str, Any] = {"open_s": round(open_s, 3)}
    for name, urls in (("hit_cold_us", hits), ("hit_warm_us", hits), ("miss_us", misses)):
        started, cpu = time.perf_counter(), time.process_time()
        for url in urls:
            store.representative(url)
        result[name] = round((time.perf_counter() - started) / len(urls) * 1e6, 2)
        result[name.replace("_us", "_cpu_us")] = round((time.process_time() - cpu) / len(urls) * 1e6, 2)
    few = hits[:10_000]  # the cache holds them all: lookups that never read the file
    for url in few:
        store.representative(url)
    cpu = time.process_time()
    for _ in range(3):
        for url in few:
            store.representative(url)
    result["hit_cached_cpu_us"] = round((time.process_time() - cpu) / (3 * len(few)) * 1e6, 2)
    for url in [source(rng.randrange(n)) for _ in range(200_000)]:
        store.representative(url)
    assert store.representative(hits[0]) != hits[0] and store.representative(misses[0]) == misses[0]
    result["resident_bytes_per_alias"] = round((_rss() - before) / n, 1)
    result["resident_mb"] = round((_rss() - before) / 1e6, 1)
    result["mapped_file_mb"] = round((_rss("RssFile") - before_file) / 1e6, 1)
    store.close()
    return result


def measure_and_save(results: dict[str, Any], name: str, row: dict[str, Any], n: int, target: str) -> None:
    """Measure ``target`` in a fresh process, add it to ``row``, and save it in the results as ``name``."""
    child = subprocess.run(
        [sys.executable, __file__, "--aliases", str(n), "--measure", target], check=True, capture_output=True, text=True
    )
    row.update(json.loads(child.stdout))
    print(f"{name}: {row}")
    results.update(json.loads(RESULTS.read_text()) if RESULTS.exists() else {})  # other runs may have saved meanwhile
    results[name] = row
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--aliases", type=int, default=1_000_000)
    parser.add_argument("--mode", choices=["bulk", "record", "learn", "redis", "redis-learn", "memory-learn"], default="bulk")
    parser.add_argument(
        "--web", choices=["moves", "archive-10", "archive-1000", "realistic"], default="moves",
        help="what the learn modes learn: one-off moves (N aliases), or an archive's captures of 10 or 1,000 conventional sites (N observations)",
    )  # fmt: skip
    parser.add_argument("--dir", type=Path, default=Path("/tmp/scrapy-iri-store-bench"))
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # the fresh measuring process
    parser.add_argument(
        "--breakdown", action="store_true",
        help="learn modes: where learn()'s CPU goes (chunk keys, read-ahead, kernel, commits, each SQL statement)",
    )  # fmt: skip
    parser.add_argument("--reuse", action="store_true", help="measure the store built by an earlier run")
    parser.add_argument(
        "--record-more", type=int, default=0, metavar="K",
        help="after the build, K more observations through record_redirect (learning throughput at N aliases)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.aliases)))  # type: ignore[arg-type]
        return
    if args.breakdown:
        if args.mode not in ("learn", "memory-learn"):
            parser.error("--breakdown is for --mode learn and memory-learn")
        path = None
        if args.mode == "learn":
            args.dir.mkdir(parents=True, exist_ok=True)
            path = args.dir / f"breakdown-{args.aliases}-{args.web}.db"
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        for label, value in breakdown(args.web, args.aliases, path).items():
            print(f"{label}: {value}")
        return
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if args.web != "moves" and args.mode not in ("learn", "redis-learn", "memory-learn"):
        parser.error("--web is for the learn modes")
    name = f"{args.mode}-{args.aliases}" + ("" if args.web == "moves" else f"-{args.web}")
    if args.web != "moves" and args.mode != "memory-learn":  # the learning rate alone: the lookups measure the moves' aliases
        from scrapy_iri.store import open_store

        if args.mode == "learn":
            args.dir.mkdir(parents=True, exist_ok=True)
            path = args.dir / f"{name}.db"
            path.unlink(missing_ok=True)
            with open_store(f"sqlite:///{path}") as store:
                row = learn_into(store, args.aliases, args.web)
        else:
            from redis_bench import redis_server

            with redis_server() as url, open_store(f"{url}?namespace=bench") as store:
                row = learn_into(store, args.aliases, args.web)
        print(f"{name}: {row}")
        results.update(json.loads(RESULTS.read_text()) if RESULTS.exists() else {})
        results[name] = row
        RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
        return
    if args.mode == "memory-learn":  # the learner alone: no file, no server, nothing to open again
        from scrapy_iri.store import open_store

        row = learn_into(open_store("memory:"), args.aliases, args.web)
        print(f"{name}: {row}")
        results.update(json.loads(RESULTS.read_text()) if RESULTS.exists() else {})
        results[name] = row
        RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
        return
    if args.mode in ("redis", "redis-learn"):
        import os
        import tempfile

        from redis_bench import redis_server

        from scrapy_iri.store import open_store

        # the stores' ledgers in the run's own directory (the measuring process inherits it): none left behind
        with redis_server() as url, tempfile.TemporaryDirectory(prefix="store-bench-state-") as state:
            os.environ["SCRAPY_IRI_STATE_DIR"] = state
            store_uri = f"{url}?namespace=bench"
            if args.mode == "redis":
                row = build_redis(url, args.aliases)
            else:
                with open_store(store_uri) as store:
                    row = learn_into(store, args.aliases)
            if args.record_more:
                row.update(record_more(store_uri, args.aliases, args.record_more))
            print(f"built: {row}", flush=True)
            measure_and_save(results, f"{args.mode}-{args.aliases}", row, args.aliases, store_uri)
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    path = args.dir / f"{args.mode}-{args.aliases}.db"
    if args.reuse and path.exists():
        row = {k: v for k, v in results.get(f"{args.mode}-{args.aliases}", {}).items() if k.startswith(("build", "file"))}
    else:
        row = build(path, args.aliases, args.mode)
    if args.record_more:
        row.update(record_more(path, args.aliases, args.record_more))
    print(f"built: {row}", flush=True)
    measure_and_save(results, f"{args.mode}-{args.aliases}", row, args.aliases, str(path))


if __name__ == "__main__":
    main()
