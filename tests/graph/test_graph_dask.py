"""Link graphs on a real local Dask cluster (2 worker processes): the same edges as the local engine."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import pandas as pd
import pytest
from _messy import messy_graph, run_cli
from distributed import Client, LocalCluster

from scrapy_iri.dask import normalize_graph
from scrapy_iri.graph import GraphNormalizer


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with Client(cluster) as c:
            yield c


EDGES = [
    ("HTTP://A.example:80/x", "http://b.example/#top"),
    ("http://a.example/x", "http://b.example/"),  # the same edge, canonical
    ("http://a.example/a?x=1&y=2", "http://faß.example/"),
    ("http://a.example/a?y=2&x=1", "http://fass.example/"),  # traps: both stay
    ("relative", "http://b.example/"),  # bad
    (None, "http://b.example/"),  # bad: missing
]


def test_library_edges_and_bad_rows(client):
    frame = pd.DataFrame(EDGES, columns=["src", "dst"])
    frame["row"] = range(len(frame))
    edges, bad = normalize_graph(dd.from_pandas(frame, npartitions=3), "src", "dst", keep=["row"])
    edges, bad = dask.compute(edges, bad)
    assert sorted(map(tuple, edges[["src", "dst"]].values.tolist())) == sorted(
        [
            ("http://a.example/x", "http://b.example/"),
            ("http://a.example/a?x=1&y=2", "http://xn--fa-hia.example/"),
            ("http://a.example/a?y=2&x=1", "http://fass.example/"),
        ]
    )
    bad = bad.sort_values("row")
    assert bad["row"].tolist() == [4, 5]
    assert bad["src"].tolist()[0] == "relative"
    assert pd.isna(bad["src"].tolist()[1])
    assert bad["reason"].tolist()[0].startswith("source: scheme: a relative reference")
    assert bad["reason"].tolist()[1] == "source: missing (null)"


def test_library_equals_the_local_engine_on_a_messy_graph(client):
    import csv
    import io

    rows = [r for r in csv.reader(io.StringIO(messy_graph(400, seed=7), newline="")) if len(r) == 3][1:]
    pairs = [(s, t) for s, t, _ in rows]
    local = GraphNormalizer()
    expected = set()
    bad_local = 0
    for s, t in pairs:
        try:
            edge = local.add(s, t)
        except ValueError:
            bad_local += 1
            continue
        if edge is not None:
            expected.add(edge)
    frame = pd.DataFrame(pairs, columns=["source", "target"])
    edges, bad = dask.compute(*normalize_graph(dd.from_pandas(frame, npartitions=4)))
    assert set(map(tuple, edges.values.tolist())) == expected
    assert len(edges) == len(expected)  # distinct
    assert len(bad) == bad_local > 0


@pytest.mark.parametrize("seed, part_rows", [(1, 250_000), (2, 37), (3, 5)])
def test_cli_dask_equals_local_byte_for_byte(client, capsys, tmp_path, monkeypatch, seed, part_rows):
    from scrapy_iri.graph import _engines

    monkeypatch.setattr(_engines, "CHUNK_ROWS", part_rows)  # many chunks: the reader's bad rows fall between them
    text = messy_graph(600, seed)
    local = run_cli(capsys, tmp_path, "local", text)
    on_dask = run_cli(capsys, tmp_path, "dask", text, "--engine", "dask", "--workers", "2")
    assert local["code"] == on_dask["code"] == 1
    assert on_dask == local
    assert local["err"] and all("Traceback" not in line for line in local["err"])


@pytest.mark.parametrize("cache_size, chunk_rows, part_rows", [(0, 13, 4), (1, 9, 9), (7, 13, 5), (40, 50, 7)])
def test_cli_dask_small_caches_equal_local(client, capsys, tmp_path, monkeypatch, cache_size, chunk_rows, part_rows):
    """Nodes let go and asked again, values waited for from chunks still on the engine: the same output."""
    from scrapy_iri.graph import _engines

    monkeypatch.setattr(_engines, "CHUNK_ROWS", chunk_rows)
    monkeypatch.setattr(_engines, "PART_ROWS", part_rows)
    text = messy_graph(700, 10 + cache_size)
    options = ("--cache-size", str(cache_size))
    local = run_cli(capsys, tmp_path, "local", text, *options)
    on_dask = run_cli(capsys, tmp_path, "dask", text, *options, "--engine", "dask", "--workers", "2")
    assert local["code"] == on_dask["code"] == 1
    assert on_dask == local


def test_cli_dask_invalid_utf8_is_a_bad_row_as_on_local(client, capsys, tmp_path):
    raw = "source,target\nhttp://a.example/x,http://b.example/\n".encode() + b"http://a.example/\xff,http://b.example/\n"
    (tmp_path / "in.csv").write_bytes(raw + b"HTTP://A.example/x,http://b.example/#top\n")
    local = run_cli(capsys, tmp_path, "local", "")
    on_dask = run_cli(capsys, tmp_path, "dask", "", "--engine", "dask", "--workers", "2")
    assert local["code"] == on_dask["code"] == 1
    assert on_dask == local
    assert local["out"] == b"source,target\nhttp://a.example/x,http://b.example/\n"
    assert local["bad"].endswith(b"http://a.example/\xff,http://b.example/\n")
    assert any("invalid UTF-8" in line for line in local["err"])


def test_cli_dask_iri_form_and_parquet_out(client, capsys, tmp_path):
    import pyarrow.parquet as pq

    text = messy_graph(200, 3)
    (tmp_path / "in.csv").write_text(text, encoding="utf-8", newline="")
    from scrapy_iri._cli import main

    assert main(["graph", str(tmp_path / "in.csv"), str(tmp_path / "local.parquet"), "--form", "iri", "-q"]) == 1
    assert main(["graph", str(tmp_path / "in.csv"), str(tmp_path / "parts") + "/", "--form", "iri", "-q",
                 "--engine", "dask"]) == 1
    capsys.readouterr()
    local = pq.read_table(tmp_path / "local.parquet").to_pylist()
    on_dask = pq.read_table(tmp_path / "parts").to_pylist()
    assert on_dask == local
    assert any("faß" in row["target"] or "例え" in row["target"] for row in local)


def test_protocol_rung_from_a_sqlite_store_uri_on_every_engine(client, capsys, tmp_path):
    from scrapy_iri.arrow import alias_table
    from scrapy_iri.store import open_store

    path = tmp_path / "crawl.sqlite"
    store = open_store(f"sqlite:///{path}")
    store.record_redirect("http://a.example/old", 301, "http://a.example/new")
    store.close()
    text = (
        "source,target\n"
        "HTTP://A.example:80/old#x,http://c.example/\n"
        "http://a.example/new,http://c.example/\n"  # the same edge at the protocol rung
        "http://a.example/other,http://c.example/\n"  # no alias: stays
    )
    local = run_cli(capsys, tmp_path, "local", text, "--store", f"sqlite:///{path}")
    assert local["code"] == 0, local["err"]
    assert local["out"] == b"source,target\nhttp://a.example/new,http://c.example/\nhttp://a.example/other,http://c.example/\n"
    on_dask = run_cli(capsys, tmp_path, "dask", text, "--store", f"sqlite:///{path}", "--engine", "dask")
    assert on_dask == local
    table = alias_table(f"sqlite:///{path}")
    assert table.to_pylist() == [{"alias": "http://a.example/old", "representative": "http://a.example/new"}]
    frame = pd.DataFrame([("HTTP://A.example:80/old", "http://c.example/")], columns=["source", "target"])
    edges, _ = dask.compute(*normalize_graph(dd.from_pandas(frame, npartitions=1), rung="protocol",
                                             store=f"sqlite:///{path}"))
    assert edges.values.tolist() == [["http://a.example/new", "http://c.example/"]]


def test_a_store_that_is_not_there_is_a_usage_error_never_created(client, capsys, tmp_path):
    (tmp_path / "in.csv").write_text("source,target\nhttp://a/,http://b/\n", encoding="utf-8")
    from scrapy_iri._cli import main

    missing = tmp_path / "nothing.sqlite"
    code = main(["graph", str(tmp_path / "in.csv"), str(tmp_path / "out.csv"), "--store", f"sqlite:///{missing}",
                 "--engine", "dask"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and not missing.exists()
    assert not (tmp_path / "out.csv").exists()


def test_progress_says_when_the_engine_takes_over(client, capsys, tmp_path):
    from scrapy_iri._cli import main

    (tmp_path / "in.csv").write_text(messy_graph(100, 4), encoding="utf-8", newline="")
    code = main(["graph", str(tmp_path / "in.csv"), str(tmp_path / "out.csv"), "--engine", "dask", "--progress"])
    err = capsys.readouterr().err
    assert code == 1
    assert "scrapy-iri: graph: canonicalizing on dask with " in err
    assert "scrapy-iri: graph: 100 rows, " in err and "Traceback" not in err


@pytest.mark.parametrize("rung, piece_bytes", [("scheme", 64 << 20), ("protocol", 20_000), ("scheme", 50_000)])
def test_cli_dask_on_archives_equals_local_byte_for_byte(client, capsys, tmp_path, monkeypatch, wget_archive,
                                                         rung, piece_bytes):
    """Workers read pieces (whole files, or runs of records inside one), parse and canonicalize them."""
    from _messy import archive_directory, run_archive_cli

    from scrapy_iri.graph import _split

    monkeypatch.setattr(_split, "PIECE_BYTES", piece_bytes)
    archives = archive_directory(wget_archive, tmp_path)
    files = sorted(str(path) for path in archives.iterdir())
    assert len(_split.pieces(files, piece_bytes)) > (len(files) if piece_bytes < 1 << 20 else len(files) - 1)
    local = run_archive_cli(capsys, tmp_path, "local", archives, "--rung", rung)
    on_dask = run_archive_cli(capsys, tmp_path, "dask", archives, "--rung", rung, "--engine", "dask", "--workers", "2")
    assert local["code"] == on_dask["code"] == 1  # the damaged copy's bad records
    assert on_dask == local
    assert local["out"].count(b"\n") > 300 and b"lies" in local["bad"] and b"cut off" in local["bad"]


def test_progress_on_archives_names_each_pass_and_the_bytes_read(client, capsys, tmp_path, monkeypatch, wget_archive):
    from scrapy_iri._cli import main
    from scrapy_iri.graph import _split

    monkeypatch.setattr(_split, "PIECE_BYTES", 100_000)
    code = main(["graph", str(wget_archive), str(tmp_path / "out.csv"), "--rung", "protocol", "--engine", "dask",
                 "--progress"])
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err
    stages = [line for line in err.splitlines() if line.startswith("scrapy-iri: graph: ")]
    assert any(" pieces on dask" in line for line in stages)
    learning = next(i for i, line in enumerate(stages) if "learning the protocol rung" in line)
    reading = next(i for i, line in enumerate(stages) if "reading, parsing and canonicalizing on dask" in line)
    assert learning < reading
    assert any("MB read" in line for line in stages[learning:reading])  # the first pass's progress
    assert any("MB read (100%)" in line for line in stages[reading:])


def test_a_relative_archive_name_is_read_by_workers_in_another_directory(client, capsys, tmp_path, monkeypatch,
                                                                          wget_archive):
    from _messy import run_archive_cli

    from scrapy_iri.graph import _split

    monkeypatch.setattr(_split, "PIECE_BYTES", 100_000)
    (tmp_path / "crawl").mkdir()
    (tmp_path / "crawl" / "a.warc.gz").write_bytes(wget_archive.read_bytes())
    monkeypatch.chdir(tmp_path)  # the workers were started elsewhere
    local = run_archive_cli(capsys, tmp_path, "local", "crawl/a.warc.gz")
    on_dask = run_archive_cli(capsys, tmp_path, "dask", "crawl/a.warc.gz", "--engine", "dask")
    assert local["code"] == on_dask["code"] == 0
    assert on_dask == local and local["out"].count(b"\n") > 300


@pytest.mark.parametrize(("rung", "redirects"), [("scheme", "edges"), ("protocol", "skip")])
def test_cli_dask_on_odd_archives_equals_local_byte_for_byte(client, capsys, tmp_path, rung, redirects):
    """Record kinds, codings, charsets, bad records, an empty WARC and a file that is no archive."""
    from _messy import run_archive_cli
    from _odd_archives import odd_archive_directory

    archives = odd_archive_directory(tmp_path)
    options = ("--rung", rung, "--redirects", redirects)
    local = run_archive_cli(capsys, tmp_path, "local", archives, *options)
    on_dask = run_archive_cli(capsys, tmp_path, "dask", archives, *options, "--engine", "dask", "--workers", "2")
    assert local["code"] == on_dask["code"] == 1
    assert on_dask == local
    # a revisit: the page's links at the revisit's own URI; one that names no record, a bad row
    assert b"http://docs.test/again/a.html" in local["out"] and b"a revisit that names no record" in local["bad"]
    assert b"IMG@/srcset" in local["out"] and b"RESOURCE" not in local["out"] and b"cut off" in local["bad"]


def test_cli_dask_reports_the_captures_it_cannot_learn_as_local(client, capsys, tmp_path, monkeypatch):
    """The first pass on the workers, pieces cut inside a file: the same bad rows, in the same order."""
    from _unlearned import assert_engine_reports_as_local

    assert_engine_reports_as_local("dask", capsys, tmp_path, monkeypatch)


@pytest.mark.parametrize("rung", ["scheme", "protocol"])
def test_cli_dask_on_hostile_archives_equals_local_byte_for_byte(client, capsys, tmp_path, rung):
    """1 MB URIs and Locations, two Locations, HTTP/2, no bytes, a chunked body that lies, a WAT without Envelope."""
    from _messy import assert_hostile_archives_as_local

    assert_hostile_archives_as_local("dask", capsys, tmp_path, rung)


def test_cli_dask_on_a_dedup_recrawl_cut_in_pieces_equals_local(client, capsys, tmp_path, monkeypatch,
                                                                wget_archive, dedup_archive):
    """wget's crawl and its ``--warc-dedup`` recrawl cut in pieces: each revisit's record is in another piece."""
    from _messy import assert_dedup_recrawl_as_local

    assert_dedup_recrawl_as_local("dask", capsys, tmp_path, monkeypatch, wget_archive, dedup_archive)
