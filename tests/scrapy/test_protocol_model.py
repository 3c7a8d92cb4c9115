"""Model-based tests of the protocol rung: random simulated webs crawled by real Scrapy.

Each seed draws a web (``simweb.sites.random_web``). Scrapy's defaults crawl
it first: the pages that crawl reaches are the ground truth. Then the add-on
crawls it at the protocol rung, cold (an empty store) and warm (the store of
the cold crawl), with a verification share and a concurrency drawn from the
seed (share 0 turns verification off: every prediction is rewritten, so
every wrong rule has to be undone by the request path), and every crawl must

* reach every page the ground truth reached (invariants 1, 2 and 4: no
  request filtered as a duplicate of itself, no page lost to a rule, what a
  fallen rule merged brought back);
* fetch no page more often than the ground truth did (invariant 3, and no
  duplicate from re-scheduling);
* log no error.

The normal suite runs :data:`SEEDS`; ``IRI_MODEL_SEEDS=N`` runs seeds 0..N-1
with every share (0, 0.1, 1) and concurrencies 1, 4 and 16 (the long
profile, about 15 s per seed and setting on two cores).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("simweb")
from simweb import SimulatedWeb  # noqa: E402
from simweb.crawl import CrawlResult, run_crawl  # noqa: E402
from simweb.sites.random_web import random_web  # noqa: E402

ADDON = {"ADDONS": {"scrapy_iri.Addon": 0}}
SHARES = (0.0, 0.1, 1.0)
CONCURRENCIES = (1, 4, 16)
#: the fixed seeds of the normal suite, each with one (share, concurrency)
SEEDS = [(seed, SHARES[seed % 3], CONCURRENCIES[(seed + seed // 3) % 3]) for seed in range(6)]


def _cases() -> list[tuple[int, float, int]]:
    count = int(os.environ.get("IRI_MODEL_SEEDS", "0") or 0)
    if not count:
        return SEEDS
    return [(seed, share, c) for seed in range(count) for share in SHARES for c in CONCURRENCIES]


def _check(name: str, result: CrawlResult, truth: CrawlResult) -> None:
    assert result.returncode == 0, result.log[-3000:]
    assert result.stat("log_count/ERROR") == 0, result.log[-3000:]
    missed = truth.resource_ids - result.resource_ids
    assert missed == set(), (name, sorted(missed))
    expected = truth.counts["resources"]
    twice = {rid: n for rid, n in result.counts["resources"].items() if n > max(1, expected.get(rid, 1))}
    assert twice == {}, name


@pytest.mark.parametrize(("seed", "share", "concurrency"), _cases())
def test_random_web(tmp_path: Path, seed: int, share: float, concurrency: int) -> None:
    settings: dict[str, Any] = {
        **ADDON,
        "IRI_STORE": f"sqlite:///{tmp_path / 'store.db'}",
        "IRI_VERIFY_SHARE": share,
        # share 0: no verification at all (every prediction rewritten: the rules' mistakes show)
        "IRI_VERIFY_ADAPTIVE": share > 0,
        "CONCURRENT_REQUESTS": concurrency,
    }
    with SimulatedWeb(random_web(seed)) as web:
        truth = run_crawl(web, settings={"CONCURRENT_REQUESTS": concurrency})
        assert truth.returncode == 0, truth.log[-3000:]
        assert len(truth.resource_ids) >= 10
        cold = run_crawl(web, settings=settings)
        _check(f"seed {seed} cold", cold, truth)
        warm = run_crawl(web, settings=settings)
        _check(f"seed {seed} warm", warm, truth)
