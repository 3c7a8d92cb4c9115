"""Redis memory and round trips of the shared seen set, against scrapy-redis's layout, in one run.

Starts a private ``redis-server`` (persistence off) and, for each layout,
writes ``--keys`` random request keys and reports the growth of Redis's
``used_memory`` per key and the commands Redis processed per new request:

* ``scrapy-redis``: ``SADD <spider>:dupefilter <40-char hex SHA-1>`` (its
  ``RFPDupeFilter``); with scrapy-redis installed, a sample of new requests
  also goes through ``RFPDupeFilter.request_seen`` itself to count its round trips;
* ``one set``: ``SADD NS:seen <12-byte key>`` (scrapy-iri's earlier layout);
* ``tree``: small hashes that split as they fill, ``HSETNX
  NS:seen:t:<depth>:<bucket> <rest> ""`` in one Lua script (the layout of
  :class:`scrapy_iri.scrapy._redis_seen.RedisSeenSet`, see
  :mod:`scrapy_iri.store._redis.seen`), whose round trips are counted through
  ``RedisSeenSet.add`` itself on a sample of new requests.

Keys are written in pipelined batches (the memory is the same as one at a time).

    nice .venv/bin/python benchmarks/seen_bench.py --keys 1000000
    nice .venv/bin/python benchmarks/seen_bench.py --keys 100000000 --only tree

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


def fill(client: Any, layout: str, n: int) -> float:
    """Write ``n`` keys in ``layout``; returns bytes of Redis memory per key."""
    from scrapy_iri.store._redis.seen import SeenTree

    client.flushall()
    time.sleep(0.2)
    before = _used(client)
    if layout == "tree":
        _fill_tree(client, SeenTree(client, "scrapy-iri:bench:seen"), n)
        return (_used(client) - before) / n
    if layout == "tree (filled in Redis)":
        _fill_tree_server_side(client, n)
        return (_used(client) - before) / n
    pipe = client.pipeline(transaction=False)
    for i, key in enumerate(_keys(n, 1)):
        if layout == "scrapy-redis":
            pipe.sadd("bench:dupefilter", hashlib.sha1(key).hexdigest())
        else:
            pipe.sadd("scrapy-iri:bench:seen", key)
        if i % CHUNK == CHUNK - 1:
            pipe.execute()
    pipe.execute()
    return (_used(client) - before) / n


def _fill_tree(client: Any, tree: Any, n: int) -> None:
    """The tree's script for each key, pipelined on a raw connection (the client's pipeline costs more
    than Redis does at 10^8 keys)."""
    client.script_load(tree.script.script)
    conn = client.connection_pool.get_connection()
    try:
        batch: list[bytes] = []
        for key in _keys(n, 1):
            batch.append(key)
            if len(batch) >= CHUNK:
                _send(conn, tree, batch)
                batch = []
        _send(conn, tree, batch)
    finally:
        client.connection_pool.release(conn)


def _send(conn: Any, tree: Any, keys: list[bytes]) -> None:
    if not keys:
        return
    conn.send_packed_command(conn.pack_commands([("EVALSHA", tree.script.sha, 0, *tree.args(k)) for k in keys]))
    for _ in keys:
        conn.read_response()


def _fill_tree_server_side(client: Any, n: int) -> None:
    """The tree's own script body in a loop inside Redis, on keys made there (12 bytes of SHA-1 of i):
    what 10^8 requests cost in memory, without 10^8 round trips from Python."""
    from scrapy_iri.store._redis.seen import _ADD, ROOT_BITS, SPLIT_AT

    body = _ADD.replace("local prefix, key = ARGV[1], ARGV[2]", "").replace(
        "local depth, limit = tonumber(ARGV[3]), tonumber(ARGV[4])", ""
    )
    loop = (
        "local function add(prefix, key, depth, limit)\n" + body + "\nend\n"
        "for i = tonumber(ARGV[2]), tonumber(ARGV[3]) do\n"
        "  local hex = string.sub(redis.sha1hex(tostring(i)), 1, 24)\n"
        "  local key = (string.gsub(hex, '..', function(c) return string.char(tonumber(c, 16)) end))\n"
        "  add(ARGV[1], key, tonumber(ARGV[4]), tonumber(ARGV[5]))\n"
        "end\nreturn 0\n"
    )
    step = 20_000
    for first in range(0, n, step):
        client.eval(loop, 0, "scrapy-iri:bench:seen:t:", first, min(first + step, n) - 1, ROOT_BITS, SPLIT_AT)


def tree_shape(client: Any) -> dict[str, Any]:
    """Buckets by encoding and depth, and their mean size (markers left out)."""
    from scrapy_iri.store._redis.seen import SeenTree

    tree = SeenTree(client, "scrapy-iri:bench:seen")
    encodings: dict[str, int] = {}
    depths: dict[int, int] = {}
    fields = buckets = 0
    names = list(tree.buckets())
    for i in range(0, len(names), 5000):
        pipe = client.pipeline(transaction=False)
        for name in names[i : i + 5000]:
            pipe.object("encoding", name)
            pipe.hlen(name)
        replies = pipe.execute()
        for name, kind, size in zip(names[i : i + 5000], replies[::2], replies[1::2]):
            kind = kind.decode() if isinstance(kind, bytes) else str(kind)
            encodings[kind] = encodings.get(kind, 0) + 1
            if size > 1 or not client.hexists(name, ""):
                depth = int(name.split(b":")[-2])
                depths[depth] = depths.get(depth, 0) + 1
                fields += size
                buckets += 1
    return {"encodings": encodings, "depths": dict(sorted(depths.items())), "mean_bucket": round(fields / max(buckets, 1), 1)}


def round_trips_ours(url: str) -> float:
    """Commands Redis processed per new request through RedisSeenSet.add (a Scrapy crawler's seen set)."""
    from scrapy import Spider
    from scrapy.core.scheduler import Scheduler
    from scrapy.utils.misc import build_from_crawler
    from scrapy.utils.test import get_crawler

    class Bench(Spider):
        name = "bench"

    crawler = get_crawler(
        Bench,
        {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_STORE": url, "IRI_RUNG": "scheme"},
    )
    df = build_from_crawler(Scheduler, crawler).df
    seen = df.seen
    pool = seen.client.connection_pool
    conn = seen._conn = pool.connection_class(**pool.connection_kwargs)  # the set's own connection, counted
    sent = [0]
    send = conn.send_command

    def counted(*args: Any, **kwargs: Any) -> Any:
        sent[0] += 1
        return send(*args, **kwargs)

    conn.send_command = counted
    for key in _keys(SAMPLE, 99):
        assert seen.add(key) is None
    seen.close()
    return sent[0] / SAMPLE


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
    before = _commands(client)  # scrapy-redis runs no scripts: commands processed are round trips
    for request in requests:
        assert not df.request_seen(request)
    return (_commands(client) - before - 1) / SAMPLE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--only", choices=["tree"], help="skip the one-set layouts (large runs)")
    parser.add_argument(
        "--server-side", action="store_true", help="fill the tree from a script inside Redis (10^8 keys in minutes)"
    )
    args = parser.parse_args()
    import redis

    rows: dict[str, Any] = {}
    with redis_server() as url:
        client = redis.Redis.from_url(url, socket_timeout=None)
        tree = "tree (filled in Redis)" if args.server_side else "tree"
        layouts = [tree] if args.only else ["scrapy-redis", "one set", tree]
        for name in layouts:
            started = time.perf_counter()
            per_key = fill(client, name, args.keys)
            row: dict[str, Any] = {"bytes_per_key": round(per_key, 1), "fill_s": round(time.perf_counter() - started, 1)}
            if name.startswith("tree"):
                row.update(tree_shape(client))
            rows[name] = row
            print(f"{name:>16}: {row}", flush=True)
        client.flushall()
        rows[tree]["round_trips_per_new_request"] = round_trips_ours(url)
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
