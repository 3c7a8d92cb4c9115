"""The evidence log's age limit, and the rule records kept, count from the store's newest entry,
alike on every backend.

An archive learned long after its captures keeps the evidence of what it
taught (``explain`` and ``evidence URL`` answer for it); a crawl, whose
entries are dated now, prunes as the clock goes. Memory, SQLite and Redis
keep exactly the same entries: none more than ``EVIDENCE_MAX_AGE`` older
than the newest entry the store ever held (a date in the future counting
as now), the oldest pruned first; rule records are dropped as past use at
that time too, so a store learned from an old archive judges its rules at
the archive's time as the memory store does, whether the archive was
learned in one run or several.
"""

from __future__ import annotations

import random
import sqlite3
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fixtures.stores import Clock, store_state

from scrapy_iri.store import EquivalenceStore, LearningPolicy, Observation, open_store
from scrapy_iri.store._evidence import Evidence
from scrapy_iri.store._learner import EquivalenceStore as Learner
from scrapy_iri.store._memory import MemoryStorage
from scrapy_iri.store._storage import EVIDENCE_MAX_AGE

DAY = 86400.0
#: 2024-01-01: an archive's first capture, years before the test runs
ARCHIVE_START = 1_704_067_200.0


@pytest.fixture(params=["memory", "sqlite", "redis"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """``make(clock)``: a new store of the backend on that clock (the wall clock when ``None``)."""
    opened: list[EquivalenceStore] = []

    def open_one(clock: Any = None) -> EquivalenceStore:
        name = uuid.uuid4().hex[:8]
        if request.param == "memory":
            uri = "memory:"
        elif request.param == "sqlite":
            uri = f"sqlite:///{tmp_path / f'{name}.db'}"
        else:
            uri = f"{request.getfixturevalue('redis_url')}?namespace=age-{name}"
        store = open_store(uri, clock=clock)
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()


def archive(seed: int, days: int) -> list[Observation]:
    """Captures of a few sites over ``days`` days from 2024-01-01, in date order: moves, pages, errors."""
    rng = random.Random(seed)
    now, out = ARCHIVE_START, []
    while now < ARCHIVE_START + days * DAY:
        now += rng.choice([60.0, 3600.0, DAY, 3 * DAY])
        site, page = rng.randrange(6), rng.randrange(50)
        url = f"http://s{site}.example/old/page-{page}"
        roll = rng.random()
        if roll < 0.6:
            out.append(Observation(url, 301, f"https://s{site}.example/new/page-{page}", time=now))
        elif roll < 0.8:
            out.append(Observation(f"https://s{site}.example/new/page-{page}", 200, time=now))
        elif roll < 0.9:
            out.append(Observation(url, 302, f"https://s{site}.example/today", time=now))
        else:
            out.append(Observation(url, rng.choice([200, 404, 410]), time=now))
    return out


def kept(log: list[Evidence], max_age: float = EVIDENCE_MAX_AGE) -> list[Evidence]:
    """The definition: the log without its longest prefix of entries older than the newest minus ``max_age``."""
    cutoff = max(e.time for e in log) - max_age
    first = next((i for i, e in enumerate(log) if e.time >= cutoff), len(log))
    return log[first:]


def entries(store: EquivalenceStore) -> list[dict[str, Any]]:
    store.flush()
    return [e.as_dict() for e in store.evidence()]


@pytest.mark.parametrize("seed", range(3))
def test_an_archive_learned_today_keeps_the_evidence_of_its_last_90_days(make: Any, seed: int) -> None:
    observations = archive(seed, 400)
    unpruned = Learner(MemoryStorage(evidence_max_age=float("inf")), LearningPolicy())
    unpruned.learn(observations)
    log = list(unpruned.evidence())
    assert log[-1].time - log[0].time > 300 * DAY  # older entries than the limit, and younger ones
    expected = [e.as_dict() for e in kept(log)]
    assert 0 < len(expected) < len(log)

    store = make()  # the wall clock: two years and more after the captures
    store.learn(observations, chunk=random.Random(seed).choice([7, 64, 10_000]))
    assert entries(store) == expected
    # an alias taught in the last 90 days is explained by its evidence
    newest_move = next(o for o in reversed(observations) if o.status == 301)
    assert store.evidence(newest_move.url)
    assert any("301" in line for line in store.explain(newest_move.url).lines)


def test_learned_one_at_a_time_or_in_bulk_the_same_entries_are_kept(make: Any) -> None:
    observations = archive(7, 200)
    clock = Clock(ARCHIVE_START)
    looped = make(clock)
    for obs in observations:
        clock.now = obs.time
        if obs.is_redirect:
            looped.record_redirect(obs.url, obs.status, obs.target)
        else:
            looped.record_response(obs.url, obs.status)
    bulk = make()
    bulk.learn(observations)
    assert entries(looped) == entries(bulk)
    times = [e["time"] for e in entries(bulk)]
    assert times[0] >= max(times) - EVIDENCE_MAX_AGE and times[0] > ARCHIVE_START + 90 * DAY


def test_a_crawl_prunes_as_its_clock_goes(make: Any) -> None:
    """Entries dated now: the oldest go once the newest is 90 days younger, as by the clock."""
    clock = Clock(time.time())
    store = make(clock)
    store.record_redirect("http://a.example/1", 301, "http://a.example/one")
    clock.advance(60 * DAY)
    store.record_redirect("http://a.example/2", 301, "http://a.example/two")
    store.flush()
    assert [e["url"] for e in entries(store)] == ["http://a.example/1", "http://a.example/2"]
    clock.advance(31 * DAY)
    store.record_redirect("http://a.example/3", 301, "http://a.example/three")
    assert [e["url"] for e in entries(store)] == ["http://a.example/2", "http://a.example/3"]


def test_a_date_in_the_future_counts_as_now(make: Any) -> None:
    """A capture dated years ahead (a broken archive writer) does not push everything else out."""
    now = time.time()
    store = make()
    store.learn(
        [
            Observation("http://a.example/1", 301, "http://a.example/one", time=now - 10 * DAY),
            Observation("http://a.example/2", 301, "http://a.example/two", time=now + 3650 * DAY),
        ]
    )
    assert [e["url"] for e in entries(store)] == ["http://a.example/1", "http://a.example/2"]


def test_a_sqlite_store_without_its_newest_time_reads_it_once(tmp_path: Path) -> None:
    """A file written by an earlier version (no ``evidence_newest``) counts from its newest entry."""
    path = tmp_path / "old.db"
    observations = archive(3, 200)
    store = open_store(f"sqlite:///{path}")
    store.learn(observations[: len(observations) // 2])
    store.close()
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM meta WHERE key = 'evidence_newest'")
    before = entries(reopened := open_store(f"sqlite:///{path}"))
    reopened.learn(observations[len(observations) // 2 :])
    after = entries(reopened)
    reopened.close()
    assert before and after
    unpruned = Learner(MemoryStorage(evidence_max_age=float("inf")), LearningPolicy())
    unpruned.learn(observations)
    assert after == [e.as_dict() for e in kept(list(unpruned.evidence()))]


def test_an_archive_learned_today_keeps_the_rules_the_memory_store_keeps(make: Any) -> None:
    """Captures of two weeks of 2024: every rule still counts at the archive's end."""
    observations = [replace(o, time=ARCHIVE_START + (o.time - ARCHIVE_START) / 10) for o in archive(11, 150)]
    assert observations[-1].time - observations[0].time < LearningPolicy().rule_ttl
    end = observations[-1].time + 1.0
    reference = Learner(MemoryStorage(), LearningPolicy())
    reference.learn(observations)
    expected = store_state(reference, end, [])
    assert expected["rules"] and expected["aliases"]
    store = make()  # the wall clock
    for chunk in (observations[:100], observations[100:]):
        store.learn(chunk, chunk=64)
        store.flush()
    assert store_state(store, end, []) == expected


def test_an_archive_learned_in_several_runs_is_the_archive_learned_at_once(tmp_path: Path) -> None:
    observations = archive(12, 150)
    end = observations[-1].time + 1.0
    states = []
    for runs in (1, 3):
        uri = f"sqlite:///{tmp_path / f'runs-{runs}.db'}"
        size = -(-len(observations) // runs)
        for first in range(0, len(observations), size):
            with open_store(uri) as store:
                store.learn(observations[first : first + size])
        with open_store(uri, create=False) as store:
            states.append(store_state(store, end, []))
    assert states[0]["rules"] and states[0] == states[1]
