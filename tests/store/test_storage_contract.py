"""One contract, three storages: the learner over memory, SQLite and Redis gives the same answers.

Each test runs against a :class:`MemoryStore`, a :class:`SQLiteStore` on a
temporary file and a :class:`RedisStore` on the test's ``redis-server`` (a
namespace of its own). ``backend.reopen(store)`` stands for a later
process: the SQLite file closed and opened again, a second ``RedisStore``
on the same namespace after a flush (the memory store can only go on with
the same object). The expected values are worked out from the learner's
and the rules' documentation in each test.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.stores import Clock

from scrapy_iri.store import EquivalenceStore, LearningPolicy, MemoryStore, RuleKey, RuleStatus, open_store
from scrapy_iri.store._learner import Step
from scrapy_iri.store._rules import case_key

BACKENDS = ["memory", "sqlite", "redis"]


class Backend:
    """Opens stores of one kind on one clock, and opens them again as another process would."""

    def __init__(self, kind: str, tmp_path: Path, clock: Clock, request: pytest.FixtureRequest) -> None:
        self.kind = kind
        self.clock = clock
        self.path = tmp_path / "contract.db"
        self.namespace = f"contract-{uuid.uuid4().hex[:12]}"
        self.redis_url = request.getfixturevalue("redis_url") if kind == "redis" else ""
        self.opened: list[EquivalenceStore] = []

    @property
    def uri(self) -> str:
        """The store URI ``open_store`` takes (not for memory)."""
        if self.kind == "sqlite":
            return f"sqlite:///{self.path}"
        return f"{self.redis_url}?namespace={self.namespace}"

    @property
    def persistent(self) -> bool:
        return self.kind != "memory"

    def open(self, policy: LearningPolicy | None = None, **options: Any) -> EquivalenceStore:
        policy = policy or LearningPolicy()
        store: EquivalenceStore
        if self.kind == "memory":
            store = MemoryStore(policy, clock=self.clock)
        elif self.kind == "sqlite":
            from scrapy_iri.store._sqlite import SQLiteStore

            store = SQLiteStore(self.path, policy, clock=self.clock, **options)
        else:
            from scrapy_iri.store._redis import RedisStore

            store = RedisStore(self.redis_url, self.namespace, policy, clock=self.clock, **options)
        self.opened.append(store)
        return store

    def reopen(self, store: EquivalenceStore) -> EquivalenceStore:
        """What a later process sees of ``store``'s writes."""
        if self.kind == "memory":
            return store
        if self.kind == "sqlite":
            store.close()
        else:
            store.flush()
        return self.open(store.policy)

    def close(self) -> None:
        for store in self.opened:
            store.close()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    made = Backend(str(request.param), tmp_path, Clock(), request)
    yield made
    made.close()


@pytest.fixture
def store(backend: Backend) -> EquivalenceStore:
    return backend.open()


H = "https://h.example"


def teach_slash(store: EquivalenceStore, host: str = H, n: int = 3) -> RuleKey:
    """``n`` clean 301s ``/topic-i`` -> ``/topic-i/``: support for the add-slash rule of the numbered family."""
    for i in range(1, n + 1):
        store.record_redirect(f"{host}/topic-{i}", 301, f"{host}/topic-{i}/")
    return RuleKey(host, "add-slash", "/topic-#")


def now_and_later(backend: Backend, store: EquivalenceStore) -> Iterator[EquivalenceStore]:
    """The store, then (once the caller has checked it) the store as a later process opens it."""
    yield store
    yield backend.reopen(store)


def rule(store: EquivalenceStore, key: RuleKey) -> Any:
    return next((r for r in store.rules() if r.key == key), None)


# -- exact aliases ------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 308])
def test_a_permanent_redirect_makes_an_alias(store: EquivalenceStore, status: int) -> None:
    outcome = store.record_redirect(f"{H}/old", status, f"{H}/new")
    assert outcome.learned_alias
    assert store.representative(f"{H}/old") == f"{H}/new"
    assert store.resolve(f"{H}/old").steps == (Step(f"{H}/old", f"{H}/new"),)
    assert store.representative(f"{H}/new") == f"{H}/new"  # alias -> target only, never the reverse
    assert store.representative(f"{H}/old#part") == f"{H}/new#part"  # the fragment is carried over
    assert [(a.source, a.target, a.status) for a in store.aliases()] == [(f"{H}/old", f"{H}/new", status)]


