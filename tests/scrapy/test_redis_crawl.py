"""Real crawls: several Scrapy processes share one Redis and one simulated web.

Each process is a separate ``python`` running Scrapy (``crawl_child.py``);
the simulated web counts every document it serves. The claim under test:
together the processes fetch every reachable resource exactly once and
miss none, with Scrapy's own scheduler and with scrapy-redis's.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest
from fixtures.redis_helpers import CHILD, HOSTS

from simweb.crawl import subprocess_env

from scrapy_iri.store._redis.seen import SeenTree

#: slow enough that the processes overlap (3 hosts x 40 pages, one request at a time per host)
PACED = {"DOWNLOAD_DELAY": 0.05, "CONCURRENT_REQUESTS_PER_DOMAIN": 2, "LOG_LEVEL": "INFO"}


def homes(order: list[int]) -> list[str]:
    return [f"http://{HOSTS[i]}/" for i in order]


def fetches(web) -> Counter[str]:
    return Counter(web.fetch_counts())


def assert_each_fetched_once(web, crawls) -> None:
    counts = fetches(web)
    reachable = web.resource_ids()
    missed = reachable - set(counts)
    twice = {rid: n for rid, n in counts.items() if n > 1}
    logs = "\n\n".join(c.log[-3000:] for c in crawls if c.returncode != 0)
    assert not missed, f"resources no process fetched: {sorted(missed)}\n{logs}"
    assert not twice, f"resources fetched more than once in total: {twice}"
    assert set(counts) <= reachable
    assert len(reachable) == len(HOSTS) * 41


@pytest.mark.parametrize("rung", ["protocol", "scheme"])
def test_processes_fetch_each_resource_once_in_total(shared_web, start_crawl, redis_url, redis_server, rung):
    shared_web.reset_counts()
    settings = {**PACED, "IRI_STORE": redis_url, "IRI_RUNG": rung}
    # each process starts on its own host and on a page of the next one (overlapping
    # seeds); the homes link to one another, so every host is discovered by every process
    crawls = [
        start_crawl(name, [*homes([i]), f"http://{HOSTS[(i + 1) % 3]}/doc-5/"], **settings)
        for i, name in enumerate("abc")
    ]
    for crawl in crawls:
        crawl.wait()
    for crawl in crawls:
        assert crawl.returncode == 0, crawl.log[-3000:]
        assert crawl.stats["finish_reason"] == "finished"
    assert_each_fetched_once(shared_web, crawls)
    # the work was shared, and duplicates were found across processes
    assert sum(1 for c in crawls if c.pages) >= 2, [len(c.pages) for c in crawls]
    assert sum(c.stat("iri/redis/seen_elsewhere") for c in crawls) > 0
    # one SADD per request at most, none for requests a process already knows (local cache)
    for crawl in crawls:
        checked = crawl.stat("dupefilter/filtered") + crawl.stat("scheduler/enqueued")
        assert crawl.stat("iri/redis/sadd") + crawl.stat("iri/redis/local_hits") <= checked
    assert sum(c.stat("iri/redis/local_hits") for c in crawls) > 0
    # the seen set is deleted by the last process out (IRI_REDIS_PERSIST is off)
    client = redis_server.client()
    assert not list(SeenTree(client, "scrapy-iri:shared:seen").buckets())
    assert client.zcard("scrapy-iri:shared:live") == 0
    if rung == "protocol":  # the store stays: what was learned is knowledge about the web
        assert client.hlen("scrapy-iri:shared:store:aliases") > 0


def test_processes_with_the_same_start_urls(shared_web, start_crawl, redis_url):
    """Same seeds: whoever records a URL first fetches it; the others filter it (never twice)."""
    shared_web.reset_counts()
    settings = {**PACED, "IRI_STORE": redis_url}
    crawls = [start_crawl(name, homes([0, 1, 2]), **settings) for name in "ab"]
    for crawl in crawls:
        crawl.wait()
        assert crawl.stats["finish_reason"] == "finished", crawl.log[-3000:]
    assert_each_fetched_once(shared_web, crawls)


def test_persist_keeps_the_seen_set_and_a_second_run_fetches_nothing(
    shared_web, start_crawl, redis_url, redis_server
):
    shared_web.reset_counts()
    settings = {**PACED, "IRI_STORE": redis_url, "IRI_REDIS_PERSIST": True}
    first = start_crawl("first", homes([0, 1, 2]), **settings).wait()
    assert first.stats["finish_reason"] == "finished"
    assert any(SeenTree(redis_server.client(), "scrapy-iri:shared:seen").keys())
    shared_web.reset_counts()
    second = start_crawl("second", homes([0, 1, 2]), **settings).wait()
    assert second.stats["finish_reason"] == "finished"
    assert sum(fetches(shared_web).values()) == 0
    # flush on start: a new run from scratch
    third = start_crawl("third", homes([0, 1, 2]), **settings, IRI_REDIS_FLUSH_ON_START=True).wait()
    assert third.stats["finish_reason"] == "finished"
    assert_each_fetched_once(shared_web, [third])


def test_scrapy_redis_scheduler_with_the_iri_dupefilter(shared_web, start_crawl, redis_url, redis_server):
    pytest.importorskip("scrapy_redis", reason="scrapy-redis is not installed (pip install scrapy-redis)")
    shared_web.reset_counts()
    settings = {
        **PACED,
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "SCHEDULER_PERSIST": True,
        "REDIS_URL": redis_url,
        "IRI_STORE": "redis:",  # the store too, on scrapy-redis's server
        "DUPEFILTER_CLASS": "scrapy_iri.IRIDupeFilter",
    }
    crawls = [start_crawl("a", homes([0, 1, 2]), **settings), start_crawl("b", homes([2, 1, 0]), **settings)]
    for crawl in crawls:
        crawl.wait()
    for crawl in crawls:
        assert crawl.returncode == 0, crawl.log[-3000:]
        assert crawl.stats["finish_reason"] == "finished", crawl.log[-3000:]
    assert sum(crawl.stat("scheduler/enqueued/redis") for crawl in crawls) > 0  # one queue, in Redis
    assert_each_fetched_once(shared_web, crawls)
    client = redis_server.client()
    assert any(SeenTree(client, "scrapy-iri:shared:seen").keys())  # SCHEDULER_PERSIST: kept
    assert not client.exists("shared:dupefilter")  # scrapy-redis's own filter was not used


def test_redis_unreachable_at_start_the_crawl_does_not_start(shared_web, tmp_path, dead_redis_url):
    """``scrapy runspider`` as a user runs it: exit status 1, the reason last on stderr, no request sent."""
    shared_web.reset_counts()
    command = [
        sys.executable, "-m", "scrapy", "runspider", str(CHILD),
        "-a", f"start_urls={' '.join(homes([0, 1, 2]))}",
        "-s", "ADDONS={\"scrapy_iri.Addon\": 0}",
        "-s", f"IRI_STORE={dead_redis_url}",
        "-s", "TELNETCONSOLE_ENABLED=False",
    ]  # fmt: skip
    done = subprocess.run(
        command, env=subprocess_env(shared_web), cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("scrapy_iri.store._redis.RedisUnavailable: cannot reach Redis at")
    assert f"{dead_redis_url} (from IRI_STORE)" in last
    assert "The crawl does not start" in last
    assert "Spider opened" not in done.stderr
    assert shared_web.requests_served() == 0
