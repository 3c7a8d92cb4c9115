"""Benchmark of the Redis backend against the SQLite backend, in one run, on one workload.

The script starts its own ``redis-server`` on a free loopback port (in a
temporary directory, persistence off: what is measured is the client's cost
and the loopback round trip, not the disk), builds the same learned store in
both backends and times, per backend:

* **lookups** -- ``store.representative(url)`` on a seeded stream of URLs
  (a third exact aliases, a third covered by a learned rule, a third
  unknown): lookups per second, best of the repeats, so answered by each
  backend's bounded cache (a lookup the cache cannot answer costs a read:
  see ``store_bench.py``).
* **learning** -- ``record_redirect``/``record_response`` for a stream of
  observations, the backend's write batching included (SQLite: a
  transaction per 500 writes or 2 s; Redis: a Lua batch per sync interval),
  final flush included: microseconds per observation.
* **seen check** -- ``IRIDupeFilter.request_seen`` as Scrapy's scheduler calls
  it, at the scheme and at the protocol rung: new requests (Redis: one
  ``SADD`` round trip each; it cannot be batched, the scheduler needs the
  answer at once), requests this process saw before (answered locally), and
  requests another process recorded (one ``SADD``, answer "seen").

and reports the time Redis adds: per new request (its seen check) and per
observation (learning), each minus the same for SQLite. Every figure is the
best of ``--repeat`` runs. Prints a table; writes
``benchmarks/results/redis.json``.

    .venv/bin/python benchmarks/redis_bench.py [--urls N] [--repeat K]

``--learn N`` measures bulk learning only: ``EquivalenceStore.learn`` of
``store_bench.py``'s N observations into a fresh store, with the wall time,
the CPU time of this process (and of its parts: the chunks' read-ahead,
the batches, the ledger) and that of the server (``INFO cpu`` before and
after), and the server's time in scripts (``INFO commandstats``); it prints
one JSON line and writes nothing. ``--no-hiredis`` and ``--no-msgpack`` run it
as without those packages (redis-py's own reply parser; batches in JSON):

    nice .venv/bin/python benchmarks/redis_bench.py --learn 10000
    nice .venv/bin/python benchmarks/redis_bench.py --learn 10000 --no-hiredis --no-msgpack
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "redis.json"
SEED = 20240607


# -- a private redis-server -----------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def redis_server() -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed (apt-get install redis-server)")
    import redis

    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="redis-bench-") as directory:
        args = [binary, "--bind", "127.0.0.1", "--port", str(port), "--dir", directory, "--save", "", "--appendonly", "no"]
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client = redis.Redis(port=port)
            for _ in range(500):
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.01)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            process.terminate()
            process.wait(timeout=10)


# -- the workload ---------------------------------------------------------------------


def learned_history(hosts: int, aliases: int, rng: random.Random) -> list[tuple[str, int, str | None]]:
    """Observations that teach a store ``aliases`` exact aliases and an add-slash rule per host."""
    history: list[tuple[str, int, str | None]] = []
    for h in range(hosts):
        for i in range(3):
            history.append((f"http://host{h}.example/dir{i}", 301, f"http://host{h}.example/dir{i}/"))
    for i in range(aliases):
        h = rng.randrange(hosts)
        history.append((f"http://host{h}.example/old/page-{i}.html", 301, f"http://host{h}.example/new/page-{i}.html"))
    return history


def lookup_stream(hosts: int, aliases: int, size: int, rng: random.Random) -> list[str]:
    urls = []
    for n in range(size):
        h = rng.randrange(hosts)
        kind = n % 3
        if kind == 0:
            i = rng.randrange(aliases)
            urls.append(f"http://host{h}.example/old/page-{i}.html")  # an alias (of some host) or unknown
        elif kind == 1:
            urls.append(f"http://host{h}.example/dir{rng.randrange(1000)}")  # a rule applies
        else:
            urls.append(f"http://host{h}.example/article/{rng.randrange(10**6)}.html")
    return urls


def observation_stream(hosts: int, size: int, rng: random.Random) -> list[tuple[str, int, str | None]]:
    """What a crawl reports: mostly documents (200), some redirects."""
    out: list[tuple[str, int, str | None]] = []
    for n in range(size):
        h = rng.randrange(hosts)
        if n % 10 == 0:
            out.append((f"http://host{h}.example/sec{n}", 301, f"http://host{h}.example/sec{n}/"))
        else:
            out.append((f"http://host{h}.example/doc/{n}.html", 200, None))
    return out


def teach(store: Any, history: list[tuple[str, int, str | None]]) -> None:
    for source, status, target in history:
        if target is None:
            store.record_response(source, status)
        else:
            store.record_redirect(source, status, target)
    store.flush()


# -- timing ---------------------------------------------------------------------------


def best_of(repeat: int, run: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_stores(makers: dict[str, Callable[[str], Any]], args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Lookups and learning, the backends interleaved in each repetition (the machine's load hits both)."""
    rng = random.Random(SEED)
    history = learned_history(args.hosts, args.aliases, rng)
    urls = lookup_stream(args.hosts, args.aliases, args.urls, rng)
    observations = observation_stream(args.hosts, args.observations, rng)
    out: dict[str, dict[str, float]] = {name: {} for name in makers}
    stores = {name: make("lookups") for name, make in makers.items()}
    for store in stores.values():
        teach(store, history)
    for _ in range(args.repeat):
        for name, store in stores.items():
            start = time.perf_counter()
            for u in urls:
                store.representative(u)
            us = (time.perf_counter() - start) / len(urls) * 1e6
            out[name]["us_per_lookup"] = min(out[name].get("us_per_lookup", us), us)
    for name, store in stores.items():
        out[name]["lookups_per_second"] = 1e6 / out[name]["us_per_lookup"]
        out[name]["merged_share"] = sum(store.representative(u) != u for u in urls) / len(urls)
        store.close()
    for attempt in range(args.repeat):
        for name, make in makers.items():
            store = make(f"learn{attempt}")
            teach(store, history)
            start = time.perf_counter()
            teach(store, observations)
            took = (time.perf_counter() - start) / len(observations) * 1e6
            store.close()
            out[name]["us_per_observation"] = min(out[name].get("us_per_observation", took), took)
    return out


