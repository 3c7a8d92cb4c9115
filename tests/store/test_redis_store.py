"""The Redis equivalence store: several stores (standing for several processes) on one real server."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from fixtures.redis_helpers import RedisServer

from scrapy_iri.store import RuleKey, RuleStatus, open_store
from scrapy_iri.store._redis import Outage, RedisStore, RedisUnavailable, client_from_url, redact, split_uri
from scrapy_iri.store._rules import LearningPolicy


class Clock:
    """A settable monotonic clock."""

    def __init__(self) -> None:
        self.now = time.time()  # stores opened without this clock judge ages at the same time

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def make_store(redis_url):
    stores: list[RedisStore] = []

    def make(namespace: str = "test", **options) -> RedisStore:
        store = RedisStore(redis_url, namespace, **options)
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.close()


def learn_slash_rule(store: RedisStore, host: str = "http://ex.example", n: int = 3) -> RuleKey:
    """``n`` clean 301s /dN -> /dN/: an add-slash rule (active from 3 on)."""
    outcome = None
    for i in range(n):
        outcome = store.record_redirect(f"{host}/d{i}", 301, f"{host}/d{i}/")
    rules = [r.key for r in store.rules() if r.key.kind == "add-slash"]
    assert len(rules) == 1, rules
    assert outcome is not None
    return rules[0]


def test_unreachable_at_open(dead_redis_url):
    with pytest.raises(RedisUnavailable, match=r"cannot reach Redis at redis://127\.0\.0\.1:\d+/0"):
        RedisStore(dead_redis_url)


def test_open_store_uri_and_options(redis_url):
    store = open_store(f"{redis_url}?namespace=cli-test&sync_interval=2")
    assert isinstance(store, RedisStore)
    assert store.keys.namespace == "cli-test" and store.sync_interval == 2.0
    store.record_redirect("http://a.example/x", 301, "http://a.example/y")
    store.close()
    again = open_store(f"{redis_url}?namespace=cli-test")
    assert again.representative("http://a.example/x") == "http://a.example/y"
    again.close()


def test_uri_helpers():
    assert redact("redis://user:secret@host:1/0") == "redis://user:***@host:1/0"
    assert split_uri("redis://h:1/2?namespace=n&socket_timeout=3") == ("redis://h:1/2?socket_timeout=3", {"namespace": "n"})


def test_what_one_process_learns_serves_the_others(make_store):
    a, b = make_store(), make_store()
    rule = learn_slash_rule(a)
    assert b.representative("http://ex.example/d0") == "http://ex.example/d0"  # not flushed yet
    a.flush()
    b.sync()
    assert b.representative("http://ex.example/d0") == "http://ex.example/d0/"  # exact alias
    assert b.representative("http://ex.example/d77") == "http://ex.example/d77/"  # the rule
    assert b.resolve("http://ex.example/d77").rules == (rule,)
    # a third process opening later loads everything
    c = make_store()
    assert c.representative("http://ex.example/d78") == "http://ex.example/d78/"


def test_visible_within_two_sync_intervals(make_store):
    clock_a, clock_b = Clock(), Clock()
    a = make_store(sync_interval=0.5, monotonic=clock_a)
    b = make_store(sync_interval=0.5, monotonic=clock_b)
    b.representative("http://ex.example/d50")  # b is in sync now
    learn_slash_rule(a)
    clock_a.now += 0.5  # a's next call flushes
    a.representative("http://ex.example/d51")
    assert b.representative("http://ex.example/d50") == "http://ex.example/d50"  # b's interval not over
    clock_b.now += 0.5
    assert b.representative("http://ex.example/d50") == "http://ex.example/d50/"
    assert b.counters["syncs"] >= 1


def test_a_lookup_reads_each_alias_once_then_answers_from_its_cache(make_store):
    clock = Clock()
    a = make_store(monotonic=clock)
    learn_slash_rule(a)
    a.sync()
    before = dict(a.counters)
    urls = [f"http://ex.example/d{i + 100}" for i in range(1000)]
    for url in urls:  # neither the URL nor the rule's prediction is an alias: the filter answers, no read
        assert a.representative(url) == url + "/"
    assert a.counters["reads"] - before.get("reads", 0) == 0
    assert {k: v for k, v in a.counters.items() if k != "reads"} == {k: v for k, v in before.items() if k != "reads"}
    reads = a.counters["reads"]
    for url in urls:
        assert a.representative(url) == url + "/"
    assert a.counters["reads"] == reads


def test_an_open_reads_no_alias_and_memory_stays_bounded(make_store, redis_server):
    """Opening reads the rules and sinks only; the alias cache never holds more than its size."""
    a = make_store()
    for i in range(300):
        a.record_redirect(f"http://big.example/old/{i}", 301, f"http://big.example/new/{i}")
    a.flush()
    b = make_store(cache_size=100)
    assert len(b.storage.image.aliases) == 0
    assert b.counters.get("reads", 0) == 0
    for i in range(300):
        assert b.representative(f"http://big.example/old/{i}") == f"http://big.example/new/{i}"
    assert len(b.storage.image.aliases) <= 100


def test_without_auto_sync_what_a_process_holds_changes_only_on_maintain(make_store):
    clock = Clock()
    a = make_store()
    b = make_store(monotonic=clock, auto_sync=False)
    assert b.representative("http://ex.example/d50") == "http://ex.example/d50"  # b now holds the origin's rules
    learn_slash_rule(a)
    a.flush()
    clock.now += 10
    assert b.representative("http://ex.example/d50") == "http://ex.example/d50"
    assert b.maintain()
    assert b.representative("http://ex.example/d50") == "http://ex.example/d50/"


def test_supports_from_several_processes_add_up(make_store):
    a, b = make_store(), make_store()
    for store, paths in ((a, ["p1", "p2"]), (b, ["p3"])):
        for p in paths:
            store.record_redirect(f"http://ex.example/{p}", 301, f"http://ex.example/{p}/")
    a.flush()
    b.flush()  # b's record was read before a's writes: merged, not overwritten
    a.sync()
    [record] = [r for r in a.rules() if r.key.kind == "add-slash"]
    assert record.support == 3
    assert a.rule_status(record) is RuleStatus.ACTIVE


def test_a_counterexample_is_never_lost_to_a_concurrent_writer(make_store):
    a, b = make_store(), make_store()
    rule = learn_slash_rule(a)
    a.flush()
    b.sync()
    # concurrently: b sees /d7 answer 200 itself (a counterexample), a sees another support
    contradicted = b.record_response("http://ex.example/d7", 200)
    assert rule in contradicted.contradicted
    a.record_redirect("http://ex.example/d8", 301, "http://ex.example/d8/")
    b.flush()
    a.flush()  # a's record still says "active, against 0": the merge keeps b's counterexample
    a.sync()
    b.sync()
    for store in (a, b):
        [record] = [r for r in store.rules() if r.key == rule]
        assert record.against == 1 and record.support == 4
        assert store.rule_status(record) is RuleStatus.SUSPENDED
        assert store.representative("http://ex.example/d99") == "http://ex.example/d99"


def test_requests_deferred_by_every_process_come_back(make_store):
    a, b = make_store(), make_store()
    rule = learn_slash_rule(a)
    a.flush()
    b.sync()
    a.defer("http://ex.example/merged-by-a", [rule])
    b.defer("http://ex.example/merged-by-b", [rule])
    b.flush()
    # a sees the contradiction: takes what both deferred (its own pending ones included)
    outcome = a.record_response("http://ex.example/d9", 200)
    assert rule in outcome.contradicted
    taken = a.take_deferred(rule)
    assert taken == ["http://ex.example/merged-by-a", "http://ex.example/merged-by-b"]
    assert a.take_deferred(rule) == []  # taken once
    # b learns of the contradiction through a sync: its next outcome reports it, so that
    # whatever b deferred meanwhile is taken back too
    b.defer("http://ex.example/late-by-b", [rule])
    a.flush()
    b.sync()
    outcome = b.record_response("http://other.example/", 200)
    assert rule in outcome.contradicted
    assert b.take_deferred(rule) == ["http://ex.example/late-by-b"]
    assert rule not in b.record_response("http://other.example/", 200).contradicted  # once


def test_a_batch_is_applied_at_most_once(make_store, redis_server):
    a = make_store()
    batch = {
        "a": [],
        "r": [["http://ex.example", "add-slash plain", "merge", 1, 0, 1.0, 1.0, 0, "e", ""]],
        "f": [],
        "e": [],
        "d": [],
    }
    args = [a.keys.store, uuid.uuid4().hex, json.dumps(batch), 1.0, 1e9, 10, 10, 600]
    assert a.storage._batch(args=args)[0] == b"ok"
    assert a.storage._batch(args=args)[0] == b"dup"  # a retried call after a lost reply
    raw = redis_server.client().hget(a.keys.rules("http://ex.example"), "add-slash plain")
    assert json.loads(raw)[0] == 1


def test_namespaces_are_separate(make_store):
    a, b = make_store("one"), make_store("two")
    learn_slash_rule(a)
    a.flush()
    b.sync()
    assert list(b.rules()) == [] and list(b.aliases()) == []


def test_outage_keeps_writes_pending_and_sends_them_later(make_store, redis_server):
    clock = Clock()
    a = make_store(monotonic=clock, outage=Outage(monotonic=clock))
    redis_server.kill()
    learn_slash_rule(a)  # answered from memory
    clock.now += 1
    assert a.maintain() is False
    assert a.outage.down and a.pending > 0
    assert a.representative("http://ex.example/d50") == "http://ex.example/d50/"
    redis_server.start()
    clock.now += 10
    assert a.maintain() is True
    assert not a.outage.down and a.pending == 0
    assert make_store().representative("http://ex.example/d50") == "http://ex.example/d50/"


def test_backoff_doubles_up_to_a_cap():
    clock = Clock()
    outage = Outage(delay=0.25, max_delay=1.0, monotonic=clock)
    assert outage.failed(OSError("x")) is True
    delays = []
    for _ in range(4):
        delays.append(outage.next_attempt - clock.now)
        assert not outage.may_try()
        clock.now = outage.next_attempt
        assert outage.may_try()
        assert outage.failed(OSError("x")) is False
    assert delays == [0.25, 0.5, 1.0, 1.0]
    assert outage.recovered() == pytest.approx(1.75 + 0.0, abs=1.0)
    assert not outage.down


def test_a_restart_that_lost_the_data_is_healed(tmp_path):
    server = RedisServer(tmp_path, persistent=False).start()
    try:
        a = RedisStore(server.url, "heal")
        b = RedisStore(server.url, "heal")
        rule = learn_slash_rule(a)
        a.flush()
        b.sync()
        server.restart()  # empty: no persistence
        a.sync()  # the epoch is gone: a publishes its copy again
        b.sync()  # so does b, without counting anything twice
        c = RedisStore(server.url, "heal")
        assert c.representative("http://ex.example/d55") == "http://ex.example/d55/"
        [record] = [r for r in c.rules() if r.key == rule]
        assert record.support == 3
        assert a.counters["republished"] == 1
        for store in (a, b, c):
            store.close()
    finally:
        server.stop()


def test_falling_behind_the_change_log_reloads(make_store):
    a, b = make_store(changes_max=3), make_store()
    for i in range(10):
        a.record_redirect(f"http://h{i}.example/x", 301, f"http://h{i}.example/y")
    a.flush()
    reloads = b.counters["reloads"]
    b.sync()
    assert b.counters["reloads"] == reloads + 1
    assert b.representative("http://h9.example/x") == "http://h9.example/y"


def test_clear_empties_every_process(make_store):
    a, b = make_store(), make_store()
    learn_slash_rule(a)
    a.flush()
    b.sync()
    a.clear()
    b.sync()
    assert list(b.aliases()) == [] and list(b.rules()) == []


def test_listing_explaining_forgetting(make_store):
    a = make_store(policy=LearningPolicy(min_observations=2))
    a.record_redirect("http://ex.example/a1", 301, "http://ex.example/a1/")
    a.record_redirect("http://ex.example/a2", 301, "http://ex.example/a2/")
    assert "exact alias" in str(a.explain("http://ex.example/a1"))
    assert [e.url for e in a.evidence("http://ex.example/a1")] == ["http://ex.example/a1"]
    stats = a.stats()
    assert stats["aliases"] == 2 and stats["evidence"] == 2 and stats["rules/active"] == 1
    assert {item["type"] for item in a.export(evidence=True)} >= {"alias", "rule", "evidence"}
    assert a.forget("http://ex.example/a1") == 2
    assert a.forget_host("ex.example") >= 2
    a.flush()
    b = make_store()
    assert list(b.aliases()) == []


def test_client_options():
    client = client_from_url("redis://127.0.0.1:1/3", {"client_name": "x", "decode_responses": True, "redis_cls": "redis.Redis"})
    kwargs = client.connection_pool.connection_kwargs
    assert kwargs["db"] == 3 and kwargs["client_name"] == "x"
    assert kwargs["decode_responses"] is False  # the store speaks bytes
    assert kwargs["socket_connect_timeout"] == 2.0


def test_a_flush_cut_short_resends_only_what_was_not_applied(make_store, monkeypatch):
    from redis.exceptions import ConnectionError as RedisConnectionError

    a = make_store(batch_size=2)
    for i in range(3):  # 3 aliases, rule records, evidence: several batches of 2
        a.record_redirect(f"http://ex.example/d{i}", 301, f"http://ex.example/d{i}/")
    apply, calls = a.storage._apply, []

    def flaky(batch, batch_id=None):
        calls.append(batch)
        if len(calls) == 3:
            raise RedisConnectionError("lost in the middle")
        apply(batch, batch_id)

    monkeypatch.setattr(a.storage, "_apply", flaky)
    a.flush()  # logs, keeps the rest pending
    assert 0 < a.pending
    monkeypatch.setattr(a.storage, "_apply", apply)
    a.flush()
    assert a.pending == 0
    b = make_store()
    [record] = [r for r in b.rules() if r.key.kind == "add-slash"]
    assert record.support == 3  # not 4 or 5: nothing applied twice
    assert len(list(b.aliases())) == 3 and b.stats()["evidence"] == 3


def test_a_batch_whose_reply_was_lost_is_applied_once(make_store, monkeypatch):
    """The script ran but its reply never came back (a timeout): the batch is sent again with its
    id, so Redis answers "already applied" instead of counting the observations twice."""
    from redis.exceptions import TimeoutError as RedisTimeoutError

    a = make_store()
    apply, calls = a.storage._apply, []

    def reply_lost(batch, batch_id=None):
        calls.append(batch_id)
        apply(batch, batch_id)
        if len(calls) == 1:
            raise RedisTimeoutError("the reply was lost")

    monkeypatch.setattr(a.storage, "_apply", reply_lost)
    for i in range(3):
        a.record_redirect(f"http://ex.example/d{i}", 301, f"http://ex.example/d{i}/")
    a.flush()  # applied in Redis, but this process does not know it
    assert a.pending > 0
    a.record_redirect("http://ex.example/d3", 301, "http://ex.example/d3/")
    a.flush()
    assert a.pending == 0 and calls[1] == calls[0]  # the same batch again, under its id
    b = make_store()
    [record] = [r for r in b.rules() if r.key.kind == "add-slash" and r.key.scope != "*"]
    assert record.support == 4  # 3 + 1, not 3 + 3 + 1
    assert b.stats()["evidence"] == 4


# -- concurrent writers: the newest observation wins, whatever the flush order ---------------------


def test_a_stale_alias_write_does_not_undo_a_later_answer(make_store):
    """A observes a 301, B later sees the source answer for itself; A flushes last: no alias anywhere."""
    clock = Clock()
    a, b = make_store(auto_sync=False, clock=clock), make_store(auto_sync=False, clock=clock)
    a.record_redirect("http://h.example/old", 301, "http://h.example/new")  # t0, pending in a
    clock.now += 1
    b.record_response("http://h.example/old", 200)  # t1 > t0; b does not know the alias yet
    b.sync()  # b's answer reaches Redis first
    a.sync()  # a's older alias arrives later: refused, and a reads the entry back
    b.sync()
    for store in (a, b, make_store(auto_sync=False)):
        assert store.representative("http://h.example/old") == "http://h.example/old"


def test_a_stale_alias_write_does_not_resurrect_a_dropped_alias(make_store):
    clock = Clock()
    a, b = make_store(auto_sync=False, clock=clock), make_store(auto_sync=False, clock=clock)
    a.record_redirect("http://h.example/old", 301, "http://h.example/new")
    a.sync()
    b.sync()
    clock.now += 1
    a.record_redirect("http://h.example/old", 301, "http://h.example/newer")  # t1, pending in a
    clock.now += 1
    b.record_response("http://h.example/old", 200)  # t2: b drops the alias it knows
    b.sync()
    a.sync()
    b.sync()
    for store in (a, b, make_store(auto_sync=False)):
        assert store.representative("http://h.example/old") == "http://h.example/old"
    clock.now += 1  # a newer 301 is newer evidence: learned again
    b.record_redirect("http://h.example/old", 301, "http://h.example/new")
    b.sync()
    a.sync()
    assert a.representative("http://h.example/old") == "http://h.example/new"


def test_newer_alias_wins_whichever_flushes_first(make_store):
    clock = Clock()
    a, b = make_store(auto_sync=False, clock=clock), make_store(auto_sync=False, clock=clock)
    a.record_redirect("http://h.example/old", 301, "http://h.example/one")
    clock.now += 1
    b.record_redirect("http://h.example/old", 301, "http://h.example/two")
    b.sync()
    a.sync()
    b.sync()
    for store in (a, b, make_store(auto_sync=False)):
        assert store.representative("http://h.example/old") == "http://h.example/two"


def _teach_declared_case(store: RedisStore) -> None:
    for p in ("A", "B", "C"):
        store.record_redirect(f"http://iis.example/Docs/{p}-DOC", 301, f"http://iis.example/Docs/{p}-Doc")  # same directory
    store.record_response("http://iis.example/Docs/Page-1", 200)  # declares the case of its path


def test_declared_cases_are_shared_and_their_counterexamples_seen_everywhere(make_store):
    a, b = make_store(auto_sync=False), make_store(auto_sync=False)
    _teach_declared_case(a)
    a.sync()
    b.sync()
    fresh = make_store(auto_sync=False)
    for store in (a, b, fresh):
        assert store.representative("http://iis.example/DOCS/PAGE-1") == "http://iis.example/Docs/Page-1"
        assert [e["url"] for e in store.export() if e["type"] == "case"] == ["http://iis.example/Docs/Page-1"]
    # a case-sensitive page in b is a counterexample b recognizes, because b knows the declared case
    outcome = b.record_response("http://iis.example/docs/page-1", 200)
    assert [r.kind for r in outcome.contradicted] == ["declared-case"]
    b.sync()
    a.sync()
    assert a.representative("http://iis.example/DOCS/PAGE-1") == "http://iis.example/DOCS/PAGE-1"
    # forgetting a declared case reaches the others too
    assert b.forget("http://iis.example/Docs/Page-1") >= 1
    b.sync()
    a.sync()
    assert [e for e in a.export() if e["type"] == "case"] == []


def test_the_location_header_is_kept_in_the_evidence(make_store):
    a = make_store()
    a.record_redirect("http://h.example/l", 301, "http://h.example/l2", location="/l2")
    a.sync()
    assert [e.location for e in make_store().evidence("http://h.example/l")] == ["/l2"]


# -- outages: nothing learned or deferred is stranded ----------------------------------------------


def test_deferred_urls_are_taken_once_redis_is_back(make_store, redis_server):
    a = make_store(auto_sync=False)
    rule = learn_slash_rule(a, "http://h.example")
    a.defer("http://h.example/d9", [rule])
    a.sync()  # in Redis
    a.defer("http://h.example/d8", [rule])  # still pending
    redis_server.kill()
    outcome = a.record_response("http://h.example/d7", 200)
    assert rule in outcome.contradicted
    assert a.take_deferred(rule) == ["http://h.example/d8"]  # what this process still had
    redis_server.start()
    assert a.maintain(force=True)
    outcome = a.record_response("http://h.example/other", 404)  # the next observation hands it over
    assert rule in outcome.contradicted
    assert a.take_deferred(rule) == ["http://h.example/d9"]


def test_pending_writes_are_saved_at_close_and_replayed(make_store, redis_server, tmp_path):
    path = tmp_path / "job" / "pending.json"
    a = make_store(auto_sync=False, pending_path=path)
    a.sync()
    rule = learn_slash_rule(a, "http://h.example")
    a.defer("http://h.example/d9", [rule])
    redis_server.kill()
    a.close()  # Redis gone: saved, not lost
    assert path.exists()
    redis_server.start()
    b = make_store(auto_sync=False, pending_path=path)  # the job resumed
    assert not path.exists()
    assert b.representative("http://h.example/d0") == "http://h.example/d0/"
    assert b.representative("http://h.example/d77") == "http://h.example/d77/"
    assert make_store(auto_sync=False).take_deferred(rule) == ["http://h.example/d9"]


def test_pending_rules_to_retake_survive_a_close(make_store, redis_server, tmp_path):
    path = tmp_path / "pending.json"
    a = make_store(auto_sync=False, pending_path=path)
    rule = learn_slash_rule(a, "http://h.example")
    a.defer("http://h.example/d9", [rule])
    a.sync()
    redis_server.kill()
    assert rule in a.record_response("http://h.example/d7", 200).contradicted
    assert a.take_deferred(rule) == []
    a.close()
    redis_server.start()
    b = make_store(auto_sync=False, pending_path=path)
    assert rule in b.record_response("http://h.example/x", 404).contradicted
    assert b.take_deferred(rule) == ["http://h.example/d9"]


def test_clear_escapes_glob_characters_of_the_namespace(make_store, redis_server):
    stores = {}
    for namespace in ("shop:2024", "shop:202?", "job[1]", "a*b", "a\\b"):
        stores[namespace] = store = make_store(namespace)
        learn_slash_rule(store, "http://h.example")
        store.flush()
    client = redis_server.client()
    stores["shop:202?"].clear()
    stores["job[1]"].clear()
    stores["a\\b"].clear()
    left = sorted(k.decode() for k in client.keys("*:store:rules:*"))
    assert left == ["a*b:store:rules:http://h.example", "shop:2024:store:rules:http://h.example"]
    assert make_store("shop:2024").representative("http://h.example/d77") == "http://h.example/d77/"
    assert make_store("job[1]").representative("http://h.example/d77") == "http://h.example/d77"


def test_the_learning_policy_is_recorded(redis_url):
    policy = LearningPolicy(min_observations=5)
    open_store(f"{redis_url}?namespace=pol", policy=policy).close()
    again = open_store(f"{redis_url}?namespace=pol")
    assert again.policy.min_observations == 5
    again.close()


def test_clear_leaves_namespaces_that_extend_this_one_alone(make_store, redis_server):
    """Namespace ``a`` and ``a:store:rules:x``: key names of one extend the other's; clear() is by the sets."""
    names = ("a", "a:store:rules:http://h.example", "a:store:fanin:http://t.example/", "a:store:deferred:x")
    stores = {}
    for namespace in names:
        stores[namespace] = store = make_store(namespace)
        learn_slash_rule(store, "http://h.example")
        store.flush()
    client = redis_server.client()
    before = {k for k in client.keys("*") if not k.startswith(b"a:store:")}
    others = sorted(k for k in client.keys("a:store:*") if k.decode().startswith(tuple(f"{n}:" for n in names[1:])))
    stores["a"].clear()
    assert sorted(k for k in client.keys("a:store:*") if k.decode().startswith(tuple(f"{n}:" for n in names[1:]))) == others
    for namespace in names[1:]:
        assert make_store(namespace).representative("http://h.example/d77") == "http://h.example/d77/"
    assert make_store("a").representative("http://h.example/d77") == "http://h.example/d77"
    assert before <= set(client.keys("*"))


