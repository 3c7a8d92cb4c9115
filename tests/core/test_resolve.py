"""Reference resolution: RFC 3986 sec. 5.4 and the oxiri strict vectors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from corpora import corpus_params

from scrapy_iri import IRIError, canonicalize, parse, resolve
from scrapy_iri._resolve import remove_dot_segments

RFC = "conformance/rfc3986_5.4_resolution_examples.json"
OXIRI = "conformance/oxiri_iri_tests.json"


@pytest.mark.parametrize(
    "case", corpus_params(RFC, lambda d: d["cases"], ids=lambda c: f"{c['section']}:{c['ref']}")
)
def test_rfc3986_section_5_4(case):
    # 'http:g' resolves strictly to 'http:g' (the RFC's alternative is for backward-compatible parsers)
    assert resolve(case["base"], case["ref"]) == case["expected"]


def test_rfc3986_has_all_42_examples():
    cases = corpus_params(RFC, lambda d: d["cases"])
    if len(cases) == 1 and cases[0].marks:
        pytest.skip("corpus absent")
    assert len(cases) == 42


@pytest.mark.parametrize(
    "case",
    corpus_params(OXIRI, lambda d: d["groups"]["resolution_strict"]["cases"], ids=lambda c: f"{c['base']}|{c['ref']}"),
)
def test_oxiri_strict_resolution(case):
    assert resolve(case["base"], case["ref"]) == case["expected"]


# oxiri refuses a target path that starts with "//" without an authority;
# scrapy-iri writes it "/.//" instead, as canonicalize does (see below).
OXIRI_SLASH_SLASH = {("x:", ".///C:::"): "x:/.//C:::"}


@pytest.mark.parametrize(
    "case", corpus_params(OXIRI, lambda d: d["groups"]["invalid_resolution_pairs"]["cases"], ids=lambda c: f"{c['base']}|{c['ref']}")
)
def test_oxiri_invalid_resolution_pairs_raise(case):
    expected = OXIRI_SLASH_SLASH.get((case["base"], case["ref"]))
    if expected is not None:
        assert resolve(case["base"], case["ref"]) == expected
        return
    with pytest.raises(IRIError):
        resolve(case["base"], case["ref"])


@pytest.mark.parametrize(
    "base, ref, expected",
    [
        # RFC 3986 5.2.2: an empty reference path keeps the base path; a rootless
        # (opaque) path is not touched, so the target is the same document (4.4).
        ("urn:example:a/../b", "#x", "urn:example:a/../b#x"),
        ("urn:example:a/../b", "", "urn:example:a/../b"),
        ("urn:example:a/../b", "?q", "urn:example:a/../b?q"),
        ("mailto:a@b/./c", "#f", "mailto:a@b/./c#f"),
        # a path starting with "/": its dot segments go, which the syntax rung equates anyway
        ("http://a/b/../c", "#x", "http://a/c#x"),
    ],
)
def test_empty_reference_path_keeps_the_base_path(base, ref, expected):
    assert resolve(base, ref) == expected


@pytest.mark.parametrize(
    "base, ref, expected",
    [
        # RFC 3986 3.3: without an authority a path cannot begin with "//"; 5.2.4 can
        # make one. Both resolve and the syntax rung write it "/.//" (a dot segment,
        # so removing dot segments again gives the same path).
        ("a:/", "/.//.", "a:/.//"),
        ("a:/", "/..//x", "a:/.//x"),
        ("x:", ".///C:::", "x:/.//C:::"),
        ("a:/b", "..//x", "a:/.//x"),
    ],
)
def test_double_slash_path_without_authority(base, ref, expected):
    assert resolve(base, ref) == expected
    assert canonicalize(expected, "syntax") == expected  # the syntax form of the target is itself
    assert resolve(expected, "") == expected  # stable


@pytest.mark.parametrize("iri", ["a:/.//.", "a:/..//x", "foo:/.//x/./y"])
def test_resolve_and_syntax_rung_agree_on_double_slash_paths(iri):
    # one behaviour for both (RFC 3986 5.2.4 and 3.3): resolving the IRI against
    # itself and its syntax form give the same path.
    assert canonicalize(resolve(iri, ""), "syntax") == canonicalize(iri, "syntax")
    assert resolve("a:/", parse(iri).path).endswith(canonicalize(iri, "syntax").split(":", 1)[1])


def test_same_document_reference_stays_the_same_document():
    # RFC 3986 4.4: "#frag" against any base names the base document.
    for base in ["urn:example:a/../b", "http://a/b/c?q", "foo:x/./y", "tag:a,2000:/../x"]:
        target = resolve(base, "#frag")
        assert canonicalize(target, "syntax", keep_fragment=False) == canonicalize(base, "syntax", keep_fragment=False)


@pytest.mark.parametrize(
    "path, expected",
    [
        # RFC 3986 5.2.4's two worked examples
        ("/a/b/c/./../../g", "/a/g"),
        ("mid/content=5/../6", "mid/6"),
        ("/../a", "/a"),
        ("/a/..", "/"),
        ("/a/.", "/a/"),
        ("/a/%2E%2E/b", "/a/%2E%2E/b"),  # escapes are not dot segments until decoded
        ("/a/..b/.c", "/a/..b/.c"),
        ("", ""),
    ],
)
def test_remove_dot_segments(path, expected):
    assert remove_dot_segments(path) == expected


def test_resolution_keeps_iri_characters():
    # 3987bis 6.5: resolution works on IRIs directly; nothing is mapped to a URI.
    assert resolve("http://example.org/dir/", "résumé?q=ü#é") == "http://example.org/dir/résumé?q=ü#é"


def test_relative_base_is_rejected():
    with pytest.raises(IRIError, match="scheme"):
        resolve("/just/a/path", "x")


def test_base_fragment_is_ignored_and_ref_fragment_kept():
    assert resolve("http://a/b#f", "#g") == "http://a/b#g"
    assert resolve("http://a/b?q#f", "") == "http://a/b?q"


def _remove_dot_segments_as_written(path: str) -> str:
    """RFC 3986 5.2.4 transcribed literally (string slicing, quadratic): the reference."""
    output = ""
    rest = path
    while rest:
        if rest.startswith("../"):
            rest = rest[3:]
        elif rest.startswith("./"):
            rest = rest[2:]
        elif rest.startswith("/./"):
            rest = "/" + rest[3:]
        elif rest == "/.":
            rest = "/"
        elif rest.startswith("/../") or rest == "/..":
            rest = "/" + rest[4:]
            output = output[: max(output.rfind("/"), 0)]
        elif rest in (".", ".."):
            rest = ""
        else:
            cut = rest.find("/", 1)
            cut = len(rest) if cut < 0 else cut
            output, rest = output + rest[:cut], rest[cut:]
    return output


@settings(max_examples=3000)
@given(st.lists(st.sampled_from(["", ".", "..", "a", "b.", ".c", "...", "%2E"]), max_size=12), st.booleans())
def test_remove_dot_segments_matches_the_rfc_text(segments, absolute):
    path = ("/" if absolute else "") + "/".join(segments)
    assert remove_dot_segments(path) == _remove_dot_segments_as_written(path)


def test_remove_dot_segments_is_linear_enough_for_huge_paths():
    path = "/b/.." * 200_000 + "/x"  # 1.2 MB: the slicing version takes seconds
    assert remove_dot_segments(path) == "/x"


@pytest.mark.parametrize(
    "base, reference, expected",
    [
        # 3987bis 7.2 step 5 reads '\' as '/' in the paths of web schemes only: a
        # relative reference has its base's scheme
        ("http://a/x", "b\\c", "http://a/b/c"),
        ("HTTPS://a/x", "\\\\h\\p", "HTTPS://h/p"),
        ("file:///a/x", "b\\c", "file:///a/b/c"),
        ("foo://a/x", "b\\c", "foo://a/b%5Cc"),
        ("foo://a/x", "\\\\h\\p", "foo://a/%5C%5Ch%5Cp"),
        ("urn:x", "/b\\c?d\\e", "urn:/b%5Cc?d%5Ce"),
        ("foo://a/x", "http:\\\\h\\p", "http://h/p"),  # a scheme of its own decides
        ("http://a/x", "foo:b\\c", "foo:b%5Cc"),
    ],
)
def test_lenient_backslashes_follow_the_scheme_of_the_base(base, reference, expected):
    assert resolve(base, reference, lenient=True) == expected


@pytest.mark.parametrize("base", ["foo://a/x/y", "urn:a:b", "svn+ssh://h/r/"])
@pytest.mark.parametrize("reference", ["b\\c", "\\\\h\\p", "../b\\c", "b\\..\\c"])
def test_lenient_backslashes_never_merge_under_non_web_bases(base, reference):
    assert resolve(base, reference, lenient=True) != resolve(base, reference.replace("\\", "/"), lenient=True)


def test_lenient_errors_in_references_point_into_the_reference():
    with pytest.raises(IRIError) as info:
        resolve("foo://a/x", "  //u@v@[::1/x", lenient=True)  # the userinfo becomes 'u%40v'
    assert (info.value.component, info.value.position) == ("host", 8)


def test_errors_say_whether_their_position_is_in_the_base_or_the_reference():
    with pytest.raises(IRIError) as info:
        resolve("http://a b/", "c")
    assert (str(info.value), info.value.position) == ("host: in the base: character U+0020 not allowed at position 8", 8)
    with pytest.raises(IRIError) as info:
        resolve("http://ab/", "c d")
    assert (info.value.reason, info.value.position) == ("character U+0020 not allowed", 1)
