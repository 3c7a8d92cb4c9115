"""``scrapy-iri graph``: formats, headers, bad rows, aliases, exit codes, summary, the console script."""

from __future__ import annotations

import csv
import gzip
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scrapy_iri._cli import main

SCRIPT = Path(sys.executable).parent / "scrapy-iri"

GRAPH = [
    ("HTTP://A.com:80/x", "http://b.com/#top"),
    ("http://a.com/x", "http://b.com/"),  # the same edge once canonical
    ("http://a.com/a?x=1&y=2", "http://faß.de/"),
    ("http://a.com/a?y=2&x=1", "http://fass.de/"),  # two traps: never merged
]
CANONICAL = [
    ["source", "target"],
    ["http://a.com/x", "http://b.com/"],
    ["http://a.com/a?x=1&y=2", "http://xn--fa-hia.de/"],
    ["http://a.com/a?y=2&x=1", "http://fass.de/"],
]


def graph(capsys, *args: str) -> tuple[int, str, str]:
    """Run ``scrapy-iri graph ARGS`` in process (through the main CLI's plugin loading)."""
    code = main(["graph", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def read_csv(path: Path) -> list[list[str]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        return list(csv.reader(f))


def write_csv(path: Path, rows, header=("source", "target")) -> Path:
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path


def summary_numbers(err: str) -> dict[str, int]:
    numbers = {}
    for line in err.splitlines():
        label, _, value = line.strip().rpartition(" ")
        if line.startswith("  ") and value.replace(",", "").isdigit():
            numbers[label.strip()] = int(value.replace(",", ""))
    return numbers


# --- formats and headers -------------------------------------------------------


def test_csv_in_csv_out_with_summary(tmp_path, capsys):
    out = tmp_path / "out.csv"
    code, stdout, err = graph(capsys, write_csv(tmp_path / "in.csv", GRAPH), out)
    assert code == 0
    assert stdout == ""
    assert read_csv(out) == CANONICAL
    assert summary_numbers(err) == {
        "edges in": 4,
        "edges out": 3,
        "duplicate edges merged": 1,
        "distinct nodes in": 8,
        "distinct nodes out": 6,
        "nodes merged": 2,
        "bad rows": 0,
    }
    assert "scheme rung" in err


def test_header_other_columns_order_case_and_bom(tmp_path, capsys):
    path = tmp_path / "in.csv"
    path.write_text(
        "\ufeffid, Target ,anchor,SOURCE\n1,http://B/,home,http://A/\n2,http://b/,\"a, b\",http://a:80/\n",
        encoding="utf-8",
    )
    code, _, _ = graph(capsys, path, tmp_path / "out.csv")
    assert code == 0
    assert read_csv(tmp_path / "out.csv") == [["source", "target"], ["http://a/", "http://b/"]]


def test_tsv(tmp_path, capsys):
    path = tmp_path / "in.tsv"
    path.write_text("source\ttarget\n" + "".join(f"{s}\t{t}\r\n" for s, t in GRAPH), encoding="utf-8")
    assert graph(capsys, path, tmp_path / "out.csv")[0] == 0
    assert read_csv(tmp_path / "out.csv") == CANONICAL


def test_jsonl_and_ndjson(tmp_path, capsys):
    lines = [json.dumps({"source": s, "target": t, "extra": 1}, ensure_ascii=False) for s, t in GRAPH]
    for name in ("in.jsonl", "in.ndjson"):
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")  # a blank line holds no edge
        assert graph(capsys, path, tmp_path / "out.csv")[0] == 0
        assert read_csv(tmp_path / "out.csv") == CANONICAL


def test_format_override_and_unknown_extension(tmp_path, capsys):
    path = tmp_path / "edges.txt"
    path.write_text("source\ttarget\nhttp://A/\thttp://B/\n", encoding="utf-8")
    code, _, err = graph(capsys, path, tmp_path / "out.csv")
    assert code == 2
    assert "cannot tell the format" in err and "--format" in err
    assert graph(capsys, path, tmp_path / "out.csv", "--format", "tsv")[0] == 0
    assert read_csv(tmp_path / "out.csv")[1] == ["http://a/", "http://b/"]


def test_gzip_in_and_out(tmp_path, capsys):
    path = tmp_path / "in.csv.gz"
    with gzip.open(path, "wt", encoding="utf-8", newline="") as f:
        f.write("source,target\n" + "".join(f"{s},{t}\n" for s, t in GRAPH))
    out = tmp_path / "out.csv.gz"
    assert graph(capsys, path, out)[0] == 0
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    assert read_csv(out) == CANONICAL


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "empty input"),
        ("from,to\nhttp://a/,http://b/\n", "no 'source' column (header: from,to)"),
        ("source,dest\nhttp://a/,http://b/\n", "no 'target' column"),
        ("source,target,source\nhttp://a/,http://b/,http://c/\n", "more than one 'source' column"),
    ],
)
def test_header_problems_are_fatal_and_write_nothing(tmp_path, capsys, content, message):
    path = tmp_path / "in.csv"
    path.write_text(content, encoding="utf-8")
    code, _, err = graph(capsys, path, tmp_path / "out.csv")
    assert code == 2
    assert message in err
    assert err.startswith("scrapy-iri: ")
    assert not (tmp_path / "out.csv").exists()
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_output_quoting_round_trips(tmp_path, capsys):
    write_csv(tmp_path / "in.csv", [("http://a/x,y", 'http://b/"q"')])
    assert graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv")[0] == 0
    assert read_csv(tmp_path / "out.csv")[1] == ["http://a/x,y", "http://b/%22q%22"]


