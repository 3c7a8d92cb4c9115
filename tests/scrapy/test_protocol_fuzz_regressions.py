"""The classes of failure the flipping webs found (``test_protocol_fuzz.py``), each pinned down small.

* A document at a spelling the server once redirected by case
  (``/D-4`` -301-> ``/d-4``, then ``/D-4`` a page of its own: the server
  became case-sensitive) contradicts the declared case; it must not declare
  itself the case of the path, which would merge ``/d-4`` into ``/D-4``
  (flipping web seed 9, phase 1: ``/d-4`` lost).
* A request filed under a rule's prediction and fetched as it is (verified)
  whose answer is an error (404: neutral for the rule) did not fetch what it
  was filed under, even though the store still sends it there; that filing
  is fetched on its own (flipping web seed 14, phase 2: ``/d-2`` lost, and
  the pages only it linked).
* A redirect hop dropped as the duplicate of another request ends its chain
  there: what its earlier hops were filed under (a rule's prediction that
  the server no longer makes) is fetched on its own (seed 18, phase 2).
* A request a rule merges into a page that answered 404 or 410 in this crawl
  (before or after the merge) is fetched as it is: the error is neutral for
  the rule, which would otherwise keep it merged into nothing (seed 20,
  phase 1, where a slash convention flipped: ``/d-2`` lost). A URL that
  redirects to a page that is gone is gone too (seed 219: ``http://www.H/d-5/``
  led to a 404 at ``https://H/d-5/``, and ``http://www.H/d-5`` was merged into it).
* A rule-rewritten request that lands on 404 has its original fetched as a
  check; where the original redirects now is followed, not ignored (seed
  107, phase 1: ``https://www.H/d-2`` rewritten to ``https://H/d-2/``, 404;
  the original's 301 to ``https://H/d-2`` was dropped with the page).
* A rule is evidence about the days it was seen: confirmations from
  earlier crawls earn it no trust in this one until it holds here once, so
  its first predictions are checked (seed 123, phase 2: a host that became
  case-sensitive, ``/D-1`` and ``/D-3`` pages of their own merged into
  ``/d-1`` and ``/d-3`` by a case rule trusted from two earlier crawls).
  The dupefilter drops a link whose predicted target it has seen before the
  downloader could check the prediction: a prediction that would be checked
  is checked all the same, by fetching the dropped original (seed 214,
  phase 1: ``/D-4/`` dropped as ``/d-4/`` by a case rule of phase 0 that
  no link reaching the downloader tested; seed 219, phases 1 and 2:
  ``http://www.H/d-5`` dropped as ``/d-5/`` by an ``add-slash`` rule).
  Those dropped predictions are checked one per rule at a time: a rule
  whose first check confirms it costs one fetch, not one per link; one whose
  first check refutes it has everything it merged fetched.
* A rewrite sent back through the dupefilter (its request was filed under
  another identity) notes its target as fetched only when it reaches the
  downloader, and is dropped there if another request fetched the target
  first: a request re-scheduled past the dupefilter when a rule fell, planned
  between the two passes, fetched the same page (seed 304, phase 1:
  ``http://www.H/d-2`` fetched twice under some arrival orders).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.stores import Clock

from scrapy_iri.scrapy._plan import verification_share
from scrapy_iri.store import EquivalenceStore, LearningPolicy, MemoryStore, RuleKey, RuleStatus

pytest.importorskip("simweb")
from simweb import HttpsRedirect, Moves, SimulatedWeb, Site, WwwRedirect  # noqa: E402
from simweb.crawl import run_crawl  # noqa: E402
from simweb.policies import HttpRedirect  # noqa: E402

ADDON = {"ADDONS": {"scrapy_iri.Addon": 0}}
H = "http://h.example"


def test_a_page_at_a_spelling_once_redirected_by_case_declares_nothing() -> None:
    """Three case-only redirects make ``lowercase-path`` and ``declared-case`` rules under ``/``;
    then ``/D-3`` answers a page: both rules fall, and ``/d-3`` stays itself."""
    store = MemoryStore(LearningPolicy(), clock=Clock())
    for k in (1, 2, 3):
        store.record_redirect(f"{H}/D-{k}", 301, f"{H}/d-{k}")
    assert store.representative(f"{H}/D-3") == f"{H}/d-3"
    outcome = store.record_response(f"{H}/D-3", 200)
    assert store.representative(f"{H}/d-3") == f"{H}/d-3"
    assert store.representative(f"{H}/D-3") == f"{H}/D-3"
    statuses = {record.key.kind: store.rule_status(record) for record in store.rules()}
    assert statuses.get("declared-case") is RuleStatus.SUSPENDED
    assert statuses.get("lowercase-path") is RuleStatus.SUSPENDED
    assert {str(rule.kind) for rule in outcome.contradicted} >= {"declared-case", "lowercase-path"}
    assert not [e for e in store.export() if e["type"] == "case"]


def case_flip_site(phase: int) -> Site:
    """Phase 0: ``/D-k`` -301-> ``/d-k`` (case-insensitive); phase 1: ``/D-4`` is a page of its own."""
    site = Site("flip.example", schemes=("http",))
    site.page("flip:home", "/", "/D-1", "/D-2", "/D-3", "/D-4", "/more")
    site.page("flip:more", "/more", "/old")
    for k in (1, 2, 3, 4):
        site.page(f"flip:{k}", f"/d-{k}", "/")
    site.policies.append(Moves({"/old": "/d-4"}))
    if phase == 0:
        site.policies.append(Moves({f"/D-{k}": f"/d-{k}" for k in (1, 2, 3, 4)}, label="case"))
    else:
        site.policies.append(Moves({f"/D-{k}": f"/d-{k}" for k in (1, 2, 3)}, label="case"))
        site.page("flip:D-4", "/D-4", "/")
    return site


def test_a_server_that_became_case_sensitive_loses_no_page(tmp_path: Path) -> None:
    settings = {
        **ADDON,
        "IRI_STORE": f"sqlite:///{tmp_path / 'store.db'}",
        "IRI_VERIFY_SHARE": 1.0,
        "CONCURRENT_REQUESTS": 1,
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    }
    for phase in (0, 1):
        with SimulatedWeb([case_flip_site(phase)]) as web:
            result = run_crawl(web, settings=settings)
            assert result.returncode == 0, result.log[-3000:]
            assert result.stat("log_count/ERROR") == 0, result.log[-3000:]
            assert web.resource_ids() - result.resource_ids == set(), phase
            assert all(n == 1 for rid, n in result.counts["resources"].items() if not rid.endswith(":home")), result.counts["resources"]


def slash_404_site() -> Site:
    """``/d-k/`` -301-> ``/d-k`` for k = 1..3 (a ``remove-slash`` rule); ``/d-9/`` answers 404, ``/d-9`` is a page."""
    site = Site("gone.example", schemes=("http",))
    site.policies.append(Moves({f"/d-{k}/": f"/d-{k}" for k in (1, 2, 3)}))
    site.page("gone:home", "/", "/d-1/", "/d-2/", "/d-3/", "/next")
    for k in (1, 2, 3):
        site.page(f"gone:{k}", f"/d-{k}", "/")
    site.page("gone:next", "/next", "/d-9/", "/last")
    site.page("gone:last", "/last", "/d-9")
    site.page("gone:9", "/d-9", "/")
    return site


def test_a_verified_prediction_that_answers_404_fetches_its_filing(tmp_path: Path) -> None:
    settings = {
        **ADDON,
        "IRI_STORE": f"sqlite:///{tmp_path / 'store.db'}",
        "IRI_VERIFY_SHARE": 1.0,
        "CONCURRENT_REQUESTS": 1,
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    }
    with SimulatedWeb([slash_404_site()]) as web:
        result = run_crawl(web, settings=settings)
        assert result.returncode == 0, result.log[-3000:]
        assert result.stat("iri/learned/rule") >= 1, result.log[-3000:]
        assert web.resource_ids() - result.resource_ids == set()
        assert all(n == 1 for rid, n in result.counts["resources"].items() if not rid.endswith(":home")), result.counts["resources"]
        assert result.stat("iri/filings_fetched") >= 1


def gone_target_site(via: bool = False) -> Site:
    """``/d-k`` -301-> ``/d-k/`` for k = 1..3 (an ``add-slash`` rule); ``/d-9/`` answers 404 (with
    ``via``: 302 to ``/e-9``, which answers 404) before ``/d-9``, a page, is linked (twice) and
    merged into it by the rule."""
    site = Site("twin404.example", schemes=("http",))
    site.policies.append(Moves({f"/d-{k}": f"/d-{k}/" for k in (1, 2, 3)}))
    if via:
        site.policies.append(Moves({"/d-9/": "/e-9"}, status=302, label="via"))
    site.page("twin404:home", "/", "/d-1", "/d-2", "/d-3", "/next")
    for k in (1, 2, 3):
        site.page(f"twin404:{k}", f"/d-{k}/", "/")
    site.page("twin404:next", "/next", "/d-9/", "/last")
    site.page("twin404:last", "/last", "/d-9", "/more")
    site.page("twin404:more", "/more", "/d-9")
    site.page("twin404:9", "/d-9", "/")
    return site


@pytest.mark.parametrize("via", [False, True])
@pytest.mark.parametrize("share", [0.0, 1.0])
def test_what_a_rule_merges_into_a_page_that_is_gone_is_fetched(tmp_path: Path, share: float, via: bool) -> None:
    settings = {
        **ADDON,
        "IRI_STORE": f"sqlite:///{tmp_path / 'store.db'}",
        "IRI_VERIFY_SHARE": share,
        "IRI_VERIFY_ADAPTIVE": False,
        "CONCURRENT_REQUESTS": 1,
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    }
    with SimulatedWeb([gone_target_site(via)]) as web:
        result = run_crawl(web, settings=settings)
        assert result.returncode == 0, result.log[-3000:]
        assert result.stat("log_count/ERROR") == 0, result.log[-3000:]
        assert result.stat("iri/learned/rule") >= 1, result.log[-3000:]
        assert web.resource_ids() - result.resource_ids == set()
        fetched = result.counts["resources"]
        assert all(n == 1 for rid, n in fetched.items() if not rid.endswith(":home")), fetched
        assert result.counts["urls"].get("http://twin404.example/d-9/") == 1  # the gone page is not asked twice


def moved_elsewhere_site() -> Site:
    """``/d-k`` -301-> ``/d-k/`` for k = 1..3 (an ``add-slash`` rule); ``/d-9`` -301-> ``/page-9``, the
    only way to that page; ``/d-9/`` answers 404."""
    site = Site("elsewhere.example", schemes=("http",))
    site.policies.append(Moves({**{f"/d-{k}": f"/d-{k}/" for k in (1, 2, 3)}, "/d-9": "/page-9"}))
    site.page("elsewhere:home", "/", "/d-1", "/d-2", "/d-3", "/next")
    for k in (1, 2, 3):
        site.page(f"elsewhere:{k}", f"/d-{k}/", "/")
    site.page("elsewhere:next", "/next", "/d-9")
    site.page("elsewhere:9", "/page-9", "/")
    return site


def test_the_check_of_a_rewrite_that_lands_on_404_follows_the_original_s_redirect(tmp_path: Path) -> None:
    settings = {
        **ADDON,
        "IRI_STORE": f"sqlite:///{tmp_path / 'store.db'}",
        "IRI_VERIFY_SHARE": 0,
        "IRI_VERIFY_ADAPTIVE": False,
        "CONCURRENT_REQUESTS": 1,
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    }
    with SimulatedWeb([moved_elsewhere_site()]) as web:
        result = run_crawl(web, settings=settings)
        assert result.returncode == 0, result.log[-3000:]
        assert result.stat("log_count/ERROR") == 0, result.log[-3000:]
        assert result.stat("iri/rewritten") >= 1 and result.stat("iri/contradicted") == 1, result.log[-3000:]
        assert web.resource_ids() - result.resource_ids == set()
        fetched = result.counts["resources"]
        assert all(n == 1 for rid, n in fetched.items() if not rid.endswith(":home")), fetched


def test_a_rule_of_an_earlier_crawl_is_checked_until_it_holds_in_this_one() -> None:
    """Ten case redirects in one crawl: trusted there (share 3/10); the next crawl checks every
    prediction until one holds; one confirmation there restores the trust it had."""
    clock = Clock()
    first = MemoryStore(LearningPolicy(), clock=clock)
    for k in range(1, 11):
        first.record_redirect(f"{H}/D-{k}", 301, f"{H}/d-{k}")
    rule = RuleKey(H, "lowercase-path", "/")
    assert first.confirmations(rule) >= 10
    assert verification_share(first.confirmations(rule), 0.0) <= 0.3
    clock.advance(86400)
    later = EquivalenceStore(first.storage, LearningPolicy(), clock=clock)  # the next crawl, same storage
    assert later.representative(f"{H}/D-20") == f"{H}/d-20"  # still in force
    assert later.confirmations(rule) == 0 and verification_share(later.confirmations(rule), 0.0) == 1.0
    later.record_response(f"{H}/D-20", 404)  # an error confirms nothing
    assert later.confirmations(rule) == 0
    later.record_redirect(f"{H}/D-21", 301, f"{H}/d-21")
    assert later.confirmations(rule) >= 11


def turned_case_sensitive_site(phase: int, target_first: bool = False) -> Site:
    """Phase 0: ``/D-k`` -301-> ``/d-k`` for k = 1..30 (a case rule under ``/``, trusted: checked for
    3/30 of its predictions); phase 1: the server is case-sensitive, and ``/D-50``, never seen before,
    is a page next to ``/d-50`` (linked after it with ``target_first``)."""
    site = Site("sensitive.example", schemes=("http",))
    for k in (*range(1, 31), 50):
        site.page(f"sensitive:{k}", f"/d-{k}", "/")
    if phase == 0:
        site.page("sensitive:home", "/", *(f"/D-{k}" for k in range(1, 31)))
        site.policies.append(Moves({f"/D-{k}": f"/d-{k}" for k in range(1, 31)}))
    else:
        site.page("sensitive:home", "/", *(("/d-50", "/D-50") if target_first else ("/D-50", "/d-50")))
        site.page("sensitive:D-50", "/D-50", "/")
    return site


@pytest.mark.parametrize("target_first", [False, True])
@pytest.mark.parametrize("adaptive", [False, True])
def test_a_case_rule_of_an_earlier_crawl_is_checked_before_it_merges(
    tmp_path: Path, adaptive: bool, target_first: bool
) -> None:
    settings = {
        **ADDON,
        "IRI_STORE": f"sqlite:///{tmp_path / 'store.db'}",
        "IRI_VERIFY_SHARE": 0,
        "IRI_VERIFY_ADAPTIVE": adaptive,
        "CONCURRENT_REQUESTS": 1,
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    }
    for phase in (0, 1):
        with SimulatedWeb([turned_case_sensitive_site(phase, target_first)]) as web:
            result = run_crawl(web, settings=settings)
            assert result.returncode == 0, result.log[-3000:]
            assert result.stat("log_count/ERROR") == 0, result.log[-3000:]
            if phase == 0:
                assert result.stat("iri/learned/rule") >= 1, result.log[-3000:]
                continue
            assert web.resource_ids() - result.resource_ids == set()
            fetched = result.counts["resources"]
            assert all(n == 1 for rid, n in fetched.items() if not rid.endswith(":home")), fetched


def dropped_predictions_site(phase: int, sensitive: bool) -> Site:
    """Phase 0: ``/D-k`` -301-> ``/d-k`` for k = 1..30 (a case rule under ``/``); phase 1: the home page
    links ``/d-31`` .. ``/d-60`` first, then ``/D-31`` .. ``/D-60``, never seen before, which the dupefilter
    drops as the case rule's predictions: still redirected to ``/d-k``, or (``sensitive``) pages of their own."""
    site = Site("dropped.example", schemes=("http",))
    if phase == 0:
        for k in range(1, 31):
            site.page(f"dropped:{k}", f"/d-{k}", "/")
        site.page("dropped:home", "/", *(f"/D-{k}" for k in range(1, 31)))
        site.policies.append(Moves({f"/D-{k}": f"/d-{k}" for k in range(1, 31)}))
        return site
    for k in range(31, 61):
        site.page(f"dropped:{k}", f"/d-{k}", "/")
    site.page("dropped:home", "/", *(f"/d-{k}" for k in range(31, 61)), *(f"/D-{k}" for k in range(31, 61)))
    if sensitive:
        for k in range(31, 61):
            site.page(f"dropped:D-{k}", f"/D-{k}", "/")
    else:
        site.policies.append(Moves({f"/D-{k}": f"/d-{k}" for k in range(31, 61)}))
    return site