# -- a Redis that goes back to an older state ----------------------------------------------


def _rollback_scenario(server: RedisServer, snapshot, restore, caplog) -> None:  # type: ignore[no-untyped-def]
    """Learn, snapshot, learn more (an alias ends, a rule is suspended, a request is deferred), then
    restart Redis from the snapshot: the process that knew detects it, says so, and repairs the store."""
    import logging
    import time

    a = RedisStore(server.url, "rb", sync_interval=0.0)
    slash = learn_slash_rule(a, "http://s.example")
    for i in range(3):
        a.record_redirect(f"http://t.example/d{i}", 301, f"http://t.example/d{i}/")
    case = RuleKey("http://t.example", slash.kind, slash.scope)
    a.record_redirect("http://e.example/old", 301, "http://e.example/new")
    a.flush()
    snapshot()
    a.record_response("http://e.example/old", 200)  # the alias ends
    a.record_response("http://s.example/d9", 200)  # a counterexample: the rule is suspended
    a.defer("http://t.example/d7", [case])
    a.record_redirect("http://e.example/later", 301, "http://e.example/later/")
    a.flush()
    server.kill()
    restore()
    server.start()
    stale = server.client()
    assert stale.hget("rb:store:aliases", "http://e.example/old") is not None  # Redis went back
    with caplog.at_level(logging.ERROR, logger="scrapy_iri.store._redis"):
        for _ in range(10):
            if a.maintain(force=True):
                break
            time.sleep(0.1)
    assert "went back to an older state" in caplog.text
    assert a.counters.get("rollbacks") == 1
    # another process, opened after the repair, is served what was known, not the snapshot
    b = RedisStore(server.url, "rb", sync_interval=0.0)
    assert b.representative("http://e.example/old") == "http://e.example/old"
    assert b.representative("http://s.example/d5") == "http://s.example/d5"  # still suspended
    assert b.rule_status(next(r for r in b.rules() if r.key == slash)) is RuleStatus.SUSPENDED
    assert b.representative("http://t.example/d5") == "http://t.example/d5/"  # still active
    assert b.representative("http://e.example/later") == "http://e.example/later/"  # learned after: kept
    assert b.take_deferred(case) == ["http://t.example/d7"]  # deferred requests survive
    assert a.representative("http://e.example/old") == "http://e.example/old"
    a.close()
    b.close()


