"""Webs that change between crawls, crawled cold then warm on the same store by real Scrapy.

A redirect is a fact about the day it was seen: a store that kept
believing last crawl's aliases would lose every page whose redirect
disappeared, moved or turned into a page. Each case crawls phase 0 of a web
(``simweb.sites.changing``) with an empty store, then phase 1 with the store
that crawl left, at a verification share (``IRI_VERIFY_SHARE``, the floor
of the adaptive share) and a concurrency, and every crawl must

* reach every page Scrapy's defaults reach in the same phase;
* fetch no page more often than Scrapy's defaults did;
* log no error.

The normal suite runs the issue's hostile web at concurrency 1 and 8 and
shares 0, 0.1 and 1, and :data:`SEEDS` random changing webs;
``IRI_CHANGE_SEEDS=N`` runs seeds 0..N-1 with every share and concurrency.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("simweb")
from simweb import SimulatedWeb  # noqa: E402
from simweb.crawl import CrawlResult, run_crawl  # noqa: E402
from simweb.model import Site  # noqa: E402
from simweb.sites.changing import changing_web, hostile_web  # noqa: E402

from scrapy_iri.store import open_store  # noqa: E402

ADDON = {"ADDONS": {"scrapy_iri.Addon": 0}}
SHARES = (0.0, 0.1, 1.0)
CONCURRENCIES = (1, 8)
#: the fixed seeds of the normal suite, each with one (share, concurrency); the long profile has every pair
SEEDS = [(seed, SHARES[seed % 3], CONCURRENCIES[(seed // 3) % 2]) for seed in (0, 2, 3, 4, 5)]


def _cases() -> list[tuple[int, float, int]]:
    count = int(os.environ.get("IRI_CHANGE_SEEDS", "0") or 0)
    if not count:
        return SEEDS
    return [(seed, share, c) for seed in range(count) for share in SHARES for c in CONCURRENCIES]


def _check(name: str, result: CrawlResult, truth: CrawlResult) -> None:
    assert result.returncode == 0, result.log[-3000:]
    assert truth.returncode == 0, truth.log[-3000:]
    assert result.stat("log_count/ERROR") == 0, result.log[-3000:]
    missed = truth.resource_ids - result.resource_ids
    assert missed == set(), (name, sorted(missed))
    expected = truth.counts["resources"]
    twice = {rid: n for rid, n in result.counts["resources"].items() if n > max(1, expected.get(rid, 1))}
    assert twice == {}, (name, twice)


def _crawl_phases(phases: list[list[Site]], settings: dict[str, Any], concurrency: int) -> list[tuple[CrawlResult, CrawlResult]]:
    """(ground truth, protocol rung) for each phase, the protocol crawls sharing one store."""
    results = []
    for sites in phases:
        with SimulatedWeb(sites) as web:
            truth = run_crawl(web, settings={"CONCURRENT_REQUESTS": concurrency})
            ours = run_crawl(web, settings={**settings, "CONCURRENT_REQUESTS": concurrency})
        results.append((truth, ours))
    return results


def _settings(tmp_path: Path, share: float) -> dict[str, Any]:
    return {**ADDON, "IRI_STORE": f"sqlite:///{tmp_path / 'store.db'}", "IRI_VERIFY_SHARE": share}


@pytest.mark.parametrize("concurrency", CONCURRENCIES)
@pytest.mark.parametrize("share", SHARES)
def test_hostile_web_loses_nothing_when_it_changes(tmp_path: Path, share: float, concurrency: int) -> None:
    settings = _settings(tmp_path, share)
    (truth0, cold), (truth1, warm) = _crawl_phases([hostile_web(0), hostile_web(1)], settings, concurrency)
    assert len(truth1.resource_ids) == 10  # home, about, four accounts, four items
    _check("cold", cold, truth0)
    assert cold.stat("iri/learned/exact") >= 8
    _check("warm", warm, truth1)
    assert warm.stat("iri/alias/ended") >= 4  # the accounts at least (the items may fall with their rule)
    with open_store(settings["IRI_STORE"]) as store:
        for k in range(1, 5):
            assert store.representative(f"http://hostile.example/account/{k}") == f"http://hostile.example/account/{k}"


@pytest.mark.parametrize(("seed", "share", "concurrency"), _cases())
def test_random_changing_web(tmp_path: Path, seed: int, share: float, concurrency: int) -> None:
    settings = _settings(tmp_path, share)
    phases = [changing_web(seed, 0), changing_web(seed, 1), changing_web(seed, 1)]
    (truth0, cold), (truth1, warm), (truth2, again) = _crawl_phases(phases, settings, concurrency)
    assert len(truth0.resource_ids) >= 10
    _check(f"seed {seed} cold", cold, truth0)
    _check(f"seed {seed} warm, changed", warm, truth1)
    _check(f"seed {seed} warm again", again, truth2)


def test_a_web_that_does_not_change_confirms_its_aliases(tmp_path: Path) -> None:
    """Phase 0 twice: every alias checked is confirmed, none ends, nothing lost."""
    settings = _settings(tmp_path, 0.0)
    (truth, cold), (truth_again, warm) = _crawl_phases([hostile_web(0), hostile_web(0)], settings, 1)
    _check("cold", cold, truth)
    _check("warm", warm, truth_again)
    assert warm.stat("iri/alias/ended") == 0
    assert warm.stat("iri/alias/confirmed") >= 4  # at least until the crawl's record lowers the share
    with open_store(settings["IRI_STORE"]) as store:
        confirmed = {a.source: a.confirmations for a in store.aliases()}
        assert store.alias_trust("http://hostile.example/") == warm.stat("iri/alias/confirmed")
    assert len(confirmed) == 8  # every alias kept
    assert sum(confirmed.values()) == warm.stat("iri/alias/confirmed")


def test_the_middleware_reads_a_redirect_s_stated_lifetime() -> None:
    from scrapy.http import Response

    from scrapy_iri.scrapy._redirects import redirect_lifetime

    def answer(*headers: tuple[str, str]) -> Response:
        return Response("http://h.example/a", status=301, headers=[("Location", "/b"), *headers])

    assert redirect_lifetime(answer()) is None
    assert redirect_lifetime(answer(("Cache-Control", "max-age=600"))) == 600
    assert redirect_lifetime(answer(("Cache-Control", "public"), ("Cache-Control", "no-store"))) == 0
    date, expires = "Thu, 26 Nov 2026 07:00:00 GMT", "Thu, 26 Nov 2026 07:10:00 GMT"
    assert redirect_lifetime(answer(("Date", date), ("Expires", expires))) == 600
    assert redirect_lifetime(answer(("Cache-Control", "max-age=600"), ("Age", "100"))) == 500


def test_a_redirect_that_may_not_be_reused_is_asked_again_in_the_next_crawl(tmp_path: Path) -> None:
    from simweb.policies import Moves, Stated

    site = Site("stated.example", schemes=("http",))
    site.policies.append(Stated(inner=Moves({"/old-1": "/new-1"}), headers=(("Cache-Control", "no-store"),)))
    site.policies.append(Stated(inner=Moves({"/old-2": "/new-2"}), headers=(("Cache-Control", "max-age=86400"),)))
    site.page("stated:home", "/", "/old-1", "/old-2")
    site.page("stated:1", "/new-1", "/")
    site.page("stated:2", "/new-2", "/")
    settings = _settings(tmp_path, 0.0)
    (truth, cold), (truth_again, warm) = _crawl_phases([[site], [site]], settings, 1)
    _check("cold", cold, truth)
    _check("warm", warm, truth_again)
    with open_store(settings["IRI_STORE"]) as store:
        aliases = {a.source: a for a in store.aliases()}
    assert "http://stated.example/old-1" not in aliases  # no-store: no alias
    stated = aliases["http://stated.example/old-2"]
    assert stated.expires is not None and 86000 < stated.expires - stated.time <= 86400
    assert warm.counts["redirects"].get("moves", 0) == 2  # both asked again: one never stored, one checked