@pytest.mark.parametrize("status", [302, 303, 307])
def test_a_temporary_redirect_makes_no_alias(store: EquivalenceStore, status: int) -> None:
    outcome = store.record_redirect(f"{H}/old", status, f"{H}/new")
    assert not outcome.learned_alias
    assert store.representative(f"{H}/old") == f"{H}/old"
    assert list(store.aliases()) == []


def test_a_200_at_the_source_ends_its_alias(backend: Backend, store: EquivalenceStore) -> None:
    store.record_redirect(f"{H}/old", 301, f"{H}/new")
    store.record_redirect(f"{H}/keep", 301, f"{H}/kept")
    outcome = store.record_response(f"{H}/old", 200)
    assert outcome.dropped_alias
    assert store.representative(f"{H}/old") == f"{H}/old"
    later = backend.reopen(store)
    assert later.representative(f"{H}/old") == f"{H}/old"
    assert later.representative(f"{H}/keep") == f"{H}/kept"
    assert [a.source for a in later.aliases()] == [f"{H}/keep"]


def test_a_302_at_the_source_ends_its_alias(backend: Backend, store: EquivalenceStore) -> None:
    store.record_redirect(f"{H}/old", 301, f"{H}/new")
    outcome = store.record_redirect(f"{H}/old", 302, f"{H}/new")
    assert outcome.dropped_alias and not outcome.learned_alias
    assert store.representative(f"{H}/old") == f"{H}/old"
    assert backend.reopen(store).representative(f"{H}/old") == f"{H}/old"


def test_an_error_at_the_source_keeps_its_alias(store: EquivalenceStore) -> None:
    store.record_redirect(f"{H}/old", 301, f"{H}/new")
    outcome = store.record_response(f"{H}/old", 503)  # errors teach nothing
    assert not outcome.dropped_alias
    assert store.representative(f"{H}/old") == f"{H}/new"


def test_a_new_target_replaces_the_old_one(store: EquivalenceStore) -> None:
    store.record_redirect(f"{H}/old", 301, f"{H}/first")
    assert store.record_redirect(f"{H}/old", 301, f"{H}/second").learned_alias
    assert not store.record_redirect(f"{H}/old", 301, f"{H}/second").learned_alias  # known already
    assert store.representative(f"{H}/old") == f"{H}/second"


def test_chains_resolve_to_their_end(backend: Backend, store: EquivalenceStore) -> None:
    store.record_redirect(f"{H}/a", 301, f"{H}/b")
    store.record_redirect(f"{H}/b", 301, f"{H}/c")
    for s in now_and_later(backend, store):
        res = s.resolve(f"{H}/a")
        assert res.representative == f"{H}/c"
        assert res.steps == (Step(f"{H}/a", f"{H}/b"), Step(f"{H}/b", f"{H}/c"))
        assert s.representative(f"{H}/b") == f"{H}/c"
        assert s.representative(f"{H}/c") == f"{H}/c"


def test_a_loop_merges_nothing(backend: Backend, store: EquivalenceStore) -> None:
    store.record_redirect(f"{H}/a", 301, f"{H}/b")
    store.record_redirect(f"{H}/b", 301, f"{H}/a")
    for s in now_and_later(backend, store):
        for url in (f"{H}/a", f"{H}/b"):
            res = s.resolve(url)
            assert res.representative == url and not res.merged
            assert "loop" in res.note
        assert not s.explain(f"{H}/a", f"{H}/b").merged


def test_an_over_long_chain_merges_nothing(backend: Backend) -> None:
    store = backend.open(LearningPolicy(max_chain=2))
    for x, y in ("ab", "bc", "cd"):
        store.record_redirect(f"{H}/{x}", 301, f"{H}/{y}")
    assert store.representative(f"{H}/a") == f"{H}/a"  # three hops, two allowed
    assert "too long" in store.resolve(f"{H}/a").note
    assert store.representative(f"{H}/b") == f"{H}/d"  # two hops


def test_a_context_dependent_redirect_makes_no_alias(store: EquivalenceStore) -> None:
    outcome = store.record_redirect(f"{H}/old", 301, f"{H}/new", context={"cookie"})
    assert not outcome.learned_alias
    assert store.representative(f"{H}/old") == f"{H}/old"


# -- the case-only alias index -----------------------------------------------------------------


