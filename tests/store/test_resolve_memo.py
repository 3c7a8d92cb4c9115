"""Resolutions remembered (``EquivalenceStore.memo``) are the resolutions computed afresh.

The differential test interleaves, on one store opened twice (two processes
on one SQLite file or Redis namespace; two learners over one memory
storage), seeded observations of every kind (conventions that make rules,
one-off moves, pages, temporary redirects, gone sources, sinks,
context-dependent exchanges), clock moves (short, across the rule and alias
lifetimes, backwards), commits and syncs, and lookups of a small universe of
URLs, most of them many times. Each lookup's answer (through the memo) must
equal the resolution the learner computes afresh at the same moment, and
the memo must answer a good share of them.
"""

from __future__ import annotations

import random
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.stores import CONVENTIONS, Clock, conventional_target

from scrapy_iri.store import Alias, EquivalenceStore, LearningPolicy, MemoryStore, open_store
from scrapy_iri.store._forms import SchemeForm, scheme_form
from scrapy_iri.store._resolution import Resolution

T0 = 1_700_000_000.0
DAY = 86400.0
POLICY = LearningPolicy(min_observations=2, sink_fanin=3, rule_ttl=3 * DAY, alias_ttl=2 * DAY)
HOSTS = ["a.example", "www.a.example", "b.example", "www.b.example", "shop.co.uk", "www.shop.co.uk", "10.0.0.1"]
PATHS = [
    "/x", "/x/", "/item-1", "/item-1/", "/item-2", "/item-2/", "/item-3", "/item-3/",
    "/Docs/Page-1", "/docs/page-1", "/DOCS/PAGE-1", "/Docs/Page-2", "/docs/page-2", "/d/index.html", "/d/",
    "/a%3Ab", "/a:b", "/login", "/q?id=1", "/s1/Item-1", "/s1/item-1", "/s2/Item-2", "/s2/Item-2/", "/",
]  # fmt: skip


def universe() -> list[str]:
    forms = [scheme_form(f"{s}://{h}{p}") for s in ("http", "https") for h in HOSTS for p in PATHS]
    return [f for f in forms if f is not None]


def _conventional(url: str, choice: int) -> str:
    if choice < CONVENTIONS:
        return conventional_target(url, choice)
    scheme, _, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    if choice == 5:
        return f"{scheme}://{host}/login?next=1"  # a sink once three sources go there
    return f"{scheme}://{host}/moved{slash}{path}"  # a one-off move


def observe(store: EquivalenceStore, rng: random.Random, urls: list[str]) -> None:
    """One observation, or a burst of one convention on one host (rules come and go)."""
    if rng.random() < 0.15:
        host, choice = rng.choice(HOSTS), rng.randrange(5)
        scheme = rng.choice(["http", "https"])
        for _ in range(rng.randrange(2, 5)):
            url = f"{scheme}://{host}/s{rng.randrange(3)}/Item-{rng.randrange(4)}"
            store.record_redirect(url, 301, _conventional(url, choice))
        return
    url = rng.choice(urls)
    r = rng.random()
    if r < 0.55:
        status = rng.choice([301, 301, 301, 308, 302, 307])
        target = _conventional(url, rng.randrange(7)) if rng.random() < 0.85 else rng.choice(urls)
        context = ["cookie"] if rng.random() < 0.1 else []
        lifetime = rng.choice([None, None, None, 3600.0, 0.0])
        store.record_redirect(url, status, target, context=context, lifetime=lifetime)
    else:
        store.record_response(url, rng.choice([200, 200, 200, 404, 410, 500]))


def fresh(store: EquivalenceStore, url: str) -> Resolution:
    """The resolution the learner computes now, nothing remembered."""
    store.storage.refresh()
    return store._resolve(url, store.clock())


def check_pick(alias: Alias) -> bool:
    """A verification pick of one alias in two (stable by URL, as the crawl's is)."""
    return zlib.crc32(alias.source.encode()) % 2 == 0


class Pair:
    """One store opened twice on one backend, on one clock."""

    def __init__(self, kind: str, tmp_path: Path, request: pytest.FixtureRequest, clock: Clock) -> None:
        self.stores: list[EquivalenceStore] = []
        if kind == "memory":
            first = MemoryStore(POLICY, clock=clock)
            self.stores = [first, EquivalenceStore(first.storage, POLICY, clock=clock)]
        elif kind == "sqlite":
            uri = f"sqlite:///{tmp_path / 'memo.db'}"
            self.stores = [open_store(uri, policy=POLICY, clock=clock, flush_interval=0.0) for _ in range(2)]
        else:
            uri = f"{request.getfixturevalue('redis_url')}?namespace=memo-{uuid.uuid4().hex[:10]}"
            self.stores = [open_store(uri, policy=POLICY, clock=clock) for _ in range(2)]

    def close(self) -> None:
        for store in self.stores:
            store.close()


@pytest.fixture(params=["memory", "sqlite", "redis"])
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Pair, Clock]]:
    clock = Clock(T0)
    made = Pair(str(request.param), tmp_path, request, clock)
    yield made, clock
    made.close()


