"""scrapy_iri.graph as a library: merging, traps, fragments, bad edges, aliases, summary, memory."""

from __future__ import annotations

import csv
import io
import itertools
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_iri.graph import BadEdge, GraphNormalizer, normalize_graph


def test_duplicates_merged_after_canonicalization_in_first_seen_order():
    edges = [
        ("HTTP://A.com:80/x", "http://b.com/"),
        ("http://c.com/", "http://a.com/x"),
        ("http://a.com/x", "HTTP://B.COM"),  # the first edge again, spelled differently
        ("http://a.com/%7Ex", "http://b.com/"),
    ]
    assert list(normalize_graph(edges)) == [
        ("http://a.com/x", "http://b.com/"),
        ("http://c.com/", "http://a.com/x"),
        ("http://a.com/~x", "http://b.com/"),
    ]


@pytest.mark.parametrize(
    "a, b",
    [
        ("http://a.com/a?x=1&y=2", "http://a.com/a?y=2&x=1"),  # parameter order
        ("http://faß.de/", "http://fass.de/"),  # IDNA2008 vs IDNA2003
        ("http://a.com/A", "http://a.com/a"),  # path case
        ("http://a.com/p/", "http://a.com/p"),  # trailing slash
        ("http://a.com/?", "http://a.com/"),  # empty query
        ("http://a.com/", "https://a.com/"),  # http vs https
        ("http://a.com/%2F", "http://a.com//"),  # reserved character vs its escape
    ],
)
def test_traps_not_merged(a, b):
    out = list(normalize_graph([("http://s/", a), ("http://s/", b)]))
    assert len(out) == 2
    assert out[0][1] != out[1][1]


def test_fragments_dropped_by_default_and_kept_on_request():
    edges = [("http://a/p#top", "http://b/#x"), ("http://a/p", "http://b/#y")]
    assert list(normalize_graph(edges)) == [("http://a/p", "http://b/")]
    assert list(normalize_graph(edges, keep_fragment=True)) == edges


def test_rungs():
    edges = [("HTTP://A:80/%7e", "http://b/"), ("http://a/~", "http://b/")]
    assert len(list(normalize_graph(edges, "string"))) == 2
    assert list(normalize_graph(edges, "syntax")) == [("http://a:80/~", "http://b/"), ("http://a/~", "http://b/")]
    assert list(normalize_graph(edges, "scheme")) == [("http://a/~", "http://b/")]


def test_lenient_by_default_strict_on_request():
    edges = [(" http://a/b c ", "http://b/")]
    assert list(normalize_graph(edges)) == [("http://a/b%20c", "http://b/")]
    with pytest.raises(BadEdge, match="source: "):
        list(normalize_graph(edges, lenient=False))


def test_bad_edges_raise_or_go_to_on_bad_and_are_counted():
    edges = [
        ("http://a/", "http://b/"),
        ("relative/path", "http://b/"),
        ("", "http://[::1/"),
        ("http://a/", "http://c/"),
    ]
    with pytest.raises(BadEdge, match="source: .*relative reference"):
        list(normalize_graph(edges))
    bad = []
    normalizer = GraphNormalizer()
    out = list(normalizer.normalize(edges, on_bad=lambda *args: bad.append(args)))
    assert out == [("http://a/", "http://b/"), ("http://a/", "http://c/")]
    assert [(index, reason.split(":")[0]) for index, _, _, reason in bad] == [(1, "source"), (2, "source")]
    assert "source: empty; target: " in bad[1][3]
    summary = normalizer.summary()
    assert (summary.edges_in, summary.bad_rows, summary.rows) == (2, 2, 4)


def test_invalid_utf8_is_a_bad_edge_not_a_mangled_node():
    with pytest.raises(BadEdge, match="target: invalid UTF-8"):
        GraphNormalizer().add("http://a/", "http://a/\udcff")  # a byte surrogate-escaped by the reader


def test_summary_numbers_and_aliases():
    aliases = []
    normalizer = GraphNormalizer(on_alias=lambda original, canon: aliases.append((original, canon)))
    edges = [
        ("HTTP://A/", "http://b/#x"),
        ("http://a/", "http://b/"),
        ("http://a/", "http://b/"),
        ("HTTP://A/", "http://c/"),
        ("http://c/", "http://c/"),  # a self-loop is an edge like any other
    ]
    out = list(normalizer.normalize(edges))
    assert out == [("http://a/", "http://b/"), ("http://a/", "http://c/"), ("http://c/", "http://c/")]
    summary = normalizer.summary()
    assert summary.edges_in == 5
    assert summary.edges_out == 3
    assert summary.duplicate_edges == 2
    assert summary.nodes_in == 5  # HTTP://A/, http://b/#x, http://a/, http://b/, http://c/
    assert summary.nodes_out == 3
    assert summary.nodes_merged == 2
    assert summary.aliases == 2
    assert aliases == [("HTTP://A/", "http://a/"), ("http://b/#x", "http://b/")]


