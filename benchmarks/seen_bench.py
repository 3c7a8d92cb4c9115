"""Redis memory and round trips of the shared seen set, against scrapy-redis's layout, in one run.

Starts a private ``redis-server`` (persistence off) and, for each layout,
writes ``--keys`` random request keys and reports the growth of Redis's
``used_memory`` per key and the commands Redis processed per new request:

* ``scrapy-redis``: ``SADD <spider>:dupefilter <40-char hex SHA-1>`` (its
  ``RFPDupeFilter``); with scrapy-redis installed, a sample of new requests
  also goes through ``RFPDupeFilter.request_seen`` itself to count its round trips;
* ``one set``: ``SADD NS:seen <12-byte key>`` (scrapy-iri's earlier layout);
* ``buckets 2^k``: ``HSETNX NS:seen:b:<bucket> <rest> ""`` (the layout of
  :class:`scrapy_iri.scrapy._redis_seen.RedisSeenSet`), whose round trips are
  counted through ``RedisSeenSet.add`` itself on a sample of new requests.

Keys are written in pipelined batches (the memory is the same as one at a time).

    nice .venv/bin/python benchmarks/seen_bench.py --keys 1000000 --bits 16 17 20
    nice .venv/bin/python benchmarks/seen_bench.py --keys 100000000 --bits 20 --only buckets

Writes ``benchmarks/results/seen.json`` (merged with earlier runs, by key count).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from redis_bench import redis_server  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "seen.json"
CHUNK = 10_000
SAMPLE = 2_000


def _keys(n: int, seed: int) -> Any:
    rng = random.Random(seed)
    for _ in range(n):
        yield rng.randbytes(12)


def _used(client: Any) -> int:
    return int(client.info("memory")["used_memory"])


def _commands(client: Any) -> int:
    return int(client.info("stats")["total_commands_processed"])


def fill(client: Any, layout: str, n: int, bits: int) -> float:
    """Write ``n`` keys in ``layout``; returns bytes of Redis memory per key."""
    from scrapy_iri.scrapy._redis_seen import SeenLayout

    client.flushall()
    time.sleep(0.2)
    before = _used(client)
    place = SeenLayout("scrapy-iri:bench:seen:b:", bits or 1).place
    pipe = client.pipeline(transaction=False)
    for i, key in enumerate(_keys(n, 1)):
        if layout == "scrapy-redis":
            pipe.sadd("bench:dupefilter", hashlib.sha1(key).hexdigest())
        elif layout == "one set":
            pipe.sadd("scrapy-iri:bench:seen", key)
        else:
            pipe.hsetnx(*place(key), b"")
        if i % CHUNK == CHUNK - 1:
            pipe.execute()
    pipe.execute()
    return (_used(client) - before) / n


def encodings(client: Any, bits: int) -> dict[str, int]:
    """How many buckets Redis keeps as listpacks and as hash tables (a sample of 2,000)."""
    from scrapy_iri.scrapy._redis_seen import SeenLayout

    layout = SeenLayout("scrapy-iri:bench:seen:b:", bits)
    names = list(layout.bucket_keys())
    sample = random.Random(5).sample(names, min(2000, len(names)))
    counts: dict[str, int] = {}
    for name in sample:
        kind = client.object("encoding", name)
        kind = kind.decode() if kind else "missing"
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def round_trips_ours(url: str, bits: int) -> float:
    """Commands Redis processed per new request through RedisSeenSet.add (a Scrapy crawler's seen set)."""
    import redis
    from scrapy import Spider
    from scrapy.core.scheduler import Scheduler
    from scrapy.utils.misc import build_from_crawler
    from scrapy.utils.test import get_crawler

    class Bench(Spider):
        name = "bench"

    crawler = get_crawler(
        Bench,
        {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_STORE": url, "IRI_REDIS_SEEN_BUCKETS": 1 << bits, "IRI_RUNG": "scheme"},
    )
    df = build_from_crawler(Scheduler, crawler).df
    client = redis.Redis.from_url(url)
    keys = list(_keys(SAMPLE, 99))
    before = _commands(client)
    for key in keys:
        assert df.seen.add(key) is None
    spent = _commands(client) - before - 1  # the INFO call itself
    df.seen.close()
    return spent / SAMPLE


def round_trips_scrapy_redis(url: str) -> float | None:
    try:
        from scrapy_redis.dupefilter import RFPDupeFilter
    except ImportError:
        return None
    import redis
    from scrapy import Request

    client = redis.Redis.from_url(url)
    df = RFPDupeFilter(client, "bench:rt")
    requests = [Request(f"http://bench.example/{i}") for i in range(SAMPLE)]
    before = _commands(client)
    for request in requests:
        assert not df.request_seen(request)
    return (_commands(client) - before - 1) / SAMPLE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--bits", type=int, nargs="+", default=[17])
    parser.add_argument("--only", choices=["buckets"], help="skip the one-set layouts (large runs)")
    args = parser.parse_args()
    import redis

    rows: dict[str, Any] = {}
    with redis_server() as url:
        client = redis.Redis.from_url(url)
        layouts = [] if args.only else [("scrapy-redis", 0), ("one set", 0)]
        layouts += [(f"buckets 2^{bits}", bits) for bits in args.bits]
        for name, bits in layouts:
            started = time.perf_counter()
            per_key = fill(client, name if bits == 0 else "buckets", args.keys, bits)
            row: dict[str, Any] = {"bytes_per_key": round(per_key, 1), "fill_s": round(time.perf_counter() - started, 1)}
            if bits:
                row["encodings"] = encodings(client, bits)
                row["keys_per_bucket"] = round(args.keys / (1 << bits), 1)
            rows[name] = row
            print(f"{name:>16}: {per_key:6.1f} B/key  {row}", flush=True)
        client.flushall()
        for bits in args.bits[:1]:
            rows[f"buckets 2^{bits}"]["round_trips_per_new_request"] = round_trips_ours(url, bits)
        sr = round_trips_scrapy_redis(url)
        if sr is not None and "scrapy-redis" in rows:
            rows["scrapy-redis"]["round_trips_per_new_request"] = sr
        info = client.info("server")
    for name, row in rows.items():
        print(f"{name:>16}: {row}")
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results[str(args.keys)] = {"redis": info.get("redis_version"), "layouts": rows}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
