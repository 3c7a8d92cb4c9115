"""The dupefilter's seen set in Redis: several dupefilters (standing for several processes), one server."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.redis_helpers import RedisServer
from scrapy import Request, Spider
from scrapy.core.scheduler import Scheduler
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from scrapy_iri import IRIDupeFilter
from scrapy_iri.scrapy import _redis_seen as redis_seen
from scrapy_iri.scrapy._crawl import IRICrawl
from scrapy_iri.scrapy._redis_seen import RedisConfig, RedisSeenSet, RedisUnavailable
from scrapy_iri.scrapy._settings import IRISettingsError


class SeenSpider(Spider):
    name = "seen-tests"


def make_crawler(**settings):
    return get_crawler(SeenSpider, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_RUNG": "scheme", **settings})


@pytest.fixture
def make_filter(redis_url):
    """``make_filter(**settings)``: the dupefilter of a new crawler (a new process) on the test server."""
    filters = []

    def make(**settings):
        crawler = make_crawler(IRI_STORE=redis_url, **settings)
        df = build_from_crawler(Scheduler, crawler).df
        filters.append(df)
        return df

    yield make
    for df in filters:
        if isinstance(df.seen, RedisSeenSet):
            df.seen.close()


def seen(df, url: str) -> bool:
    request = Request(url)
    found = df.request_seen(request)
    if found:
        df.log(request, None)
    return found


NS = "scrapy-iri:seen-tests:seen"


def seen_keys(client, ns: str = NS) -> set[bytes]:
    """Every key of the shared seen set, rebuilt from its buckets' names and fields."""
    from scrapy_iri.store._redis.seen import SeenTree

    return set(SeenTree(client, ns).keys())


def stats(df) -> dict:
    return {k: v for k, v in df.crawler.stats.get_stats().items() if k.startswith(("iri/", "dupefilter/"))}


def test_a_request_is_seen_once_across_processes(make_filter, redis_server):
    a, b = make_filter(), make_filter()
    assert isinstance(a.seen, RedisSeenSet)
    assert not seen(a, "http://ex.example/page")
    assert seen(b, "HTTP://EX.example:80/page")  # the scheme rung, in another process
    assert seen(a, "http://ex.example/page")  # answered locally: no round trip
    assert stats(a) == {"iri/redis/sadd": 1, "iri/redis/local_hits": 1, "dupefilter/filtered": 1, "iri/filtered/string": 1}
    # another process's duplicate: the rung that merged it is not known here (no iri/filtered/<rung>)
    assert stats(b) == {"iri/redis/sadd": 1, "iri/redis/seen_elsewhere": 1, "dupefilter/filtered": 1}
    client = redis_server.client()
    key = a.crawler.request_fingerprinter.fingerprint(Request("http://ex.example/page"))[:12]
    assert seen_keys(client) == {key}  # the 12-byte key, split into its bucket and its field
    (bucket,) = client.scan_iter(match=NS + ":t:*")
    assert bucket == f"{NS}:t:8:{key[0]:x}".encode()
    assert client.hgetall(bucket) == {key[1:]: b""}
    assert client.object("encoding", bucket) == b"listpack"
    assert not client.exists(NS)  # no Redis set


def test_the_dupefilter_has_no_len(make_filter):
    df = make_filter()
    assert not hasattr(df, "__len__") and bool(df)  # scrapy-redis tests ``if not self.df``


