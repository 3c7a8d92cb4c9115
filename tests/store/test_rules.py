"""Rule kinds as a table: what each convention covers and predicts, how evidence is judged."""

from __future__ import annotations

import pytest

from scrapy_iri.store._psl import registrable_domain, same_site, www_partner
from scrapy_iri.store._rules import (
    KINDS,
    LearningPolicy,
    RuleKey,
    RuleRecord,
    RuleStatus,
    Verdict,
    judge,
    path_template,
    predict,
    predictions,
)

# url -> {kind: (scope, predicted)} for every kind that covers it
PREDICTIONS = {
    "http://a.example/topic-1": {
        "http-to-https": ("/", "https://a.example/topic-1"),
        "apex-to-www": ("/", "http://www.a.example/topic-1"),
        "add-slash": ("/topic-#", "http://a.example/topic-1/"),
    },
    "https://www.a.example/note-2/?q=1": {
        "www-to-apex": ("/note-2/", "https://a.example/note-2/?q=1"),
        "remove-slash": ("/note-#/", "https://www.a.example/note-2?q=1"),
    },
    "https://a.example:8443/area-3/index.html": {
        "index-to-directory": ("/area-3/ index.html", "https://a.example:8443/area-3/"),
        "add-slash": ("/area-#/index.html", "https://a.example:8443/area-3/index.html/"),
    },
    "https://sub.a.example/Docs/About": {
        "lowercase-path": ("/docs/", "https://sub.a.example/docs/about"),
    },
    "https://sub.a.example/a%3Ab%2Fc": {
        "decode-reserved": ("/ %3A", "https://sub.a.example/a:b%2Fc"),
    },
    "https://sub.a.example/a:b,c": {
        "encode-reserved": ("/ ,:", "https://sub.a.example/a%3Ab%2Cc"),
    },
    # paths without digits are not a family: slash rules never cover them
    "https://sub.a.example/about": {},
    # userinfo and other schemes: no rules at all
    "http://user@a.example/topic-1": {},
    "ftp://a.example/topic-1": {},
}


@pytest.mark.parametrize("url", PREDICTIONS)
def test_predictions(url: str) -> None:
    found = {p.key.kind: (p.key.scope, p.target) for p in predictions(url)}
    assert found == PREDICTIONS[url]


def test_kinds_are_a_table_with_unique_names() -> None:
    names = [kind.name for kind in KINDS]
    assert len(names) == len(set(names))
    assert all(kind.summary for kind in KINDS)


def test_predict_only_inside_the_rule_origin_and_scope() -> None:
    rule = RuleKey("http://a.example", "add-slash", "/topic-#")
    assert predict("http://a.example/topic-9", rule) == "http://a.example/topic-9/"
    assert predict("http://b.example/topic-9", rule) is None  # another host
    assert predict("https://a.example/topic-9", rule) is None  # another origin
    assert predict("http://www.a.example/topic-9", rule) is None
    assert predict("http://a.example/both-9", rule) is None  # another template


def test_path_template() -> None:
    assert path_template("/2024/05/post-17/") == "/#/#/post-#/"
    assert path_template("/about") == "/about"
    assert path_template("/a%31b-2/%2F3") == "/a%31b-#/%2F#"  # digits of escapes stay


def test_predictions_of_a_hostile_url_are_those_of_any_url_and_not_kept() -> None:
    """The learner remembers predictions of URLs up to CACHED_LENGTH characters; longer ones are
    computed each time, alike, and never held."""
    from scrapy_iri.store._forms import CACHED_LENGTH
    from scrapy_iri.store._rules import _known_free

    _known_free.cache_clear()
    for length in (CACHED_LENGTH - 100, CACHED_LENGTH + 100, 1_000_000):
        segment = "x" * (length - len("http://a.example/Topic-1/"))
        url = f"http://a.example/Topic-1/{segment}"
        found = {p.key.kind: (p.key.scope, p.target) for p in predictions(url)}
        assert found == {
            "http-to-https": ("/Topic-1/", f"https://a.example/Topic-1/{segment}"),
            "apex-to-www": ("/Topic-1/", f"http://www.a.example/Topic-1/{segment}"),
            "add-slash": (f"/Topic-#/{segment}", f"{url}/"),
            "lowercase-path": ("/topic-1/", f"http://a.example/topic-1/{segment}"),
        }
        assert found == {p.key.kind: (p.key.scope, p.target) for p in predictions(url)}  # asked again
    assert _known_free.cache_info().currsize == 1  # the short one only