def test_a_restart_from_an_older_rdb_snapshot_is_detected_and_repaired(tmp_path, caplog):
    server = RedisServer(tmp_path, persistent=False).start()  # RDB only (Redis's default persistence)
    try:
        _rollback_scenario(server, lambda: server.client().save(), lambda: None, caplog)
    finally:
        server.stop()


def test_a_restored_older_append_only_file_is_detected_and_repaired(tmp_path, caplog):
    import shutil

    server = RedisServer(tmp_path).start()  # AOF, fsync always
    saved = tmp_path / "aof-backup"

    def snapshot() -> None:
        shutil.copytree(tmp_path / "appendonlydir", saved)

    def restore() -> None:
        shutil.rmtree(tmp_path / "appendonlydir")
        shutil.copytree(saved, tmp_path / "appendonlydir")

    try:
        _rollback_scenario(server, snapshot, restore, caplog)
    finally:
        server.stop()


def test_a_process_that_wrote_nothing_lately_is_told_of_a_rollback(tmp_path, caplog):
    """Q only reads (it has X -> Y in its cache). Redis restarts from an older snapshot; W, which
    writes, finds out, repairs and drops X, then writes a lot. Q, with no batch of its own to miss,
    still learns of the rollback (the history mark changed), repairs with what it knows, and
    reads X again instead of serving its cached alias."""
    import logging
    import time

    server = RedisServer(tmp_path, persistent=False).start()
    try:
        w = RedisStore(server.url, "quiet", sync_interval=0.0)
        w.record_redirect("http://e.example/x", 301, "http://e.example/y")
        w.flush()
        q = RedisStore(server.url, "quiet", sync_interval=0.0)
        assert q.representative("http://e.example/x") == "http://e.example/y"  # cached in Q
        server.client().save()
        w.record_redirect("http://e.example/z", 301, "http://e.example/zz")
        w.flush()
        server.kill()
        server.start()
        for _ in range(10):
            if w.maintain(force=True):
                break
            time.sleep(0.1)
        assert w.counters.get("rollbacks") == 1
        w.record_response("http://e.example/x", 200)  # the alias ends, after the rollback
        for i in range(20):
            w.record_redirect(f"http://e.example/n{i}", 301, f"http://e.example/n{i}/")
        w.flush()
        with caplog.at_level(logging.ERROR, logger="scrapy_iri.store._redis"):
            assert q.maintain(force=True)
        assert "found by another process" in caplog.text
        assert q.counters.get("rollbacks") == 1
        assert q.representative("http://e.example/x") == "http://e.example/x"
        assert q.representative("http://e.example/z") == "http://e.example/zz"
        w.close()
        q.close()
    finally:
        server.stop()