def bench_seen(settings: dict[str, Any], rung: str, attempt: int, args: argparse.Namespace) -> dict[str, float]:
    """One pass of ``request_seen`` over new requests, the same again, and in a second process."""
    from scrapy import Request, Spider
    from scrapy.core.scheduler import Scheduler
    from scrapy.utils.misc import build_from_crawler
    from scrapy.utils.test import get_crawler

    class BenchSpider(Spider):
        name = f"bench-{rung}-{attempt}-{time.monotonic_ns()}"  # a fresh namespace

    def dupefilter() -> Any:
        crawler = get_crawler(BenchSpider, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_RUNG": rung, **settings})
        return build_from_crawler(Scheduler, crawler).df

    rng = random.Random(SEED + 1)
    urls = [f"http://host{rng.randrange(args.hosts)}.example/p/{n}?q={rng.randrange(100)}" for n in range(args.requests)]
    out: dict[str, float] = {}
    one, other = dupefilter(), dupefilter()  # two processes of one crawl
    for name, df in (("new", one), ("seen_here", one), ("seen_elsewhere", other)):
        requests = [Request(u) for u in urls]
        start = time.perf_counter()
        for request in requests:
            df.request_seen(request)
        out[f"us_per_request_{name}"] = (time.perf_counter() - start) / len(requests) * 1e6
    for df in (one, other):
        close = getattr(df.seen, "close", None)
        if close is not None:
            close()
    return out


def bench_round_trip(url: str, repeat: int, n: int = 20000) -> float:
    """A bare ``SADD`` with redis-py: the floor of a seen check that goes to Redis."""
    import redis

    client = redis.Redis.from_url(url)
    rng = random.Random(SEED)
    keys = [rng.randbytes(12) for _ in range(n)]
    return best_of(repeat, lambda: [client.sadd("bench:raw", key) for key in keys]) / n * 1e6


def server_cpu(client: Any) -> float:
    """The CPU seconds the server used so far (``INFO cpu``: user and system)."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def bench_learn(n: int, chunk: int | None = None) -> dict[str, Any]:
    """``EquivalenceStore.learn`` of ``store_bench.py``'s ``n`` observations into a private ``redis-server``:
    observations per second of wall time, of the client's CPU and of the server's CPU."""

    import redis

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from store_bench import source, target

    from scrapy_iri.store import Observation, open_store
    from scrapy_iri.store._redis.ledger import Ledger
    from scrapy_iri.store._redis.port import RedisPort

    parts: dict[str, float] = {}

    def timed(owner: Any, name: str, label: str) -> None:  # the CPU time of one part of the client's work
        call = getattr(owner, name)

        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return call(*args, **kwargs)
            finally:
                parts[label] = parts.get(label, 0.0) + time.process_time() - started

        setattr(owner, name, run)

    from scrapy_iri.store import _bulk
    from scrapy_iri.store._cached import CachedReads

    timed(RedisPort, "read", "read_ahead")
    timed(RedisPort, "apply", "batches")
    timed(Ledger, "record", "ledger")
    # the shared layers' part of the read-ahead: the keys a chunk needs, and the cache filled from the read
    timed(_bulk, "prefetch_keys", "chunk_keys")
    timed(CachedReads, "prefetch", "cached_prefetch")
    from redis.utils import HIREDIS_AVAILABLE

    from scrapy_iri.store._redis import codec

    with redis_server() as url, tempfile.TemporaryDirectory(prefix="redis-bench-ledger-") as ledger:
        client = redis.Redis.from_url(url)
        now = time.time()
        observations = [Observation(source(i), 301, target(i), time=now) for i in range(n)]
        # the ledger in the run's own directory: none left behind in the user's state directory
        with open_store(f"{url}?namespace=bench", ledger_path=Path(ledger, "store.ledger")) as store:
            server, started, cpu = server_cpu(client), time.perf_counter(), time.process_time()
            store.learn(observations, **({} if chunk is None else {"chunk": chunk}))
            store.flush()
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            server = server_cpu(client) - server
        stats = client.info("commandstats")
    scripts = {k: v for k, v in stats.items() if k.startswith("cmdstat_eval")}
    return {
        "observations": n,
        "parser": "hiredis" if HIREDIS_AVAILABLE else "python",
        "batches_as": "json" if codec._packb is None else "msgpack",
        "wall_s": round(seconds, 2),
        "per_s": round(n / seconds),
        "client_cpu_s": round(cpu, 2),
        "client_cpu_per_s": round(n / cpu),
        "server_cpu_s": round(server, 2),
        "server_cpu_per_s": round(n / server) if server else None,
        "server_us_per_observation": round(server / n * 1e6, 1),
        "client_us_per_observation": round(cpu / n * 1e6, 1),
        # of which: the read-ahead of chunks (Redis's read), the batches (built, sent, the ledger's part
        # included), the ledger; the shared layers' keys of a chunk, and their prefetch (the read included)
        "client_parts_us_per_observation": {k: round(v / n * 1e6, 1) for k, v in parts.items()},
        "scripts": {k: {"calls": v["calls"], "usec": v["usec"]} for k, v in scripts.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--aliases", type=int, default=20000)
    parser.add_argument("--urls", type=int, default=100_000, help="lookups per pass")
    parser.add_argument("--observations", type=int, default=20000)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--learn", type=int, metavar="N", help="only: learn() of N observations, client and server CPU")
    parser.add_argument("--no-hiredis", action="store_true", help="as without hiredis: redis-py's own parser")
    parser.add_argument("--no-msgpack", action="store_true", help="as without msgpack: batches in JSON")
    args = parser.parse_args()
    for name, off in (("hiredis", args.no_hiredis), ("msgpack", args.no_msgpack)):
        if off:  # before redis and scrapy_iri are imported: an import of it fails
            sys.modules[name] = None  # type: ignore[assignment]
    if args.learn:
        print(json.dumps(bench_learn(args.learn)))
        return 0

    from scrapy_iri.store._redis import RedisStore
    from scrapy_iri.store._sqlite import SQLiteStore

    results: dict[str, Any] = {"config": vars(args), "python": platform.python_version(), "machine": platform.machine()}
    with tempfile.TemporaryDirectory(prefix="sqlite-bench-") as directory, redis_server() as url:
        results["redis_sadd_round_trip_us"] = bench_round_trip(url, args.repeat)
        makers: dict[str, Callable[[str], Any]] = {
            "sqlite": lambda name: SQLiteStore(Path(directory, f"{name}-{time.monotonic_ns()}.db")),
            "redis": lambda name: RedisStore(url, f"bench:{name}:{time.monotonic_ns()}"),
        }
        crawl_settings = {"sqlite": {"IRI_STORE": f"sqlite:///{directory}/crawl.db"}, "redis": {"IRI_STORE": url}}
        for name, figures in bench_stores(makers, args).items():
            results[name] = {"store": figures}
        for rung in ("scheme", "protocol"):
            for attempt in range(args.repeat):
                for name, settings in crawl_settings.items():
                    section = results[name].setdefault(f"seen_{rung}", {})
                    for key, value in bench_seen(settings, rung, attempt, args).items():
                        section[key] = min(section.get(key, value), value)

    sqlite, redis_ = results["sqlite"], results["redis"]
    learning = redis_["store"]["us_per_observation"] - sqlite["store"]["us_per_observation"]
    added = {}
    for rung in ("scheme", "protocol"):
        key = f"seen_{rung}"
        added[rung] = redis_[key]["us_per_request_new"] - sqlite[key]["us_per_request_new"]
    results["added_us_per_new_request"] = added
    results["added_us_per_observation"] = learning

    print(f"Redis SADD round trip (redis-py, loopback): {results['redis_sadd_round_trip_us']:.1f} us")
    print(f"{'':40} {'SQLite':>12} {'Redis':>12}")
    rows = [
        ("store lookups per second", "store", "lookups_per_second", "{:,.0f}"),
        ("  us per lookup", "store", "us_per_lookup", "{:.2f}"),
        ("learning: us per observation", "store", "us_per_observation", "{:.1f}"),
    ]
    for rung in ("scheme", "protocol"):
        rows += [
            (f"request_seen ({rung}), new: us", f"seen_{rung}", "us_per_request_new", "{:.1f}"),
            (f"request_seen ({rung}), seen here: us", f"seen_{rung}", "us_per_request_seen_here", "{:.1f}"),
            (f"request_seen ({rung}), seen elsewhere: us", f"seen_{rung}", "us_per_request_seen_elsewhere", "{:.1f}"),
        ]
    for label, section, key, fmt in rows:
        print(f"{label:40} {fmt.format(sqlite[section][key]):>12} {fmt.format(redis_[section][key]):>12}")
    for rung, value in added.items():
        print(f"added by Redis per new request ({rung} rung): {value:+.1f} us")
    print(f"added by Redis per observation (learning): {learning:+.1f} us")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
