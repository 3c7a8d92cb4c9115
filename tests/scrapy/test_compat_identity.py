"""Scrapy's present identity, the opt-in for migrating users, and what it merges wrongly."""

from __future__ import annotations

from scrapy_iri.scrapy._compat import identity_changes, scrapy_identity


def test_documented_false_merges_of_scrapys_identity():
    changes = identity_changes(
        [
            "http://faß.example/",
            "http://fass.example/",
            "http://a.example/?a=1&b=2",
            "http://a.example/?b=2&a=1",
            "http://a.example/p?",
            "http://a.example/p",
            "http://a.example/q?a",
            "http://a.example/q?a=",
        ]
    )
    assert sorted(changes.false_merges) == [
        ["http://a.example/?a=1&b=2", "http://a.example/?b=2&a=1"],
        ["http://a.example/p", "http://a.example/p?"],
        ["http://a.example/q?a", "http://a.example/q?a="],
        ["http://fass.example/", "http://faß.example/"],
    ]
    assert changes.new_merges == [] and changes.invalid == []


def test_merges_the_ladder_adds():
    changes = identity_changes(
        ["http://a.example:80/x", "http://a.example/x", "http://b%C3%BCcher.example/", "http://bücher.example/"]
    )
    assert sorted(changes.new_merges) == [
        ["http://a.example/x", "http://a.example:80/x"],
        ["http://b%C3%BCcher.example/", "http://bücher.example/"],
    ]
    assert changes.false_merges == []


def test_urls_neither_identity_can_read_are_listed():
    changes = identity_changes(["http://[bad", "http://ok.example/"])
    assert changes.invalid == ["http://[bad"]
    assert scrapy_identity("http://[bad") == "http://[bad"