# -- the layout of the keys: a store of layout 1 is migrated at open, a newer one refused ------------


def _write_layout_1(client, ns: str, now: float, sink_sources: int = 5) -> None:  # type: ignore[no-untyped-def]
    """A store as the first layout wrote it: aliases, fan-in sets, rules and an epoch, no layout key,
    no case-only alias index and no set of sinks."""
    aliases = {
        "http://h.example/Docs/A": ["http://h.example/docs/a", 301, now],  # case-only
        "http://h.example/old": ["http://h.example/new", 301, now],
        "http://s.example/p0": ["http://s.example/login", 301, now],  # learned before login was a sink
    }
    client.hset(f"{ns}:store:aliases", mapping={s: json.dumps(v) for s, v in aliases.items()})
    login = "http://s.example/login"
    client.sadd(f"{ns}:store:fanins", login, "http://h.example/new")
    client.sadd(f"{ns}:store:fanin:{login}", *(f"http://s.example/p{i}" for i in range(sink_sources)))
    client.sadd(f"{ns}:store:fanin:http://h.example/new", "http://h.example/old")
    client.sadd(f"{ns}:store:origins", "http://t.example")
    record = [3, 0, now, now, 0, "http://t.example/d2 -301-> http://t.example/d2/", ""]
    client.hset(f"{ns}:store:rules:http://t.example", "add-slash /d#", json.dumps(record))
    client.set(f"{ns}:store:epoch", "e" * 32)


