"""``store learn`` on the archive wget wrote leaves exactly the store one-at-a-time recording leaves.

The reference reads the archive with the record reader (``_warc.records``
and ``http_response``, not the capture reader ``store learn`` uses), puts
the captures in date order (a stable sort) and records each through
``record_redirect`` / ``record_response`` with the store's clock at the
capture's date. ``store learn`` of the archive (the command into SQLite,
``learn_files`` into memory), of wget's own CDX and of a CDXJ index of the
archive in Common Crawl's layout must each end in that state: aliases,
rule records, fan-ins, declared cases, evidence, and every URL's
representative.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures.stores import Clock, store_state

from scrapy_iri._cli import main
from scrapy_iri.graph._archive import http_response, target_uri
from scrapy_iri.graph._learn import Capture, learn_files
from scrapy_iri.graph._warc import BadRecord, records
from scrapy_iri.store import EquivalenceStore, MemoryStore, open_store
from scrapy_iri.store._rules import REDIRECTS

from test_graph_captures import reference


def captures_in_date_order(path: Path) -> list[Capture]:
    found, bad = reference(str(path))
    assert bad == []
    ordered = sorted(found, key=lambda c: c[0])  # stable: captures of one second keep their file order
    return [Capture(time, url, status, target, location, context, max_age)
            for time, url, status, target, location, context, max_age in ordered]


def record_one_at_a_time(store: EquivalenceStore, clock: Clock, captures: list[Capture]) -> None:
    for c in captures:
        clock.now = c.time
        if c.status in REDIRECTS:
            assert c.target is not None
            store.record_redirect(c.url, c.status, c.target, context=c.context, location=c.location, lifetime=c.max_age)
        else:
            store.record_response(c.url, c.status, context=c.context)
        store.flush()




@pytest.fixture(scope="module")
def expected(wget_archive: Path) -> tuple[float, list[str], dict[str, Any]]:
    captures = captures_in_date_order(wget_archive)
    statuses = {c.status for c in captures}
    assert {200, 301, 302} <= statuses and sum(c.status == 301 for c in captures) >= 10
    end = captures[-1].time + 1.0
    urls = sorted({u for c in captures for u in (c.url, c.target) if u is not None})
    urls += [u.replace("http://", "https://", 1) for u in urls] + [u.upper() for u in urls]
    clock = Clock(captures[0].time)
    store = MemoryStore(clock=clock)
    record_one_at_a_time(store, clock, captures)
    clock.now = end
    found = store_state(store, end, urls)
    assert found["aliases"] and found["rules"] and found["evidence"]
    return end, urls, found


def learned(uri: str, names: list[Path], end: float) -> EquivalenceStore:
    store = open_store(uri, clock=Clock(end))
    summary, reading = learn_files(store, [str(name) for name in names])
    assert reading.bad == [] and summary.observations
    return store


def test_learn_files_into_memory_is_one_at_a_time_recording(wget_archive, expected):
    end, urls, found = expected
    assert store_state(learned("memory:", [wget_archive], end), end, urls) == found


def test_the_store_learn_command_is_one_at_a_time_recording(wget_archive, expected, tmp_path, capsys):
    end, urls, found = expected
    uri = f"sqlite:///{tmp_path / 'learned.db'}"
    assert main(["store", "--store", uri, "learn", str(wget_archive)]) == 0
    assert "Traceback" not in capsys.readouterr().err
    store = open_store(uri, clock=Clock(end))
    try:
        assert store_state(store, end, urls) == found
    finally:
        store.close()


def cdxj_of(warc: Path, out: Path) -> int:
    """A CDXJ index of ``warc``'s response records as Common Crawl writes one (SURT-like key, timestamp,
    JSON with ``url``, ``status`` and, for a redirect, ``redirect``: the ``Location`` as sent)."""
    lines = []
    with open(warc, "rb") as f:
        for rec in records(f):
            assert not isinstance(rec, BadRecord)
            if rec.header("warc-type").lower() != "response":
                continue
            response = http_response(rec.block if rec.block is not None else rec.head)
            assert not isinstance(response, str)
            uri = target_uri(rec)
            stamp = "".join(ch for ch in rec.header("warc-date") if ch.isdigit())[:14]
            data = {"url": uri, "mime": "text/html", "status": str(response.status), "digest": "sha1:X",
                    "length": str(len(rec.head)), "offset": str(rec.offset), "filename": warc.name}
            location = response.headers.get("location")
            if location:
                data["redirect"] = location[0]
            host = uri.split("/")[2]
            key = ",".join(reversed(host.split("."))) + ")" + uri.split(host, 1)[1]
            lines.append(f"{key} {stamp} {json.dumps(data)}\n")
    out.write_text("".join(lines), encoding="utf-8")
    return len(lines)


def test_a_cdxj_index_of_the_archive_teaches_what_the_archive_teaches(wget_archive, expected, tmp_path):
    end, urls, found = expected
    index = tmp_path / "docs.cdxj"
    assert cdxj_of(wget_archive, index) == len(captures_in_date_order(wget_archive))
    assert store_state(learned("memory:", [index], end), end, urls) == found
    assert store_state(learned(f"sqlite:///{tmp_path / 'cdxj.db'}", [index], end), end, urls) == found


def test_wgets_own_cdx_teaches_what_the_archive_teaches_but_the_locations_shown(wget_archive, expected):
    """wget's CDX holds every response with its redirect target resolved: the store is the archive's, but
    that its evidence shows the absolute target where the archive's shows the ``Location`` as sent."""
    end, urls, found = expected
    cdx = wget_archive.with_suffix("").with_suffix(".cdx")
    got = store_state(learned("memory:", [cdx], end), end, urls)
    assert [{**e, "location": None} for e in got["evidence"]] == [{**e, "location": None} for e in found["evidence"]]
    assert {k: v for k, v in got.items() if k != "evidence"} == {k: v for k, v in found.items() if k != "evidence"}


