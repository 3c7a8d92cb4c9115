"""Bulk learning: ``EquivalenceStore.learn`` applies observations as one-at-a-time recording does.

The differential tests generate observation streams (seeded): permanent and
temporary redirects of every status, documents and errors, context-dependent
exchanges, sinks, loops, cross-site hops, later captures that contradict
earlier ones, gaps longer than the rule TTL. The reference is a
:class:`MemoryStore` fed one observation at a time through
``record_redirect`` / ``record_response`` with its clock at each
observation's time; every backend must end in the same state through
``learn()`` (in chunks of several sizes) and through the same one-at-a-time
loop.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fixtures.stores import CONVENTIONS, Clock, conventional_target, store_state

from scrapy_iri.store import EquivalenceStore, LearningPolicy, MemoryStore, Observation, Outcome, open_store
from scrapy_iri.store._rules import PRIOR_SITES, REDIRECTS

T0 = 1_700_000_000.0
POLICY = LearningPolicy(min_observations=2, sink_fanin=3, rule_ttl=5 * 86400.0)
HOSTS = ["a.example", "www.a.example", "b.example", "www.b.example", "shop.co.uk", "10.0.0.1", "c.example:8080"]
PATHS = [
    "/x", "/x/", "/item-1", "/item-1/", "/item-2", "/item-2/", "/item-3", "/item-3/", "/item-4",
    "/Docs/Page-1", "/docs/page-1", "/DOCS/PAGE-1", "/Docs/Page-2", "/docs/page-2", "/d/index.html", "/d/",
    "/e/index.php", "/e/", "/a%3Ab", "/a:b", "/login", "/login/", "/LOGIN", "/login;jsessionid=1",
    "/q?id=1", "/q?id=2", "/~al/Report-1", "/~al/report-1", "/~bo/Report-1", "/",
]  # fmt: skip
CONTEXTS = [frozenset(), frozenset(), frozenset(), frozenset(), frozenset({"cookie"}), frozenset({"vary:cookie"})]


def _url(rng: random.Random) -> str:
    return f"{rng.choice(['http', 'https'])}://{rng.choice(HOSTS)}{rng.choice(PATHS)}"


def _conventional(url: str, rng: random.Random, choice: int | None = None) -> str:
    """A target a server following some convention would send ``url`` to."""
    choice = rng.randrange(7) if choice is None else choice
    if choice < CONVENTIONS:
        return conventional_target(url, choice)
    scheme, _, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    if choice == 5:
        return f"{scheme}://{host}/login?next={rng.randrange(9)}"  # a sink
    return f"{scheme}://{host}{(slash + path).replace('%3A', ':')}"


def stream(seed: int, n: int) -> list[Observation]:
    """``n`` observations in date order over a small web, so that they meet and contradict each other."""
    rng = random.Random(seed)
    now = T0
    out = []
    for _ in range(n):
        now += rng.choice([1.0, 30.0, 600.0, 3600.0]) if rng.random() > 0.02 else POLICY.rule_ttl + 60.0
        if rng.random() < 0.08:  # a host following one convention for a while: rules come and go
            host, choice = rng.choice(HOSTS), rng.randrange(5)
            for _ in range(rng.randrange(3, 7)):
                now += 1.0
                url = f"http://{host}/s{rng.randrange(4)}/Item-{rng.randrange(40)}"
                out.append(Observation(url, 301, _conventional(url, rng, choice), time=now))
            continue
        url = _url(rng)
        kind = rng.random()
        context = rng.choice(CONTEXTS)
        if kind < 0.6:
            status = rng.choice([301, 301, 301, 308, 302, 303, 307])
            r = rng.random()
            target: str | None
            if r < 0.7:
                target = _conventional(url, rng)
            elif r < 0.8:
                target = url  # a loop onto itself
            elif r < 0.9:
                target = f"http://elsewhere.example{rng.choice(PATHS)}"  # another site
            elif r < 0.97:
                target = _url(rng)
            else:
                target = None  # a redirect recorded without its Location
            location = target.rpartition("/")[2] if target and rng.random() < 0.2 else None
            out.append(Observation(url, status, target, context, location, now))
        else:
            status = rng.choice([200, 200, 200, 204, 304, 404, 410, 500])
            out.append(Observation(url, status, context=context, time=now))
    return out


SITES = [f"s{i}.example" for i in range(8)] + ["shop.co.uk", "10.0.0.2", "d.example:8443"]


def archive_stream(seed: int, n: int) -> list[Observation]:
    """``n`` captures as an archive records sites that follow conventions, in date order.

    Each capture spells a page some way and follows the site's permanent
    redirects one convention at a time (``http`` -> ``https``, ``www.`` ->
    apex, ``/Docs/`` -> ``/docs/``, ``index.html`` -> the directory, a slash
    on a numbered directory), then the page answers 200 (and declares its
    case). Around them: sites that break a convention (a 200 at the
    unredirected URL, a 302 where others answer 301, a redirect elsewhere),
    temporary redirects, one-off moves, sinks, later captures that answer for
    a URL that redirected, redirects that may not be reused (``max_age`` 0)
    or say how long they last, context-dependent exchanges, and gaps longer
    than the rule and alias lifetimes. Enough sites follow the host-wide
    conventions to make and end priors across sites.
    """
    rng = random.Random(seed)
    now = T0
    out: list[Observation] = []
    broken = {rng.choice(SITES)}
    redirected: list[str] = []
    while len(out) < n:
        gap = rng.random()
        now += POLICY.rule_ttl + 60.0 if gap < 0.01 else POLICY.alias_ttl + 60.0 if gap < 0.02 else rng.choice([1.0, 20.0, 900.0])
        site = rng.choice(SITES)
        page = rng.randrange(30)
        final = f"https://{site}/docs/p-{page % 4}/page-{page}/"
        roll = rng.random()
        if roll < 0.06:
            out.append(Observation(f"https://{site}/latest-{page % 3}", rng.choice([302, 303, 307]), final, time=now))
        elif roll < 0.10:  # a page moved for good, or a login page many pages fall into
            url = f"https://{site}/old/page-{page}.html"
            target = final if rng.random() < 0.5 else f"https://{SITES[page % 2]}/login?next={page}"
            out.append(Observation(url, rng.choice([301, 308]), target, time=now, max_age=rng.choice([None, None, 0.0, 3600.0])))
        elif roll < 0.14:  # a later capture: the URL answers for itself, is gone, or redirects elsewhere
            url = rng.choice(redirected) if redirected else f"http://www.{site}/Docs/p-{page % 4}/page-{page}"
            status = rng.choice([200, 200, 404, 410, 302, 301])
            target = f"https://{site}/elsewhere/{page}" if status in REDIRECTS else None
            out.append(Observation(url, status, target, time=now))
        elif roll < 0.18 or site in broken and roll < 0.4:  # a site that answers where others redirect
            url = rng.choice([f"http://{site}/docs/p-1/page-{page}/", f"https://www.{site}/docs/p-1/page-{page}/", f"https://{site}/docs/p-1/page-{page}"])
            out.append(Observation(url, rng.choice([200, 200, 302]), final if rng.random() < 0.5 else None, time=now))
            if out[-1].status in REDIRECTS and out[-1].target is None:
                out[-1] = replace(out[-1], status=200)
        else:
            scheme = "http" if rng.random() < 0.6 else "https"
            www = "www." if rng.random() < 0.4 else ""
            docs = "/Docs" if rng.random() < 0.15 else "/docs"
            tail = rng.choice(["/", "", "/index.html", "/INDEX.HTML"]) if rng.random() < 0.5 else "/"
            url = f"{scheme}://{www}{site}{docs}/p-{page % 4}/page-{page}{tail}"
            context = frozenset({"set-cookie"}) if rng.random() < 0.05 else frozenset()
            for step in (
                lambda u: u.replace("http://", "https://", 1),
                lambda u: u.replace("://www.", "://", 1),
                lambda u: u.replace("/Docs/", "/docs/", 1).replace("/INDEX.HTML", "/index.html"),
                lambda u: u[: -len("index.html")] if u.endswith("/index.html") else u,
                lambda u: u if u.endswith("/") else u + "/",
            ):
                hop = step(url)
                if hop != url:
                    now += 1.0
                    out.append(Observation(url, 301, hop, context, time=now))
                    redirected.append(url)
                    url = hop
            out.append(Observation(url, 200, context=context, time=now))
    return out[:n]


def record_one_at_a_time(store: EquivalenceStore, clock: Clock, observations: list[Observation]) -> Counter[str]:
    """What ``record_redirect`` / ``record_response`` learn, one observation at a time, each at its time."""
    totals: Counter[str] = Counter()
    for obs in observations:
        clock.now = obs.time  # type: ignore[assignment]
        if obs.status in REDIRECTS:
            if obs.target is None:
                totals["skipped"] += 1
                continue
            outcome = store.record_redirect(
                obs.url, obs.status, obs.target, context=obs.context, location=obs.location, lifetime=obs.max_age
            )
        else:
            outcome = store.record_response(obs.url, obs.status, context=obs.context)
        store.flush()
        _tally(totals, outcome)
    return totals


def _tally(totals: Counter[str], outcome: Outcome) -> None:
    totals["observations"] += 1
    totals["aliases_learned"] += outcome.learned_alias
    totals["aliases_dropped"] += outcome.dropped_alias
    totals["sinks"] += outcome.sink
    totals["rules_activated"] += len(outcome.activated)
    totals["rules_contradicted"] += len(outcome.contradicted)


def summary_totals(summary: Any) -> Counter[str]:
    totals = Counter({k: v for k, v in summary.as_dict().items() if isinstance(v, int)})
    totals["skipped"] = summary.ignored.get("a redirect without a target", 0)
    return +totals




def universe() -> list[str]:
    archive = [
        f"{s}://{w}{site}{d}/p-{k % 4}/page-{k}{t}"
        for s in ("http", "https") for w in ("", "www.") for site in SITES for d in ("/docs", "/Docs")
        for k in range(0, 30, 7) for t in ("/", "", "/index.html")
    ]  # fmt: skip
    return [f"{s}://{h}{p}" for s in ("http", "https") for h in HOSTS for p in PATHS] + archive


class Opened:
    """Stores of one backend on one clock."""

    def __init__(self, kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
        self.kind, self.tmp_path, self.request = kind, tmp_path, request
        self.stores: list[EquivalenceStore] = []

    def open(self, clock: Clock, policy: LearningPolicy = POLICY) -> EquivalenceStore:
        store: EquivalenceStore
        if self.kind == "memory":
            store = MemoryStore(policy, clock=clock)
        elif self.kind == "sqlite":
            path = self.tmp_path / f"learn-{uuid.uuid4().hex[:8]}.db"
            store = open_store(f"sqlite:///{path}", policy=policy, clock=clock)
        else:
            url = self.request.getfixturevalue("redis_url")
            store = open_store(f"{url}?namespace=learn-{uuid.uuid4().hex[:8]}", policy=policy, clock=clock)
        self.stores.append(store)
        return store

    def close(self) -> None:
        for store in self.stores:
            store.close()


@pytest.fixture(params=["memory", "sqlite", "redis"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    made = Opened(str(request.param), tmp_path, request)
    yield made
    made.close()


@pytest.mark.parametrize("seed", range(6))
def test_learn_equals_one_at_a_time(opened: Opened, seed: int) -> None:
    _check_learn_equals_one_at_a_time(opened, seed, stream(seed, 400))


@pytest.mark.parametrize("seed", range(4))
def test_learn_equals_one_at_a_time_on_archive_captures(opened: Opened, seed: int) -> None:
    """Two policies: with K = 3 a prior of one site (or of the host's partner origin) and one of two
    sites need different numbers of observations; with K = 2 both need one."""
    observations = archive_stream(seed, 700)
    kinds = Counter(obs.status for obs in observations)
    assert kinds[301] > 200 and kinds[200] > 100 and kinds[302] + kinds[303] + kinds[307] > 10
    assert any(obs.max_age == 0.0 for obs in observations) and any(obs.context for obs in observations)
    policy = POLICY if seed % 2 else replace(POLICY, min_observations=3)
    _check_learn_equals_one_at_a_time(opened, seed, observations, archive=True, policy=policy)


def _check_learn_equals_one_at_a_time(
    opened: Opened, seed: int, observations: list[Observation], archive: bool = False, policy: LearningPolicy = POLICY
) -> None:
    end = observations[-1].time + 1.0  # type: ignore[operator]
    urls = universe()

    reference_clock = Clock(T0)
    reference = MemoryStore(policy, clock=reference_clock)
    expected_totals = record_one_at_a_time(reference, reference_clock, observations)
    reference_clock.now = end
    expected = store_state(reference, end, urls)
    assert expected["aliases"] and expected["rules"] and expected["fanins"]  # the stream teaches something
    assert expected_totals["rules_activated"] and expected_totals["rules_contradicted"] and expected_totals["sinks"]
    assert any(status == "suspended" for status, *_ in expected["rules"].values())
    if archive:  # the conventions made rules, some on the prior across sites alone, and cases were declared
        assert expected["cases"] and expected_totals["aliases_dropped"]
        held_on = {kind: {site for site, _, _ in held.values()} for kind, held in reference._held.items()}
        assert max(map(len, held_on.values())) > PRIOR_SITES and reference._failed  # priors across sites made, and ended
        kinds = {record.key.kind for record in reference.rules() if record.support}
        assert kinds >= {"http-to-https", "www-to-apex", "index-to-directory", "add-slash", "lowercase-path"}

    loop_clock = Clock(T0)
    looped = opened.open(loop_clock, policy)
    assert record_one_at_a_time(looped, loop_clock, observations) == expected_totals
    loop_clock.now = end
    assert store_state(looped, end, urls) == expected

    clock = Clock(end)
    learner = opened.open(clock, policy)
    summary = learner.learn(observations, chunk=random.Random(seed).choice([1, 7, 64, 5000]))
    assert summary_totals(summary) == expected_totals
    assert store_state(learner, end, urls) == expected


def test_learn_reports_progress_per_chunk() -> None:
    seen: list[int] = []
    store = open_store("memory:")
    store.learn(stream(1, 25)[:25], progress=seen.append, chunk=10)
    assert seen == [10, 20, 25]


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


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_an_archive_older_than_any_horizon_is_learned(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Captures from years ago make aliases: the refusal of late writes is about waiting, not about dates."""
    made = Opened(kind, tmp_path, request)
    try:
        store = made.open(Clock(T0))
        store.learn(
            [
                Observation("http://a.example/old", 301, "http://a.example/new", time=T0 - 3 * 365 * 86400),
                Observation("http://a.example/gone", 301, "http://a.example/next", time=T0 - 2 * 365 * 86400),
                Observation("http://a.example/gone", 200, time=T0 - 365 * 86400),
            ]
        )
        store.flush()
        assert [(a.source, a.target) for a in store.aliases()] == [("http://a.example/old", "http://a.example/new")]
    finally:
        made.close()


def _lengthened(obs: Observation, padding: str) -> Observation:
    def longer(url: str | None) -> str | None:
        return None if url is None else url.replace("/item-", f"/{padding}/item-").replace("/Docs/", f"/Docs/{padding}/")

    return replace(obs, url=longer(obs.url), target=longer(obs.target))  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(2))
