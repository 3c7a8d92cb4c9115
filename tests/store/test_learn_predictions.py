"""The bulk learner's predictions: :func:`known_free` answers what :func:`predictions` computes.

Learning in bulk asks, for every observed URL, which rules cover it and what
each predicts; it remembers each origin's host-wide conventions instead of
deriving them per URL. Whatever the URL (ports, userinfo, IP hosts, ``www.``
partners, default documents, numbered families, case, escapes, queries,
fragments, other schemes), the answer must be the reference's, key for key
and target for target.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_iri.store._forms import scheme_form
from scrapy_iri.store._rules import RuleKey, _known_free, known_free, predictions

HOSTS = [
    "a.example", "www.a.example", "b.example:8080", "www.b.example:443", "10.0.0.1", "0x7f.1", "[::1]",
    "user@a.example", "u:p@www.a.example", "www.co.uk", "WWW.x.example", "www.example", "shop.co.uk",
    "xn--bcher-kva.example", "www.xn--bcher-kva.example", "localhost", "www.localhost", "",
]  # fmt: skip
SEGMENTS = [
    "", "x", "X", "index.html", "INDEX.HTML", "index.php", "default.aspx", "Item-1", "item-22", "a%3Ab", "a:b",
    "%41", "%2f3", "a;b=1", "~al", "docs", "Docs", "12", "%2F3", "%C3%A9", "a@b", "*", "!$&'()*+,;=",
]  # fmt: skip


def _same(url: str) -> None:
    fast, reference = known_free(url), _known_free(url)
    assert fast == reference, url
    if fast is not None:  # the same kinds of objects: keys print and compare as the reference's
        assert all(type(p.key) is RuleKey and type(p.target) is str for part in fast for p in part)
        assert [str(p.key) for part in fast for p in part] == [str(p.key) for part in reference for p in part]


def _url(rng: random.Random) -> str:
    path = "/".join(rng.choice(SEGMENTS) for _ in range(rng.randrange(0, 5)))
    if rng.random() < 0.9:
        path = "/" + path
    query = "" if rng.random() < 0.7 else "?" + rng.choice(["a=1", "", "x/y?z", "A%3A", "q=Item-1"])
    fragment = "" if rng.random() < 0.95 else "#f"
    scheme = rng.choice(["http", "https", "ftp", "HTTP", "ws", ""])
    return f"{scheme}{rng.choice(['://', '://', ':'])}{rng.choice(HOSTS)}{path}{query}{fragment}"


def test_known_free_is_the_reference_on_generated_urls() -> None:
    rng = random.Random(20)
    checked = 0
    for _ in range(20_000):
        url = _url(rng)
        for form in (url, scheme_form(url)):
            if form is not None:
                _same(form)
                checked += 1
    assert checked > 30_000


def test_known_free_covers_every_kind_the_reference_predicts() -> None:
    """The generated URLs reach every convention that needs nothing known (a test that could not fail otherwise)."""
    rng = random.Random(21)
    kinds = set()
    for _ in range(20_000):
        form = scheme_form(_url(rng))
        if form is not None:
            kinds.update(p.key.kind for p in predictions(form))
    assert kinds == {
        "http-to-https", "www-to-apex", "apex-to-www", "index-to-directory", "add-slash", "remove-slash",
        "lowercase-path", "decode-reserved", "encode-reserved",
    }  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="htps:/w.aexmpl%3AB;?#=@[]1:8-_~iIndx", max_size=60))
def test_known_free_is_the_reference_on_any_string(text: str) -> None:
    _same(text)
    form = scheme_form(text)
    if form is not None:
        _same(form)


def test_a_hostile_length_costs_one_pass() -> None:
    """A 1 MB path is predicted like a short one (nothing about it is kept)."""
    url = "http://www.a.example/Docs/" + "p1" * 500_000 + "/index.html"
    _same(url)
