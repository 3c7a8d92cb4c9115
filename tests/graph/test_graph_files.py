"""``scrapy-iri graph`` files: CSV quoting like the csv module, records capped, line numbers,
and outputs that are symlinks, devices or FIFOs (never replaced by a regular file)."""

from __future__ import annotations

import csv
import gzip
import io
import os
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from scrapy_iri.graph import _readers as graph_module
from scrapy_iri.graph import GraphError, normalize_graph_file


def run(tmp_path: Path, text: str, **kwargs):
    src = tmp_path / "in.csv"
    src.write_text(text, encoding="utf-8", newline="")
    bad: list[tuple[int, str]] = []
    summary = normalize_graph_file(
        src, tmp_path / "out.csv", on_bad=lambda line, why: bad.append((line, why)), **kwargs
    )
    with (tmp_path / "out.csv").open(encoding="utf-8", newline="") as f:
        out = list(csv.reader(f))[1:]
    return summary, out, bad


# --- M3: a stray quote swallows nothing ------------------------------------------------

STRAY = (
    "source,target\n"
    'http://a.com/x"y,http://b.com/\n'
    "http://c.com/,http://d.com/\n"
    "http://e.com/,http://f.com/\n"
    '"http://g.com/","http://h.com/"\n'
    "http://i.com/,http://j.com/\n"
)


def test_a_quote_inside_an_unquoted_field_is_literal_like_the_csv_module(tmp_path):
    summary, out, bad = run(tmp_path, STRAY)
    assert bad == []
    assert len(list(csv.reader(io.StringIO(STRAY, newline="")))) - 1 == summary.edges_in == summary.edges_out == 5
    assert out[0] == ["http://a.com/x%22y", "http://b.com/"]  # lenient: the quote is percent-encoded
    assert out[1:] == [["http://c.com/", "http://d.com/"], ["http://e.com/", "http://f.com/"],
                       ["http://g.com/", "http://h.com/"], ["http://i.com/", "http://j.com/"]]


def test_an_unclosed_quote_costs_its_line_only(tmp_path):
    text = 'source,target\n"http://a.com/x,http://b.com/\n' + "".join(f"http://c{i}/,http://d/\n" for i in range(4))
    src = tmp_path / "in.csv"
    summary, out, bad = run(tmp_path, text, bad_rows=tmp_path / "bad.csv")
    assert [line for line, _ in bad] == [2]
    assert "still open at the end of the input" in bad[0][1] and "only this line is skipped" in bad[0][1]
    assert (summary.edges_in, summary.bad_rows) == (4, 1)
    assert out == [[f"http://c{i}/", "http://d/"] for i in range(4)]
    assert (tmp_path / "bad.csv").read_text(encoding="utf-8") == 'source,target\n"http://a.com/x,http://b.com/\n'
    assert src.exists()


def test_a_malformed_record_over_several_lines_is_read_again_from_its_second_line(tmp_path):
    text = (
        "source,target\n"
        '"http://a.com/x,http://b.com/\n'  # 2: opens a quoted field
        "http://c.com/,http://d.com/\n"  # 3
        '"http://e.com/","http://f.com/"\n'  # 4: inside the open field, '"' then 'h': malformed
        "http://g.com/,http://h.com/\n"  # 5
    )
    summary, out, bad = run(tmp_path, text)
    assert [line for line, _ in bad] == [2]
    assert bad[0][1].startswith("CSV: ")
    assert out == [["http://c.com/", "http://d.com/"], ["http://e.com/", "http://f.com/"],
                   ["http://g.com/", "http://h.com/"]]
    assert summary.bad_rows == 1


def test_a_record_over_too_many_lines_is_a_bad_row_and_reading_goes_on(tmp_path):
    rows = "".join(f"http://a/{i},http://b/\n" for i in range(1500))
    summary, out, bad = run(tmp_path, 'source,target\n"http://x/,http://y/\n' + rows + "http://z/,http://b/\n")
    assert len(bad) == 1
    line, why = bad[0]
    assert line == 2 and "runs over more than 1,000 lines" in why
    assert summary.edges_in == 1501 and out[0] == ["http://a/0", "http://b/"]


def test_a_record_over_too_many_characters_is_a_bad_row(tmp_path, monkeypatch):
    monkeypatch.setattr(graph_module, "_MAX_RECORD_CHARS", 200)
    rows = "".join(f"http://a/{i},http://b/\n" for i in range(30))
    summary, out, bad = run(tmp_path, 'source,target\n"http://x/,http://y/\n' + rows)
    assert [line for line, _ in bad] == [2]
    assert "runs over more than" in bad[0][1]
    assert summary.edges_in == 30


def test_a_quoted_field_within_the_caps_still_spans_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(graph_module, "_MAX_RECORD_LINES", 5)
    text = 'source,target,anchor\nhttp://a/,http://b/,"one\ntwo\nthree\nfour"\nhttp://c/,http://d/,x\n'
    summary, out, bad = run(tmp_path, text)
    assert bad == [] and summary.edges_in == 2


@settings(max_examples=400, suppress_health_check=[HealthCheck.filter_too_much])
@given(st.lists(st.text(alphabet='ab,"\n', max_size=12), min_size=1, max_size=6))
def test_records_are_those_of_the_csv_module(lines):
    """Whenever the csv module (strict) reads a text without error and each record it
    finds has the header's two fields, the reader finds the same records and no bad row."""
    from scrapy_iri.graph._readers import _csv_rows

    text = "source,target\n" + "\n".join(lines) + "\n"
    try:
        expected = [r for r in csv.reader(io.StringIO(text, newline=""), strict=True)][1:]
    except csv.Error:
        assume(False)
    expected = [r for r in expected if r]  # empty lines hold no edge
    assume(all(len(r) == 2 for r in expected))
    _, rows = _csv_rows(iter(io.StringIO(text, newline="")), "t.csv")
    got = [(source, target, problem) for _, source, target, _, problem in rows]
    assert got == [(r[0], r[1], None) for r in expected]