def test_namespace_and_settings(redis_url, redis_server):
    config = RedisConfig.from_settings(make_crawler(IRI_STORE=redis_url).settings, "s")
    assert (config.url, config.source, config.namespace) == (redis_url, "IRI_STORE", "scrapy-iri:s")
    assert config.persist is False and config.flush_on_start is False and config.retry_timeout == 60
    settings = make_crawler(
        IRI_STORE="redis:", REDIS_URL=redis_url, SCHEDULER_PERSIST=True, IRI_REDIS_NAMESPACE="job7:%(spider)s"
    ).settings
    config = RedisConfig.from_settings(settings, "s")
    assert (config.url, config.source, config.namespace, config.persist) == (redis_url, "REDIS_URL", "job7:s", True)
    settings = make_crawler(IRI_STORE="redis:", REDIS_HOST="h", REDIS_PORT=7000, REDIS_PARAMS={"password": "p"}).settings
    config = RedisConfig.from_settings(settings, "s")
    assert config.url == "redis://h:7000/0" and config.params == {"password": "p"}
    with pytest.raises(IRISettingsError, match="IRI_REDIS_NAMESPACE"):
        RedisConfig.from_settings(make_crawler(IRI_REDIS_NAMESPACE="%(job)s").settings, "s")
    with pytest.raises(IRISettingsError, match="IRI_REDIS_RETRY_TIMEOUT"):
        RedisConfig.from_settings(make_crawler(IRI_REDIS_RETRY_TIMEOUT=-1).settings, "s")


def test_unreachable_at_start_raises_from_from_crawler(dead_redis_url):
    crawler = make_crawler(IRI_STORE=dead_redis_url)
    with pytest.raises(RedisUnavailable, match=r"cannot reach Redis at .*\(from IRI_STORE\).*The crawl does not start"):
        build_from_crawler(Scheduler, crawler)


def test_a_key_of_another_type_is_refused(make_filter, redis_server):
    redis_server.client().set("scrapy-iri:seen-tests:seen", "x")
    with pytest.raises(IRISettingsError, match="holds a string"):
        make_filter()


def test_persist_and_flush_on_start_with_several_processes(make_filter, redis_server):
    client = redis_server.client()
    a, b = make_filter(), make_filter()
    seen(a, "http://ex.example/1")
    assert client.zcard("scrapy-iri:seen-tests:live") == 2
    c = make_filter(IRI_REDIS_FLUSH_ON_START=True)  # others are running: no flush
    assert seen(c, "http://ex.example/1")
    a.seen.close()
    assert seen_keys(client)  # b and c still running
    b.seen.close()
    c.seen.close()
    assert not seen_keys(client)  # the last one out, not persisting
    d = make_filter(IRI_REDIS_PERSIST=True)
    seen(d, "http://ex.example/2")
    d.seen.close()
    assert len(seen_keys(client)) == 1
    e = make_filter(IRI_REDIS_FLUSH_ON_START=True)  # alone: flushed
    assert not seen(e, "http://ex.example/2")


def test_outage_lets_requests_through_and_replays_them(make_filter, redis_server):
    a = make_filter()
    assert not seen(a, "http://ex.example/before")
    redis_server.kill()
    assert not seen(a, "http://ex.example/during")  # unchecked: fetched rather than lost
    assert seen(a, "http://ex.example/during")  # but only once by this process
    assert seen(a, "http://ex.example/before")
    assert stats(a)["iri/redis/unchecked"] == 1 and stats(a)["iri/redis/outages"] == 1
    state = IRICrawl.of(a.crawler).redis
    assert state.outage.down
    redis_server.start()
    state.outage.next_attempt = 0
    assert state.probe()
    assert stats(a)["iri/redis/replayed"] == 1
    b = make_filter()
    assert seen(b, "http://ex.example/during")  # the other processes know it now


def test_give_up_closes_the_spider_with_a_clear_reason(make_filter, redis_server, caplog):
    a = make_filter(IRI_REDIS_RETRY_TIMEOUT=0)
    redis_server.kill()
    seen(a, "http://ex.example/x")
    state = IRICrawl.of(a.crawler).redis
    closed = []

    class Engine:
        spider = object()
        scheduler = [1, 2, 3]

        async def close_spider_async(self, *, reason):
            closed.append(reason)

    a.crawler.engine = Engine()
    import asyncio

    async def run():
        state.tick()
        await asyncio.sleep(0)

    asyncio.run(run())
    assert closed == ["iri_redis_unavailable"]
    assert "scrapy-iri gives up (iri_redis_unavailable)" in caplog.text
    assert "3 requests were left unfetched" in caplog.text and "set JOBDIR" in caplog.text
    assert a.crawler.stats.get_value("iri/left_unfetched") == 3