# --- fragments, rungs, strictness ----------------------------------------------


def test_fragments_dropped_unless_kept(tmp_path, capsys):
    write_csv(tmp_path / "in.csv", [("http://a/#x", "http://b/#y"), ("http://a/", "http://b/#z")])
    graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv")
    assert read_csv(tmp_path / "out.csv")[1:] == [["http://a/", "http://b/"]]
    graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "--keep-fragment")
    assert read_csv(tmp_path / "out.csv")[1:] == [["http://a/#x", "http://b/#y"], ["http://a/", "http://b/#z"]]


def test_rung_option(tmp_path, capsys):
    write_csv(tmp_path / "in.csv", [("HTTP://A:80/%7e", "http://b/")])
    graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "--rung", "syntax")
    assert read_csv(tmp_path / "out.csv")[1] == ["http://a:80/~", "http://b/"]
    with pytest.raises(SystemExit) as exc:
        graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "--rung", "nonsense")
    assert exc.value.code == 2


def test_strict_rejects_what_lenient_repairs(tmp_path, capsys):
    write_csv(tmp_path / "in.csv", [(" http://a/b c ", "http://b/")])
    assert graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv")[0] == 0
    assert read_csv(tmp_path / "out.csv")[1] == ["http://a/b%20c", "http://b/"]
    code, _, err = graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "--strict")
    assert code == 1
    assert "in.csv:2: source: " in err


def test_protocol_rung_needs_a_store(tmp_path, capsys):
    write_csv(tmp_path / "in.csv", GRAPH)
    code, _, err = graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "--rung", "protocol")
    assert code == 2
    assert "the protocol rung needs a store: add --store URI" in err
    code, _, err = graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "--rung", "syntax", "--store", "memory:")
    assert code == 2
    assert "--store is only used by the protocol rung" in err


