"""Link graphs on a real Spark session (``local[2]``, one for the module): the same edges as the local engine."""

from __future__ import annotations

import csv
import io
import warnings

import pytest
from _messy import messy_graph, run_cli

from scrapy_iri.graph import GraphNormalizer


@pytest.fixture(scope="module")
def spark():
    from scrapy_iri.spark import session

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = session(2)
    yield s
    s.stop()


def local_edges(pairs):
    normalizer = GraphNormalizer()
    edges, bad = set(), 0
    for s, t in pairs:
        try:
            edge = normalizer.add(s, t)
        except ValueError:
            bad += 1
            continue
        if edge is not None:
            edges.add(edge)
    return edges, bad


def test_library_equals_the_local_engine(spark):
    from scrapy_iri.spark import normalize_graph

    rows = [r for r in csv.reader(io.StringIO(messy_graph(400, seed=11), newline="")) if len(r) == 3][1:]
    pairs = [(s, t) for s, t, _ in rows] + [(None, "http://a.example/")]
    df = spark.createDataFrame([(i, s, t) for i, (s, t) in enumerate(pairs)], "row long, source string, target string")
    edges, bad = normalize_graph(df.repartition(3), keep=["row"])
    expected, bad_count = local_edges(pairs)
    got = [(r.source, r.target) for r in edges.collect()]
    assert len(got) == len(set(got))
    assert set(got) == expected
    bad_rows = sorted(bad.collect(), key=lambda r: r.row)
    assert len(bad_rows) == bad_count > 1
    assert bad_rows[-1].row == len(pairs) - 1 and bad_rows[-1].reason == "source: missing (null)"