def test_a_store_of_layout_1_is_migrated_at_open(make_store, redis_server):
    import time

    from scrapy_iri.store._rules import case_key

    client = redis_server.client()
    _write_layout_1(client, "old", time.time())
    assert client.get("old:store:layout") is None
    store = make_store("old")
    assert client.get("old:store:layout") == b"2"
    # the case-only alias is found through the index the migration built
    assert store.storage.case_target(case_key("http://h.example/DOCS/A")) == "http://h.example/docs/a"
    assert client.hget("old:store:aliascase", "http://h.example/Docs/A") == b"http://h.example/docs/a"
    assert store.storage.case_target(case_key("http://h.example/new")) is None  # not case-only
    # five sources (the default sink_fanin) into login: a sink, and no alias leads into it
    assert client.zrange("old:store:sinks", 0, -1, withscores=True) == [(b"http://s.example/login", 5.0)]
    assert store.storage.is_sink("http://s.example/login", 5)
    assert store.representative("http://s.example/p0") == "http://s.example/p0"
    assert store.representative("http://h.example/old") == "http://h.example/new"
    assert store.representative("http://t.example/d77") == "http://t.example/d77/"  # the rules are read as before
    assert store.stats()["sinks"] == 1 and store.stats()["aliases"] == 3
    # another process opening later finds layout 2 and the same answers
    again = make_store("old")
    assert again.storage.case_target(case_key("http://h.example/docs/A")) == "http://h.example/docs/a"
    assert again.representative("http://s.example/p0") == "http://s.example/p0"
    # and what the migrated store learns next keeps the index up to date
    again.record_redirect("http://h.example/Docs/A", 302, "http://h.example/docs/a")
    again.flush()
    assert make_store("old").storage.case_target(case_key("http://h.example/docs/a")) is None