def test_store_option(tmp_path, capsys):
    write_csv(tmp_path / "in.csv", GRAPH)
    # an empty store: the protocol rung is the scheme rung (--store implies --rung protocol)
    code, _, err = graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "--store", "memory:")
    assert code == 0, err
    assert "protocol rung" in err
    assert read_csv(tmp_path / "out.csv") == CANONICAL
    code, _, err = graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "--store", "nonsense:x")
    assert code == 2
    assert err.startswith("scrapy-iri: --store nonsense:x: ")
    missing = tmp_path / "missing.sqlite"
    code, _, err = graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "--store", f"sqlite:///{missing}")
    assert code == 2
    assert "Traceback" not in err
    assert not missing.exists()  # never created


# --- bad rows --------------------------------------------------------------------

BAD_CSV = (
    "source,target\n"  # line 1
    "http://a/,http://b/\n"  # 2
    "relative/only,http://b/\n"  # 3: invalid source
    '"no scheme\nhere",http://b/\n'  # 4-5: a quoted field over two lines, invalid
    "http://a/,http://b/,extra\n"  # 6: wrong field count
    "\n"  # 7: blank, skipped
    "http://a/,\n"  # 8: empty target
    'http://a/,"http://c/"x\n'  # 9: malformed quoting
    "http://c/,http://d/\n"  # 10
)


def test_bad_rows_reported_with_line_numbers_kept_and_counted(tmp_path, capsys):
    path = tmp_path / "in.csv"
    path.write_text(BAD_CSV, encoding="utf-8")
    bad = tmp_path / "bad.csv"
    code, _, err = graph(capsys, path, tmp_path / "out.csv", "--bad-rows", bad)
    assert code == 1
    reports = [line for line in err.splitlines() if line.startswith(f"scrapy-iri: {path}:")]
    assert [line.split(":")[2] for line in reports] == ["3", "4", "6", "8", "9"]
    assert "in.csv:3: source: " in err and "relative reference" in err
    assert "in.csv:6: expected 2 fields, found 3" in err
    assert "in.csv:8: target: empty" in err
    assert "in.csv:9: CSV: " in err
    assert "Traceback" not in err
    assert read_csv(tmp_path / "out.csv") == [
        ["source", "target"],
        ["http://a/", "http://b/"],
        ["http://c/", "http://d/"],
    ]
    assert bad.read_text(encoding="utf-8") == (
        "source,target\n"
        "relative/only,http://b/\n"
        '"no scheme\nhere",http://b/\n'
        "http://a/,http://b/,extra\n"
        "http://a/,\n"
        'http://a/,"http://c/"x\n'
    )
    numbers = summary_numbers(err)
    assert (numbers["edges in"], numbers["edges out"], numbers["bad rows"]) == (2, 2, 5)


def test_bad_rows_in_tsv_and_jsonl(tmp_path, capsys):
    tsv = tmp_path / "in.tsv"
    tsv.write_text("source\ttarget\nhttp://a/\thttp://b/\nhttp://a/\n\nhttp://a/\t%zz\n", encoding="utf-8")
    code, _, err = graph(capsys, tsv, tmp_path / "out.csv", "--strict")
    assert code == 1
    assert "in.tsv:3: expected 2 tab-separated fields, found 1" in err
    assert "in.tsv:5: target: " in err
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text(
        '{"source": "http://a/", "target": "http://b/"}\n'
        "{not json\n"
        "[1, 2]\n"
        '{"source": "http://a/"}\n'
        '{"source": 1, "target": null}\n'
        '{"source": "http://a/", "target": "http://c/"}\n',
        encoding="utf-8",
    )
    bad = tmp_path / "bad.jsonl"
    code, _, err = graph(capsys, jsonl, tmp_path / "out.csv", "--bad-rows", bad)
    assert code == 1
    assert "in.jsonl:2: invalid JSON: " in err
    assert "in.jsonl:3: not a JSON object" in err
    assert "in.jsonl:4: no 'target' key" in err
    assert "in.jsonl:5: source: not a string; target: not a string" in err
    assert bad.read_text(encoding="utf-8").splitlines() == ["{not json", "[1, 2]", '{"source": "http://a/"}',
                                                             '{"source": 1, "target": null}']
    assert len(read_csv(tmp_path / "out.csv")) == 3


