"""``scrapy-iri graph``: the input is never overwritten, any JSON row is a row, --form iri, Parquet on the local engine."""

from __future__ import annotations

import os
import unicodedata

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scrapy_iri import canonicalize, to_uri
from scrapy_iri._cli import main

CSV = "source,target\nHTTP://A.com:80/x,http://b.com/\nhttp://faß.de/%C3%A9,http://xn--mgbh0fb.xn--kgbechtv/\n"


def graph(capsys, *args):
    code = main(["graph", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.err


@pytest.mark.parametrize("how", ["same name", "symlink", "hard link", "via the directory"])
@pytest.mark.parametrize("option", ["OUT", "--aliases", "--bad-rows"])
def test_an_output_that_is_the_input_is_a_usage_error_and_the_input_is_untouched(tmp_path, capsys, how, option):
    src = tmp_path / "in.csv"
    src.write_text(CSV, encoding="utf-8")
    out = tmp_path / "out.csv"
    if how == "same name":
        same = src
    elif how == "symlink":
        same = tmp_path / "link.csv"
        same.symlink_to(src)
    elif how == "hard link":
        same = tmp_path / "hard.csv"
        os.link(src, same)
    else:
        (tmp_path / "sub").mkdir()
        same = tmp_path / "sub" / ".." / "in.csv"
    args = [src, same] if option == "OUT" else [src, out, option, same]
    code, err = graph(capsys, *args)
    assert code == 2
    assert "is the input file" in err and "Traceback" not in err
    assert src.read_text(encoding="utf-8") == CSV
    assert not out.exists()


@pytest.mark.parametrize("depth", [100, 10_000, 1_000_000])
def test_any_json_nesting_is_a_bad_row_never_a_crash(tmp_path, capsys, depth):
    src = tmp_path / "in.jsonl"
    deep = '{"source": ' + "[" * depth + "]" * depth + ', "target": "http://b/"}'
    src.write_text('{"source": "http://a/", "target": "http://b/"}\n' + deep + "\n" + "[" * depth + "\n",
                   encoding="utf-8")
    code, err = graph(capsys, src, tmp_path / "out.csv", "--bad-rows", tmp_path / "bad.jsonl")
    assert code == 1
    assert "Traceback" not in err
    assert "in.jsonl:2: " in err and "in.jsonl:3: " in err
    assert (tmp_path / "out.csv").read_text(encoding="utf-8") == "source,target\nhttp://a/,http://b/\n"
    assert (tmp_path / "bad.jsonl").read_text(encoding="utf-8").count("\n") == 2


def test_form_iri_writes_nodes_in_iri_form_without_embedding_characters(tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text(CSV + "http://a/%E2%80%AE,http://b/\n", encoding="utf-8")
    code, _ = graph(capsys, src, tmp_path / "uri.csv", "--aliases", tmp_path / "a-uri.csv")
    assert code == 0
    code, _ = graph(capsys, src, tmp_path / "iri.csv", "--form", "iri", "--aliases", tmp_path / "a-iri.csv")
    assert code == 0
    uri_rows = (tmp_path / "uri.csv").read_text(encoding="utf-8").splitlines()
    iri_rows = (tmp_path / "iri.csv").read_text(encoding="utf-8").splitlines()
    assert iri_rows == [
        "source,target",
        "http://a.com/x,http://b.com/",
        "http://faß.de/é,http://مثال.إختبار/",  # U-labels, the escape decoded (3987bis 3.7)
        "http://a/%E2%80%AE,http://b/",  # a bidi control stays escaped
    ]
    assert not any(unicodedata.bidirectional(c) in ("LRE", "RLE", "PDF", "LRI", "RLI", "FSI", "PDI", "LRO", "RLO")
                   for row in iri_rows for c in row)
    for uri_row, iri_row in zip(uri_rows[1:], iri_rows[1:]):
        for uri, iri in zip(uri_row.split(","), iri_row.split(",")):
            assert to_uri(iri) == uri == canonicalize(iri)  # the same node, shown as an IRI
    aliases = (tmp_path / "a-iri.csv").read_text(encoding="utf-8").splitlines()
    assert "http://faß.de/%C3%A9,http://faß.de/é" in aliases


def write_parquet(path, sources, targets, **extra):
    pq.write_table(pa.table({"Source": pa.array(sources, pa.string()), "target": pa.array(targets, pa.string()),
                             **extra}), path)


def test_parquet_file_and_directory_in_and_out(tmp_path, capsys):
    (tmp_path / "in.csv").write_text(CSV + "relative,http://b/\n", encoding="utf-8")
    code, _ = graph(capsys, tmp_path / "in.csv", tmp_path / "ref.csv")
    assert code == 1
    expected = (tmp_path / "ref.csv").read_text(encoding="utf-8").splitlines()[1:]
    parts = tmp_path / "parts"
    parts.mkdir()
    write_parquet(parts / "part-0.parquet", ["HTTP://A.com:80/x", "http://faß.de/%C3%A9"],
                  ["http://b.com/", "http://xn--mgbh0fb.xn--kgbechtv/"], anchor=pa.array([1, 2]))
    write_parquet(parts / "part-1.parquet", ["relative", None], ["http://b/", "http://b/"], anchor=pa.array([3, 4]))
    bad = tmp_path / "bad.csv"
    code, err = graph(capsys, parts, tmp_path / "out.parquet", "--bad-rows", bad)
    assert code == 1
    assert f"{parts}:3: source: scheme: " in err and f"{parts}:4: source: missing (null)" in err
    table = pq.read_table(tmp_path / "out.parquet")
    assert [f"{r['source']},{r['target']}" for r in table.to_pylist()] == expected
    assert bad.read_text(encoding="utf-8") == "source,target\nrelative,http://b/\n,http://b/\n"
    code, _ = graph(capsys, tmp_path / "out.parquet", str(tmp_path / "again") + "/")
    assert code == 0
    assert pq.read_table(tmp_path / "again").to_pylist() == table.to_pylist()
    assert sorted(os.listdir(tmp_path / "again")) == ["part-00000.parquet"]


def test_parquet_problems_are_fatal_and_write_nothing(tmp_path, capsys):
    pq.write_table(pa.table({"source": [1], "target": ["http://b/"]}), tmp_path / "ints.parquet")
    code, err = graph(capsys, tmp_path / "ints.parquet", tmp_path / "out.csv")
    assert code == 2 and "holds int64, not strings" in err
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    code, err = graph(capsys, tmp_path / "junk.parquet", tmp_path / "out.csv")
    assert code == 2 and "Traceback" not in err
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine", encoding="utf-8")
    write_parquet(tmp_path / "ok.parquet", ["http://a/"], ["http://b/"])
    code, err = graph(capsys, tmp_path / "ok.parquet", full)
    assert code == 2 and "not empty" in err
    assert os.listdir(full) == ["keep.txt"]
    assert not (tmp_path / "out.csv").exists()
    code, err = graph(capsys, "-", tmp_path / "out.csv", "--format", "parquet")
    assert code == 2 and "stdin" in err


def test_fail_fast_leaves_no_parquet_behind(tmp_path, capsys):
    (tmp_path / "in.csv").write_text(CSV + "relative,http://b/\n", encoding="utf-8")
    code, _ = graph(capsys, tmp_path / "in.csv", tmp_path / "out.parquet", "--fail-fast")
    assert code == 2
    assert sorted(os.listdir(tmp_path)) == ["in.csv"]


def test_workers_only_with_an_engine(tmp_path, capsys):
    (tmp_path / "in.csv").write_text(CSV, encoding="utf-8")
    code, err = graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "--workers", "2")
    assert code == 2 and "--workers" in err
    with pytest.raises(SystemExit):
        graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "--engine", "ray")


@pytest.mark.parametrize("missing", ["pyarrow", "distributed", "pyspark"])
def test_an_engine_without_its_packages_is_one_clear_line(tmp_path, capsys, monkeypatch, missing):
    import sys

    monkeypatch.setitem(sys.modules, missing, None)  # as if it were not installed
    for name in [m for m in sys.modules if m.startswith(f"{missing}.")]:
        monkeypatch.setitem(sys.modules, name, None)
    (tmp_path / "in.csv").write_text(CSV, encoding="utf-8")
    engine = "spark" if missing == "pyspark" else "dask"
    code, err = graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "--engine", engine, "-q")
    assert code == 2
    assert err.count("\n") == 1 and "pip install 'scrapy-iri[" in err and "Traceback" not in err
    assert not (tmp_path / "out.csv").exists()
    assert graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "-q")[0] == 0  # the local engine needs neither