def test_learn_equals_one_at_a_time_past_the_cache_length(seed: int) -> None:
    """URLs longer than the learner's caches keep (a hostile size) are learned alike, bulk or one at a time."""
    from scrapy_iri.store._forms import CACHED_LENGTH

    padding = "p" * (CACHED_LENGTH + 1)
    observations = [_lengthened(obs, padding) for obs in stream(seed, 300)]
    assert sum(len(obs.url) > CACHED_LENGTH for obs in observations) > 20
    end = observations[-1].time + 1.0  # type: ignore[operator]
    urls = [u.replace("/item-", f"/{padding}/item-") for u in universe()]

    reference_clock = Clock(T0)
    reference = MemoryStore(POLICY, clock=reference_clock)
    expected_totals = record_one_at_a_time(reference, reference_clock, observations)
    reference_clock.now = end
    expected = store_state(reference, end, urls)
    assert any(len(source) > CACHED_LENGTH for source, *_ in expected["aliases"])

    learner = MemoryStore(POLICY, clock=Clock(end))
    assert summary_totals(learner.learn(observations, chunk=64)) == expected_totals
    assert store_state(learner, end, urls) == expected


@pytest.mark.parametrize("chunk", [7, 64, 5000])
def test_rules_written_once_a_chunk_give_the_sqlite_merge_the_same_counts(
    chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule record counted again in a chunk is written once more at its end: at every commit the
    SQLite storage holds the counts to merge (what another process's rows get added) that writing
    every count at once gives it, the counts a TTL forgot included."""
    from scrapy_iri.store import _sqlite
    from scrapy_iri.store._learner import EquivalenceStore

    commits: list[Any] = []
    commit = _sqlite.SQLiteStorage._commit

    def noting(storage: Any) -> None:
        rules = storage.writes.changeset().rules
        commits.append({key: (w.support, w.against, w.dropped, storage.writes.rule_seen.get(key)) for key, w in rules.items()})
        commit(storage)

    monkeypatch.setattr(_sqlite.SQLiteStorage, "_commit", noting)
    runs = []
    for deferred in (True, False):
        if not deferred:
            monkeypatch.setattr(EquivalenceStore, "_defer_writes", False)
        commits.clear()
        for seed in range(4):
            store = open_store(f"sqlite:///{tmp_path}/{deferred}-{seed}.db", policy=POLICY, clock=Clock(T0))
            store.learn(stream(seed, 600), chunk=chunk)
            store.close()
        runs.append(list(commits))
    assert runs[0] == runs[1]
    assert sum(len(c) for c in runs[0]) > 100


def test_learn_counts_the_prior_of_a_partner_origin() -> None:
    """With K = 3, a convention that held on the host's partner origin (its other scheme, its ``www.``
    or apex partner) lowers what the host needs to 2 observations, bulk or one at a time; one more
    site where it held lowers it to 1."""
    policy = replace(POLICY, min_observations=3)
    observations = []
    now = T0
    for origin, pages in (("http://www.a.example", 3), ("https://www.a.example", 2), ("http://www.b.example", 3), ("https://www.c.example", 1)):
        for i in range(pages):
            now += 1.0
            url = f"{origin}/d/page-{i}"
            observations.append(Observation(url, 301, url.replace("://www.", "://"), time=now))
    reference_clock = Clock(T0)
    reference = MemoryStore(policy, clock=reference_clock)
    expected_totals = record_one_at_a_time(reference, reference_clock, observations)
    active = {str(r.key) for r in reference.rules() if reference.rule_status(r).value == "active" and r.key.kind == "www-to-apex"}
    assert {"https://www.a.example www-to-apex /d/", "https://www.c.example www-to-apex /d/"} <= active
    for chunk in (1, 3, 100):
        learner = MemoryStore(policy, clock=Clock(now))
        assert summary_totals(learner.learn(observations, chunk=chunk)) == expected_totals
        assert store_state(learner, now, universe()) == store_state(reference, now, universe())


def test_hostile_hosts_are_learned_alike_and_never_held() -> None:
    """Hosts longer than the learner's memories keep: learned alike in bulk and one at a time, and no
    memory of the bulk learner holds one (each would otherwise stay until thousands of others came)."""
    from scrapy_iri.store import _bulk, _rules
    from scrapy_iri.store._forms import CACHED_LENGTH

    label = "h" * 60
    host = ".".join([label] * (CACHED_LENGTH // 60 + 2)) + ".example"
    observations = [
        replace(obs, url=obs.url.replace("s1.example", host), target=obs.target and obs.target.replace("s1.example", host))
        for obs in archive_stream(3, 1200)
    ]
    assert sum(host in obs.url for obs in observations) > 50
    end = observations[-1].time + 1.0  # type: ignore[operator]
    reference_clock = Clock(T0)
    reference = MemoryStore(POLICY, clock=reference_clock)
    expected_totals = record_one_at_a_time(reference, reference_clock, observations)
    reference_clock.now = end
    urls = [u.replace("s1.example", host) for u in universe()]
    clock = Clock(T0)  # the session of the reference: an alias stated again is no confirmation of an earlier one
    learner = MemoryStore(POLICY, clock=clock)
    assert summary_totals(learner.learn(observations, chunk=64)) == expected_totals
    clock.now = end
    assert store_state(learner, end, urls) == store_state(reference, end, urls)
    assert any(host in alias.source for alias in learner.aliases())
    held = [*_rules._HOST_RULES, *_bulk._BLOCKS, *_bulk._FAMILIES, *(str(key) for key in _bulk._WIDE)]
    assert held and not any(host in key for key in held)


def _moves(host: str, n: int, now: float) -> list[Observation]:
    """``n`` pages of ``host`` moved from http to https, one per directory: its conventions' rules become active."""
    return [Observation(f"http://{host}/d{i}/page", 301, f"https://{host}/d{i}/page", time=now + i) for i in range(n)]


PROBES = ["http://a.example/d0/page", "http://a.example/d3/page", "http://a.example/elsewhere/new", "http://b.example/d1/page"]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_resolutions_remembered_before_a_bulk_learn_are_made_again(kind: str, tmp_path: Path) -> None:
    """The resolution memo hears of a learned chunk as a change of anything: what it kept from before
    is not answered after (an alias learned at the end of a rule's hop, a rule suspended by a page that
    answered for itself)."""
    clock = Clock(T0 + 100.0)
    uri = "memory:" if kind == "memory" else f"sqlite:///{tmp_path}/memo.db"
    store = open_store(uri, policy=POLICY, clock=clock)
    store.learn(_moves("b.example", 4, T0))
    probes = ["http://b.example/x/new", "http://b.example/y/other"]
    before = [store.resolve(url).representative for url in probes]
    assert before == ["https://b.example/x/new", "https://b.example/y/other"]
    assert store.memo is not None and len(store.memo) == 2
    store.learn([Observation("https://b.example/y/other", 301, "https://b.example/y/other/", time=T0 + 50.0)])
    assert [store.resolve(url).representative for url in probes] == ["https://b.example/x/new", "https://b.example/y/other/"]
    store.learn([Observation(probes[0], 200, time=T0 + 60.0)], chunk=2)
    after = [store.resolve(url).representative for url in probes]
    assert after == [probes[0], probes[1]]
    if kind == "sqlite":
        store.flush()
        fresh = open_store(uri, policy=POLICY, clock=clock)
        assert [fresh.resolve(url).representative for url in probes] == after
        fresh.close()
    store.close()


READER = """
import sys
from scrapy_iri.store import open_store
from scrapy_iri.store._rules import LearningPolicy
store = open_store(sys.argv[1], policy=LearningPolicy(min_observations=2, sink_fanin=3, rule_ttl=5 * 86400.0),
                   clock=lambda: float(sys.argv[2]), sync_interval=0.0)
for line in sys.stdin:
    print(" ".join(store.representative(url) for url in line.split()), flush=True)
"""


def test_another_process_reading_the_file_sees_a_bulk_learn(tmp_path: Path) -> None:
    """A second process that holds the answers of a SQLite store (misses, the filter of alias sources,
    an origin's rules) answers with what a bulk learn in this process committed, once it syncs."""
    import subprocess
    import sys

    uri = f"sqlite:///{tmp_path}/shared.db"
    now = T0 + 100.0
    writer = open_store(uri, policy=POLICY, clock=Clock(now))
    writer.learn(_moves("b.example", 2, T0))  # the file holds aliases, and b.example's records
    writer.flush()
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, uri, str(now)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert reader.stdin is not None and reader.stdout is not None

        def ask() -> list[str]:
            reader.stdin.write(" ".join(PROBES) + "\n")  # type: ignore[union-attr]
            reader.stdin.flush()  # type: ignore[union-attr]
            return reader.stdout.readline().split()  # type: ignore[union-attr]

        assert ask() == [PROBES[0], PROBES[1], PROBES[2], PROBES[3].replace("http://", "https://")]
        summary = writer.learn([*_moves("a.example", 4, T0 + 10.0), Observation(PROBES[3], 200, time=T0 + 20.0)], chunk=2)
        assert summary.aliases_learned == 4 and summary.aliases_dropped == 1 and summary.rules_activated
        writer.flush()
        expected = [writer.representative(url) for url in PROBES]
        assert expected == [url.replace("http://", "https://") for url in PROBES[:3]] + [PROBES[3]]
        assert ask() == expected
    finally:
        reader.stdin.close()  # type: ignore[union-attr]
        reader.wait(timeout=30)
        writer.close()


def test_a_rule_made_and_ended_inside_a_chunk_is_used_later_in_it(opened: Opened) -> None:
    """In one chunk (and across chunk boundaries in the middle of an origin's counts): an origin's
    http -> https rule becomes active, confirms, is suspended by a page that answers for itself,
    then its origin's later moves count against a suspended rule; another origin's rule becomes
    active after the first one's prior across sites. ``learn()`` reaches the state and the totals of
    one-at-a-time recording whatever the chunk."""
    observations = [
        *_moves("a.example", 3, T0),
        *_moves("b.example", 2, T0 + 10.0),
        Observation("http://a.example/d7/page", 301, "https://a.example/d7/page", time=T0 + 20.0),
        Observation("http://a.example/d8/page", 200, time=T0 + 21.0),
        *_moves("a.example", 3, T0 + 30.0),
        Observation("http://b.example/d9/page", 301, "https://b.example/d9/page", time=T0 + 40.0),
    ]
    end = T0 + 100.0
    reference_clock = Clock(T0)
    reference = MemoryStore(POLICY, clock=reference_clock)
    expected_totals = record_one_at_a_time(reference, reference_clock, observations)
    reference_clock.now = end
    expected = store_state(reference, end, universe())
    assert expected_totals["rules_activated"] >= 2 and expected_totals["rules_contradicted"] >= 1
    statuses = {key: status for key, (status, *_) in expected["rules"].items() if "a.example" in str(key)}
    assert "suspended" in statuses.values()
    for chunk in (1, 2, 5, 100):
        learner = opened.open(Clock(end))
        assert summary_totals(learner.learn(observations, chunk=chunk)) == expected_totals, chunk
        assert store_state(learner, end, universe()) == expected, chunk