def test_the_migration_finds_sinks_with_the_crawls_sink_fanin(make_store, redis_server):
    import time

    client = redis_server.client()
    _write_layout_1(client, "old3", time.time(), sink_sources=3)
    store = make_store("old3", policy=LearningPolicy(sink_fanin=3))
    assert store.storage.is_sink("http://s.example/login", 3)
    assert store.representative("http://s.example/p0") == "http://s.example/p0"


def test_a_newer_layout_is_refused(make_store, redis_server):
    from scrapy_iri.errors import StoreError

    client = redis_server.client()
    client.set("new:store:layout", "3")
    client.hset("new:store:aliases", "http://a.example/x", json.dumps(["http://a.example/y", 301, 1.0]))
    with pytest.raises(StoreError, match=r"layout 3 is newer than this scrapy-iri reads \(2\)") as info:
        make_store("new")
    assert "'new'" in str(info.value)  # names the namespace
    assert client.get("new:store:layout") == b"3"  # left as it was
    assert client.hlen("new:store:casealiases") == 0
    make_store("fresh")  # an empty namespace is created at the current layout
    assert client.get("fresh:store:layout") == b"2"


# -- the alias cache: bounded, and invalidated by the change log ------------------------------------


def test_the_alias_cache_is_bounded_and_a_drop_elsewhere_reaches_it_through_the_change_log(make_store):
    a = make_store("cache")
    for i in range(50):
        a.record_redirect(f"http://c.example/old/{i}", 301, f"http://c.example/new/{i}")
    a.flush()
    frozen = Clock()  # b's syncs happen only when asked
    b = make_store("cache", cache_size=10, monotonic=frozen)
    for i in range(50):
        assert b.representative(f"http://c.example/old/{i}") == f"http://c.example/new/{i}"
        assert len(b.storage.image.aliases) <= 10
    x, y = "http://c.example/old/48", "http://c.example/old/49"  # the last read: in b's cache
    cached = b.storage.image.aliases.data
    assert x in cached and y in cached
    a.record_response(x, 200)  # x answers for itself: the alias ends
    a.flush()
    reads, reloads = b.counters.get("reads", 0), b.counters.get("reloads", 0)
    assert b.representative(x) == "http://c.example/new/48"  # not synced yet: from the cache
    assert b.counters.get("reads", 0) == reads
    b.sync()
    assert x not in cached and y in cached  # only the changed entry is forgotten, no reload
    assert b.counters.get("reloads", 0) == reloads
    assert b.representative(x) == x
    assert b.representative(y) == "http://c.example/new/49"