@pytest.mark.parametrize("seed", range(4))
def test_remembered_resolutions_are_those_computed_afresh(pair: tuple[Pair, Clock], seed: int) -> None:
    opened, clock = pair
    rng = random.Random(seed)
    urls = universe()
    hot = rng.sample(urls, 40)  # links most pages carry
    lookups = hits = 0
    for step in range(2000):
        store = rng.choice(opened.stores)
        r = rng.random()
        if r < 0.06:
            observe(store, rng, urls)
        elif r < 0.09:
            clock.advance(rng.choice([1.0, 60.0, 3600.0, POLICY.rule_ttl - 30.0, POLICY.alias_ttl + 1.0, DAY, -600.0]))
        elif r < 0.11:
            store.flush()
            rng.choice(opened.stores).sync()
        elif r < 0.115:
            store.alias_check = check_pick if store.alias_check is None else None
        elif r < 0.12:
            if rng.random() < 0.8:
                store.forget(rng.choice(urls))
            else:
                store.forget_host(rng.choice(HOSTS))
        else:
            url = SchemeForm(rng.choice(hot) if rng.random() < 0.8 else rng.choice(urls))
            if rng.random() < 0.05:
                url = SchemeForm(url + "#part")
            before = store.memo.hits if store.memo is not None else 0
            got = store.resolve(url)
            expected = fresh(store, url)
            assert got == expected, (step, url)
            lookups += 1
            hits += (store.memo.hits if store.memo is not None else 0) - before
    assert hits > lookups // 8, (hits, lookups)  # the memo answered a share of them (two processes drop more)


def test_an_alias_learned_for_a_remembered_url_is_used_at_once(make_store: object, clock: Clock) -> None:
    store = make_store()  # type: ignore[operator]
    url = SchemeForm("https://a.example/old")
    assert store.resolve(url).representative == url
    assert store.resolve(url).representative == url  # remembered
    store.record_redirect(url, 301, "https://a.example/new")
    assert store.resolve(url).representative == "https://a.example/new"


def test_a_rule_that_becomes_active_changes_remembered_urls_of_its_origin(make_store: object, clock: Clock) -> None:
    store = make_store(min_observations=2)  # type: ignore[operator]
    url = SchemeForm("http://a.example/docs/page-9")
    assert store.resolve(url).representative == url
    store.record_redirect("http://a.example/docs/page-1", 301, "https://a.example/docs/page-1")
    assert store.resolve(url).representative == url  # one observation: no rule yet
    store.record_redirect("http://a.example/docs/page-2", 301, "https://a.example/docs/page-2")
    assert store.resolve(url).representative == "https://a.example/docs/page-9"


def test_a_rule_that_ages_out_stops_merging_remembered_urls(make_store: object, clock: Clock) -> None:
    store = make_store(min_observations=2, rule_ttl=100.0)  # type: ignore[operator]
    for i in (1, 2):
        store.record_redirect(f"http://a.example/docs/page-{i}", 301, f"https://a.example/docs/page-{i}")
    url = SchemeForm("http://a.example/docs/page-9")
    assert store.resolve(url).representative == "https://a.example/docs/page-9"
    clock.advance(50.0)
    assert store.resolve(url).representative == "https://a.example/docs/page-9"
    clock.advance(51.0)  # the supports are older than the TTL: the rule is a candidate again
    assert store.resolve(url).representative == url


def test_a_document_that_declares_a_case_reaches_remembered_urls(make_store: object, clock: Clock) -> None:
    store = make_store(min_observations=2)  # type: ignore[operator]
    for name in ("One", "Two"):
        store.record_redirect(f"https://a.example/d/{name.upper()}", 301, f"https://a.example/d/{name}")
    url = SchemeForm("https://a.example/d/THREE")
    assert store.resolve(url).representative == url
    store.record_response("https://a.example/d/Three", 200)  # declares the case of /d/three
    assert store.resolve(url).representative == "https://a.example/d/Three"


def test_a_declared_case_forgotten_reaches_remembered_urls(make_store: object, clock: Clock) -> None:
    store = make_store(min_observations=2)  # type: ignore[operator]
    for name in ("One", "Two"):
        store.record_redirect(f"https://a.example/d/{name.upper()}", 301, f"https://a.example/d/{name}")
    store.record_response("https://a.example/d/Three", 200)
    url = SchemeForm("https://a.example/d/THREE")
    assert store.resolve(url).representative == "https://a.example/d/Three"
    assert store.forget("https://a.example/d/Three") >= 1
    assert store.resolve(url).representative == url


def test_the_verification_pick_is_asked_at_every_lookup(make_store: object, clock: Clock) -> None:
    store = make_store()  # type: ignore[operator]
    store.record_redirect("https://a.example/old", 301, "https://a.example/new")
    store.session_start = clock() + 1.0  # the alias is from an earlier crawl
    asked: list[str] = []

    def pick(alias: Alias) -> bool:
        asked.append(alias.source)
        return len(asked) % 2 == 0

    store.alias_check = pick
    answers = [store.resolve(SchemeForm("https://a.example/old")).representative for _ in range(4)]
    assert asked == ["https://a.example/old"] * 4
    assert answers == ["https://a.example/new", "https://a.example/old"] * 2


def test_a_change_made_by_another_process_reaches_remembered_urls(tmp_path: Path, clock: Clock) -> None:
    uri = f"sqlite:///{tmp_path / 'two.db'}"
    with open_store(uri, clock=clock) as one, open_store(uri, clock=clock) as two:
        url = SchemeForm("https://a.example/old")
        assert one.resolve(url).representative == url
        assert one.resolve(url).representative == url
        two.record_redirect(url, 301, "https://a.example/new")
        two.flush()
        one.sync()
        assert one.resolve(url).representative == "https://a.example/new"


def test_a_rule_contradicted_stops_merging_remembered_urls(make_store: object, clock: Clock) -> None:
    store = make_store(min_observations=2)  # type: ignore[operator]
    for i in (1, 2, 3):
        store.record_redirect(f"http://a.example/docs/page-{i}", 301, f"https://a.example/docs/page-{i}")
    url = SchemeForm("http://a.example/docs/page-9")
    assert store.resolve(url).representative == "https://a.example/docs/page-9"
    store.record_response("http://a.example/docs/page-4", 200)  # served as it is: the rule is suspended
    assert store.resolve(url).representative == url