def test_a_case_only_alias_declares_its_case(backend: Backend, store: EquivalenceStore) -> None:
    store.record_redirect(f"{H}/Docs/A", 301, f"{H}/docs/a")
    for s in now_and_later(backend, store):
        # any spelling of the path's case finds the target the server redirected to
        for spelling in ("/Docs/A", "/DOCS/A", "/docs/a", "/dOcS/a"):
            assert s.storage.case_target(case_key(H + spelling)) == f"{H}/docs/a"
        assert s.storage.case_target(case_key(f"{H}/docs/b")) is None
        assert s.storage.case_target(case_key("https://other.example/docs/a")) is None


def test_an_alias_that_is_not_case_only_declares_no_case(store: EquivalenceStore) -> None:
    store.record_redirect(f"{H}/Docs/A", 301, f"{H}/docs/a/")  # case and a slash
    store.record_redirect(f"{H}/Docs/B", 301, "https://www.h.example/docs/b")  # case and the host
    assert store.storage.case_target(case_key(f"{H}/docs/a/")) is None
    assert store.storage.case_target(case_key(f"{H}/docs/a")) is None
    assert store.storage.case_target(case_key("https://www.h.example/docs/b")) is None


@pytest.mark.parametrize("how", ["302", "forget"])
def test_dropping_a_case_only_alias_forgets_its_case(backend: Backend, store: EquivalenceStore, how: str) -> None:
    store.record_redirect(f"{H}/Docs/A", 301, f"{H}/docs/a")
    key = case_key(f"{H}/DOCS/A")
    if how == "302":
        store.record_redirect(f"{H}/Docs/A", 302, f"{H}/docs/a")  # no longer a permanent redirect
    else:
        assert store.forget(f"{H}/Docs/A") == 2  # the alias and its evidence
    assert store.storage.case_target(key) is None
    assert backend.reopen(store).storage.case_target(key) is None


def test_a_document_at_a_former_case_only_alias_declares_no_case(backend: Backend, store: EquivalenceStore) -> None:
    """The case-only 301 said the server lowercased ``/Docs/A``; a clean 200 there now ends the alias and
    says the server became case-sensitive: ``/docs/a`` may be a page of its own, so no case is declared
    (declaring ``/Docs/A`` would merge ``/docs/a`` into it)."""
    store.record_redirect(f"{H}/Docs/A", 301, f"{H}/docs/a")
    key = case_key(f"{H}/docs/a")
    assert store.record_response(f"{H}/Docs/A", 200).dropped_alias
    assert store.resolve(f"{H}/Docs/A").representative == f"{H}/Docs/A"
    assert store.storage.case_target(key) is None
    reopened = backend.reopen(store)
    assert reopened.storage.declared_case(key) is None
    assert reopened.resolve(f"{H}/docs/a").representative == f"{H}/docs/a"




def test_an_alias_that_stops_being_case_only_forgets_its_case(
    backend: Backend, store: EquivalenceStore, request: pytest.FixtureRequest
) -> None:
    store.record_redirect(f"{H}/Docs/A", 301, f"{H}/docs/a")
    store.record_redirect(f"{H}/Docs/A", 301, f"{H}/other")  # the same source, now to another page
    key = case_key(f"{H}/docs/a")
    assert store.storage.case_target(key) is None
    store.flush()
    assert store.storage.case_target(key) is None
    # with an active declared-case rule, a wrong case is a false merge
    iis = "https://iis.example"
    teach_declared_case(store, iis)
    store.record_redirect(f"{iis}/docs/page-1", 301, f"{iis}/elsewhere")
    assert store.representative(f"{iis}/DOCS/PAGE-1") == f"{iis}/DOCS/PAGE-1"
    assert backend.reopen(store).representative(f"{iis}/DOCS/PAGE-1") == f"{iis}/DOCS/PAGE-1"


def test_a_case_stays_while_another_case_only_alias_declares_it(backend: Backend, store: EquivalenceStore) -> None:
    store.record_redirect(f"{H}/Docs/A", 301, f"{H}/docs/a")
    store.record_redirect(f"{H}/DOCS/A", 301, f"{H}/docs/a")
    key = case_key(f"{H}/docs/a")
    store.record_response(f"{H}/Docs/A", 200)
    assert store.storage.case_target(key) == f"{H}/docs/a"
    store = backend.reopen(store)
    assert store.storage.case_target(key) == f"{H}/docs/a"
    assert store.representative(f"{H}/DOCS/A") == f"{H}/docs/a"
    store.record_redirect(f"{H}/DOCS/A", 302, f"{H}/docs/a")  # the last one ends
    assert store.storage.case_target(key) is None
    assert backend.reopen(store).storage.case_target(key) is None