def test_invalid_utf8_rows_are_bad_and_kept_byte_for_byte(tmp_path, capsys):
    path = tmp_path / "in.csv"
    path.write_bytes(b"source,target\nhttp://a/,http://b/\nhttp://a/\xff,http://b/\n")
    bad = tmp_path / "bad.csv"
    code, _, err = graph(capsys, path, tmp_path / "out.csv", "--bad-rows", bad)
    assert code == 1
    assert "in.csv:3: source: invalid UTF-8" in err
    assert bad.read_bytes() == b"source,target\nhttp://a/\xff,http://b/\n"


def test_reports_are_capped(tmp_path, capsys):
    write_csv(tmp_path / "in.csv", [("http://a/", "http://b/")] + [(f"bad{i}", "http://b/") for i in range(25)])
    code, _, err = graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv")
    assert code == 1
    assert sum(1 for line in err.splitlines() if ": source: " in line) == 20
    assert "5 more bad rows not shown (--bad-rows FILE keeps them all)" in err
    assert summary_numbers(err)["bad rows"] == 25
    _, _, err = graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "--max-reported", "0", "-q")
    assert err.splitlines() == ["scrapy-iri: " + str(tmp_path / "in.csv") + ": 25 more bad rows not shown "
                                "(--bad-rows FILE keeps them all)"]


def test_fail_fast_stops_and_leaves_the_old_output(tmp_path, capsys):
    path = tmp_path / "in.csv"
    path.write_text(BAD_CSV, encoding="utf-8")
    out = tmp_path / "out.csv"
    out.write_text("previous run\n", encoding="utf-8")
    bad = tmp_path / "bad.csv"
    code, _, err = graph(capsys, path, out, "--fail-fast", "--bad-rows", bad, "--aliases", tmp_path / "aliases.csv")
    assert code == 2
    assert "in.csv:3: source: " in err
    assert "in.csv:3: stopped at the first bad row (--fail-fast)" in err
    assert out.read_text(encoding="utf-8") == "previous run\n"
    assert not (tmp_path / "aliases.csv").exists()
    assert bad.read_text(encoding="utf-8") == "source,target\nrelative/only,http://b/\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "in.csv", "out.csv"]


# --- aliases, progress, quiet, output names ----------------------------------------


def test_alias_table(tmp_path, capsys):
    write_csv(tmp_path / "in.csv", GRAPH + [("HTTP://A.com:80/x", "http://c/")])
    aliases = tmp_path / "aliases.csv"
    assert graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "--aliases", aliases)[0] == 0
    assert read_csv(aliases) == [
        ["original", "canonical"],
        ["HTTP://A.com:80/x", "http://a.com/x"],  # once, though it appears twice
        ["http://b.com/#top", "http://b.com/"],
        ["http://faß.de/", "http://xn--fa-hia.de/"],
    ]


def test_progress_and_quiet(tmp_path, capsys):
    write_csv(tmp_path / "in.csv", GRAPH)
    _, _, err = graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "--progress")
    assert "scrapy-iri: graph: 4 rows, " in err and "rows/s" in err and "MB read (100%)" in err
    _, _, err = graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv")
    assert "rows/s," not in err.splitlines()[0]  # not a terminal, small input: no progress line
    code, stdout, err = graph(capsys, tmp_path / "in.csv", tmp_path / "out.csv", "--quiet")
    assert (code, stdout, err) == (0, "", "")


def test_output_must_be_csv(tmp_path, capsys):
    write_csv(tmp_path / "in.csv", GRAPH)
    code, _, err = graph(capsys, tmp_path / "in.csv", tmp_path / "out.tsv")
    assert code == 2
    assert "OUT is CSV or Parquet" in err