@pytest.mark.parametrize("cache_size", [0, 1, 2, 3, 1000])
def test_cache_size_never_changes_the_result(cache_size):
    nodes = ["HTTP://A/", "http://a/", "http://B/#f", "http://b/", "http://c/", "http://C:80/"]
    edges = [(nodes[i % 6], nodes[(i * 7 + 1) % 6]) for i in range(60)] + [("bad", "http://a/")]
    aliases = []
    normalizer = GraphNormalizer(cache_size=cache_size, on_alias=lambda *pair: aliases.append(pair))
    out = list(normalizer.normalize(edges, on_bad=lambda *args: None))
    reference = GraphNormalizer()
    assert out == list(reference.normalize(edges, on_bad=lambda *args: None))
    assert normalizer.summary() == reference.summary()
    assert sorted(aliases) == [("HTTP://A/", "http://a/"), ("http://B/#f", "http://b/"), ("http://C:80/", "http://c/")]


class FakeStore:
    """The protocol rung's view of a store: scheme form -> representative."""

    def __init__(self, aliases: dict[str, str]) -> None:
        self.aliases = aliases

    def representative(self, url: str) -> str:
        return self.aliases.get(url, url)


def test_protocol_rung_uses_the_store():
    store = FakeStore({"http://old.example/": "https://new.example/"})
    edges = [("http://a/", "HTTP://OLD.example:80/"), ("http://a/", "https://new.example/")]
    assert list(normalize_graph(edges, "protocol", store=store)) == [("http://a/", "https://new.example/")]
    with pytest.raises(ValueError, match="store"):
        normalize_graph(edges, "protocol")


def test_streams_its_input():
    endless = ((f"http://a/{i}", "http://b/") for i in itertools.count())
    assert len(list(itertools.islice(normalize_graph(endless), 1000))) == 1000


def test_memory_does_not_grow_with_duplicates():
    """150,000 edges, 200 of them distinct: what is kept stays tiny (a loose bound)."""

    def edges():
        for i in range(150_000):
            yield f"HTTP://Site{i % 20}.example:80/page", f"http://site{(i // 20) % 10}.example/#x{i % 3}"

    normalizer = GraphNormalizer()
    tracemalloc.start()
    try:
        out = sum(1 for _ in normalizer.normalize(edges()))
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out == 200
    summary = normalizer.summary()
    assert (summary.edges_in, summary.edges_out) == (150_000, 200)
    assert peak < 1_000_000, peak  # the 150,000 edges as strings would take over 30 MB


def test_memory_per_distinct_edge_is_compact():
    """Distinct edges over few nodes: under 100 bytes each (a pair of node numbers in a set)."""
    nodes = [f"http://n{i}.example/" for i in range(400)]
    normalizer = GraphNormalizer()
    for node in nodes:  # warm the cache and number the nodes
        normalizer.add(node, node)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for a, b in itertools.product(nodes, nodes[:250]):
            normalizer.add(a, b)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert normalizer.summary().edges_out >= 100_000
    assert grown / 100_000 < 100, grown


def test_normalize_graph_file_returns_a_summary(tmp_path):
    from scrapy_iri.graph import normalize_graph_file

    src = tmp_path / "in.jsonl"
    src.write_text('{"source": "HTTP://A/", "target": "http://b/"}\n{"source": "x", "target": "y"}\n', "utf-8")
    bad = []
    summary = normalize_graph_file(src, tmp_path / "out.csv", "syntax", on_bad=lambda *args: bad.append(args))
    assert (tmp_path / "out.csv").read_text("utf-8") == "source,target\nhttp://a/,http://b/\n"
    assert [line for line, _ in bad] == [2]
    assert bad[0][1].startswith("source: ") and "; target: " in bad[0][1]
    assert (summary.edges_in, summary.edges_out, summary.bad_rows, summary.aliases) == (1, 1, 1, 1)
    assert summary.seconds > 0


@settings(max_examples=300)
@given(
    st.lists(st.tuples(*[st.text(alphabet=',"\r\nab\t é', max_size=8)] * 3), max_size=8),
    st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]),
)
def test_csv_reader_reads_what_csv_writes(rows, quoting):
    """The reader's fast path (no quotes: split on commas) and its slow path (quoted
    fields, line breaks inside) give back the fields, the original text and the line numbers."""
    from scrapy_iri.graph._readers import _csv_rows

    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, quoting=quoting)  # lineterminator \r\n: fields with \r or \n are quoted
    writer.writerow(("x", "target", "source"))
    writer.writerows(rows)
    text = buffer.getvalue()
    header, got = _csv_rows(iter(io.StringIO(text, newline="")), "t.csv")
    got = list(got)
    assert header.rstrip("\r\n").replace('"', "") == "x,target,source"
    assert [(source, target, problem) for _, source, target, _, problem in got] == [(r[2], r[1], None) for r in rows]
    raws = [raw for _, _, _, raw, _ in got]
    assert header + "".join(raws) == text
    # line numbers count LF line ends only: a lone CR inside a quoted field is no line break
    starts = [2 + sum(raw.count("\n") for raw in raws[:i]) for i in range(len(raws))]
    assert [line for line, *_ in got] == starts


def test_alias_table_quotes_line_breaks(tmp_path):
    from scrapy_iri.graph import normalize_graph_file

    src = tmp_path / "in.csv"
    src.write_text('source,target\n"http://a/\rb",http://c/\n', encoding="utf-8", newline="")
    normalize_graph_file(src, tmp_path / "out.csv", aliases=tmp_path / "aliases.csv")
    with (tmp_path / "aliases.csv").open(newline="", encoding="utf-8") as f:
        assert list(csv.reader(f)) == [["original", "canonical"], ["http://a/\rb", "http://a/b"]]