def test_dropping_the_newest_case_only_alias_falls_back_to_the_one_left(
    backend: Backend, store: EquivalenceStore, request: pytest.FixtureRequest
) -> None:
    store.record_redirect(f"{H}/DOCS/A", 301, f"{H}/docs/a")
    backend.clock.advance(10)
    store.record_redirect(f"{H}/Docs/a", 301, f"{H}/DoCs/A")
    key = case_key(f"{H}/docs/a")
    assert store.storage.case_target(key) == f"{H}/DoCs/A"  # the newest
    store.record_redirect(f"{H}/Docs/a", 302, f"{H}/DoCs/A")  # the newest ends
    assert store.storage.case_target(key) == f"{H}/docs/a"
    assert backend.reopen(store).storage.case_target(key) == f"{H}/docs/a"


def test_the_newest_case_only_alias_of_a_key_wins(backend: Backend, store: EquivalenceStore) -> None:
    """Two case-only aliases of one key to different targets: the newer observation's target."""
    store.record_redirect(f"{H}/DOCS/A", 301, f"{H}/Docs/A")
    backend.clock.advance(10)
    store.record_redirect(f"{H}/docs/a", 301, f"{H}/Docs/a")
    key = case_key(f"{H}/docs/a")
    assert store.storage.case_target(key) == f"{H}/Docs/a"
    assert backend.reopen(store).storage.case_target(key) == f"{H}/Docs/a"


# -- declared cases --------------------------------------------------------------------------


def teach_declared_case(store: EquivalenceStore, host: str = "https://iis.example") -> None:
    """Three case redirects under /docs/: the declared-case rule of /docs/ becomes active.

    For ``/docs/page-i`` the rule predicts the case the store knows for its
    key, the target of the case-only alias just learned: three supports.
    """
    for i in range(1, 4):
        store.record_redirect(f"{host}/docs/page-{i}", 301, f"{host}/Docs/Page-{i}")


def test_a_declared_case_is_kept_and_forgotten(backend: Backend, store: EquivalenceStore) -> None:
    iis = "https://iis.example"
    teach_declared_case(store)
    declared = RuleKey(iis, "declared-case", "/docs/")
    assert store.rule_status(rule(store, declared)) is RuleStatus.ACTIVE
    store.record_response(f"{iis}/Docs/Page-7", 200)  # a document at one case declares it
    key = case_key(f"{iis}/docs/page-7")
    assert store.storage.declared_case(key) == f"{iis}/Docs/Page-7"
    store = backend.reopen(store)
    assert store.storage.case_target(key) == f"{iis}/Docs/Page-7"
    assert store.representative(f"{iis}/DOCS/PAGE-7") == f"{iis}/Docs/Page-7"
    assert list(store.storage.declared_cases()) == [f"{iis}/Docs/Page-7"]
    assert store.stats()["declared_cases"] == 1
    # the declared case; the 200 left no evidence (no rule with support covered /Docs/Page-7)
    assert store.forget(f"{iis}/Docs/Page-7") == 1
    assert store.storage.case_target(key) is None
    assert store.representative(f"{iis}/DOCS/PAGE-7") == f"{iis}/DOCS/PAGE-7"
    store = backend.reopen(store)
    assert store.storage.declared_case(key) is None
    assert list(store.storage.declared_cases()) == []


def test_declared_cases_through_the_storage(backend: Backend, store: EquivalenceStore) -> None:
    key = case_key("https://iis.example/a/b")
    store.storage.set_declared_case(key, "https://iis.example/A/b")
    assert store.storage.case_target(key) == "https://iis.example/A/b"
    store = backend.reopen(store)
    assert store.storage.declared_case(key) == "https://iis.example/A/b"
    store.storage.set_declared_case(key, None)
    assert store.storage.case_target(key) is None
    assert backend.reopen(store).storage.case_target(key) is None


def test_a_case_only_alias_takes_precedence_over_a_declared_case(store: EquivalenceStore) -> None:
    key = case_key(f"{H}/docs/a")
    store.storage.set_declared_case(key, f"{H}/DOCS/A")
    store.record_redirect(f"{H}/Docs/A", 301, f"{H}/docs/a")
    assert store.storage.case_target(key) == f"{H}/docs/a"
    store.record_response(f"{H}/Docs/A", 200)
    assert store.storage.case_target(key) == f"{H}/DOCS/A"  # the declared case again


# -- rules ----------------------------------------------------------------------------------------


