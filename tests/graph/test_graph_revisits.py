"""Deduplicated archives: ``revisit`` records in ``graph`` and ``store learn``.

A revisit is a capture at its own URI and date of the payload of the record
it refers to: its links are that record's, resolved against the revisit's
URI; its HTTP head (a 301 with its Location, a 200) is a capture at its
date. Real ones come from Debian's wget ``--warc-dedup`` recrawling the
docs site on loopback; the WARC/1.1 forms (``WARC-Refers-To-Target-URI``,
``WARC-Refers-To-Date``, a payload digest only, a 304) are written here.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from scrapy_iri.graph import archive_links, learn_files
from scrapy_iri.graph._learn import Reading, captures_of
from scrapy_iri.graph._warc import Record, records
from scrapy_iri.store import open_store
from test_graph_archive_faults import http, page, record, run

LATER = "2024-03-05T08:00:00Z"


def _revisits(archive: Path) -> list[Record]:
    with open(archive, "rb") as f:
        return [r for r in records(f) if isinstance(r, Record) and r.header("warc-type") == "revisit"]


def _link_sets(rows: list[tuple], prefix: str) -> set[tuple[str, str, str]]:
    return {(s, t, p) for s, t, p, _, where, problem in rows if where.startswith(prefix) and problem is None}


def test_a_wget_dedup_recrawl_has_every_link_of_the_crawl(wget_archive, dedup_archive, tmp_path):
    """The site did not change: the recrawl, its pages mostly revisits, gives exactly the first crawl's links."""
    revisits = _revisits(dedup_archive)
    assert len(revisits) > 20 and all(r.header("warc-refers-to") for r in revisits)
    both = tmp_path / "both"
    both.mkdir()
    shutil.copy(wget_archive, both / "a.warc.gz")
    shutil.copy(dedup_archive, both / "b.warc.gz")
    rows = list(archive_links(str(both)))
    assert not [row for row in rows if row[5] is not None]
    first, second = _link_sets(rows, f"{both / 'a.warc.gz'}:"), _link_sets(rows, f"{both / 'b.warc.gz'}:")
    assert len(first) > 500 and second == first
    # each revisit's links carry its own date, not the original's
    dates = {where.rpartition(":")[0]: date for _, _, _, date, where, _ in rows}
    assert dates[str(both / "b.warc.gz")] > dates[str(both / "a.warc.gz")]


def test_a_revisit_whose_record_is_not_in_the_input_is_a_bad_row(dedup_archive, tmp_path, capsys):
    code, err, bad, _ = run(capsys, tmp_path, dedup_archive)
    revisits = [r for r in _revisits(dedup_archive) if r.block and r.block.startswith(b"HTTP/1.1 200")]
    assert code == 1 and len(bad) == len(revisits)
    assert {row["offset"] for row in bad} == {r.offset for r in revisits}
    assert all("a revisit of a record that is not in the input (urn:uuid:" in row["reason"] for row in bad)


def test_store_learn_keeps_every_capture_of_a_dedup_recrawl(wget_archive, dedup_archive):
    """Every capture of the recrawl is there, revisits included, and a revisit of a 301 is that redirect
    at the revisit's date."""
    first, second = Reading(), Reading()
    crawled = list(captures_of([str(wget_archive)], first))
    recrawled = list(captures_of([str(dedup_archive)], second))
    assert not first.bad and not second.bad
    assert sorted((c.url, c.status, c.target) for c in recrawled) == sorted((c.url, c.status, c.target) for c in crawled)
    assert min(c.time for c in recrawled) > max(c.time for c in crawled)
    redirects = [r for r in _revisits(dedup_archive) if r.block and r.block.startswith(b"HTTP/1.1 301")]
    for revisit in redirects:
        uri = revisit.header("warc-target-uri").strip("<>")
        assert any(c.url == uri and c.status == 301 for c in recrawled)
    store = open_store("memory:")
    summary, reading = learn_files(store, [str(wget_archive), str(dedup_archive)])
    assert not reading.bad and summary.observations == len(crawled) + len(recrawled)


def _warc(path: Path, *items: bytes) -> Path:
    path.write_bytes(b"".join(gzip.compress(item) for item in items))
    return path