# -- the evidence log is pruned at batches ------------------------------------------------------------


def test_evidence_older_than_the_max_age_is_pruned_at_the_next_batch(make_store, redis_server):
    clock = Clock()
    clock.now = 1_000_000.0
    store = make_store("ev", clock=clock, evidence_max_age=1000.0, evidence_max=4)
    for i in range(6):
        store.record_redirect(f"http://e.example/p{i}", 301, f"http://e.example/q{i}")
    store.flush()
    client = redis_server.client()
    kept = [json.loads(raw)[1] for raw in client.lrange("ev:store:evidence", 0, -1)]
    assert kept == [f"http://e.example/p{i}" for i in range(2, 6)]  # at most evidence_max, the newest
    clock.now += 999.0
    store.record_redirect("http://e.example/a", 301, "http://e.example/b")
    store.flush()
    assert client.llen("ev:store:evidence") == 4  # p3..p5 and a: none older than 1000 s yet
    clock.now += 2.0  # p3..p5 are now 1001 s old
    assert client.llen("ev:store:evidence") == 4  # nothing happens between batches
    store.record_redirect("http://e.example/c", 301, "http://e.example/d")
    store.flush()
    assert [e.url for e in store.evidence()] == ["http://e.example/a", "http://e.example/c"]
    assert store.stats()["aliases"] == 8  # aliases are not evidence: all kept


