"""Redis lost in the middle of real crawls: a restart, and a server that does not come back.

The promise: requests are never silently dropped or forgotten. While Redis
is away, requests are let through unchecked (fetched rather than lost) and
remembered; when it is back their keys are written to it. If it stays away,
the spider closes with ``iri_redis_unavailable`` and a JOBDIR job resumes
where it stopped.
"""

from __future__ import annotations

import time
from collections import Counter

from fixtures.redis_helpers import HOSTS

#: one request at a time per host, so the crawl lasts long enough to lose Redis in the middle
SLOW = {"DOWNLOAD_DELAY": 0.1, "CONCURRENT_REQUESTS_PER_DOMAIN": 1, "LOG_LEVEL": "INFO"}


def wait_for_fetches(web, count: int, crawls, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while sum(web.fetch_counts().values()) < count:
        if time.monotonic() > deadline or all(c.process.poll() is not None for c in crawls):
            raise AssertionError(f"the crawl did not reach {count} fetches: {web.fetch_counts()}")
        time.sleep(0.02)


def test_redis_restart_mid_crawl(shared_web, start_crawl, redis_server):
    shared_web.reset_counts()
    settings = {**SLOW, "IRI_STORE": redis_server.url, "IRI_REDIS_RETRY_TIMEOUT": 30}
    crawls = [
        start_crawl("a", [f"http://{HOSTS[0]}/", f"http://{HOSTS[1]}/doc-30/"], **settings),
        start_crawl("b", [f"http://{HOSTS[2]}/", f"http://{HOSTS[1]}/"], **settings),
    ]
    wait_for_fetches(shared_web, 20, crawls)
    redis_server.kill()  # SIGKILL: no goodbye to the clients
    time.sleep(1.5)
    during = sum(shared_web.fetch_counts().values())
    redis_server.start()  # same port and data directory: the append-only file keeps every write
    for crawl in crawls:
        crawl.wait()

    counts = Counter(shared_web.fetch_counts())
    reachable = shared_web.resource_ids()
    assert during > 20, "the crawl went on while Redis was down"
    assert reachable == set(counts), f"missed: {sorted(reachable - set(counts))}"
    for crawl in crawls:
        assert crawl.stats["finish_reason"] == "finished", crawl.log[-3000:]
        assert crawl.returncode == 0
        assert crawl.stat("iri/redis/outages") <= 1
        assert crawl.stat("iri/redis/replayed") == crawl.stat("iri/redis/unchecked")
        assert crawl.stat("iri/redis/unrecorded") == 0
        if crawl.stat("iri/redis/outages"):
            assert "unreachable" in crawl.log and "answers again" in crawl.log
    assert sum(c.stat("iri/redis/unchecked") for c in crawls) > 0
    # a second fetch can only come from two processes letting the same request through unchecked
    extra = sum(counts.values()) - len(counts)
    assert extra <= sum(c.stat("iri/redis/unchecked_duplicates") for c in crawls)
    # after the restart the seen set has every request again: nothing was forgotten
    client = redis_server.client()
    assert client.zcard("scrapy-iri:shared:live") == 0


def test_redis_gone_for_good_closes_the_spider_and_the_job_resumes(shared_web, start_crawl, redis_server, tmp_path):
    shared_web.reset_counts()
    jobdir = tmp_path / "job"
    settings = {
        **SLOW,
        "IRI_STORE": redis_server.url,
        "IRI_REDIS_RETRY_TIMEOUT": 1.5,
        "IRI_REDIS_PERSIST": True,
        "JOBDIR": str(jobdir),
    }
    seeds = [f"http://{host}/" for host in HOSTS]
    first = start_crawl("first", seeds, **settings)
    wait_for_fetches(shared_web, 20, [first])
    redis_server.kill()
    first.wait()
    assert first.stats["finish_reason"] == "iri_redis_unavailable", first.log[-3000:]
    assert first.returncode == 1
    assert first.stat("iri/redis/unchecked") > 0
    assert "scrapy-iri gives up (iri_redis_unavailable)" in first.log
    assert f"run the job again with JOBDIR={jobdir} to resume them" in first.log
    assert (jobdir / "iri-redis-unchecked.bin").exists()  # keys Redis has not got yet
    fetched_first = Counter(shared_web.fetch_counts())
    assert set(fetched_first) < shared_web.resource_ids()

    redis_server.start()
    second = start_crawl("second", seeds, **settings).wait()
    assert second.stats["finish_reason"] == "finished", second.log[-3000:]
    assert second.stat("iri/redis/replayed") > 0
    assert not (jobdir / "iri-redis-unchecked.bin").exists()
    counts = Counter(shared_web.fetch_counts())
    reachable = shared_web.resource_ids()
    assert reachable == set(counts), f"missed: {sorted(reachable - set(counts))}"
    assert {rid: n for rid, n in counts.items() if n > 1} == {}


def test_without_jobdir_the_error_says_what_is_abandoned(shared_web, start_crawl, redis_server):
    shared_web.reset_counts()
    settings = {**SLOW, "IRI_STORE": redis_server.url, "IRI_REDIS_RETRY_TIMEOUT": 1.0}
    crawl = start_crawl("nojob", [f"http://{host}/" for host in HOSTS], **settings)
    wait_for_fetches(shared_web, 15, [crawl])
    redis_server.kill()
    crawl.wait()
    assert crawl.stats["finish_reason"] == "iri_redis_unavailable"
    assert crawl.returncode == 1
    log = crawl.log
    assert "requests were left unfetched" in log
    assert "set JOBDIR" in log
    assert "not recorded in the shared seen set" in log  # at close: the unchecked keys, said aloud