def test_warc_1_1_revisits_at_another_uri_by_target_and_date_by_digest_and_304(tmp_path, capsys):
    original = record("response", "http://a.test/dir/page", http(200, b'<a href="x">x</a><a href="/y">y</a>',
                                                                 "Content-Type: text/html"),
                      "2024-03-01T12:00:00Z", "", "WARC-Payload-Digest: sha1:AAAA", record_id="1")
    by_target = record("revisit", "http://b.test/other/", b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n",
                       LATER, "", "WARC-Refers-To-Target-URI: <http://a.test/dir/page>",
                       "WARC-Refers-To-Date: 2024-03-01T12:00:00Z", record_id="2")
    by_digest = record("revisit", "http://c.test/", b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n", LATER, "",
                       "WARC-Payload-Digest: sha1:AAAA", record_id="3")
    not_modified = record("revisit", "http://a.test/dir/page", b"HTTP/1.1 304 Not Modified\r\n\r\n", LATER, "",
                          "WARC-Profile: http://netpreserve.org/warc/1.1/revisit/server-not-modified",
                          "WARC-Refers-To: <urn:uuid:1>", record_id="4")
    headless = record("revisit", "http://d.test/", b"", LATER, "", "WARC-Refers-To: <urn:uuid:1>", record_id="5")
    archive = _warc(tmp_path / "r.warc.gz", by_target, original, by_digest, not_modified, headless)
    code, err, bad, edges = run(capsys, tmp_path, archive)
    assert code == 0 and not bad, err
    got = [(e["source"], e["target"], e["date"]) for e in edges]
    assert got == [
        ("http://b.test/other/", "http://b.test/other/x", LATER),  # resolved against the revisit's URI
        ("http://b.test/other/", "http://b.test/y", LATER),
        ("http://a.test/dir/page", "http://a.test/dir/x", "2024-03-01T12:00:00Z"),
        ("http://a.test/dir/page", "http://a.test/y", "2024-03-01T12:00:00Z"),
        ("http://c.test/", "http://c.test/x", LATER),
        ("http://c.test/", "http://c.test/y", LATER),
        ("http://d.test/", "http://d.test/x", LATER),  # no head: the original's answer
        ("http://d.test/", "http://d.test/y", LATER),
    ]
    # store learn: a 304 is an answer (not a redirect without a Location); a revisit without its head is
    # a capture whose status is not known: a bad record, never a guess
    reading = Reading()
    captures = list(captures_of([str(archive)], reading))
    assert [(c.url, c.status) for c in captures] == [
        ("http://b.test/other/", 200), ("http://a.test/dir/page", 200), ("http://c.test/", 200),
        ("http://a.test/dir/page", 304)]
    assert len(reading.bad) == 1 and "a revisit without its HTTP response head" in reading.bad[0][1]


def test_a_revisit_of_a_301_is_that_redirect_at_its_date(tmp_path, capsys):
    """``store learn`` learns a revisit of a 301 as it learns a response record of that 301 at the
    revisit's date; ``graph --redirects edges`` writes it as that redirect."""
    moved = b"HTTP/1.1 301 Moved Permanently\r\nLocation: http://a.test/new\r\nContent-Length: 0\r\n\r\n"
    first = [
        record("response", "http://a.test/old", moved, "2024-03-01T12:00:00Z", "", "WARC-Payload-Digest: sha1:E",
               record_id="1"),
        page("http://a.test/new", '<a href="old">o</a>', "2024-03-01T12:00:01Z"),
        page("http://a.test/old", "<p>back</p>", "2024-03-02T00:00:00Z"),
    ]
    revisit = record("revisit", "http://a.test/old", moved, "2024-03-03T00:00:00Z", "", "WARC-Refers-To: <urn:uuid:1>",
                     record_id="2")
    response = record("response", "http://a.test/old", moved, "2024-03-03T00:00:00Z", record_id="2")
    learned = {}
    for name, last in (("revisit", [revisit]), ("response", [response]), ("without", [])):
        store = open_store("memory:")
        summary, reading = learn_files(store, [str(_warc(tmp_path / f"{name}.warc.gz", *first, *last))])
        assert not reading.bad
        learned[name] = (summary.as_dict(), store.representative("http://a.test/old"),
                         [(e.time, e.url, e.status, e.target) for e in store.evidence("http://a.test/old")])
    assert learned["revisit"] == learned["response"] != learned["without"]
    assert learned["revisit"][0]["observations"] == 4
    code, err, bad, edges = run(capsys, tmp_path, tmp_path / "revisit.warc.gz", "--redirects", "edges")
    assert code == 0 and not bad, err
    assert [(e["source"], e["target"], e["path"], e["date"]) for e in edges if e["path"].startswith("REDIRECT")] == [
        ("http://a.test/old", "http://a.test/new", "REDIRECT@/301", "2024-03-01T12:00:00Z")]
    assert "duplicate edges merged               1" in err  # the revisit's redirect: the same edge, later