def test_rules_are_counted_and_kept(backend: Backend, store: EquivalenceStore) -> None:
    key = teach_slash(store)
    assert store.representative(f"{H}/topic-9") == f"{H}/topic-9/"
    assert store.resolve(f"{H}/topic-9").rules == (key,)
    store = backend.reopen(store)
    record = rule(store, key)
    assert (record.support, record.against) == (3, 0)
    assert store.rule_status(record) is RuleStatus.ACTIVE
    assert store.representative(f"{H}/topic-9") == f"{H}/topic-9/"
    assert store.representative(f"{H}/about") == f"{H}/about"  # not of the numbered family
    assert store.representative("https://other.example/topic-9") == "https://other.example/topic-9"


def test_two_supports_are_not_a_rule(store: EquivalenceStore) -> None:
    key = teach_slash(store, n=2)
    assert store.rule_status(rule(store, key)) is RuleStatus.CANDIDATE
    assert store.representative(f"{H}/topic-9") == f"{H}/topic-9"


def test_a_counterexample_suspends_a_rule_everywhere(backend: Backend, store: EquivalenceStore) -> None:
    key = teach_slash(store)
    outcome = store.record_response(f"{H}/topic-5", 200)  # a document at a URL the rule covers
    assert outcome.contradicted == [key]
    assert store.representative(f"{H}/topic-9") == f"{H}/topic-9"
    store = backend.reopen(store)
    record = rule(store, key)
    assert (record.support, record.against) == (3, 1)
    assert store.rule_status(record) is RuleStatus.SUSPENDED
    assert store.representative(f"{H}/topic-9") == f"{H}/topic-9"
    assert store.representative(f"{H}/topic-1") == f"{H}/topic-1/"  # its exact alias stays




def test_a_counterexample_from_another_process_survives_a_pending_batch(
    backend: Backend, request: pytest.FixtureRequest
) -> None:
    """B has uncommitted support for a rule when A commits a counterexample to it; B looks something
    up (and so follows A), then commits: the row holds both, and the rule is suspended everywhere."""
    if not backend.persistent:
        pytest.skip("one process only")
    options: dict[str, Any] = {"sync_interval": 0.0}
    if backend.kind == "sqlite":
        options.update(batch_size=10**6, flush_interval=1e9)
    a, b = backend.open(**options), backend.open(**options)
    b.record_redirect(f"{H}/topic-1", 301, f"{H}/topic-1/")
    a.record_response(f"{H}/topic-5", 200)
    a.flush()
    assert b.representative(f"{H}/x") == f"{H}/x"  # b follows what a committed
    b.record_redirect(f"{H}/topic-2", 301, f"{H}/topic-2/")
    b.record_redirect(f"{H}/topic-3", 301, f"{H}/topic-3/")
    b.flush()
    later = backend.open()
    key = RuleKey(H, "add-slash", "/topic-#")
    record = rule(later, key)
    assert (record.support, record.against) == (3, 1)
    assert later.representative(f"{H}/topic-5") == f"{H}/topic-5"  # it answered for itself: never merged
    assert later.representative(f"{H}/topic-9") == f"{H}/topic-9"


def test_a_suspension_expires_with_the_ttl(backend: Backend) -> None:
    store = backend.open(LearningPolicy(rule_ttl=100.0))
    key = teach_slash(store)
    store.record_response(f"{H}/topic-5", 200)
    backend.clock.advance(200.0)  # every count is older than the TTL: learned afresh
    store = backend.reopen(store)
    expired = rule(store, key)  # a candidate again, or compacted away (it holds nothing that counts)
    assert expired is None or store.rule_status(expired) is RuleStatus.CANDIDATE
    teach_slash(store)
    record = rule(store, key)
    assert (record.support, record.against) == (3, 0)
    assert store.representative(f"{H}/topic-9") == f"{H}/topic-9/"




def test_counts_after_an_expiry_are_the_fresh_observations(backend: Backend, request: pytest.FixtureRequest) -> None:
    store = backend.open(LearningPolicy(rule_ttl=1000.0))
    key = teach_slash(store)
    store = backend.reopen(store)
    backend.clock.advance(5000.0)  # the three supports are older than the TTL
    teach_slash(store, n=4)
    store = backend.reopen(store)
    record = rule(store, key)
    assert (record.support, record.against) == (4, 0)
    assert store.representative(f"{H}/topic-9") == f"{H}/topic-9/"


# -- sinks ------------------------------------------------------------------------------------------


