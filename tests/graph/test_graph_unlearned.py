"""``graph --rung protocol`` without ``--store`` learns from the archive's own captures first: every capture
that pass cannot learn is a bad row (file, offset, reason), counted in the summary, never dropped in silence."""

from __future__ import annotations

import csv

from _unlearned import unlearned_directory
from test_graph_archive_faults import run

from scrapy_iri._cli import main


def summary_count(err: str, label: str) -> int:
    line = next(line for line in err.splitlines() if line.strip().startswith(label))
    return int(line.split()[-1].replace(",", ""))


def test_every_capture_the_learning_pass_rejects_is_a_bad_row(tmp_path, capsys):
    archives, expected = unlearned_directory(tmp_path)
    code, err, bad, edges = run(capsys, tmp_path, archives, "--rung", "protocol")
    assert code == 1
    # the learning pass's rejects come first, in file order, each once (the record cut off at the end of
    # c.warc is also a bad record of the link pass, for the same reason: one row)
    got = [(row["file"], int(row["offset"]), row["reason"]) for row in bad]
    assert len(got) == len(expected)
    for (file, offset, reason), wanted in zip(got, expected):
        assert (file, offset) == wanted[:2] and reason.startswith(wanted[2]), (file, offset, reason, wanted)
    assert summary_count(err, "bad rows") == len(expected)
    for file, offset, reason in got:  # and on stderr, as store learn reports them
        assert f"scrapy-iri: {file}:{offset}: {reason}" in err
    # what could be learned still is: www.docs.test/ is docs.test/, and the page with a bad date gives its links
    assert {(e["source"], e["target"]) for e in edges} >= {("http://docs.test/", "http://docs.test/a.html"),
                                                           ("http://docs.test/a.html", "http://docs.test/"),
                                                           ("http://docs.test/dated", "http://docs.test/x")}


def test_the_same_archive_at_the_scheme_rung_has_only_the_link_pass_bad_rows(tmp_path, capsys):
    archives, expected = unlearned_directory(tmp_path)
    code, err, bad, edges = run(capsys, tmp_path, archives, "--rung", "scheme")
    got = {(row["file"], int(row["offset"])) for row in bad}
    # no learning pass: bad dates and unusable Locations teach nothing and hold no links; records that are
    # not HTTP responses, a WAT record without its payload and the cut-off record are bad for the links too
    only_learning = {"no valid WARC-Date", "Location 'http://[oops/'", "a 308 redirect", "WAT: no WARC-Date"}
    assert got == {(file, offset) for file, offset, reason in expected
                   if not any(reason.startswith(text) for text in only_learning)}
    assert code == 1 and summary_count(err, "bad rows") == len(got)


def test_fail_fast_stops_at_the_first_capture_not_learned(tmp_path, capsys):
    archives, expected = unlearned_directory(tmp_path)
    out, bad = tmp_path / "out.csv", tmp_path / "bad.csv"
    code = main(["graph", str(archives), str(out), "--bad-rows", str(bad), "--rung", "protocol", "--fail-fast"])
    err = capsys.readouterr().err
    file, offset, reason = expected[0]
    assert code == 2 and not out.exists() and "Traceback" not in err
    assert f"{file}:{offset}: stopped at the first bad row (--fail-fast)" in err
    with open(bad, newline="") as f:
        assert [(row["file"], int(row["offset"]), row["reason"]) for row in csv.DictReader(f)] == [expected[0]]


def test_a_clean_archive_has_no_bad_rows_at_the_protocol_rung(tmp_path, capsys):
    import gzip

    from test_graph_archive_faults import page

    from _unlearned import redirect

    archive = tmp_path / "clean.warc.gz"
    archive.write_bytes(b"".join(gzip.compress(r) for r in [
        redirect("http://www.docs.test/", 301, "http://docs.test/"),
        page("http://docs.test/", '<a href="http://www.docs.test/">home</a>'),
    ]))
    code, err, bad, edges = run(capsys, tmp_path, archive, "--rung", "protocol")
    assert code == 0 and bad == [] and "taught the protocol rung nothing" not in err
    assert [(e["source"], e["target"]) for e in edges] == [("http://docs.test/", "http://docs.test/")]