def test_an_archive_beside_its_indexes_teaches_each_capture_once(wget_archive, expected, tmp_path):
    """wget writes its CDX beside the WARC; pywb keeps indexes beside archives. Learning the directory (the
    WARC, wget's CDX, a CDXJ with redirect targets and pywb's without), a glob of it, the WARC with its
    indexes and itself again through a link, or the WARC and a copy of it, learns each capture once:
    evidence counted twice would carry a rule past its threshold on half its observations."""
    end, urls, found = expected
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    warc = crawl / wget_archive.name
    warc.symlink_to(wget_archive)
    (crawl / "docs.cdx").symlink_to(wget_archive.with_suffix("").with_suffix(".cdx"))
    cdxj_of(wget_archive, crawl / "docs.cdxj")
    pywb = [json.loads(line.split(" ", 2)[2]) for line in (crawl / "docs.cdxj").read_text().splitlines()]
    (crawl / "pywb.cdxj").write_text("".join(  # pywb's CDXJ keeps no redirect target: its 3xx lines are skipped
        f"{line.split(' ', 2)[0]} {line.split(' ', 2)[1]} {json.dumps({k: v for k, v in data.items() if k != 'redirect'})}\n"
        for line, data in zip((crawl / "docs.cdxj").read_text().splitlines(), pywb)))
    (tmp_path / "again.warc.gz").symlink_to(wget_archive)
    (tmp_path / "copy.warc.gz").write_bytes(wget_archive.read_bytes())
    for names in ([crawl], [crawl / "*"], [crawl / "docs.cdx", warc, crawl / "docs.cdxj", tmp_path / "again.warc.gz"],
                  [warc, tmp_path / "copy.warc.gz"]):
        assert store_state(learned("memory:", names, end), end, urls) == found, names


def wat_of(warc: Path, out: Path) -> int:
    """A WAT of ``warc``'s response records as Common Crawl lays one out: a warcinfo record, then for each
    response a ``metadata`` record whose JSON ``Envelope`` holds its WARC headers, status and HTTP headers."""
    import gzip

    members = [b"WARC/1.0\r\nWARC-Type: warcinfo\r\nWARC-Date: 2024-03-01T00:00:00Z\r\nContent-Length: 0\r\n\r\n\r\n\r\n"]
    with open(warc, "rb") as f:
        for rec in records(f):
            assert not isinstance(rec, BadRecord)
            if rec.header("warc-type").lower() != "response":
                continue
            response = http_response(rec.block if rec.block is not None else rec.head)
            assert not isinstance(response, str)
            uri, date = target_uri(rec), rec.header("warc-date")
            envelope = {"Format": "WARC", "WARC-Header-Metadata": {
                "WARC-Type": "response", "WARC-Target-URI": uri, "WARC-Date": date},
                "Payload-Metadata": {"HTTP-Response-Metadata": {
                    "Response-Message": {"Version": "HTTP/1.1", "Status": str(response.status), "Reason": ""},
                    "Headers": {name: values[-1] for name, values in response.headers.items()}}}}
            block = json.dumps({"Container": {"Filename": warc.name}, "Envelope": envelope}).encode()
            members.append(f"WARC/1.0\r\nWARC-Type: metadata\r\nWARC-Target-URI: {uri}\r\nWARC-Date: {date}\r\n"
                           f"Content-Type: application/json\r\nContent-Length: {len(block)}\r\n\r\n".encode()
                           + block + b"\r\n\r\n")
    out.write_bytes(b"".join(gzip.compress(m) for m in members))
    return len(members) - 1


def test_a_warc_beside_the_wat_made_of_it_teaches_each_capture_once(wget_archive, expected, tmp_path):
    """Common Crawl publishes each WARC with its WAT; both in one directory are two kinds of file holding
    the same captures, learned once."""
    end, urls, found = expected
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    (crawl / "docs.warc.gz").symlink_to(wget_archive)
    assert wat_of(wget_archive, crawl / "docs.warc.wat.gz") == len(captures_in_date_order(wget_archive))
    assert store_state(learned("memory:", [crawl / "docs.warc.wat.gz"], end), end, urls) == found  # a WAT alone
    assert store_state(learned("memory:", [crawl], end), end, urls) == found