def test_many_sources_into_one_target_make_a_sink(backend: Backend) -> None:
    store = backend.open(LearningPolicy(sink_fanin=3))
    login = f"{H}/login"
    assert store.record_redirect(f"{H}/p1", 301, login).learned_alias
    assert store.record_redirect(f"{H}/p2", 301, login + "?next=p2").learned_alias
    third = store.record_redirect(f"{H}/p3", 301, login)
    assert third.sink and not third.learned_alias  # the third source makes it a sink
    for s in now_and_later(backend, store):
        assert s.storage.is_sink(login, 3)
        assert not s.record_redirect(f"{H}/p4", 301, login).learned_alias
        for i in (1, 2, 3, 4):  # no alias leads into a sink
            assert s.representative(f"{H}/p{i}") == f"{H}/p{i}"
        assert s.stats()["sinks"] == 1
        assert [e for e in s.export() if e["type"] == "sink"] == [{"type": "sink", "target": login, "sources": 3}]




def test_a_lower_sink_fanin_makes_a_sink_of_a_target_with_that_many_sources(
    backend: Backend, request: pytest.FixtureRequest
) -> None:
    store = backend.open(LearningPolicy(sink_fanin=5))
    for i in (1, 2, 3):
        assert store.record_redirect(f"{H}/p{i}", 301, f"{H}/login").learned_alias  # 3 of 5: not a sink yet
    assert store.representative(f"{H}/p1") == f"{H}/login"
    if backend.persistent:
        store.close()
        store = backend.open(LearningPolicy(sink_fanin=3))
    else:
        store.policy = LearningPolicy(sink_fanin=3)
    assert store.stats()["sinks"] == 1
    assert store.storage.is_sink(f"{H}/login", 3)
    assert store.representative(f"{H}/p1") == f"{H}/p1"


def test_spelling_fixes_never_make_a_sink(backend: Backend) -> None:
    """Redirects that only fix the spelling of one page (case, slash) are no sign of many pages sent to one."""
    store = backend.open(LearningPolicy(sink_fanin=2))
    store.record_redirect(f"{H}/Page", 301, f"{H}/page")
    store.record_redirect(f"{H}/PAGE", 301, f"{H}/page")
    store.record_redirect(f"{H}/page/", 301, f"{H}/page")
    assert not store.storage.is_sink(f"{H}/page", 2)
    assert store.representative(f"{H}/PAGE") == f"{H}/page"
    assert store.stats()["sinks"] == 0


def test_a_sink_blocks_the_rules_of_its_origins(backend: Backend) -> None:
    store = backend.open(LearningPolicy(sink_fanin=3))
    key = teach_slash(store)
    for i in range(3):
        store.record_redirect(f"{H}/x{i}", 302, f"{H}/login")
    store = backend.reopen(store)
    assert store.rule_status(rule(store, key)) is RuleStatus.SUSPENDED
    assert store.representative(f"{H}/topic-9") == f"{H}/topic-9"
    assert store.stats()["blocked_origins"] == 1


# -- deferred URLs -------------------------------------------------------------------------------


def test_deferred_urls_are_taken_once(backend: Backend, store: EquivalenceStore) -> None:
    key = RuleKey(H, "add-slash", "/topic-#")
    other = RuleKey(H, "remove-slash", "/topic-#/")
    store.defer(f"{H}/topic-8", [key])
    store.defer(f"{H}/topic-9", [key, other])
    assert store.stats()["deferred"] == 3
    store.flush()
    later = backend.open() if backend.persistent else store  # another process, the first one still open
    assert later.take_deferred(key) == [f"{H}/topic-8", f"{H}/topic-9"]
    assert later.take_deferred(key) == []
    if backend.persistent:
        assert store.take_deferred(key) == []  # the first process gets none back either
    assert later.stats()["deferred"] == 1
    assert later.take_deferred(other) == [f"{H}/topic-9"]


# -- forgetting ----------------------------------------------------------------------------------


def test_forget_a_url(backend: Backend, store: EquivalenceStore) -> None:
    store.record_redirect(f"{H}/old", 301, f"{H}/new")
    store.record_redirect(f"{H}/other", 301, f"{H}/new")
    assert store.forget(f"{H}/old") == 2  # its alias and its one evidence entry
    assert store.representative(f"{H}/old") == f"{H}/old"
    store = backend.reopen(store)
    assert store.representative(f"{H}/old") == f"{H}/old"
    assert store.representative(f"{H}/other") == f"{H}/new"
    assert list(store.evidence(f"{H}/old")) == []
    assert [e.url for e in store.evidence()] == [f"{H}/other"]
    assert store.forget(f"{H}/nothing") == 0




