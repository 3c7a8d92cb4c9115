"""Real Scrapy crawls of the simulated redirect-policy web: Scrapy's defaults, a cold store, a warm store.

Each crawl runs in a subprocess (``simweb.crawl``) through the
simulated web's loopback proxy; the server counts every request, per
resource id and per redirect policy.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from scrapy_iri.store import RuleStatus, open_store
from scrapy_iri.store._psl import same_site

testing = pytest.importorskip("simweb")
from simweb import Moves, SimulatedWeb, Site, SlashRedirect, protocol_sites  # noqa: E402
from simweb.crawl import CrawlResult, run_crawl  # noqa: E402

ADDON = {"ADDONS": {"scrapy_iri.Addon": 0}}

#: policies whose redirects a learner may save (permanent, clean, one site, finite)
SAVEABLE = {"slash", "index", "https", "www", "moves", "case", "chain_short"}

#: the rules the cold crawl must learn, and nothing else
EXPECTED_RULES = {
    "http://slash.example add-slash /topic-#",
    "http://noslash.example remove-slash /note-#/",
    # one index.html per directory: learned under three directories, it holds under every one
    "http://index.example index-to-directory * index.html",
    # the series are at the root: the rules hold there (other directories learn on their own)
    "http://secure.example http-to-https /",
    "http://secure308.example http-to-https /",
    "http://store.example apex-to-www /",
    "http://www.blog.example www-to-apex /",
    "http://twin.example add-slash /dir-#",
    "http://iis.example declared-case /docs/",
}


@dataclass
class Crawls:
    web: SimulatedWeb
    default: CrawlResult
    cold: CrawlResult
    warm: CrawlResult
    store_uri: str


def redirects(result: CrawlResult, policies: set[str] | None = None) -> int:
    counts: dict[str, int] = result.counts["redirects"]
    return sum(n for name, n in counts.items() if policies is None or name in policies)


@pytest.fixture(scope="module")
def crawls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crawls]:
    store_uri = f"sqlite:///{tmp_path_factory.mktemp('store') / 'store.db'}"
    settings: dict[str, Any] = {**ADDON, "IRI_STORE": store_uri}
    with SimulatedWeb(protocol_sites()) as web:
        default = run_crawl(web)
        cold = run_crawl(web, settings=settings)
        warm = run_crawl(web, settings=settings)
        for result in (default, cold, warm):
            assert result.returncode == 0, result.log[-3000:]
        yield Crawls(web, default, cold, warm, store_uri)


def test_no_resource_is_missed(crawls: Crawls) -> None:
    expected = crawls.web.resource_ids()
    assert crawls.web.trap_ids() <= expected
    for result in (crawls.default, crawls.cold, crawls.warm):
        assert expected - result.resource_ids == set()


def test_no_more_duplicate_fetches_than_scrapy(crawls: Crawls) -> None:
    default = crawls.default.counts["resources"]
    for result in (crawls.cold, crawls.warm):
        extra = {rid: n for rid, n in result.counts["resources"].items() if n > default.get(rid, 1)}
        assert extra == {}


def test_redirect_round_trips_saved(crawls: Crawls) -> None:
    default, cold, warm = (redirects(r, SAVEABLE) for r in (crawls.default, crawls.cold, crawls.warm))
    assert cold <= default * 0.6
    # warm: saveable redirects are only verification fetches
    assert warm <= crawls.warm.stat("iri/verify")
    assert redirects(crawls.warm) < redirects(crawls.cold) < redirects(crawls.default)


def test_what_must_be_fetched_still_is(crawls: Crawls) -> None:
    """Temporaries, 303s, sinks, open redirectors, cookie redirects: paid on every crawl."""
    never = {"temporaries", "303", "temporary_slash", "cookie_redirect", "sink", "sink_permanent", "open_redirect"}
    for name in never:
        assert crawls.warm.counts["redirects"].get(name) == crawls.default.counts["redirects"].get(name), name


def test_stats(crawls: Crawls) -> None:
    for key in ("iri/learned/exact", "iri/learned/rule", "iri/rewritten"):
        assert crawls.cold.stat(key) > 0, key
    assert crawls.warm.stat("iri/rewritten") > crawls.cold.stat("iri/rewritten")
    assert crawls.cold.stat("iri/contradicted") == 0


def test_the_rules_learned(crawls: Crawls) -> None:
    with open_store(crawls.store_uri, create=False) as store:
        active = {str(r.key) for r in store.rules() if store.rule_status(r) is RuleStatus.ACTIVE}
        assert active == EXPECTED_RULES
        for record in store.rules():  # zero rules learned across sites
            if record.example:  # "source -301-> target"
                source, _, target = record.example.split(" ")
                assert same_site(source.split("/")[2], target.split("/")[2])
        for alias in store.aliases():  # across sites only the open redirector's own URLs, source -> target
            if not same_site(alias.source.split("/")[2], alias.target.split("/")[2]):
                assert alias.source.startswith("http://go.example/"), alias
        hosts = {alias.source.split("/")[2] for alias in store.aliases()}
        # context-dependent (cookie) redirects and temporaries teach nothing
        assert not hosts & {"lang.example", "tempslash.example", "daily.example"}
        # an open redirector teaches no rule, on its own site or the one it points to
        assert not [r for r in store.rules() if r.key.origin.startswith("http://go.example") and r.support]
        # the slash twins: /both-1 and /both-1/ stay apart
        assert store.representative("http://twin.example/both-1") == "http://twin.example/both-1"
        # the login page and the soft-404 home are sinks: nothing merges into them
        assert store.representative("http://members.example/private/file-1") == "http://members.example/private/file-1"
        assert store.representative("http://soft404.example/gone-1") == "http://soft404.example/gone-1"
        assert store.stats()["sinks"] >= 2
        # documents declare a case only where case variants are redirected, not where they are other pages
        declared = [e["url"] for e in store.export() if e["type"] == "case"]
        assert declared and {url.split("/")[2] for url in declared} == {"iis.example"}
        assert store.representative("http://case.example/ITEM-1") == "http://case.example/ITEM-1"


def late_twin_site() -> Site:
    """A slash rule learned on /d-1../d-3, then wrong for /d-7 and /d-9 (files, not directories)."""
    site = Site("late.example", policies=[SlashRedirect()])
    site.page("late:home", "/", "/d-1")
    site.page("late:d-1", "/d-1/", "/d-2")
    site.page("late:d-2", "/d-2/", "/d-3")
    site.page("late:d-3", "/d-3/", "/d-7/", "/d-7", "/d-9")
    site.page("late:d-7-dir", "/d-7/", "/")
    site.page("late:d-7-file", "/d-7", "/")
    site.page("late:d-9-file", "/d-9", "/")
    return site


@pytest.mark.parametrize("scheduler", [None, "simweb.spider.OwnScheduler"])
def test_a_contradicted_rule_gives_back_what_it_merged(tmp_path: Path, scheduler: str | None) -> None:
    """/d-7 is dropped as a duplicate of /d-7/ under the rule; /d-9 is rewritten to /d-9/ (404).

    Checking /d-9 as it was contradicts the rule, which brings /d-7 back.
    The store lives in JOBDIR (the default location), so requests are pickled.
    Scrapy's scheduler has the dupefilter hand the dropped /d-7 over directly;
    a project's own scheduler tells it through the ``request_dropped`` signal.
    """
    jobdir = tmp_path / "job"
    settings = {
        **ADDON, "JOBDIR": str(jobdir), "IRI_VERIFY_SHARE": 0, "IRI_VERIFY_ADAPTIVE": False, "CONCURRENT_REQUESTS": 1
    }
    if scheduler is not None:
        settings["SCHEDULER"] = scheduler
    with SimulatedWeb([late_twin_site()]) as web:
        result = run_crawl(web, settings=settings)
        assert result.returncode == 0, result.log[-3000:]
        assert web.resource_ids() - result.resource_ids == set()
        assert result.stat("iri/learned/rule") == 1
        assert result.stat("iri/contradicted") == 1
        assert result.stat("iri/rescheduled") >= 1
        assert result.stat("iri/deferred") >= 1
    with open_store(f"sqlite:///{jobdir / 'iri-store.sqlite'}", create=False) as store:
        assert store.representative("http://late.example/d-8") == "http://late.example/d-8"


def http_only_sites() -> list[Site]:
    """Three pages of half.example moved to https, whose port does not answer; the rest is http only.

    Every link to half.example is on start.example: no http page of half.example
    is fetched before the rule is learned (one would refute it).
    """
    moves = {f"/doc-{i}": f"https://half.example/doc-{i}" for i in range(1, 4)}
    half = Site("half.example", schemes=("http",), policies=[Moves(moves)], start=())
    half.page("half:page-9", "/page-9")
    start = Site("start.example")
    start.page("start:home", "/", *(f"http://half.example/doc-{i}" for i in range(1, 4)), "/more")
    start.page("start:more", "/more", "http://half.example/page-9")
    return [half, start]


def test_a_rewrite_that_cannot_be_downloaded_checks_the_original(tmp_path: Path) -> None:
    """http -> https learned from three moves, wrong for /page-9: https does not even connect."""
    settings = {
        **ADDON,
        "IRI_STORE": f"sqlite:///{tmp_path / 'store.db'}",
        "IRI_VERIFY_SHARE": 0,
        "IRI_VERIFY_ADAPTIVE": False,
        "CONCURRENT_REQUESTS": 1,
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "RETRY_TIMES": 1,
    }
    with SimulatedWeb(http_only_sites()) as web:
        result = run_crawl(web, settings=settings)
        assert result.returncode == 0, result.log[-3000:]
        assert "half:page-9" in result.resource_ids
        assert result.stat("iri/learned/rule") == 1 and result.stat("iri/contradicted") == 1


def slash_family_site(count: int = 8) -> Site:
    """``/dir-k`` -> ``/dir-k/``; each page links the next in both forms."""
    site = Site("family.example", policies=[SlashRedirect()])
    site.page("family:home", "/", "/dir-1")
    for k in range(1, count + 1):
        site.page(f"family:{k}", f"/dir-{k}/", f"/dir-{k + 1}", f"/dir-{k + 1}/")
    return site


def test_verified_predictions_still_fetch_every_page_once(tmp_path: Path) -> None:
    """Verification fetches the original; its redirect to the representative the dupefilter
    filed it under must pass the filter (else the page would be dropped as already seen)."""
    settings = {**ADDON, "IRI_STORE": f"sqlite:///{tmp_path / 'store.db'}", "IRI_VERIFY_SHARE": 1.0}
    with SimulatedWeb([slash_family_site()]) as web:
        result = run_crawl(web, settings=settings)
        assert result.returncode == 0, result.log[-3000:]
        assert web.resource_ids() - result.resource_ids == set()
        assert all(n == 1 for rid, n in result.counts["resources"].items() if rid != "family:home")
        assert result.stat("iri/verified") >= 1 and result.stat("iri/rewritten") == 0


def early_twin_site() -> Site:
    """/d-7 and /d-9 are queued before the slash rule is learned; /d-7 and /d-7/ are two pages."""
    site = Site("early.example", policies=[SlashRedirect()])
    site.page("early:home", "/", "/d-1", "/d-2", "/d-3", "/d-7", "/d-9", "/d-7/")
    for k in (1, 2, 3):
        site.page(f"early:d-{k}", f"/d-{k}/")
    site.page("early:d-7-file", "/d-7")
    site.page("early:d-7-dir", "/d-7/")
    site.page("early:d-9-file", "/d-9")  # /d-9/ answers 404: the rule is checked and contradicted
    return site


def test_a_request_rewritten_after_its_filing_comes_back_when_the_rule_falls(tmp_path: Path) -> None:
    """/d-7 is filed under its own URL, rewritten to /d-7/ once the rule is learned, and must be
    fetched when the rule is contradicted (the dupefilter has seen it: it would drop it)."""
    settings = {
        **ADDON,
        "IRI_STORE": f"sqlite:///{tmp_path / 'store.db'}",
        "IRI_VERIFY_SHARE": 0,
        "IRI_VERIFY_ADAPTIVE": False,
        "CONCURRENT_REQUESTS": 1,
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    }
    with SimulatedWeb([early_twin_site()]) as web:
        result = run_crawl(web, settings=settings)
        assert result.returncode == 0, result.log[-3000:]
        assert web.resource_ids() - result.resource_ids == set()
        assert result.stat("iri/contradicted") == 1
        assert result.stat("iri/rescheduled") >= 1
        assert all(n == 1 for n in result.counts["resources"].values())
