"""The equivalence store on every backend: aliases, chains, rules and the safety properties."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from scrapy_iri import canonicalize, equivalent
from scrapy_iri.store import EquivalenceStore, RuleKey, RuleStatus, StoreError, context_flags, open_store



SLASH = RuleKey("http://a.example", "add-slash", "/topic-#")


def teach_slash(store: EquivalenceStore, host: str = "a.example", count: int = 3, start: int = 1) -> None:
    for i in range(start, start + count):
        store.record_redirect(f"http://{host}/topic-{i}", 301, f"http://{host}/topic-{i}/")


def rep(store: EquivalenceStore, url: str) -> str:
    return canonicalize(url, "protocol", store=store)


# -- exact aliases --------------------------------------------------------------


def test_permanent_redirect_maps_alias_to_target_never_the_reverse(store: EquivalenceStore) -> None:
    outcome = store.record_redirect("http://a.example/old", 301, "http://a.example/new")
    assert outcome.learned_alias
    assert rep(store, "http://a.example/old") == "http://a.example/new"
    assert rep(store, "http://a.example/new") == "http://a.example/new"
    assert equivalent("http://A.example:80/old", "http://a.example/new", "protocol", store=store)
    assert not equivalent("http://a.example/new", "http://a.example/other", "protocol", store=store)


def test_the_fragment_is_kept(store: EquivalenceStore) -> None:
    store.record_redirect("http://a.example/old#ignored", 308, "http://a.example/new")
    assert rep(store, "http://a.example/old#top") == "http://a.example/new#top"


def test_chains_resolve_to_the_end(store: EquivalenceStore) -> None:
    store.record_redirect("http://a.example/a", 301, "http://a.example/b")
    store.record_redirect("http://a.example/b", 308, "http://a.example/c")
    assert rep(store, "http://a.example/a") == "http://a.example/c"
    assert rep(store, "http://a.example/b") == "http://a.example/c"
    assert rep(store, "http://a.example/c") == "http://a.example/c"


def test_loops_never_merge(store: EquivalenceStore) -> None:
    store.record_redirect("http://a.example/a", 301, "http://a.example/b")
    store.record_redirect("http://a.example/b", 301, "http://a.example/c")
    store.record_redirect("http://a.example/c", 301, "http://a.example/b")
    store.record_redirect("http://a.example/self", 301, "http://a.example/self")
    for url in ("http://a.example/a", "http://a.example/b", "http://a.example/c", "http://a.example/self"):
        resolution = store.resolve(url)
        assert resolution.representative == url and not resolution.merged
    assert "loop" in store.resolve("http://a.example/a").note


def test_chains_longer_than_the_limit_never_merge(make_store: Callable[..., EquivalenceStore]) -> None:
    store = make_store(max_chain=5)
    for i in range(7):
        store.record_redirect(f"http://a.example/c{i}", 301, f"http://a.example/c{i + 1}")
    assert rep(store, "http://a.example/c0") == "http://a.example/c0"
    assert "too long" in store.resolve("http://a.example/c0").note
    assert rep(store, "http://a.example/c2") == "http://a.example/c7"


@pytest.mark.parametrize("status", [302, 303, 307])
def test_temporary_and_see_other_never_merge(store: EquivalenceStore, status: int) -> None:
    outcome = store.record_redirect("http://a.example/today", status, "http://a.example/2026-11-22")
    assert not outcome.learned_alias
    assert rep(store, "http://a.example/today") == "http://a.example/today"


def test_a_temporary_redirect_or_a_document_ends_an_alias(store: EquivalenceStore) -> None:
    store.record_redirect("http://a.example/x", 301, "http://a.example/y")
    assert store.record_redirect("http://a.example/x", 302, "http://a.example/y").dropped_alias
    assert rep(store, "http://a.example/x") == "http://a.example/x"
    store.record_redirect("http://a.example/p", 301, "http://a.example/q")
    assert store.record_response("http://a.example/p", 200).dropped_alias
    assert rep(store, "http://a.example/p") == "http://a.example/p"


@pytest.mark.parametrize(
    "context",
    [
        context_flags(cookie=True),
        context_flags(authorization=True),
        context_flags(userinfo=True),
        context_flags(set_cookie=True),
        context_flags(vary=["Accept-Encoding, Cookie"]),
        context_flags(vary=["user-agent"]),
        context_flags(vary=["Accept-Language"]),
        context_flags(vary=["*"]),
        context_flags(method="POST"),
    ],
    ids=lambda flags: ",".join(sorted(flags)),
)
def test_context_dependent_redirects_teach_nothing(make_store: Callable[..., EquivalenceStore], context: frozenset[str]) -> None:
    store = make_store(min_observations=1)
    outcome = store.record_redirect("http://a.example/topic-1", 301, "http://a.example/topic-1/", context=context)
    assert not outcome.learned_alias and not outcome.activated
    assert rep(store, "http://a.example/topic-1") == "http://a.example/topic-1"
    assert rep(store, "http://a.example/topic-2") == "http://a.example/topic-2"
    assert "context-dependent" in next(store.evidence("http://a.example/topic-1")).note


def test_vary_on_encoding_is_harmless() -> None:
    assert context_flags(vary=["Accept-Encoding"]) == frozenset()


def test_cross_site_permanent_redirects_are_exact_aliases_source_to_target(make_store: Callable[..., EquivalenceStore]) -> None:
    store = make_store()
    store.record_redirect("http://old.example/x", 301, "http://new.example/x")
    assert rep(store, "http://old.example/x") == "http://new.example/x"
    assert rep(store, "http://new.example/x") == "http://new.example/x"  # never the reverse
    assert rep(store, "http://old.example/y") == "http://old.example/y"  # one URL, no rule


def test_cross_site_aliases_can_be_turned_off(make_store: Callable[..., EquivalenceStore]) -> None:
    store = make_store(cross_site_aliases=False)
    store.record_redirect("http://go.example/away?to=x", 301, "http://other.example/x")
    assert rep(store, "http://go.example/away?to=x") == "http://go.example/away?to=x"
    assert "another registrable domain" in next(store.evidence("http://other.example/x")).note


def test_an_open_redirector_teaches_nothing_about_the_site_it_points_to(make_store: Callable[..., EquivalenceStore]) -> None:
    store = make_store(min_observations=2)
    for i in range(1, 6):
        store.record_redirect(f"http://go.example/out?url=http://b.example/topic-{i}/", 301, f"http://b.example/topic-{i}/")
    assert not [r for r in store.rules() if "b.example" in r.key.origin]
    assert rep(store, "http://b.example/topic-9") == "http://b.example/topic-9"
    # each redirector URL merges into its own target, and nothing on b.example moves
    assert {(a.source, a.target) for a in store.aliases()} == {
        (f"http://go.example/out?url=http://b.example/topic-{i}/", f"http://b.example/topic-{i}/") for i in range(1, 6)
    }


# -- rules ----------------------------------------------------------------------


def test_a_rule_after_k_consistent_observations_applies_to_urls_never_fetched(store: EquivalenceStore) -> None:
    teach_slash(store, count=2)
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9"
    store.record_redirect("http://a.example/topic-3", 301, "http://a.example/topic-3/")
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9/"
    assert rep(store, "http://a.example/topic-9?page=2#x") == "http://a.example/topic-9/?page=2#x"
    resolution = store.resolve("http://a.example/topic-9")
    assert resolution.rules == (SLASH,)


def test_k_is_a_setting(make_store: Callable[..., EquivalenceStore]) -> None:
    store = make_store(min_observations=5)
    teach_slash(store, count=4)
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9"
    outcome = store.record_redirect("http://a.example/topic-5", 301, "http://a.example/topic-5/")
    assert outcome.activated == [SLASH]


def test_one_counterexample_suspends_a_rule_at_once(store: EquivalenceStore) -> None:
    teach_slash(store)
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9/"
    outcome = store.record_response("http://a.example/topic-7", 200)
    assert outcome.contradicted == [SLASH]
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9"
    teach_slash(store, count=3, start=10)  # more support does not bring it back
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9"
    assert store.rule_status(next(r for r in store.rules() if r.key == SLASH)) is RuleStatus.SUSPENDED


@pytest.mark.parametrize("status", [302, 307])
def test_a_temporary_redirect_of_the_predicted_kind_suspends(store: EquivalenceStore, status: int) -> None:
    teach_slash(store)
    assert store.record_redirect("http://a.example/topic-8", status, "http://a.example/topic-8/").contradicted
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9"


def test_a_rule_on_one_host_never_rewrites_another(store: EquivalenceStore) -> None:
    teach_slash(store)
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9/"
    for other in (
        "http://b.example/topic-9",
        "https://a.example/topic-9",  # another origin of the same host
        "http://www.a.example/topic-9",
        "http://sub.a.example/topic-9",
        "http://a.example:8080/topic-9",
    ):
        assert rep(store, other) == other


def test_a_lookup_sees_each_kind_of_rule_as_it_is_learned_and_forgotten(store: EquivalenceStore) -> None:
    # a lookup predicts only the conventions with a rule in force on the origin: held per origin,
    # so each one learned (or forgotten) after a lookup must count from the next lookup on
    index = "http://a.example/zz/index.html"
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9"
    teach_slash(store)
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9/"
    assert rep(store, index) == index
    for i in range(1, 4):
        store.record_redirect(f"http://a.example/area-{i}/index.html", 301, f"http://a.example/area-{i}/")
    assert rep(store, index) == "http://a.example/zz/"
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9/"
    store.forget_host("a.example")
    for url in (index, "http://a.example/topic-9"):
        assert rep(store, url) == url
    teach_slash(store, start=20)
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9/"
    assert rep(store, index) == index


@pytest.mark.parametrize(
    ("source", "target", "unseen", "expected"),
    [
        ("http://secure.example/doc-{}", "https://secure.example/doc-{}", "http://secure.example/x", "https://secure.example/x"),
        ("http://www.shop.example/{}", "http://shop.example/{}", "http://www.shop.example/x", "http://shop.example/x"),
        ("http://shop.example/{}", "http://www.shop.example/{}", "http://shop.example/x", "http://www.shop.example/x"),
        ("http://a.example/area-{}/index.html", "http://a.example/area-{}/", "http://a.example/zz/index.html", "http://a.example/zz/"),
        ("http://a.example/note-{}/", "http://a.example/note-{}", "http://a.example/note-77/", "http://a.example/note-77"),
        ("http://a.example/Page-{}", "http://a.example/page-{}", "http://a.example/Other", "http://a.example/other"),
        ("http://a.example/a%3A{}", "http://a.example/a:{}", "http://a.example/z%3Az", "http://a.example/z:z"),
    ],
)
def test_each_kind_is_learned(store: EquivalenceStore, source: str, target: str, unseen: str, expected: str) -> None:
    for i in range(1, 4):
        store.record_redirect(source.format(i), 301, target.format(i))
    assert rep(store, unseen) == expected


def test_www_apex_rules_stay_in_one_registrable_domain(make_store: Callable[..., EquivalenceStore]) -> None:
    store = make_store(min_observations=1)
    # www.github.io -> github.io crosses from a site to a public suffix: no rule, no alias
    store.record_redirect("http://www.github.io/x", 301, "http://github.io/x")
    store.record_redirect("http://www.co.uk/x", 301, "http://co.uk/x")
    assert not [r for r in store.rules() if r.key.kind in ("www-to-apex", "apex-to-www") and r.support]
    assert rep(store, "http://www.github.io/y") == "http://www.github.io/y"


def test_slash_twins_block_the_slash_rule(store: EquivalenceStore) -> None:
    """A host where /x and /x/ both answer 200 (different documents) never gets a slash rule there."""
    store.record_response("http://a.example/topic-5", 200)
    store.record_response("http://a.example/topic-5/", 200)
    teach_slash(store, count=5, start=10)
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9"
    assert rep(store, "http://a.example/topic-5") == "http://a.example/topic-5"
    # and a twin fetched after the rule was learned (a verification fetch) suspends it
    teach_slash(store, host="b.example")
    assert store.record_response("http://b.example/topic-8", 200).contradicted
    assert rep(store, "http://b.example/topic-9") == "http://b.example/topic-9"


def test_slash_rules_generalize_within_one_numbered_family(store: EquivalenceStore) -> None:
    teach_slash(store)
    assert rep(store, "http://a.example/both-1") == "http://a.example/both-1"
    assert rep(store, "http://a.example/about") == "http://a.example/about"


def test_sinks_block_rules_and_aliases(make_store: Callable[..., EquivalenceStore]) -> None:
    store = make_store(sink_fanin=3)
    teach_slash(store)
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9/"
    store.record_redirect("http://a.example/private/1", 301, "http://a.example/login?next=1")
    store.record_redirect("http://a.example/private/2", 301, "http://a.example/login?next=2")
    assert rep(store, "http://a.example/private/1") == "http://a.example/login?next=1"
    outcome = store.record_redirect("http://a.example/private/3", 301, "http://a.example/login?next=3")
    assert outcome.sink and outcome.contradicted == [SLASH]
    assert rep(store, "http://a.example/private/1") == "http://a.example/private/1"  # never into a sink
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9"  # the origin is blocked
    assert store.stats()["sinks"] == 1 and store.stats()["blocked_origins"] == 1


def test_rules_expire(make_store: Callable[..., EquivalenceStore], clock: Any) -> None:
    store = make_store(rule_ttl=100.0)
    teach_slash(store)
    clock.advance(50)
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9/"
    clock.advance(51)
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9"
    # a suspended rule may be learned again once its counterexample has expired
    teach_slash(store)
    store.record_response("http://a.example/topic-7", 200)
    clock.advance(101)
    teach_slash(store, start=20)
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9/"


def test_aliases_win_over_rules_and_compose_with_them(store: EquivalenceStore) -> None:
    for i in range(1, 4):
        store.record_redirect(f"http://secure.example/doc-{i}", 301, f"https://secure.example/doc-{i}")
        store.record_redirect(f"https://secure.example/topic-{i}", 301, f"https://secure.example/topic-{i}/")
    store.record_redirect("https://secure.example/old", 301, "https://secure.example/moved")
    assert rep(store, "http://secure.example/topic-9") == "https://secure.example/topic-9/"
    assert rep(store, "http://secure.example/old") == "https://secure.example/moved"
    assert [step.rule is None for step in store.resolve("http://secure.example/old").steps] == [False, True]


# -- deferred requests, explanations, listing, forgetting -------------------------


def test_deferred_urls_are_kept_per_rule(store: EquivalenceStore) -> None:
    other = RuleKey("http://a.example", "http-to-https")
    store.defer("http://a.example/topic-9", [SLASH, other])
    store.defer("http://a.example/topic-8", [SLASH])
    assert sorted(store.take_deferred(SLASH)) == ["http://a.example/topic-8", "http://a.example/topic-9"]
    assert store.take_deferred(SLASH) == []
    assert store.take_deferred(other) == ["http://a.example/topic-9"]


def test_explain(store: EquivalenceStore) -> None:
    teach_slash(store)
    store.record_redirect("http://a.example/topic-9/", 301, "http://a.example/new")
    explanation = store.explain("http://a.example/topic-9", "http://a.example/new")
    assert explanation.merged
    text = str(explanation)
    assert "rule http://a.example add-slash /topic-#" in text
    assert "exact alias (301" in text
    assert not store.explain("http://a.example/x", "http://a.example/y").merged
    assert store.explain("not a url").a.note == "not a valid URL"


def test_list_export_forget(store: EquivalenceStore) -> None:
    teach_slash(store)
    store.record_redirect("http://b.example/old", 301, "http://b.example/new")
    assert {a.source for a in store.aliases()} >= {"http://a.example/topic-1", "http://b.example/old"}
    exported = list(store.export(evidence=True))
    assert {e["type"] for e in exported} == {"alias", "rule", "evidence"}
    assert any(e["type"] == "rule" and e["status"] == "active" for e in exported)
    assert store.forget("http://b.example/old") == 2  # the alias and its evidence
    assert rep(store, "http://b.example/old") == "http://b.example/old"
    assert store.forget_host("a.example") > 0
    assert rep(store, "http://a.example/topic-9") == "http://a.example/topic-9"
    assert store.stats()["aliases"] == 0


def test_invalid_urls_are_ignored(store: EquivalenceStore) -> None:
    assert store.record_redirect("http://a.example:99999/", 301, "http://a.example/").ignored
    assert store.record_response("http://[::1/", 200).ignored
    with pytest.raises(ValueError):
        store.record_redirect("http://a.example/", 200, "http://a.example/x")
    with pytest.raises(ValueError):
        store.record_response("http://a.example/", 301)


def test_open_store_uris(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StoreError, match="unknown"):
        open_store("ftp://x")
    with pytest.raises(StoreError):
        open_store(f"sqlite:///{tmp_path}/missing.db", create=False)
    with open_store(f"sqlite:///{tmp_path}/sub/dir/new.db") as created:
        assert created.stats()["aliases"] == 0


def test_declared_case_predicts_only_the_case_a_server_redirected_to(store: EquivalenceStore) -> None:
    for i in range(1, 4):
        store.record_redirect(f"http://iis.example/docs/page-{i}", 301, f"http://iis.example/Docs/Page-{i}")
    assert rep(store, "http://iis.example/DOCS/PAGE-2") == "http://iis.example/Docs/Page-2"
    assert rep(store, "http://iis.example/DOCS/PAGE-9") == "http://iis.example/DOCS/PAGE-9"  # no known case
    assert rep(store, "http://other.example/DOCS/PAGE-2") == "http://other.example/DOCS/PAGE-2"
    # a case variant answering for itself is a different page: the rule stops
    assert store.record_response("http://iis.example/docs/PAGE-1", 200).contradicted
    assert rep(store, "http://iis.example/DOCS/PAGE-2") == "http://iis.example/DOCS/PAGE-2"


def teach_case(store: EquivalenceStore, host: str = "iis.example", pages: range = range(1, 4)) -> None:
    for i in pages:
        store.record_redirect(f"http://{host}/docs/page-{i}", 301, f"http://{host}/Docs/Page-{i}")


def test_a_document_declares_its_case_where_the_server_redirects_case_variants(store: EquivalenceStore) -> None:
    teach_case(store)
    store.record_response("http://iis.example/Docs/Page-7", 200)  # fetched before any variant of it
    assert rep(store, "http://iis.example/DOCS/PAGE-7") == "http://iis.example/Docs/Page-7"
    assert rep(store, "http://iis.example/docs/page-7") == "http://iis.example/Docs/Page-7"
    assert store.stats()["declared_cases"] == 1
    assert {"type": "case", "url": "http://iis.example/Docs/Page-7"} in list(store.export())
    # a variant redirected there confirms the rule; one answering for itself contradicts it
    outcome = store.record_redirect("http://iis.example/DOCS/PAGE-7", 301, "http://iis.example/Docs/Page-7")
    assert outcome.confirmed == [RuleKey("http://iis.example", "declared-case", "/docs/")]
    assert store.record_response("http://iis.example/docs/page-7", 200).contradicted
    assert rep(store, "http://iis.example/DOCS/page-7") == "http://iis.example/DOCS/page-7"
    assert rep(store, "http://iis.example/DOCS/PAGE-7") == "http://iis.example/Docs/Page-7"  # the 301 stays


def test_documents_declare_nothing_without_case_redirects_on_their_origin(store: EquivalenceStore) -> None:
    # before any case-only redirect, on another origin, or from a context-dependent answer
    store.record_response("http://iis.example/Docs/Page-7", 200)
    teach_case(store)
    teach_case(store, "other.example", range(1, 2))
    store.record_response("http://plain.example/Item-1", 200)
    store.record_response("http://other.example/Docs/Page-8", 200, context=context_flags(set_cookie=True))
    store.record_response("http://iis.example/Docs/Page-9", 404)
    assert store.stats()["declared_cases"] == 0
    assert rep(store, "http://iis.example/DOCS/PAGE-7") == "http://iis.example/DOCS/PAGE-7"
    assert rep(store, "http://plain.example/ITEM-1") == "http://plain.example/ITEM-1"


def test_a_case_already_known_is_not_redeclared(store: EquivalenceStore) -> None:
    """Two documents at two cases of one path: the first declares, the second contradicts."""
    teach_case(store)
    store.record_response("http://iis.example/docs/Item-1", 200)
    assert store.record_response("http://iis.example/docs/item-1", 200).contradicted
    assert [e["url"] for e in store.export() if e["type"] == "case"] == ["http://iis.example/docs/Item-1"]
    assert rep(store, "http://iis.example/docs/ITEM-1") == "http://iis.example/docs/ITEM-1"  # the rule is suspended
    # a suspended rule declares nothing more
    store.record_response("http://iis.example/Docs/Page-8", 200)
    assert store.stats()["declared_cases"] == 1


def test_declared_cases_are_forgotten(store: EquivalenceStore) -> None:
    teach_case(store)
    store.record_response("http://iis.example/Docs/Page-7", 200)
    store.record_response("http://iis.example/Docs/Page-8", 200)
    assert store.forget("http://iis.example/Docs/Page-7") == 1
    assert rep(store, "http://iis.example/DOCS/PAGE-7") == "http://iis.example/DOCS/PAGE-7"
    assert store.forget_host("iis.example") >= 2  # the rule and the other document
    assert store.stats()["declared_cases"] == 0


# -- review fixes -------------------------------------------------------------------


def test_sink_sources_are_told_apart_by_their_query(store: EquivalenceStore) -> None:
    """/item?id=1..10 -> /login are ten sources: /login is a sink, none of them an alias of it."""
    for k in range(1, 11):
        store.record_redirect(f"http://shop.example/item?id={k}", 301, "http://shop.example/login?next=x")
    assert store.stats()["sinks"] == 1
    for k in range(1, 11):
        assert rep(store, f"http://shop.example/item?id={k}") == f"http://shop.example/item?id={k}"


def test_userinfo_never_makes_an_alias_even_without_context(store: EquivalenceStore) -> None:
    assert not store.record_redirect("http://u:p@a.example/old", 301, "http://a.example/new").learned_alias
    assert not store.record_redirect("http://a.example/old2", 301, "http://u@a.example/new").learned_alias
    assert store.stats()["aliases"] == 0
    for i in (1, 2, 3):
        store.record_redirect(f"http://u@a.example/topic-{i}", 301, f"http://u@a.example/topic-{i}/")
    assert rep(store, "http://u@a.example/topic-9") == "http://u@a.example/topic-9"


def test_a_dropped_case_alias_forgets_its_case(store: EquivalenceStore) -> None:
    from scrapy_iri.store._rules import case_key

    store.record_redirect("http://a.example/DOCS", 301, "http://a.example/Docs")
    store.record_redirect("http://a.example/docs", 301, "http://a.example/Docs")
    key = case_key("http://a.example/Docs")
    store.record_response("http://a.example/DOCS", 200)
    assert store.storage.case_target(key) == "http://a.example/Docs"  # /docs still declares it
    store.record_response("http://a.example/docs", 200)
    assert store.storage.case_target(key) is None


# -- rules scoped to their evidence -------------------------------------------------


def test_case_rules_stay_in_the_directory_they_were_learned_in(store: EquivalenceStore) -> None:
    """Three case redirects under /~alice/ say nothing about /~bob/ (two files on a Unix server)."""
    for name in ("Foo", "Bar", "Baz"):
        store.record_redirect(f"http://home.example/~alice/{name}", 301, f"http://home.example/~alice/{name.lower()}")
    assert rep(store, "http://home.example/~alice/Qux") == "http://home.example/~alice/qux"
    assert rep(store, "http://home.example/~bob/Report") == "http://home.example/~bob/Report"
    assert rep(store, "http://home.example/Report") == "http://home.example/Report"


def test_escape_rules_stay_in_their_directory(store: EquivalenceStore) -> None:
    for k in (1, 2, 3):
        store.record_redirect(f"http://esc.example/wiki/a%3Ab{k}", 301, f"http://esc.example/wiki/a:b{k}")
    assert rep(store, "http://esc.example/wiki/x%3Ay") == "http://esc.example/wiki/x:y"
    assert rep(store, "http://esc.example/files/x%3Ay") == "http://esc.example/files/x%3Ay"


def test_server_wide_rules_generalize_once_three_directories_agree(store: EquivalenceStore) -> None:
    store.record_redirect("http://tls.example/a/1", 301, "https://tls.example/a/1")
    store.record_redirect("http://tls.example/b/1", 301, "https://tls.example/b/1")
    assert rep(store, "http://tls.example/z/9") == "http://tls.example/z/9"  # two directories: not yet
    store.record_redirect("http://tls.example/c/1", 301, "https://tls.example/c/1")
    assert rep(store, "http://tls.example/z/9") == "https://tls.example/z/9"
    assert rep(store, "http://tls.example/top") == "https://tls.example/top"


def test_one_directory_that_disagrees_stops_the_origin_wide_rule(store: EquivalenceStore) -> None:
    for d in ("a", "b", "c"):
        store.record_redirect(f"http://half.example/{d}/1", 301, f"https://half.example/{d}/1")
    assert rep(store, "http://half.example/legacy/page") == "https://half.example/legacy/page"
    outcome = store.record_response("http://half.example/legacy/other", 200)  # http answers there
    assert RuleKey("http://half.example", "http-to-https", "*") in outcome.contradicted
    assert rep(store, "http://half.example/legacy/page") == "http://half.example/legacy/page"
    assert rep(store, "http://half.example/new/page") == "http://half.example/new/page"


# -- site boundaries ------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["0300.0250.0.1", "0xc0.0xa8.0.1", "3232235521", "192.168.1", "192.168.0.1"])
def test_an_ipv4_host_is_one_site_in_any_spelling(spelling: str) -> None:
    from scrapy_iri.store._psl import same_site, site_of

    assert site_of(spelling) == "192.168.0.1"
    assert same_site(spelling, "192.168.0.1")
    assert not same_site(spelling, "012.0.0.1")  # 10.0.0.1: another address, another site


def test_no_rule_is_learned_or_applied_on_ip_hosts(store: EquivalenceStore) -> None:
    for k in (1, 2, 3):
        store.record_redirect(f"http://0300.0250.0.1/d-{k}", 301, f"http://0300.0250.0.1/d-{k}/")
    assert rep(store, "http://0300.0250.0.1/d-1") == "http://0300.0250.0.1/d-1/"  # the exact alias
    assert rep(store, "http://0300.0250.0.1/d-9") == "http://0300.0250.0.1/d-9"
    assert not list(store.rules())


def test_ipv4_spellings_of_two_addresses_are_two_sites(make_store: Callable[..., EquivalenceStore]) -> None:
    """0300.0250.0.1 (192.168.0.1) and 012.0.0.1 (10.0.0.1) once counted as one site ("0.1")."""
    store = make_store(cross_site_aliases=False)
    store.record_redirect("http://0300.0250.0.1/old", 301, "http://012.0.0.1/new")
    assert rep(store, "http://0300.0250.0.1/old") == "http://0300.0250.0.1/old"  # cross-site: evidence only
    assert "another registrable domain" in next(store.evidence("http://012.0.0.1/new")).note


def test_a_uri_without_a_host_teaches_nothing(store: EquivalenceStore) -> None:
    assert store.record_redirect("mailto:a@b.example", 301, "mailto:c@b.example").ignored
    assert store.record_redirect("http://a.example/contact", 301, "mailto:c@a.example").ignored
    assert rep(store, "http://a.example/contact") == "http://a.example/contact"
    assert not list(store.aliases())


@pytest.mark.parametrize(
    "spelling", ["/login;jsessionid={k}", "/login/", "/LOGIN", "/Login;jsessionid={k}?next=/p-{k}"]
)
def test_a_sink_is_one_page_whatever_its_spelling(store: EquivalenceStore, spelling: str) -> None:
    fanin = store.policy.sink_fanin
    for k in range(fanin):
        store.record_redirect(f"http://s.example/p-{k}", 301, "http://s.example" + spelling.format(k=k))
    assert store.stats()["sinks"] == 1
    target = "http://s.example" + spelling.format(k=fanin)
    store.record_redirect(f"http://s.example/p-{fanin}", 301, target)
    assert rep(store, f"http://s.example/p-{fanin}") == f"http://s.example/p-{fanin}"


def test_spelling_fixes_into_one_page_are_no_sink(store: EquivalenceStore) -> None:
    """Every alias spelling of a docs index redirects to it: one page, not a login sink."""
    target = "https://docs.example/docs/15/"
    for source in (
        "http://docs.example/docs/15/",
        "http://www.docs.example/docs/15/",
        "https://www.docs.example/docs/15/index.html",
        "https://docs.example/docs/15/index.html",
        "https://docs.example/docs/15",
        "http://docs.example/Docs/15/Index.html",
    ):
        store.record_redirect(source, 301, target)
    assert store.stats()["sinks"] == 0
    assert rep(store, "https://docs.example/docs/15/index.html") == target