@pytest.mark.filterwarnings("ignore:Passing a .spider. argument")  # scrapy-redis 0.9.1 on Scrapy 2.19
def test_scrapy_redis_scheduler_contract(redis_url, redis_server):
    pytest.importorskip("scrapy_redis", reason="scrapy-redis is not installed (pip install scrapy-redis)")
    from scrapy_redis.scheduler import Scheduler as RedisScheduler

    crawler = make_crawler(
        REDIS_URL=redis_url, SCHEDULER_PERSIST=False, SCHEDULER_FLUSH_ON_START=True, DUPEFILTER_CLASS="scrapy_iri.IRIDupeFilter"
    )
    crawler.spider = spider = SeenSpider.from_crawler(crawler)
    scheduler = RedisScheduler.from_crawler(crawler)
    assert scheduler.df is None  # from_spider exists: built at open
    scheduler.open(spider)
    df = scheduler.df
    assert isinstance(df, IRIDupeFilter) and isinstance(df.seen, RedisSeenSet) and not df.seen.managed
    assert scheduler.enqueue_request(Request("http://ex.example/a"))
    assert not scheduler.enqueue_request(Request("http://EX.example:80/a"))
    client = redis_server.client()
    assert len(seen_keys(client)) == 1
    scheduler.close("finished")  # not persisting: scrapy-redis flushes, through clear()
    assert not seen_keys(client)
    assert not df.request_seen(Request("http://ex.example/a"))


def test_scrapy_redis_without_iri_store_uses_its_settings(redis_url, tmp_path):
    """From ``from_spider`` the seen set is in Redis even without IRI_STORE (REDIS_URL is enough)."""
    crawler = make_crawler(REDIS_URL=redis_url)
    crawler.spider = spider = SeenSpider.from_crawler(crawler)
    df = IRIDupeFilter.from_spider(spider)
    assert isinstance(df.seen, RedisSeenSet)
    assert IRICrawl.of(crawler).redis.config.source == "REDIS_URL"
    df.clear()


def test_a_restart_without_persistence_is_healed(tmp_path):
    server = RedisServer(tmp_path, persistent=False).start()
    try:
        crawler = make_crawler(IRI_STORE=server.url)
        df = build_from_crawler(Scheduler, crawler).df
        for i in range(5):
            seen(df, f"http://ex.example/{i}")
        server.restart()
        state = IRICrawl.of(crawler).redis
        assert seen(df, "http://ex.example/1")  # local
        state.outage.failed(OSError("lost"))  # as a failed command would have noticed
        state.outage.next_attempt = 0
        assert state.probe()
        assert len(seen_keys(server.client())) == 5
        df.seen.close()
    finally:
        server.stop()


def test_a_restart_lets_the_next_request_through_rather_than_retry_it(make_filter, redis_server):
    """The first SADD after a restart meets a dead connection: let through, never retried blindly."""
    a = make_filter()
    assert not seen(a, "http://ex.example/1")
    redis_server.restart()  # the set survives (append-only file); a's connection does not
    assert not seen(a, "http://ex.example/2")  # let through, not dropped
    assert stats(a)["iri/redis/unchecked"] == 1
    state = IRICrawl.of(a.crawler).redis
    state.outage.next_attempt = 0
    assert state.probe()
    assert stats(a)["iri/redis/replayed"] == 1 and "iri/redis/unchecked_duplicates" not in stats(a)
    assert not seen(a, "http://ex.example/3")  # a new connection
    assert stats(a)["iri/redis/sadd"] == 2
    assert len(seen_keys(redis_server.client())) == 3