def test_forget_in_another_process_forgets_the_alias(backend: Backend, request: pytest.FixtureRequest) -> None:
    if not backend.persistent:
        pytest.skip("one process only")
    a, b = backend.open(sync_interval=0.0), backend.open(sync_interval=0.0)
    assert b.representative(f"{H}/old") == f"{H}/old"  # b caches the miss
    a.record_redirect(f"{H}/old", 301, f"{H}/new")
    a.flush()
    assert b.forget(f"{H}/old") == 2  # the alias and its evidence
    assert backend.open().representative(f"{H}/old") == f"{H}/old"


def test_forget_a_host(backend: Backend, store: EquivalenceStore) -> None:
    key = teach_slash(store)  # 3 aliases, the add-slash rule and two refuted apex-to-www rules
    store.record_redirect(f"{H}/p", 302, f"{H}/login")  # a fan-in record on h.example
    store.record_redirect("https://h.example:8443/old", 301, "https://h.example:8443/new")
    store.record_redirect("https://b.example/old", 301, "https://b.example/new")
    on_host = {a.source for a in store.aliases() if a.source.startswith(H + "/")}
    rules = {r.key for r in store.rules() if r.key.origin == H}
    fanins = {t for t, _ in store.storage.fanins() if t.startswith(H + "/")}
    assert len(on_host) == 3 and key in rules and fanins == {f"{H}/login"}
    assert store.forget_host("h.example") == len(on_host) + len(rules) + len(fanins)
    store = backend.reopen(store)
    assert {a.source for a in store.aliases()} == {"https://h.example:8443/old", "https://b.example/old"}
    assert not any(r.key.origin == H for r in store.rules())
    assert store.representative(f"{H}/topic-1") == f"{H}/topic-1"
    assert store.forget_host("h.example:*") >= 1  # every port
    assert {a.source for a in store.aliases()} == {"https://b.example/old"}


# -- reporting ------------------------------------------------------------------------------------


def test_stats_and_export(backend: Backend, store: EquivalenceStore) -> None:
    """Three slash redirects on https://h.example, one temporary redirect, one deferred URL.

    Each ``/topic-i`` is covered by two conventions: add-slash (template
    ``/topic-#``), which the 301 supports, and apex-to-www (h.example has a
    www. partner), which it contradicts, under ``/`` and origin-wide: one
    active rule, two refuted ones. The 302 is a counterexample to
    apex-to-www again (no new rule) and logs evidence; no alias.
    """
    key = teach_slash(store)
    store.record_redirect(f"{H}/go", 302, f"{H}/there")
    store.defer(f"{H}/topic-9", [key])
    expected = {
        "aliases": 3,
        "rules/active": 1,
        "rules/candidate": 0,
        "rules/suspended": 0,
        "rules/refuted": 2,
        "blocked_origins": 0,
        "sinks": 0,
        "declared_cases": 0,
        "evidence": 4,
        "deferred": 1,
    }
    assert store.stats() == expected
    store = backend.reopen(store)
    assert store.stats() == expected
    items = list(store.export(evidence=True))
    kinds = [item["type"] for item in items]
    assert kinds.count("alias") == 3 and kinds.count("rule") == 3 and kinds.count("evidence") == 4
    assert "sink" not in kinds and "case" not in kinds
    rules = {item["rule"]: item["status"] for item in items if item["type"] == "rule"}
    assert rules == {str(key): "active", f"{H} apex-to-www /": "refuted", f"{H} apex-to-www *": "refuted"}
    slash = next(item for item in items if item["type"] == "rule" and item["rule"] == str(key))
    assert (slash["support"], slash["against"]) == (3, 0)
    assert sorted(e["url"] for e in items if e["type"] == "evidence") == sorted(
        [f"{H}/go", *(f"{H}/topic-{i}" for i in (1, 2, 3))]
    )


# -- the recorded policy ---------------------------------------------------------------------------


def test_the_recorded_policy_is_read_back(backend: Backend) -> None:
    if not backend.persistent:
        pytest.skip("a memory store has no later reader")
    policy = LearningPolicy(min_observations=4, rule_ttl=1234.0, sink_fanin=7, max_chain=3, cross_site_aliases=False)
    with open_store(backend.uri, policy=policy, clock=backend.clock) as crawl:
        teach_slash(crawl)
    with open_store(backend.uri, clock=backend.clock) as reader:
        assert reader.policy == policy
        assert reader.storage.policy == policy
        # judged with K = 4: three supports are a candidate, not a rule
        assert reader.representative(f"{H}/topic-9") == f"{H}/topic-9"
    with open_store(backend.uri, policy=LearningPolicy(), create=False, clock=backend.clock) as explicit:
        assert explicit.representative(f"{H}/topic-9") == f"{H}/topic-9/"  # an explicit policy wins
    with open_store(backend.uri, clock=backend.clock) as reader:
        assert reader.policy == policy  # and was not recorded


