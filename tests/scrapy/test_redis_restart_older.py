"""Real crawls sharing a Redis store when the server restarts from an older append-only file.

Two Scrapy processes crawl the simulated web with the store and the seen
set in Redis. In the middle of the crawl the append-only files are copied (a
backup); later Redis is killed and restarted from that copy: it forgets what
was learned and seen since. No page may be lost (every reachable resource is
fetched: a request forgotten by the seen set is fetched again, never missed),
the crawls finish, and the only errors logged are the store's own report that
Redis went back in time. A third crawl started after the crawls, on a Redis
restarted from the same older copy again, fetches every page once.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter

from fixtures.redis_helpers import HOSTS
from test_redis_faults import SLOW, wait_for_fetches


def restart_from(server, saved) -> None:  # type: ignore[no-untyped-def]
    server.kill()
    shutil.rmtree(server.directory / "appendonlydir")
    shutil.copytree(saved, server.directory / "appendonlydir")
    server.start()


def errors_are_only_rollbacks(log: str) -> None:
    errors = [line for line in log.splitlines() if re.search(r"\] \S+: ERROR: |\bERROR\b:", line)]
    assert all("went back to an older state" in line for line in errors), "\n".join(errors[:5])


def test_redis_restarted_from_an_older_aof_mid_crawl_and_between_crawls(shared_web, start_crawl, redis_server, tmp_path):
    shared_web.reset_counts()
    settings = {**SLOW, "IRI_STORE": redis_server.url, "IRI_REDIS_RETRY_TIMEOUT": 30}
    crawls = [
        start_crawl("a", [f"http://{HOSTS[0]}/", f"http://{HOSTS[1]}/doc-30/"], **settings),
        start_crawl("b", [f"http://{HOSTS[2]}/", f"http://{HOSTS[1]}/"], **settings),
    ]
    wait_for_fetches(shared_web, 15, crawls)
    saved = tmp_path / "aof-backup"
    shutil.copytree(redis_server.directory / "appendonlydir", saved)  # fsync always: a prefix of the writes
    wait_for_fetches(shared_web, 45, crawls)
    restart_from(redis_server, saved)
    for crawl in crawls:
        crawl.wait(timeout=120)

    counts = Counter(shared_web.fetch_counts())
    reachable = shared_web.resource_ids()
    assert reachable == set(counts), f"missed: {sorted(reachable - set(counts))}"
    for crawl in crawls:
        assert crawl.stats["finish_reason"] == "finished", crawl.log[-3000:]
        assert crawl.returncode == 0
        errors_are_only_rollbacks(crawl.log)
        assert crawl.stat("log_count/ERROR") == crawl.stat("iri/redis/store/rollbacks")

    # between crawls: Redis restarted from the older copy again; the operator starts the crawl anew (its
    # seen set deleted) over the same store, given by a store URI with its options
    restart_from(redis_server, saved)
    client = redis_server.client()
    client.delete(*client.scan_iter(match="scrapy-iri:shared:seen*"), "scrapy-iri:shared:live")
    shared_web.reset_counts()
    third = start_crawl("c", [f"http://{h}/" for h in HOSTS] + [f"http://{HOSTS[1]}/doc-30/"],
                        **{**settings, "IRI_STORE": f"{redis_server.url}?namespace=scrapy-iri:shared"}).wait(timeout=120)  # fmt: skip
    counts = Counter(shared_web.fetch_counts())
    assert reachable == set(counts), f"missed: {sorted(reachable - set(counts))}"
    assert third.stats["finish_reason"] == "finished" and third.returncode == 0, third.log[-3000:]
    errors_are_only_rollbacks(third.log)
    assert third.stat("iri/redis/store/rollbacks") == 1, third.log[-3000:]  # the store's ledger tells it at open
    assert "went back to an older state" in third.log  # said when the store opens (before Scrapy counts log lines)
    assert third.stats.get("log_count/ERROR") == 1, third.log[-3000:]  # and counted once the spider opens
    assert max(counts.values()) == 1  # one process, a seen set of its own: every page once


def test_a_crawl_on_rdb_only_redis_stops_unless_its_store_uri_accepts_the_risk(shared_web, start_crawl, tmp_path):
    from fixtures.redis_helpers import RedisServer

    server = RedisServer(tmp_path, persistent=False, args=("--save", "900 1")).start()
    try:
        refused = start_crawl("r", [f"http://{HOSTS[0]}/"], IRI_STORE=server.url).wait(timeout=120)
        assert "RDB snapshots only" in refused.log and "IRI_REDIS_ACCEPT_ROLLBACK_RISK" in refused.log
        assert not refused.stats.get("response_received_count")
        # refused while the engine is built, before Scrapy counts log lines: the crawl ends once its spider opens
        assert refused.stats.get("log_count/ERROR", 0) == 1 and refused.stats["finish_reason"] == "store_refused"
        assert refused.returncode == 1 and "Traceback" not in refused.log, refused.log[-3000:]
        shared_web.reset_counts()
        accepted = start_crawl("s", [f"http://{HOSTS[0]}/"], IRI_STORE=f"{server.url}?accept_rollback_risk=1").wait(timeout=120)
        assert accepted.stats["finish_reason"] == "finished" and accepted.returncode == 0, accepted.log[-3000:]
        assert "accepted (only this machine's ledger repairs a rollback)" in accepted.log
        assert shared_web.fetch_counts()
    finally:
        server.stop()
