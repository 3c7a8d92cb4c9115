"""The store's shortcuts on its hot paths agree with the full split they stand for."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from scrapy_iri.store._forms import origin_of, split_form
from scrapy_iri.store._rules import case_key, is_case_change

#: the characters that decide how a URL splits, and a few others
_PIECES = st.sampled_from(["http", "https", "x", ":", "/", "//", "?", "#", "@", "a", "B", "%2F", "[::1]", ":80", ".", "é"])
URLISH = st.lists(_PIECES, max_size=12).map("".join)
FORMS = st.builds(
    lambda scheme, host, path, query: f"{scheme}://{host}{path}{query}",
    st.sampled_from(["http", "https", "ftp"]),
    st.sampled_from(["a.example", "u@b.example:8080", "[::1]", "WWW.c.example", ""]),
    st.lists(st.sampled_from(["/", "Docs", "docs", "a%2Fb", "x.html", "Ü"]), max_size=5).map("".join),
    st.sampled_from(["", "?", "?q=1", "?Q=A/B"]),
)


@given(st.one_of(URLISH, FORMS))
def test_origin_of_is_the_origin_of_the_split(url: str) -> None:
    assert origin_of(url) == split_form(url).origin


@given(FORMS, FORMS)
def test_the_quick_case_check_agrees_with_case_keys(a: str, b: str) -> None:
    assert is_case_change(a, b) == (a != b and case_key(a) == case_key(b))


@given(FORMS)
def test_a_path_in_another_case_is_a_case_change(url: str) -> None:
    form = split_form(url)
    other = form._replace(path=form.path.swapcase()).unsplit()
    assert is_case_change(url, other) == (other != url)


def test_examples() -> None:
    assert origin_of("http://a.example/x?y#z") == "http://a.example"
    assert origin_of("mailto:someone@a.example") == "mailto:"
    assert is_case_change("http://a.example/Docs/A", "http://a.example/docs/a")
    assert not is_case_change("http://a.example/docs?Q=1", "http://a.example/docs?q=1")  # the query is not the path
    assert not is_case_change("http://a.example/docs", "http://a.example/docs")  # no change at all
