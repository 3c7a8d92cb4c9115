"""scrapy_iri.arrow: the batch kernel agrees with canonicalize and the local engine, row by row."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest
from corpora import corpus_path
from hypothesis import given
from hypothesis import strategies as st

from scrapy_iri import IRIError, canonicalize
from scrapy_iri.graph import _arrow as arrow
from scrapy_iri.arrow import alias_table, canonicalize_array, canonicalize_edges, normalize_batch
from scrapy_iri.graph import GraphNormalizer


def expected(url, **options):
    try:
        return canonicalize(url, **options), None
    except IRIError as exc:
        return None, str(exc)


@pytest.mark.parametrize("options", [{}, {"keep_fragment": False, "lenient": True}, {"rung": "syntax"}])
def test_canonicalize_array_equals_canonicalize_on_the_real_corpus(options):
    urls = corpus_path("realworld/ada_kasztp.txt").read_text(encoding="utf-8-sig").splitlines()[:5000]
    rung = options.get("rung", "scheme")
    flags = {k: v for k, v in options.items() if k != "rung"}
    canon, errors = canonicalize_array(pa.array(urls), rung, **flags)
    assert len(canon) == len(errors) == len(urls)
    got = list(zip(canon.to_pylist(), errors.to_pylist()))
    assert got == [expected(url, rung=rung, **flags) for url in urls]


@given(st.lists(st.one_of(st.none(), st.text(max_size=40), st.sampled_from(["http://A/%7e#f", "HTTP://faß.de:80"]))))
def test_canonicalize_array_on_any_strings(values):
    canon, errors = canonicalize_array(pa.array(values, pa.string()), keep_fragment=False, lenient=True)
    for value, c, e in zip(values, canon.to_pylist(), errors.to_pylist()):
        assert (c is None) != (e is None)  # exactly one of them
        if value is None:
            assert e == "missing (null)"
        elif c is not None:
            assert c == canonicalize(value, keep_fragment=False, lenient=True)


def test_chunked_and_large_string_arrays_and_wrong_types():
    chunked = pa.chunked_array([["http://A/"], ["HTTP://b:80/"]], pa.large_string())
    assert canonicalize_array(chunked)[0].to_pylist() == ["http://a/", "http://b/"]
    with pytest.raises(TypeError):
        canonicalize_array(pa.array([1, 2]))


def test_iri_form():
    canon, _ = canonicalize_array(pa.array(["http://xn--fa-hia.de/%C3%A9", "http://a/%E2%80%AE"]), form="iri")
    assert canon.to_pylist() == ["http://faß.de/é", "http://a/%E2%80%AE"]  # a bidi control stays escaped


def test_normalize_batch_keeps_valid_edges_and_reports_the_others_like_the_local_engine():
    rows = [
        ("HTTP://A:80/x", "http://b/#top", 1),
        ("relative", "", 2),
        (None, "http://b/", 3),
        ("http://a/x", "http://b/", 4),  # kept: the batch kernel does not de-duplicate
    ]
    batch = pa.table({"source": [r[0] for r in rows], "target": [r[1] for r in rows], "line": [r[2] for r in rows]})
    edges, bad = normalize_batch(batch, keep=["line"])
    assert edges.to_pylist() == [
        {"source": "http://a/x", "target": "http://b/", "line": 1},
        {"source": "http://a/x", "target": "http://b/", "line": 4},
    ]
    local = GraphNormalizer()
    reasons = []
    for s, t, _ in rows[1:3]:
        with pytest.raises(ValueError) as exc:
            local.add(s, t)
        reasons.append(str(exc.value))
    assert bad.column("reason").to_pylist() == reasons
    assert reasons[0].startswith("source: scheme: ") and reasons[0].endswith("; target: empty")
    assert bad.column("line").to_pylist() == [2, 3]
    assert bad.column("source").to_pylist() == ["relative", None]


def test_rows_have_every_input_row():
    batch = pa.record_batch({"s": ["http://a/", "x"], "t": ["http://b/", "http://b/"]})
    rows = canonicalize_edges(batch, "s", "t")
    assert rows.column_names == ["s", "t", "s_original", "t_original", "reason"]
    assert rows.num_rows == 2
    assert rows.column("s").to_pylist() == ["http://a/", None]


def test_functions_pickle_by_reference():
    for function in (canonicalize_array, canonicalize_edges, normalize_batch):
        data = pickle.dumps(function)
        assert len(data) < 100 and pickle.loads(data) is function


def test_the_cache_is_bounded_per_configuration():
    canonicalize_array(pa.array([f"http://a/{i}" for i in range(50)]), cache_size=10)
    kernel = arrow._kernel(arrow.Rung.SCHEME, True, False, None, None, 10)
    assert kernel.__closure__ is not None
    cached = next(c.cell_contents for c in kernel.__closure__ if hasattr(c.cell_contents, "cache_info"))
    assert cached.cache_info().currsize == 10


def test_protocol_rung_needs_a_store_or_a_table():
    with pytest.raises(ValueError):
        canonicalize_array(pa.array(["http://a/"]), "protocol")


def test_alias_table_joined_on_the_canonical_form(tmp_path):
    import pyarrow.parquet as pq

    table = pa.table({"alias": ["http://a/old"], "representative": ["http://a/new"]})
    pq.write_table(table, tmp_path / "aliases.parquet")
    urls = pa.array(["HTTP://A:80/old#x", "http://a/other", "http://a/old"])
    for aliases in (table, tmp_path / "aliases.parquet"):
        canon, _ = canonicalize_array(urls, "protocol", aliases=aliases)
        assert canon.to_pylist() == ["http://a/new#x", "http://a/other", "http://a/new"]
    with pytest.raises(Exception, match="alias"):
        canonicalize_array(urls, "protocol", aliases=pa.table({"x": ["a"]}))


def test_alias_table_from_a_store(tmp_path):
    from scrapy_iri.store import open_store

    store = open_store("memory:")
    store.record_redirect("http://a.example/x", 301, "http://a.example/y")
    assert alias_table(store).to_pylist() == [{"alias": "http://a.example/x", "representative": "http://a.example/y"}]


def test_changed_only_leaves_unchanged_ends_null():
    batch = pa.table({"source": ["http://a/", "HTTP://A/", "x"], "target": ["http://b/", "http://b/", "http://b/"]})
    rows = canonicalize_edges(batch, changed_only=True)
    assert rows.column("source").to_pylist() == [None, "http://a/", None]
    assert rows.column("target").to_pylist() == [None, None, None]
    assert rows.column("reason").to_pylist()[:2] == [None, None] and rows.column("reason")[2].as_py()