@pytest.mark.filterwarnings("ignore:Passing a .spider. argument")  # scrapy-redis 0.9.1 on Scrapy 2.19
def test_scrapy_redis_outage_does_not_mark_an_unqueued_request_seen(redis_url, redis_server):
    """scrapy-redis's queue is in Redis: a request let through during an outage never reached it,
    so its key must not be recorded (here or, later, in Redis), or nobody would ever fetch it."""
    pytest.importorskip("scrapy_redis", reason="scrapy-redis is not installed (pip install scrapy-redis)")
    from scrapy_redis.scheduler import Scheduler as RedisScheduler

    crawler = make_crawler(
        REDIS_URL=redis_url, IRI_STORE="redis:", SCHEDULER_PERSIST=True, DUPEFILTER_CLASS="scrapy_iri.IRIDupeFilter"
    )
    crawler.spider = spider = SeenSpider.from_crawler(crawler)
    scheduler = RedisScheduler.from_crawler(crawler)
    scheduler.open(spider)
    assert scheduler.enqueue_request(Request("http://ex.example/warm-up"))
    redis_server.kill()
    request = Request("http://ex.example/page-1")
    with pytest.raises(Exception):  # noqa: B017 - scrapy-redis's push fails: the request is not queued
        scheduler.enqueue_request(request)
    assert crawler.stats.get_value("iri/redis/unchecked") == 1
    redis_server.start()
    state = IRICrawl.of(crawler).redis
    state.outage.next_attempt = 0
    assert state.probe()
    client = redis_server.client()
    key = crawler.request_fingerprinter.fingerprint(request)[:12]
    assert key not in seen_keys(client)  # another process may take it
    assert scheduler.enqueue_request(Request("http://ex.example/page-1"))  # and so may this one
    assert client.zcard(f"{spider.name}:requests") == 2
    scheduler.close("finished")


def test_a_full_redis_is_an_outage_until_writes_succeed(make_filter, redis_server):
    """maxmemory reached (or a read-only replica): PING answers, writes fail. The outage clock must
    keep running, so that IRI_REDIS_RETRY_TIMEOUT fires."""
    import os
    import time

    a = make_filter(IRI_REDIS_RETRY_TIMEOUT=0.5)
    state = IRICrawl.of(a.crawler).redis
    client = redis_server.client()
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", 1)
    try:
        assert a.seen.add(os.urandom(12)) is None  # let through
        assert state.outage.down
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            state.outage.next_attempt = 0
            assert not state.probe()  # a PING would succeed; the write probe does not
            a.seen.add(os.urandom(12))
            time.sleep(0.05)
        assert state.outage.down and state.outage.elapsed() >= 0.9
        assert a.crawler.stats.get_value("iri/redis/outages") == 1
        assert len(a.seen.unchecked) >= 2
    finally:
        client.config_set("maxmemory", 0)
    state.outage.next_attempt = 0
    assert state.probe()  # writes work again: replayed, then the outage ends
    assert not state.outage.down and not a.seen.unchecked


def test_the_outage_ends_only_when_the_replay_succeeds(make_filter, redis_server, monkeypatch):
    a = make_filter()
    state = IRICrawl.of(a.crawler).redis
    redis_server.kill()
    assert not seen(a, "http://ex.example/during")
    redis_server.start()
    monkeypatch.setattr(a.seen, "replay", lambda: (_ for _ in ()).throw(OSError("replay failed")))
    state.outage.next_attempt = 0
    since = state.outage.since
    assert not state.probe()
    assert state.outage.down and state.outage.since == since  # the clock was not reset
    monkeypatch.undo()
    state.outage.next_attempt = 0
    assert state.probe() and not state.outage.down
    assert a.crawler.stats.get_value("iri/redis/replayed") == 1


def test_the_store_keeps_its_pending_writes_in_jobdir_else_in_the_data_directory(redis_url, tmp_path, monkeypatch):
    crawler = make_crawler(IRI_STORE=redis_url, JOBDIR=str(tmp_path))
    store = IRICrawl.of(crawler).store
    assert store.storage.pending_path == tmp_path / redis_seen.STORE_PENDING_FILE
    store.close()
    monkeypatch.chdir(tmp_path)  # no Scrapy project here: the data directory is ./.scrapy
    other = IRICrawl.of(make_crawler(IRI_STORE=redis_url)).store
    assert other.storage.pending_path == Path(".scrapy/iri/scrapy-iri%3Aseen-tests.iri-redis-store-pending.json")
    assert (tmp_path / ".scrapy" / "iri").is_dir()
    other.close()


# -- the bucketed layout -------------------------------------------------------------------