def test_missing_input_is_fatal(tmp_path, capsys):
    code, _, err = graph(capsys, tmp_path / "missing.csv", tmp_path / "out.csv")
    assert code == 2
    assert "missing.csv: No such file or directory" in err
    assert "Traceback" not in err


# --- the installed console script ------------------------------------------------


def run_script(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    if not SCRIPT.exists():
        pytest.fail(f"the scrapy-iri console script is not installed at {SCRIPT} (pip install -e .)")
    return subprocess.run([str(SCRIPT), "graph", *args], input=stdin, capture_output=True, timeout=60)


def test_console_script_stdin_to_stdout():
    data = "source,target\n" + "".join(f"{s},{t}\n" for s, t in GRAPH) + "nope,http://x/\n"
    result = run_script("-", "-", stdin=data.encode())
    assert result.returncode == 1
    assert list(csv.reader(io.StringIO(result.stdout.decode()))) == CANONICAL
    err = result.stderr.decode()
    assert "scrapy-iri: <stdin>:6: source: " in err
    assert summary_numbers(err)["edges out"] == 3
    assert "Traceback" not in err


def test_console_script_files(tmp_path):
    write_csv(tmp_path / "in.csv", GRAPH)
    result = run_script(str(tmp_path / "in.csv"), str(tmp_path / "out.csv"), "--aliases", str(tmp_path / "a.csv"))
    assert result.returncode == 0, result.stderr
    assert read_csv(tmp_path / "out.csv") == CANONICAL
    assert len(read_csv(tmp_path / "a.csv")) == 4
    help_text = subprocess.run([str(SCRIPT), "--help"], capture_output=True, text=True).stdout
    assert "graph" in help_text


def test_output_directory_missing_is_fatal(tmp_path, capsys):
    write_csv(tmp_path / "in.csv", GRAPH)
    code, _, err = graph(capsys, tmp_path / "in.csv", tmp_path / "no" / "out.csv")
    assert code == 2
    assert err.strip() == f"scrapy-iri: {tmp_path / 'no' / 'out.csv'}: No such file or directory"


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_only_for_large_slow_inputs():
    from scrapy_iri.graph._cli import _Progress

    small = _Progress(FakeTerminal(), forced=False)
    small.started -= 10  # as if it had been running for a while
    small(100_000, 1000, 1000)  # a small file: never shown
    small.done()
    assert small.err.getvalue() == ""
    large = _Progress(FakeTerminal(), forced=False)
    large(8192, 1_000_000, 50_000_000)  # a large file, but just started: not yet
    assert large.err.getvalue() == ""
    large.started -= 10
    large(16384, 2_000_000, 50_000_000)
    large.done()
    shown = large.err.getvalue()
    assert shown.startswith("\rscrapy-iri: graph: 16,384 rows, ")
    assert "2.0 of 50.0 MB read (4%)" in shown
    assert shown.endswith("\n")


def test_jsonl_lines_end_at_lf_only(tmp_path, capsys):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"source": "http://a/",\r "target": "http://b/"}\r\n{"source": "http://b/", "target": "x"}\n')
    code, _, err = graph(capsys, path, tmp_path / "out.csv")
    assert code == 1
    assert "in.jsonl:2: target: " in err
    assert read_csv(tmp_path / "out.csv") == [["source", "target"], ["http://a/", "http://b/"]]


def test_truncated_or_corrupt_gzip_is_fatal(tmp_path, capsys):
    data = gzip.compress(("source,target\n" + "http://a/,http://b/\n" * 50_000).encode())
    for name, content in (("cut.csv.gz", data[: len(data) // 2]), ("junk.csv.gz", b"\x1f\x8bjunk")):
        path = tmp_path / name
        path.write_bytes(content)
        code, _, err = graph(capsys, path, tmp_path / "out.csv", "-q")
        assert code == 2
        assert err.startswith(f"scrapy-iri: {path}: ")
        assert not (tmp_path / "out.csv").exists()