# --- L4: line numbers count LF line ends --------------------------------------------


def test_a_lone_cr_inside_a_quoted_field_does_not_shift_line_numbers(tmp_path):
    text = 'source,target,anchor\nhttp://a/,http://b/,"x\ry\r\nz"\nbad,http://b/,\n'
    _, _, bad = run(tmp_path, text)
    assert [line for line, _ in bad] == [4]  # as wc -l, grep -n and sed count


def test_line_numbers_with_crlf_and_with_lone_cr_record_ends(tmp_path):
    _, _, bad = run(tmp_path, "source,target\r\nhttp://a/,http://b/\r\nbad,http://b/\r\n")
    assert [line for line, _ in bad] == [3]
    _, _, bad = run(tmp_path, "source,target\rhttp://a/,http://b/\rbad,http://b/\r")  # classic Mac OS
    assert [line for line, _ in bad] == [3]


# --- H7: outputs that are not regular files ---------------------------------------------


@pytest.fixture
def src(tmp_path) -> Path:
    path = tmp_path / "in.csv"
    path.write_text("source,target\nHTTP://A/,http://b/\nbad,http://b/\n", encoding="utf-8")
    return path


EXPECTED = "source,target\nhttp://a/,http://b/\n"


def test_a_symlink_out_keeps_pointing_at_the_new_content(tmp_path, src):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "out.csv"
    target.write_text("old\n", encoding="utf-8")
    link = tmp_path / "link.csv"
    link.symlink_to(Path("real") / "out.csv")
    aliases_target = tmp_path / "real" / "aliases.csv"
    aliases_target.write_text("old\n", encoding="utf-8")
    (tmp_path / "aliases.csv").symlink_to(aliases_target)
    bad_target = tmp_path / "real" / "bad.csv"
    bad_target.write_text("old\n", encoding="utf-8")
    (tmp_path / "bad.csv").symlink_to(bad_target)
    normalize_graph_file(src, link, aliases=tmp_path / "aliases.csv", bad_rows=tmp_path / "bad.csv")
    for name in ("link.csv", "aliases.csv", "bad.csv"):
        assert (tmp_path / name).is_symlink()
    assert target.read_text(encoding="utf-8") == EXPECTED
    assert aliases_target.read_text(encoding="utf-8") == "original,canonical\nHTTP://A/,http://a/\n"
    assert bad_target.read_text(encoding="utf-8") == "source,target\nbad,http://b/\n"
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["aliases.csv", "bad.csv", "out.csv"]


def test_a_dangling_symlink_out_creates_its_target(tmp_path, src):
    link = tmp_path / "link.csv"
    link.symlink_to("new.csv")
    normalize_graph_file(src, link)
    assert link.is_symlink() and (tmp_path / "new.csv").read_text(encoding="utf-8") == EXPECTED


def test_a_failed_run_leaves_a_symlinked_out_untouched(tmp_path, src):
    target = tmp_path / "target.csv"
    target.write_text("old\n", encoding="utf-8")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    with pytest.raises(GraphError):
        normalize_graph_file(src, link, fail_fast=True)
    assert link.is_symlink() and target.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "link.csv", "target.csv"]


def test_dev_null_stays_a_character_device(src):
    summary = normalize_graph_file(src, "/dev/null", aliases="/dev/null", bad_rows="/dev/null")
    assert summary.edges_out == 1 and summary.bad_rows == 1
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert not any(name.startswith(".null.") for name in os.listdir("/dev"))


def test_dev_null_with_gzip_name_through_a_symlink(tmp_path, src):
    link = tmp_path / "out.csv.gz"
    link.symlink_to("/dev/null")
    normalize_graph_file(src, link)
    assert link.is_symlink() and stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_out_is_written_not_replaced(tmp_path, src):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    normalize_graph_file(src, fifo)
    reader.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got == [EXPECTED.encode()]


def test_the_permissions_of_a_replaced_out_are_kept(tmp_path, src):
    out = tmp_path / "out.csv"
    out.write_text("old\n", encoding="utf-8")
    out.chmod(0o600)
    normalize_graph_file(src, out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and out.read_text(encoding="utf-8") == EXPECTED


def test_two_outputs_that_are_one_file_are_refused(tmp_path, src):
    out = tmp_path / "out.csv"
    (tmp_path / "link.csv").symlink_to(out)
    with pytest.raises(GraphError, match="are the same file"):
        normalize_graph_file(src, out, aliases=tmp_path / "link.csv")
    with pytest.raises(GraphError, match="are the same file"):
        normalize_graph_file(src, out, bad_rows=out)
    with pytest.raises(GraphError, match="cannot both be stdout"):
        normalize_graph_file(src, "-", bad_rows="-")
    assert not out.exists()


def test_bad_rows_named_gz_are_compressed_and_kept_byte_for_byte(tmp_path):
    path = tmp_path / "in.csv"
    path.write_bytes(b"source,target\nhttp://a/,http://b/\nhttp://a/\xff,http://b/\n")
    normalize_graph_file(path, tmp_path / "out.csv", bad_rows=tmp_path / "bad.csv.gz")
    assert gzip.decompress((tmp_path / "bad.csv.gz").read_bytes()) == b"source,target\nhttp://a/\xff,http://b/\n"