def test_keys_spread_over_buckets_that_stay_listpacks(make_filter, redis_server):
    import random

    rng = random.Random(13)
    a, b = make_filter(), make_filter()
    keys = [rng.randbytes(12) for _ in range(4000)]
    assert all(a.seen.add(key) is None for key in keys)
    assert all(b.seen.add(key) == redis_seen.SEEN_ELSEWHERE for key in keys)  # exact, across processes
    assert b.seen.add(rng.randbytes(12)) is None
    client = redis_server.client()
    buckets = list(client.scan_iter(match=NS + ":t:*"))
    assert len(buckets) == 256
    assert {client.object("encoding", name) for name in buckets} == {b"listpack"}
    assert seen_keys(client) >= set(keys)
    assert client.get(NS + ":layout") == b"hsetnx-tree 8 120"


def test_an_old_layout_seen_set_is_moved_into_buckets(make_filter, redis_server):
    """A seen set kept as one Redis set of 12-byte keys (the earlier layout) is migrated, none lost."""
    import random

    rng = random.Random(7)
    client = redis_server.client()
    old = {rng.randbytes(12) for _ in range(3000)}
    page = Request("http://ex.example/old-page")
    crawler = make_crawler(IRI_STORE=redis_server.url)
    others = sorted(old)[:100]
    old.add(crawler.request_fingerprinter.fingerprint(page)[:12])
    client.sadd(NS, *old)
    a = make_filter()
    assert client.type(NS) == b"none"
    assert seen_keys(client) == old
    assert seen(a, "http://ex.example/old-page")  # recorded by a process of the earlier version
    assert all(a.seen.add(key) == redis_seen.SEEN_ELSEWHERE for key in others)


def test_an_unknown_layout_is_refused(make_filter, redis_server):
    redis_server.client().set(NS + ":layout", "hsetnx-buckets 17")
    with pytest.raises(IRISettingsError, match="cannot read"):
        make_filter()


def test_the_local_cache_is_bounded_and_answers_stay_exact(make_filter, redis_server):
    import random

    rng = random.Random(3)
    a = make_filter(IRI_REDIS_LOCAL_MAX=10)
    keys = [rng.randbytes(12) for _ in range(50)]
    assert all(a.seen.add(key) is None for key in keys)
    assert len(a.seen.local) == 10
    # beyond the local cache Redis answers (a round trip), still exactly
    assert all(a.seen.add(key) is not None for key in keys)
    assert stats(a)["iri/redis/local_hits"] == 10 and stats(a)["iri/redis/sadd"] == 90


def test_redis_cluster_is_refused_at_start(tmp_path):
    """Redis Cluster is not supported: a crawl pointed at a cluster node stops at once, saying so."""
    from scrapy_iri.store import StoreError, open_store

    from fixtures.redis_helpers import free_port

    cluster = ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port", str(free_port()))
    server = RedisServer(tmp_path, args=cluster).start()
    try:
        crawler = make_crawler(IRI_STORE=server.url)
        with pytest.raises(StoreError, match="cluster mode, which scrapy-iri does not support"):
            build_from_crawler(Scheduler, crawler)
        with pytest.raises(StoreError, match="cluster mode"):
            open_store(server.url)
    finally:
        server.stop()


def test_a_redis_crawl_records_its_learning_policy(redis_url, redis_server):
    """``scrapy-iri store`` judges a Redis crawl's rules with the crawl's K, TTL and sink fan-in."""
    import json

    from scrapy_iri.scrapy._crawl import crawler_store
    from scrapy_iri.store import open_store

    crawler = make_crawler(IRI_STORE=redis_url, IRI_RUNG="protocol", IRI_RULE_MIN_OBSERVATIONS=7)
    store = crawler_store(crawler)
    try:
        stored = json.loads(redis_server.client().get("scrapy-iri:seen-tests:store:policy"))
        assert stored["min_observations"] == 7
        with open_store(f"{redis_url}?namespace=scrapy-iri:seen-tests") as reader:
            assert reader.policy.min_observations == 7
    finally:
        store.close()