# -- the same answers from every backend -------------------------------------------------------------


def random_observations(seed: int, n: int = 120) -> list[tuple[str, int, str | None]]:
    """A seeded mix of redirects and answers on two hosts: slashes, case, chains, loops, sinks, drops."""
    rng = random.Random(seed)
    hosts = ["https://h.example", "https://www.k.example"]
    paths = ["/a", "/b", "/c", "/Docs/A", "/docs/a", "/DOCS/A", "/topic-1", "/topic-2", "/topic-3", "/topic-4", "/login"]
    out: list[tuple[str, int, str | None]] = []
    for _ in range(n):
        host = rng.choice(hosts)
        src = host + rng.choice(paths)
        roll = rng.random()
        if roll < 0.15:
            out.append((src, rng.choice([200, 404]), None))
        elif roll < 0.3 and "topic" in src:
            out.append((src, 301, src + "/"))
        else:
            out.append((src, rng.choice([301, 301, 301, 308, 302]), host + rng.choice(paths)))
    return out




@pytest.mark.parametrize(
    "seed",
    [
        seed
        for seed in range(1, 11)
    ],
)
def test_every_backend_gives_the_same_answers(request: pytest.FixtureRequest, tmp_path: Path, seed: int) -> None:
    """The same observations, in the same order and at the same times, give the same store everywhere."""
    observations = random_observations(seed)
    probes = sorted({url for src, _, tgt in observations for url in (src, tgt) if url} | {
        f"{h}/topic-{i}" for h in ("https://h.example", "https://www.k.example") for i in (7, 8)
    })
    answers = []
    for kind in BACKENDS:
        backend = Backend(kind, tmp_path / kind, Clock(), request)
        (tmp_path / kind).mkdir()
        try:
            store = backend.open(LearningPolicy(sink_fanin=3))
            for src, status, tgt in observations:
                backend.clock.advance(1.0)
                if tgt is None:
                    store.record_response(src, status)
                else:
                    store.record_redirect(src, status, tgt)
            store = backend.reopen(store)
            resolved = {url: store.representative(url) for url in probes}
            assert resolved == {url: store.resolve(url).representative for url in probes}  # the lean path agrees
            cases = {url: store.storage.case_target(case_key(url)) for url in probes}
            rules = sorted((str(r.key), r.support, r.against, store.rule_label(r)) for r in store.rules())
            aliases = sorted((a.source, a.target, a.status, a.time) for a in store.aliases())
            answers.append((kind, resolved, cases, rules, aliases, store.stats()))
        finally:
            backend.close()
    memory = answers[0]
    for other in answers[1:]:
        for i, name in enumerate(("resolved", "cases", "rules", "aliases", "stats"), start=1):
            assert other[i] == memory[i], f"{other[0]} differs from memory in {name}"


def test_rules_of_many_origins_are_held_within_the_cache_and_read_again(backend: Backend) -> None:
    """A process holds the rules of the origins it used last (``rule_cache`` records); the others are
    read again when used, with the same answers, and what is listed is everything."""
    if not backend.persistent:
        pytest.skip("the memory store holds everything")
    store = backend.open(rule_cache=12)
    hosts = [f"https://h{i}.example" for i in range(30)]
    for host in hosts:
        teach_slash(store, host)
    store.flush()
    held = store.storage.cached.rules if backend.kind == "sqlite" else store.storage.image.rules  # type: ignore[attr-defined]
    assert held.count <= 12  # after the commit nothing is pinned: the bound holds
    again = backend.open(rule_cache=12)
    held_again = again.storage.cached.rules if backend.kind == "sqlite" else again.storage.image.rules  # type: ignore[attr-defined]
    assert held_again.count == 0  # opening reads no rule
    for host in hosts:  # every origin's rule, read when used: the same answer as where it was learned
        assert again.representative(f"{host}/topic-9") == f"{host}/topic-9/"
        assert held_again.count == 0  # lookups read the rules in force only, not whole origins
    assert len([r for r in again.rules() if r.key.kind == "add-slash" and r.key.scope != "*"]) == 30