def test_wat_records_of_revisits(tmp_path, capsys):
    """A WAT record of a revisit: a capture at its own URI and date for ``store learn``; for ``graph`` a
    redirect when it is one, else a bad row (its links are the original's, which a WAT does not hold)."""
    import json

    def wat(uri: str, status: str, headers: dict) -> bytes:
        envelope = {
            "WARC-Header-Metadata": {"WARC-Type": "revisit", "WARC-Target-URI": uri, "WARC-Date": LATER,
                                     "WARC-Refers-To": "<urn:uuid:1>"},
            "Payload-Metadata": {"HTTP-Response-Metadata": {"Response-Message": {"Status": status}, "Headers": headers}},
        }
        return record("metadata", uri, json.dumps({"Envelope": envelope}).encode(), content_type="application/json")

    archive = _warc(tmp_path / "r.wat.gz", wat("http://a.test/old", "301", {"Location": "/new"}),
                    wat("http://a.test/new", "200", {"Content-Type": "text/html"}),
                    wat("http://a.test/two", "301", {"Location": "/x", "location": "/y"}))
    reading = Reading()
    assert [(c.url, c.status, c.target) for c in captures_of([str(archive)], reading)] == [
        ("http://a.test/old", 301, "http://a.test/new"), ("http://a.test/new", 200, None)]
    assert [reason for _, reason in reading.bad] == ["a 301 redirect with 2 different Locations: '/x', '/y'"]
    code, err, bad, edges = run(capsys, tmp_path, archive, "--redirects", "edges")
    assert code == 1
    assert [(e["source"], e["target"], e["path"], e["date"]) for e in edges] == [
        ("http://a.test/old", "http://a.test/new", "REDIRECT@/301", LATER)]
    assert [row["reason"][:28] for row in bad] == ["WAT: a revisit record: its l", "a 301 redirect with 2 differ"]


def _dedup_records(n: int) -> list[bytes]:
    """``n`` pages of 40 kB each with its own links, then a revisit of each at another URI, in reverse
    order (each looked up far behind the one before)."""
    pages = []
    for i in range(n):
        body = f'<a href="/to/{i}">l</a><a href="sub/{i}">m</a>{"x" * 40_000}'.encode()
        pages.append(record("response", f"http://a.test/p/{i}", http(200, body, "Content-Type: text/html"),
                            "2024-03-01T12:00:00Z", "", record_id=f"p{i}"))
    revisits = [record("revisit", f"http://b.test/q/{i}/", b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n",
                       LATER, "", f"WARC-Refers-To: <urn:uuid:p{i}>", record_id=f"r{i}") for i in reversed(range(n))]
    return pages + revisits


def test_revisits_in_a_whole_file_gzip_warc_have_their_originals_links(tmp_path):
    """One gzip member holding every record (several MB inflated): each revisit finds its original deep
    inside the member, with the links a WARC of one member per record gives."""
    items = _dedup_records(150)
    whole, members = tmp_path / "whole.warc.gz", _warc(tmp_path / "members.warc.gz", *items)
    whole.write_bytes(gzip.compress(b"".join(items)))
    found = {}
    for archive in (whole, members):
        rows = list(archive_links(str(archive)))
        assert not [row for row in rows if row[5] is not None]
        found[archive] = sorted(row[:4] for row in rows)
    assert found[whole] == found[members]
    revisited = {(s, t) for s, t, *_ in found[whole] if s.startswith("http://b.test/")}
    assert len(revisited) == 300 and ("http://b.test/q/0/", "http://b.test/q/0/sub/0") in revisited
    assert ("http://b.test/q/149/", "http://b.test/to/149") in revisited


def test_a_record_inside_a_gzip_member_is_read_from_the_nearest_checkpoint(tmp_path):
    """Every record of a whole-file gzip WARC, read by its ``member+inside`` offset from the member's
    checkpoints, is the record the reader gives there; an offset where no record starts gives none."""
    from scrapy_iri.graph._inside import STEP, MemberIndex

    archive = tmp_path / "whole.warc.gz"
    archive.write_bytes(gzip.compress(b"".join(_dedup_records(120))))
    with open(archive, "rb") as f:
        expected = [r for r in records(f) if isinstance(r, Record)]
    assert len(expected) == 240 and all(r.offset.startswith("0+") for r in expected[1:])
    index = MemberIndex(str(archive), 0)
    insides = [point.inside for point in index.points]
    assert len(insides) > 10 and insides[0] == 0
    assert all(STEP <= b - a < 2 * STEP for a, b in zip(insides, insides[1:]))
    for want in expected[1:]:
        got = index.record(int(want.offset.partition("+")[2]))
        assert got is not None and (got.offset, got.headers, got.block) == (want.offset, want.headers, want.block)
    assert index.record(int(expected[5].offset.partition("+")[2]) + 3) is None
