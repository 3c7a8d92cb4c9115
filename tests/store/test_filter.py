"""A link that is no alias costs no read: the filter of alias sources answers it in memory."""

from __future__ import annotations

import time

from pathlib import Path

from scrapy_iri.store import Alias, open_store
from scrapy_iri.store._filter import MIN_CAPACITY, KeyFilter


def test_a_key_added_is_always_found_and_others_rarely() -> None:
    f = KeyFilter(10_000)
    keys = [f"http://h{i % 97}.example/p/{i}" for i in range(10_000)]
    for key in keys:
        f.add(key)
    assert all(key in f for key in keys)
    wrong = sum(f"http://h{i % 97}.example/q/{i}" in f for i in range(100_000))
    assert wrong < 100_000 * 0.02  # ten bits per key: about 1% when full (here 1/6.5 full: far fewer)
    again = KeyFilter.load(*f.dump())
    assert all(key in again for key in keys) and again.capacity == max(MIN_CAPACITY, 10_000)


def _selects(store) -> list[str]:  # type: ignore[no-untyped-def]
    seen: list[str] = []
    store.storage._db.set_trace_callback(lambda sql: seen.append(sql) if sql.lstrip().upper().startswith("SELECT") else None)
    return seen


def test_misses_are_answered_without_reading_the_file(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'f.db'}"
    with open_store(uri) as store:
        for i in range(50):
            store.record_redirect(f"http://a.example/old{i}", 301, f"http://a.example/new{i}")
    with open_store(uri, create=False, sync_interval=3600.0) as store:
        selects = _selects(store)
        for i in range(2000):
            assert store.representative(f"http://a.example/never{i}") == f"http://a.example/never{i}"
        reads = [sql for sql in selects if "FROM alias" in sql]
        assert len(reads) < 2000 * 0.02  # false positives only
        assert store.representative("http://a.example/old7") == "http://a.example/new7"  # a hit still reads


def test_an_alias_another_process_learns_passes_the_filter(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'f.db'}"
    a = open_store(uri, sync_interval=0.0)
    b = open_store(uri, sync_interval=0.0)
    assert b.representative("http://a.example/old") == "http://a.example/old"
    a.record_redirect("http://a.example/old", 301, "http://a.example/new")
    a.flush()
    assert b.representative("http://a.example/old") == "http://a.example/new"  # through the change log
    b.close()
    a.close()
    with open_store(uri, create=False) as c:  # from the saved filter
        assert c.representative("http://a.example/old") == "http://a.example/new"


def test_a_bulk_import_and_a_store_without_a_saved_filter(tmp_path: Path) -> None:
    path = tmp_path / "f.db"
    uri = f"sqlite:///{path}"
    with open_store(uri) as store:
        store.bulk_aliases(Alias(f"http://b.example/{i}", f"http://b.example/{i}/", 301, time.time()) for i in range(MIN_CAPACITY + 5))  # type: ignore[attr-defined]
    with open_store(uri, create=False) as store:
        assert store.storage.cached.filter.capacity > MIN_CAPACITY  # type: ignore[attr-defined]  # grown with the store
        assert store.representative("http://b.example/77") == "http://b.example/77/"
    import sqlite3

    db = sqlite3.connect(path)
    db.execute("DELETE FROM meta WHERE key LIKE 'alias_filter%'")  # a store written before the filter
    db.commit()
    db.close()
    with open_store(uri, create=False) as store:  # built from the aliases at open
        assert store.representative(f"http://b.example/{MIN_CAPACITY}") == f"http://b.example/{MIN_CAPACITY}/"


def test_redis_misses_cost_no_round_trip_and_filters_of_processes_merge(redis_url: str) -> None:
    from scrapy_iri.store._redis import RedisStore

    a = RedisStore(redis_url, "flt", sync_interval=0.0)
    b = RedisStore(redis_url, "flt", sync_interval=0.0)
    a.record_redirect("http://a.example/old", 301, "http://a.example/new")
    b.record_redirect("http://b.example/old", 301, "http://b.example/new")
    a.close()  # each saves its filter: OR-ed together in Redis
    b.close()
    c = RedisStore(redis_url, "flt", sync_interval=3600.0)
    before = c.counters.get("reads", 0)
    for i in range(1000):
        assert c.representative(f"http://a.example/never{i}") == f"http://a.example/never{i}"
    assert c.counters.get("reads", 0) - before < 20  # false positives only
    assert c.representative("http://a.example/old") == "http://a.example/new"
    assert c.representative("http://b.example/old") == "http://b.example/new"
    d = RedisStore(redis_url, "flt", sync_interval=0.0)
    assert d.representative("http://c.example/old") == "http://c.example/old"
    c.record_redirect("http://c.example/old", 301, "http://c.example/new")
    c.flush()
    assert d.maintain(force=True)
    assert d.representative("http://c.example/old") == "http://c.example/new"  # through the change log
    c.close()
    d.close()


def test_a_link_on_an_origin_without_rules_in_force_reads_nothing(tmp_path: Path) -> None:
    """The origin holds refuted candidates (learning read them): a lookup there reads no alias (the
    filter) and no rule (the view of the records in force, read once, is empty)."""
    with open_store(f"sqlite:///{tmp_path / 'f.db'}", sync_interval=3600.0) as store:
        for i in range(30):  # 301s into another directory: every convention's candidate refuted
            store.record_redirect(f"http://www.a.example/s{i % 7}/page-{i}.html", 301, f"http://www.a.example/p/{i}")
        assert store.representative("http://www.a.example/s1/page-1.html") == "http://www.a.example/p/1"
        selects = _selects(store)
        for i in range(1000):
            url = f"http://www.a.example/s{i % 7}/other-{i}.html"
            assert store.representative(url) == url
        assert [sql for sql in selects if "FROM alias" in sql or "FROM rule" in sql] == []