def test_rule_key_round_trip() -> None:
    for key in (RuleKey("http://a.example", "add-slash", "/t-#"), RuleKey("https://a.example", "http-to-https")):
        assert RuleKey.parse(str(key)) == key


@pytest.mark.parametrize(
    ("status", "target", "trusted", "verdict"),
    [
        (301, "http://a.example/x/", True, Verdict.SUPPORT),
        (308, "http://a.example/x/", True, Verdict.SUPPORT),
        (301, "http://a.example/x/", False, Verdict.NEUTRAL),  # cookies, sink: never support
        (301, "http://a.example/elsewhere", True, Verdict.AGAINST),
        (302, "http://a.example/x/", True, Verdict.AGAINST),  # temporary: never a merge
        (307, "http://a.example/x/", True, Verdict.AGAINST),
        (303, "http://a.example/x/", True, Verdict.AGAINST),
        (200, None, True, Verdict.AGAINST),  # a document at the unrewritten URL
        (204, None, True, Verdict.AGAINST),
        (404, None, True, Verdict.NEUTRAL),
        (503, None, True, Verdict.NEUTRAL),
    ],
)
def test_judge(status: int, target: str | None, trusted: bool, verdict: Verdict) -> None:
    assert judge("http://a.example/x/", status, target, trusted=trusted) is verdict


def test_rule_life_k_observations_then_suspension_then_expiry() -> None:
    policy = LearningPolicy(min_observations=2, rule_ttl=100.0)
    record = RuleRecord(RuleKey("http://a.example", "add-slash", "/t-#"))
    record.add(Verdict.SUPPORT, 10.0, "1")
    assert record.status(policy, 10.0) is RuleStatus.CANDIDATE
    record.add(Verdict.SUPPORT, 20.0, "2")
    assert record.status(policy, 20.0) is RuleStatus.ACTIVE
    assert record.status(policy, 121.0) is RuleStatus.CANDIDATE  # support expired
    record.add(Verdict.AGAINST, 30.0, "counterexample")
    assert record.status(policy, 30.0) is RuleStatus.SUSPENDED
    record.add(Verdict.SUPPORT, 40.0, "3")
    assert record.status(policy, 40.0) is RuleStatus.SUSPENDED  # one counterexample is enough
    record.expire(policy, 131.0)  # the counterexample is forgotten: learning starts afresh
    assert (record.support, record.against) == (0, 0)


@pytest.mark.parametrize("bad", [{"min_observations": 0}, {"sink_fanin": 1}, {"max_chain": 0}, {"rule_ttl": 0}])
def test_policy_is_checked(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        LearningPolicy(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("host", "partner"),
    [
        ("www.example.com", "example.com"),
        ("example.com", "www.example.com"),
        ("www.example.co.uk", "example.co.uk"),
        ("www.co.uk", None),  # the apex would be a public suffix
        ("co.uk", None),
        ("www.github.io", None),  # github.io is a (private) public suffix
        ("blog.example.com", None),  # not an apex
        ("127.0.0.1", None),
        ("localhost", None),
    ],
)
def test_www_partner_stays_in_one_registrable_domain(host: str, partner: str | None) -> None:
    assert www_partner(host) == partner


def test_sites() -> None:
    assert registrable_domain("a.b.example.co.uk") == "example.co.uk"
    assert same_site("www.example.com", "shop.example.com")
    assert not same_site("example.com", "example.org")
    assert not same_site("user1.github.io", "user2.github.io")
    assert same_site("127.0.0.1", "127.0.0.1")
    assert not same_site("127.0.0.1", "127.0.0.2")


def test_path_prefix_is_the_first_level_directory() -> None:
    from scrapy_iri.store._rules import path_prefix

    assert path_prefix("/~alice/Foo") == "/~alice/"
    assert path_prefix("/~alice/a/b/C") == "/~alice/"
    assert path_prefix("/Foo") == "/"
    assert path_prefix("/") == "/"
    assert path_prefix("") == "/"


def test_a_generalized_rule_predicts_under_every_directory() -> None:
    wide = RuleKey("http://a.example", "http-to-https", "*")
    assert predict("http://a.example/x/y", wide) == "https://a.example/x/y"
    assert predict("http://a.example/", wide) == "https://a.example/"
    index = RuleKey("http://a.example", "index-to-directory", "* index.html")
    assert predict("http://a.example/b/index.html", index) == "http://a.example/b/"
    assert predict("http://a.example/b/index.htm", index) is None
    # case rules never generalize beyond their directory
    assert predict("http://a.example/x/Y", RuleKey("http://a.example", "lowercase-path", "*")) is None