def test_alias_table_and_store_uri_give_the_protocol_rung(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scrapy_iri.spark import normalize_graph

    table = tmp_path / "aliases.parquet"
    pq.write_table(pa.table({"alias": ["http://old.example/a"], "representative": ["http://new.example/a"]}), table)
    df = spark.createDataFrame(
        [("HTTP://OLD.example:80/a#x", "http://c.example/"), ("http://new.example/a", "http://c.example/")],
        "source string, target string",
    )
    edges, bad = normalize_graph(df, rung="protocol", aliases=str(table))
    assert [(r.source, r.target) for r in edges.collect()] == [("http://new.example/a", "http://c.example/")]
    assert bad.count() == 0


@pytest.mark.parametrize("part_rows", [250_000, 70])
def test_cli_spark_equals_local_byte_for_byte(spark, capsys, tmp_path, monkeypatch, part_rows):
    from scrapy_iri.graph import _engines

    monkeypatch.setattr(_engines, "CHUNK_ROWS", part_rows)  # several chunks and jobs: bad rows fall between them
    text = messy_graph(600, 5)
    local = run_cli(capsys, tmp_path, "local", text)
    on_spark = run_cli(capsys, tmp_path, "spark", text, "--engine", "spark", "--workers", "2")
    assert local["code"] == on_spark["code"] == 1
    assert on_spark == local


def test_the_spark_examples_of_the_docs(spark, tmp_path, request):
    from _docs import python_blocks, run_python

    examples = python_blocks(with_spark=True)
    assert len(examples) >= 2
    for block in examples:
        if '"crawl/"' in block:  # the archive example reads wget's archive of the docs site
            (tmp_path / "crawl").mkdir(exist_ok=True)
            (tmp_path / "crawl" / "a.warc.gz").write_bytes(request.getfixturevalue("wget_archive").read_bytes())
        run_python(block, tmp_path)


@pytest.mark.parametrize("piece_bytes", [64 << 20, 30_000])
def test_cli_spark_on_archives_at_the_protocol_rung_equals_local(spark, capsys, tmp_path, wget_archive, monkeypatch,
                                                                 piece_bytes):
    """Python workers read pieces (whole files, or runs of records inside one), parse and canonicalize them;
    the captures they find are learned here, in date order, first."""
    from _messy import archive_directory, run_archive_cli

    from scrapy_iri.graph import _split

    monkeypatch.setattr(_split, "PIECE_BYTES", piece_bytes)
    archives = archive_directory(wget_archive, tmp_path)
    local = run_archive_cli(capsys, tmp_path, "local", archives, "--rung", "protocol")
    on_spark = run_archive_cli(capsys, tmp_path, "spark", archives, "--rung", "protocol", "--engine", "spark",
                               "--workers", "2")
    assert local["code"] == on_spark["code"] == 1
    assert on_spark == local


def test_archive_rows_in_your_own_spark_job_give_the_commands_edges(spark, capsys, tmp_path, wget_archive):
    """``scrapy_iri.spark.archive_rows``: pieces read on the workers, the protocol rung learned first."""
    from _archive_checks import read_csv
    from _messy import archive_directory, run_archive_cli

    from scrapy_iri.spark import archive_rows

    archives = archive_directory(wget_archive, tmp_path)
    run_archive_cli(capsys, tmp_path, "local", archives, "--rung", "protocol")
    rows = archive_rows(spark, str(archives), rung="protocol", piece_bytes=30_000).cache()
    edges = {(r.source, r.target) for r in rows.where("reason is null").select("source", "target").collect()}
    assert edges == {(r["source"], r["target"]) for r in read_csv(tmp_path / "local-out.csv")}
    bad = {(r.where, r.reason) for r in rows.where("reason is not null").collect()}
    expected = {(f"{r['file']}:{r['offset']}", r["reason"]) for r in read_csv(tmp_path / "local-bad.csv")}
    assert len(bad) > 2 and bad == expected


def test_cli_spark_on_odd_archives_equals_local_byte_for_byte(spark, capsys, tmp_path):
    """Record kinds, codings, charsets, bad records, an empty WARC and a file that is no archive."""
    from _messy import run_archive_cli
    from _odd_archives import odd_archive_directory

    archives = odd_archive_directory(tmp_path)
    local = run_archive_cli(capsys, tmp_path, "local", archives, "--rung", "protocol")
    on_spark = run_archive_cli(capsys, tmp_path, "spark", archives, "--rung", "protocol", "--engine", "spark",
                               "--workers", "2")
    assert local["code"] == on_spark["code"] == 1
    assert on_spark == local
    # a revisit: the page's links at the revisit's own URI; one that names no record, a bad row
    assert b"http://docs.test/again/a.html" in local["out"] and b"a revisit that names no record" in local["bad"]


def test_cli_spark_reports_the_captures_it_cannot_learn_as_local(spark, capsys, tmp_path, monkeypatch):
    """The first pass on the workers, pieces cut inside a file: the same bad rows, in the same order."""
    from _unlearned import assert_engine_reports_as_local

    assert_engine_reports_as_local("spark", capsys, tmp_path, monkeypatch)


def test_archive_rows_report_the_captures_it_cannot_learn_as_the_command_does(spark, capsys, tmp_path):
    from _archive_checks import read_csv
    from _messy import run_archive_cli
    from _unlearned import unlearned_directory

    from scrapy_iri.spark import archive_rows

    archives, expected = unlearned_directory(tmp_path, filler=2)
    run_archive_cli(capsys, tmp_path, "local", archives, "--rung", "protocol")
    rows = archive_rows(spark, str(archives), rung="protocol", piece_bytes=4000).cache()
    bad = {(r.where, r.reason) for r in rows.where("reason is not null").collect()}
    assert bad == {(f"{r['file']}:{r['offset']}", r["reason"]) for r in read_csv(tmp_path / "local-bad.csv")}
    assert {where for where, _ in bad} >= {f"{file}:{offset}" for file, offset, _ in expected}
    edges = {(r.source, r.target) for r in rows.where("reason is null").select("source", "target").collect()}
    assert edges == {(r["source"], r["target"]) for r in read_csv(tmp_path / "local-out.csv")}


@pytest.mark.parametrize("rung", ["scheme", "protocol"])
def test_cli_spark_on_hostile_archives_equals_local_byte_for_byte(spark, capsys, tmp_path, rung):
    """1 MB URIs and Locations, two Locations, HTTP/2, no bytes, a chunked body that lies, a WAT without Envelope."""
    from _messy import assert_hostile_archives_as_local

    assert_hostile_archives_as_local("spark", capsys, tmp_path, rung)


def test_cli_spark_on_a_dedup_recrawl_cut_in_pieces_equals_local(spark, capsys, tmp_path, monkeypatch,
                                                                 wget_archive, dedup_archive):
    """wget's crawl and its ``--warc-dedup`` recrawl cut in pieces: each revisit's record is in another piece."""
    from _messy import assert_dedup_recrawl_as_local

    assert_dedup_recrawl_as_local("spark", capsys, tmp_path, monkeypatch, wget_archive, dedup_archive)
