"""Aliases age: a redirect is a fact about the day it was seen (memory, SQLite and Redis alike).

An alias is used until the lifetime its redirect stated (``Cache-Control:
max-age`` / ``s-maxage``, ``Expires``) or, when it stated none, the policy's
``alias_ttl`` after the server last said it; a crawl's ``alias_check`` may
keep an alias of an earlier session from merging (its source is then
fetched as it is); a source that answers for itself, redirects elsewhere or
is gone ends the alias, and the outcome names it so what it merged is
fetched again. Expected values come from RFC 9111 (5.2.2, 4.2.1) and the
rules of docs/protocol.md, worked out in each test.
"""

from __future__ import annotations

import math
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.stores import Clock

from scrapy_iri.store import Alias, EquivalenceStore, LearningPolicy, MemoryStore, RuleKey, open_store, stated_lifetime
from scrapy_iri.store._rules import alias_key

H = "http://h.example"
DAY = 86400.0


@pytest.fixture(params=["memory", "sqlite", "redis"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    """``opener(clock, policy)``: a store of the backend; opening it again stands for a later crawl."""
    kind = str(request.param)
    url = request.getfixturevalue("redis_url") if kind == "redis" else ""
    namespace = f"aging-{uuid.uuid4().hex[:10]}"
    opened: list[EquivalenceStore] = []
    memory: dict[str, MemoryStore] = {}

    def open_(clock: Clock, policy: LearningPolicy | None = None) -> EquivalenceStore:
        policy = policy or LearningPolicy()
        if kind == "memory":
            if "store" not in memory:
                memory["store"] = MemoryStore(policy, clock=clock)
            else:  # a new session over the same memory
                old = memory["store"]
                memory["store"] = EquivalenceStore(old.storage, policy, clock=clock)  # type: ignore[assignment]
            store: EquivalenceStore = memory["store"]
        elif kind == "sqlite":
            for earlier in opened:
                earlier.flush()
            store = open_store(f"sqlite:///{tmp_path / 'aging.db'}", policy=policy, clock=clock)
        else:
            for earlier in opened:
                earlier.flush()
            store = open_store(f"{url}?namespace={namespace}", policy=policy, clock=clock)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


# -- what a redirect says about its own lifetime ---------------------------------------------


def test_max_age_and_s_maxage_state_a_lifetime() -> None:
    assert stated_lifetime(["max-age=3600"]) == 3600
    assert stated_lifetime(["public, max-age=600, s-maxage=60"]) == 60  # the smaller: a store shared by processes
    assert stated_lifetime(['max-age="120"']) == 120
    assert stated_lifetime(["max-age=3600"], age="600") == 3000  # time already spent in caches
    assert stated_lifetime(["max-age=60"], age="600") == 0


def test_no_store_no_cache_and_nonsense_say_do_not_reuse() -> None:
    assert stated_lifetime(["no-store"]) == 0
    assert stated_lifetime(["max-age=3600, no-cache"]) == 0
    assert stated_lifetime(["max-age=soon"]) == 0  # RFC 9111 4.2.1: an invalid value is stale
    assert stated_lifetime([], expires="0") == 0  # an Expires that is not a date: already expired


def test_expires_counts_from_date_and_max_age_wins() -> None:
    date = "Thu, 26 Nov 2026 07:00:00 GMT"
    assert stated_lifetime([], expires="Thu, 26 Nov 2026 08:00:00 GMT", date=date) == 3600
    assert stated_lifetime([], expires="Wed, 25 Nov 2026 08:00:00 GMT", date=date) == 0
    assert stated_lifetime(["max-age=10"], expires="Thu, 26 Nov 2026 08:00:00 GMT", date=date) == 10
    now = 1_795_676_400.0  # 2026-11-26 07:00:00 UTC: Expires without Date counts from now
    assert stated_lifetime([], expires="Thu, 26 Nov 2026 07:30:00 GMT", now=now) == 1800


def test_a_redirect_that_says_nothing_states_no_lifetime() -> None:
    assert stated_lifetime([]) is None
    assert stated_lifetime(["public"]) is None


# -- lifetimes in the store -------------------------------------------------------------------


def test_an_alias_is_used_until_its_stated_lifetime(opener) -> None:  # type: ignore[no-untyped-def]
    clock = Clock()
    store = opener(clock)
    store.record_redirect(f"{H}/a", 301, f"{H}/b", lifetime=3600)
    store.flush()
    (alias,) = list(store.aliases())
    assert alias.expires == clock.now + 3600
    clock.advance(3599)
    assert store.representative(f"{H}/a") == f"{H}/b"
    clock.advance(1)
    assert store.representative(f"{H}/a") == f"{H}/a"  # stale: the source is asked again
    later = opener(clock)
    assert later.representative(f"{H}/a") == f"{H}/a"
    # the server says it again: fresh for another hour, one confirmation
    later.record_redirect(f"{H}/a", 301, f"{H}/b", lifetime=3600)
    later.flush()
    (alias,) = list(later.aliases())
    assert alias.confirmations == 1 and alias.expires == clock.now + 3600
    assert later.representative(f"{H}/a") == f"{H}/b"


def test_without_a_stated_lifetime_the_alias_ttl_applies(opener) -> None:  # type: ignore[no-untyped-def]
    clock = Clock()
    store = opener(clock, LearningPolicy(alias_ttl=2 * DAY))
    store.record_redirect(f"{H}/a", 308, f"{H}/b")
    store.flush()
    clock.advance(2 * DAY - 1)
    assert store.representative(f"{H}/a") == f"{H}/b"
    clock.advance(1)
    assert store.representative(f"{H}/a") == f"{H}/a"
    # a longer TTL in a later crawl reads the same alias as fresh again: the TTL counts from the statement
    assert opener(clock, LearningPolicy(alias_ttl=3 * DAY)).representative(f"{H}/a") == f"{H}/b"


def test_a_redirect_not_to_be_reused_makes_no_alias_and_ends_one(opener) -> None:  # type: ignore[no-untyped-def]
    clock = Clock()
    store = opener(clock)
    outcome = store.record_redirect(f"{H}/x", 301, f"{H}/y", lifetime=0.0)
    assert not outcome.learned_alias and list(store.aliases()) == []
    store.record_redirect(f"{H}/a", 301, f"{H}/b")
    store.flush()
    clock.advance(1)
    outcome = store.record_redirect(f"{H}/a", 301, f"{H}/b", lifetime=0.0)  # now "no-store"
    assert outcome.dropped_alias and outcome.ended == [alias_key(f"{H}/a")]
    assert store.representative(f"{H}/a") == f"{H}/a"


def test_an_expired_alias_lets_a_rule_predict_only_its_own_target(opener) -> None:  # type: ignore[no-untyped-def]
    clock = Clock()
    store = opener(clock, LearningPolicy(alias_ttl=DAY, rule_ttl=1.5 * DAY))
    store.record_redirect(f"{H}/topic-7", 301, f"{H}/moved-7/")  # a counterexample, forgotten after the rule TTL
    store.record_redirect(f"{H}/topic-1", 301, f"{H}/topic-1/")
    store.flush()
    clock.advance(2 * DAY)  # both aliases stale, the rule's evidence forgotten
    for i in (2, 3, 4):
        store.record_redirect(f"{H}/topic-{i}", 301, f"{H}/topic-{i}/")
    store.flush()
    assert store.representative(f"{H}/topic-9") == f"{H}/topic-9/"
    assert store.representative(f"{H}/topic-1") == f"{H}/topic-1/"  # stale alias, same target: the rule's step
    assert store.resolve(f"{H}/topic-1").steps[0].rule is not None
    assert store.representative(f"{H}/topic-7") == f"{H}/topic-7"  # never the rule's /topic-7/
    assert store.resolve(f"{H}/topic-7").held is not None


# -- checks in a later crawl -------------------------------------------------------------------


def test_an_alias_of_an_earlier_session_picked_for_a_check_merges_nothing(opener) -> None:  # type: ignore[no-untyped-def]
    clock = Clock()
    first = opener(clock)
    first.record_redirect(f"{H}/account/1", 301, f"{H}/maintenance")
    first.flush()
    first.alias_check = lambda alias: True
    assert first.representative(f"{H}/account/1") == f"{H}/maintenance"  # this session's own fact
    clock.advance(60)
    later = opener(clock)
    later.alias_check = lambda alias: True
    assert later.representative(f"{H}/account/1") == f"{H}/account/1"
    held = later.resolve(f"{H}/account/1").held
    assert held is not None and held.target == f"{H}/maintenance"
    later.alias_check = lambda alias: False  # trusted: merges, and what it merges may be undone
    resolution = later.resolve(f"{H}/account/1")
    assert resolution.representative == f"{H}/maintenance"
    assert resolution.rules == (alias_key(f"{H}/account/1"),)


def test_a_confirmation_counts_once_per_session_and_refreshes_the_alias(opener) -> None:  # type: ignore[no-untyped-def]
    clock = Clock()
    first = opener(clock)
    first.record_redirect(f"{H}/a", 301, f"{H}/b")
    first.flush()
    first.record_redirect(f"{H}/a", 301, f"{H}/b")
    first.flush()
    assert [a.confirmations for a in first.aliases()] == [0]  # said again in the same crawl: no news
    for session in (1, 2):
        clock.advance(DAY)
        store = opener(clock)
        store.alias_check = lambda alias: True
        assert store.representative(f"{H}/a") == f"{H}/a"
        outcome = store.record_redirect(f"{H}/a", 301, f"{H}/b")
        store.flush()
        assert outcome.confirmed_alias and not outcome.ended
        assert store.representative(f"{H}/a") == f"{H}/b"  # confirmed now: a fact of this session
        (alias,) = list(store.aliases())
        assert (alias.confirmations, alias.time) == (session, clock.now)


@pytest.mark.parametrize(
    ("answer", "ends"),
    [((200, None), True), ((302, "/b"), True), ((301, "/c"), True), ((404, None), True), ((410, None), True),
     ((503, None), False), ((301, "/b"), False)],
)
def test_what_ends_an_alias(opener, answer: tuple[int, str | None], ends: bool) -> None:  # type: ignore[no-untyped-def]
    clock = Clock()
    earlier = opener(clock)
    earlier.record_redirect(f"{H}/a", 301, f"{H}/b")
    earlier.flush()
    clock.advance(DAY)
    store = opener(clock)
    status, location = answer
    if location is None:
        outcome = store.record_response(f"{H}/a", status)
    else:
        outcome = store.record_redirect(f"{H}/a", status, f"{H}{location}")
    store.flush()
    assert (outcome.ended == [alias_key(f"{H}/a")]) is ends
    expected = {(301, "/c"): f"{H}/c", (503, None): f"{H}/b", (301, "/b"): f"{H}/b"}.get(answer, f"{H}/a")
    assert store.representative(f"{H}/a") == expected
    assert opener(clock).representative(f"{H}/a") == expected


def test_an_alias_key_round_trips_through_its_text() -> None:
    key = alias_key("http://h.example/a%20b?x=1")
    assert RuleKey.parse(str(key)) == key and key.origin == "http://h.example"


def test_an_old_sqlite_store_reads_its_aliases_as_stating_no_lifetime(tmp_path: Path) -> None:
    path = tmp_path / "v5.db"
    with open_store(f"sqlite:///{path}") as store:
        store.record_redirect(f"{H}/a", 301, f"{H}/b")
        store.flush()
    db = sqlite3.connect(path)  # take the alias table back to schema 5: no lifetime columns
    db.executescript(
        "CREATE TABLE a5 AS SELECT source, target, status, time, case_key FROM alias; DROP TABLE alias;"
        " CREATE TABLE alias (source TEXT PRIMARY KEY, target TEXT NOT NULL, status INTEGER NOT NULL,"
        " time REAL NOT NULL, case_key TEXT) WITHOUT ROWID; INSERT INTO alias SELECT * FROM a5; DROP TABLE a5;"
        " PRAGMA user_version = 5;"
    )
    db.close()
    with open_store(f"sqlite:///{path}") as store:
        (alias,) = list(store.aliases())
        assert (alias.expires, alias.confirmations) == (None, 0)
        assert store.representative(f"{H}/a") == f"{H}/b"


def test_an_alias_written_by_an_older_redis_layout_reads_as_stating_no_lifetime() -> None:
    from scrapy_iri.store._redis.codec import alias_of, alias_value

    assert alias_of("s", '["t", 301, 5.0]') == Alias("s", "t", 301, 5.0)
    alias = Alias("s", "t", 308, 7.5, 99.0, 3)
    assert alias_of("s", alias_value(alias)) == alias
    assert alias_of("s", '["", 0, 9.0]') is None  # a tombstone


def test_an_infinite_alias_ttl_is_a_store_that_never_ages(opener) -> None:  # type: ignore[no-untyped-def]
    clock = Clock()
    store = opener(clock, LearningPolicy(alias_ttl=math.inf))
    store.record_redirect(f"{H}/a", 301, f"{H}/b")
    store.flush()
    clock.advance(10_000 * DAY)
    assert store.representative(f"{H}/a") == f"{H}/b"


def test_an_origin_s_aliases_earn_trust_together_and_lose_it_at_one_end(opener) -> None:  # type: ignore[no-untyped-def]
    clock = Clock()
    first = opener(clock)
    for k in range(1, 6):
        first.record_redirect(f"{H}/old-{k}", 301, f"{H}/new-{k}")
    first.flush()
    assert first.alias_trust(f"{H}/x") == 0
    clock.advance(DAY)
    later = opener(clock)
    for k in range(1, 5):  # four confirmed in a later crawl
        later.record_redirect(f"{H}/old-{k}", 301, f"{H}/new-{k}")
    later.flush()
    assert later.alias_trust(f"{H}/x") == 0  # earned for the next crawl, not this one
    assert opener(clock).alias_trust(f"{H}/x") == 4
    assert later.alias_trust("http://other.example/x") == 0  # another origin earned nothing
    assert [r for r in later.rules() if r.key.kind == "alias"] == []  # no rule: listed apart
    later.record_response(f"{H}/old-5", 200)  # one ended: every alias of the origin is checked again
    later.flush()
    assert later.alias_trust(f"{H}/x") == -1
    clock.advance(31 * DAY)  # past the rule TTL: the end is forgotten, and so are the confirmations
    assert opener(clock).alias_trust(f"{H}/x") == 0


def test_a_prior_across_sites_makes_a_host_wide_rule_from_one_observation(opener) -> None:  # type: ignore[no-untyped-def]
    clock = Clock()
    store = opener(clock)
    for site in ("a.example", "b.example"):  # http -> https held on two sites (three observations each)
        for k in (1, 2, 3):
            store.record_redirect(f"http://{site}/p-{k}", 301, f"https://{site}/p-{k}")
    assert store.representative("http://c.example/p-9") == "http://c.example/p-9"  # no evidence on c: no rule
    outcome = store.record_redirect("http://c.example/p-1", 301, "https://c.example/p-1")
    assert outcome.activated  # one observation on c, with the prior
    assert store.representative("http://c.example/p-9") == "https://c.example/p-9"
    key = RuleKey("http://c.example", "http-to-https", "/")
    assert store.prior(key) == 2  # the two sites where it held
    assert store.confirmations(key) == 1 + 3 + 3  # its own support, and the confirmations it earned there
    # never across sites: nothing on d.example, and a counterexample on c stops c's rule at once
    assert store.representative("http://d.example/p-9") == "http://d.example/p-9"
    outcome = store.record_response("http://c.example/p-2", 200)
    assert key in outcome.contradicted
    assert store.representative("http://c.example/p-9") == "http://c.example/p-9"
    # a convention that failed on a site of this crawl gives no prior any more
    store.record_redirect("http://e.example/p-1", 301, "https://e.example/p-1")
    assert store.representative("http://e.example/p-9") == "http://e.example/p-9"


def test_conventions_that_are_not_host_wide_get_no_prior(opener) -> None:  # type: ignore[no-untyped-def]
    clock = Clock()
    store = opener(clock)
    for site in ("a.example", "b.example", "c.example"):
        for k in (1, 2, 3):
            store.record_redirect(f"http://{site}/Doc-{k}", 301, f"http://{site}/doc-{k}")  # case: per directory
    store.record_redirect("http://d.example/Doc-1", 301, "http://d.example/doc-1")
    assert store.representative("http://d.example/Doc-9") == "http://d.example/Doc-9"


def test_rules_in_force_on_the_prior_alone_fall_with_it(opener) -> None:  # type: ignore[no-untyped-def]
    clock = Clock()
    store = opener(clock)
    for site in ("a.example", "b.example"):  # http -> https held on two sites (three observations each)
        for k in (1, 2, 3):
            store.record_redirect(f"http://{site}/p-{k}", 301, f"https://{site}/p-{k}")
    assert store.record_redirect("http://c.example/p-1", 301, "https://c.example/p-1").activated
    assert store.representative("http://c.example/p-9") == "https://c.example/p-9"
    c_rules = [r.key for r in store.rules() if r.key.origin == "http://c.example" and r.key.kind == "http-to-https"]
    for key in c_rules:
        store.defer("http://c.example/p-9", [key])  # merged away by c's rule
    # the convention falls on a.example: the prior ends, and c's rule (one observation of its own) with it
    outcome = store.record_response("http://a.example/p-4", 200)
    assert set(c_rules) <= set(outcome.contradicted)  # reported: what it merged is scheduled again
    assert store.representative("http://c.example/p-9") == "http://c.example/p-9"
    assert all(store.take_deferred(key) == ["http://c.example/p-9"] for key in c_rules)
    # b.example's rule stands on its own evidence: it stays, and is not reported
    assert store.representative("http://b.example/p-9") == "https://b.example/p-9"
    assert not any(key.origin == "http://b.example" for key in outcome.contradicted)
