"""Bulk learning: ``EquivalenceStore.learn`` applies observations as one-at-a-time recording does."""

from __future__ import annotations

from scrapy_iri.store import Observation, open_store


def test_later_capture_that_answers_ends_the_alias() -> None:
    store = open_store("memory:")
    summary = store.learn(
        [
            Observation("http://a.example/old", 301, "http://a.example/new", time=1_600_000_000.0),
            Observation("http://a.example/old", 200, time=1_700_000_000.0),
        ]
    )
    assert summary.observations == 2
    assert summary.aliases_learned == 1 and summary.aliases_dropped == 1
    assert store.representative("http://a.example/old") == "http://a.example/old"


def test_temporary_redirects_never_merge() -> None:
    store = open_store("memory:")
    summary = store.learn([Observation("http://a.example/today", 302, "http://a.example/2026")])
    assert summary.aliases_learned == 0
    assert store.representative("http://a.example/today") == "http://a.example/today"


def test_observation_time_is_the_evidence_time() -> None:
    store = open_store("memory:")
    store.learn([Observation("http://a.example/old", 308, "http://a.example/new", time=1_500_000_000.0)])
    (alias,) = list(store.aliases())
    assert alias.time == 1_500_000_000.0
    assert store.clock() > 1_500_000_000.0  # the store's own clock is given back