def test_all_evidence_older_than_the_max_age_is_pruned_at_the_next_batch(make_store, redis_server):
    clock = Clock()
    clock.now = 1_000_000.0
    store = make_store("ev150", clock=clock, evidence_max_age=1000.0)
    for i in range(150):
        store.record_redirect(f"http://e.example/p{i}", 301, f"http://e.example/q{i}")
    store.flush()
    clock.now += 5000.0
    store.record_redirect("http://e.example/a", 301, "http://e.example/b")
    store.flush()
    assert [e.url for e in store.evidence()] == ["http://e.example/a"]


def test_rule_records_whose_evidence_expired_are_compacted(make_store, redis_server):
    """A record whose every count is older than the TTL is dropped from Redis (it meant nothing any
    more), as the SQLite store does; a record with a live count stays, what lookups answer does not
    change."""
    clock = Clock()
    policy = LearningPolicy(rule_ttl=1000.0)
    ns = f"compact-{uuid.uuid4().hex[:8]}"
    store = make_store(ns, clock=clock, policy=policy)
    for i in range(3):
        store.record_redirect(f"http://old.example/d{i}", 301, f"http://old.example/d{i}/")
    store.record_response("http://old.example/x", 200)  # counterexamples for the https/www candidates
    store.flush()
    assert {r.key.origin for r in store.rules()} == {"http://old.example"}
    clock.now += 5000.0  # every count of old.example is past the TTL
    for i in range(3):
        store.record_redirect(f"http://new.example/d{i}", 301, f"http://new.example/d{i}/")
    store.flush()
    again = make_store(ns, clock=clock, policy=policy)
    again.record_redirect("http://new.example/d3", 301, "http://new.example/d3/")
    again.flush()  # the first batch of a process compacts
    client = redis_server.client()
    assert client.smembers(f"{ns}:store:origins") == {b"http://new.example"}
    assert client.exists(f"{ns}:store:rules:http://old.example") == 0
    assert {r.key.origin for r in again.rules()} == {"http://new.example"}
    assert again.counters["compacted"] > 0
    assert again.representative("http://new.example/d7") == "http://new.example/d7/"
    assert again.representative("http://old.example/d7") == "http://old.example/d7"