@pytest.mark.parametrize("concurrency", [8])
@pytest.mark.parametrize("sensitive", [False, True])
def test_dropped_predictions_are_checked_one_per_rule_until_it_holds(
    tmp_path: Path, sensitive: bool, concurrency: int
) -> None:
    """A rule of an earlier crawl whose every prediction the dupefilter drops: one of them is fetched as
    a check; the rule holds (no more checks) or falls (all it merged fetched, nothing lost)."""
    settings = {**ADDON, "IRI_STORE": f"sqlite:///{tmp_path / 'store.db'}", "CONCURRENT_REQUESTS": concurrency}
    for phase in (0, 1):
        with SimulatedWeb([dropped_predictions_site(phase, sensitive)]) as web:
            result = run_crawl(web, settings=settings)
            assert result.returncode == 0, result.log[-3000:]
            assert result.stat("log_count/ERROR") == 0, result.log[-3000:]
            if phase == 0:
                assert result.stat("iri/learned/rule") >= 1, result.log[-3000:]
                continue
            assert web.resource_ids() - result.resource_ids == set()
            fetched = result.counts["resources"]
            assert all(n == 1 for rid, n in fetched.items() if not rid.endswith(":home")), fetched
            checks = [url for url in result.counts["urls"] if "/D-" in url]
            if sensitive:  # the first check refutes the rule: all it merged is fetched (phase 0's too)
                assert {f"http://dropped.example/D-{k}" for k in range(31, 61)} <= set(checks), checks
            else:  # the first check confirms the rule: the other 29 wait no more
                assert len(checks) == 1, checks
                assert result.stat("iri/rescheduled") == 0


def gave_up_tls_site(phase: int) -> Site:
    """Phase 0: ``http://H/p`` -301-> ``https://H/p`` -301-> ``https://www.H/p``; the home page links
    ``http://H/x/a`` (rules ``http-to-https`` on ``http://H`` and ``apex-to-www`` on ``https://H``, both
    origin-wide), then ``http://H/d-9`` (merged by them). Phase 1: the site gave up TLS, ``https://X/p``
    -301-> ``http://X/p`` and ``http://H/p`` -301-> ``http://www.H/p``; the home page links
    ``http://H/d-1`` first."""
    https = phase == 0
    site = Site(
        "www.tls.example",
        schemes=("https",) if https else ("http", "https"),
        policies=[HttpsRedirect() if https else HttpRedirect(), WwwRedirect()],
        start=("https://www.tls.example/",),
    )
    links = ("/x/a", "/d-9") if phase == 0 else ("/d-1", "/d-9", "/x/a")
    site.page("tls:home", "/", *(f"http://tls.example{path}" for path in links))
    for path in links:
        site.page(f"tls:{path}", path, "/")
    return site


def test_a_request_rewritten_through_the_filter_is_not_fetched_twice(tmp_path: Path) -> None:
    """Two requests for ``http://H/d-9`` rewritten to ``http://www.H/d-9`` by a rule learned in phase 1:

    the home page's link (filed under what phase 0's rules predicted, so
    rewritten through the dupefilter, which judges the target) and the same
    URL merged in phase 0, scheduled again past the dupefilter when
    ``http-to-https`` falls. The second is planned before the first one's
    rewritten copy comes back from the scheduler (FIFO): one fetch of
    ``d-9``, whichever copy makes it (seed 304, phase 1: ``http://www.H/d-2``
    fetched twice, under some arrival orders)."""
    settings = {
        **ADDON,
        "IRI_STORE": f"sqlite:///{tmp_path / 'store.db'}",
        "IRI_VERIFY_SHARE": 0,
        "IRI_VERIFY_ADAPTIVE": False,
        "IRI_RULE_MIN_OBSERVATIONS": 1,
        "CONCURRENT_REQUESTS": 1,
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.ScrapyPriorityQueue",  # one queue: the order above
    }
    for phase in (0, 1):
        with SimulatedWeb([gave_up_tls_site(phase)]) as web:
            result = run_crawl(web, settings=settings)
            assert result.returncode == 0, result.log[-3000:]
            assert result.stat("log_count/ERROR") == 0, result.log[-3000:]
            assert web.resource_ids() - result.resource_ids == set(), phase
            fetched = result.counts["resources"]
            assert all(n == 1 for rid, n in fetched.items() if not rid.endswith(":home")), (phase, fetched)
            if phase == 1:
                assert result.stat("iri/rescheduled") >= 1, result.log[-3000:]
