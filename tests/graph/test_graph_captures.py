"""The fast capture reader gives exactly what the record reader gives: captures, bad records, offsets.

The reference is the reading ``store learn`` did before the fast reader:
every record framed by ``_warc.records`` and its whole HTTP message parsed
by ``http_response``. Archives: clean and damaged, gzip per record, whole-
file gzip and uncompressed, and the archive wget writes.
"""

from __future__ import annotations

import gzip
import os
import random
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_iri.graph import _heads, _warc
from scrapy_iri.graph._archive import http_response, target_uri
from scrapy_iri.graph._learn import (
    Reading, _capture, _epoch, _http_head, _iso_epoch, _wat_capture, learn_files, ordered_captures, warc_captures,
)
from scrapy_iri.graph._pieces import pieces, span_records
from scrapy_iri.graph._warc import BadRecord

from test_graph_archive_faults import http, members, record


def inflaters() -> dict[str, object]:
    isal_zlib = pytest.importorskip("isal.isal_zlib")  # in the archive and test extras
    return {"zlib": zlib.decompressobj, "isal": isal_zlib.decompressobj}


def reference(path: str, span: tuple[int, int] | None = None) -> tuple[list[tuple], list[tuple[str, str]]]:
    """Captures and bad records as the record reader and ``http_response`` give them."""
    reading, found = Reading(), []
    with open(path, "rb") as f:
        size = os.path.getsize(path)
        for rec in span_records(f, *(span or (0, size))):
            where = f"{path}:{rec.offset}"
            if isinstance(rec, BadRecord):
                reading.add(where, rec.reason)
                continue
            kind = rec.header("warc-type").lower()
            if kind == "response":
                uri = target_uri(rec)
                if uri.partition(":")[0].lower() not in ("http", "https"):
                    continue
                response = http_response(rec.block if rec.block is not None else rec.head)
                when = _epoch(rec.header("warc-date"))
                if isinstance(response, str) or when is None:
                    reading.add(where, response if isinstance(response, str) else "no valid WARC-Date")
                    continue
                got = _capture(uri, when, response.status, response.headers)
            elif kind == "metadata" and (rec.block or b"")[:1] == b"{":
                got = _wat_capture(rec.block or b"")
                if got is None:
                    continue
            else:
                continue
            if isinstance(got, str):
                reading.add(where, got)
            else:
                found.append(got)
    return [astuple(c) for c in found], reading.bad


def astuple(capture) -> tuple:
    return (capture.time, capture.url, capture.status, capture.target, capture.location, capture.context,
            capture.max_age)


def fast(path: str, span: tuple[int, int] | None = None) -> tuple[list[tuple], list[tuple[str, str]]]:
    reading = Reading()
    return [astuple(c) for c in warc_captures(path, reading, span)], reading.bad


def redirect(uri: str, status: int, location: str, date: str, *headers: str, body: bytes = b"") -> bytes:
    return record("response", uri, http(status, body, f"Location: {location}", *headers), date)


def sample_records(seed: int = 7) -> list[bytes]:
    """Captures of every shape a capture reader meets, and records it must pass over."""
    rng = random.Random(seed)
    noise = bytes(rng.getrandbits(8) for _ in range(150_000))  # incompressible: a member of many feeds
    wat = (b'{"Envelope": {"WARC-Header-Metadata": {"WARC-Type": "response", "WARC-Target-URI": "http://w.test/a",'
           b' "WARC-Date": "2024-02-01T00:00:00Z"}, "Payload-Metadata": {"HTTP-Response-Metadata": {'
           b'"Response-Message": {"Status": "301"}, "Headers": {"Location": "/b", "Vary": "Cookie"}}}}}')
    found = [
        record("warcinfo", "", b"software: test\r\n"),
        redirect("http://a.test/1", 301, "/one", "2024-03-01T12:00:00Z"),
        redirect("http://a.test/2", 308, "https://a.test/2", "2024-03-01T12:00:01Z", "Date: Fri, 01 Mar 2024 12:00:01 GMT",
                 "Expires: Fri, 01 Mar 2024 13:00:01 GMT"),
        redirect("http://a.test/3", 301, "/three", "2024-03-01T12:00:02.250Z", "Cache-Control: public, max-age=600"),
        redirect("http://a.test/4", 302, "/four", "2024-03-01T12:00:03+01:00", "Set-Cookie: a=1", "Set-Cookie: b=2"),
        redirect("http://a.test/5", 301, "/five", "2024-03-01T12:00:04Z", "Vary: Accept-Encoding, Cookie"),
        redirect("http://a.test/6", 301, "/six", "20240301120005", " location : /six", "X-Note: see location"),
        record("response", "http://a.test/7", b"HTTP/1.1 301 Moved\r\nlocation:/seven\x85Vary: Cookie\r\n\r\n",
               "2024-03-01T12:00:06Z"),
        record("response", "http://a.test/8", b"HTTP/1.1 301 Moved\nLocation: /eight\n\nbody", "2024-03-01T12:00:07Z"),
        record("response", "http://a.test/9", b"HTTP/1.1 \xb200 Odd\r\nLocation: /nine\r\n\r\n", "2024-03-01T12:00:08Z"),
        record("response", "http://a.test/10", b"not HTTP at all", "2024-03-01T12:00:09Z"),
        record("response", "http://a.test/11", http(301, b""), "2024-03-01T12:00:10Z"),
        record("response", "http://a.test/12", http(301, b"", "Location: http://[bad"), "2024-03-01T12:00:11Z"),
        redirect("http://a.test/13", 301, "/13", "not a date"),
        redirect("http://a.test/14", 301, "/14", "2024-02-30T00:00:00Z"),
        redirect("http://a.test/15", 301, "/15", "2024-03-01T24:00:00Z"),
        record("response", "ftp://a.test/16", http(301, b"", "Location: /x"), "2024-03-01T12:00:12Z"),
        record("response", "<http://a.test/17>", http(200, noise, "Content-Type: application/octet-stream"),
               "2024-03-01T12:00:13Z"),
        record("response", "http://a.test/18", b"HTTP/1.1 200 OK\r\nX-Big: " + b"y" * 70_000 + b"\r\n\r\nbody",
               "2024-03-01T12:00:14Z"),
        record("request", "http://a.test/19", b"GET /19 HTTP/1.1\r\n\r\n" + noise[:5000]),
        record("metadata", "http://w.test/a", wat, "2024-02-01T00:00:00Z"),
        record("metadata", "http://w.test/b", b'{"Envelope": {}}'),
        record("resource", "http://a.test/20", noise[:90_000]),
        redirect("https://a.test/21", 307, "//b.test/x", "2024-03-01T12:00:15Z"),
        redirect("http://a.test/22", 200, "/ignored", "2024-03-01T12:00:16Z", "Set-Cookie: s=1"),
        redirect("http://a.test/24", 301, "/24", "2024-03-01T12:00:18Z", "Location: /other"),  # two that differ
    ]
    # WARC headers as other writers lay them out: odd spacing, a repeated name, a continuation line
    found.append(b"WARC/1.0\r\nwarc-type :response\r\nWARC-Type: request\r\nWARC-Target-URI: http://a.test/23\r\n"
                 b"WARC-Date: 2024-03-01T12:00:17Z\r\n  (folded)\r\nContent-Length: 33\r\n\r\n"
                 b"HTTP/1.1 301 X\r\nLocation: /23\r\n\r\n\r\n\r\n")
    return found


def variants(tmp_path: Path, found: list[bytes]) -> dict[str, Path]:
    """The records written clean and damaged in every framing."""
    compressed = [gzip.compress(r) for r in found]
    k = len(found) // 2
    lie = list(found)
    lie[k] = lie[k].replace(b"Content-Length: ", b"Content-Length: 1", 1)
    short = list(found)
    short[3] = short[3].replace(b"\r\n\r\n", b"\r\n\r\nX", 1)[:-1]
    files = {
        "members.warc.gz": b"".join(compressed),
        "plain.warc": b"".join(found),
        "whole.warc.gz": gzip.compress(b"".join(found)),
        "truncated-member.warc.gz": b"".join(compressed[:k]) + compressed[k][:-30] + b"".join(compressed[k + 1 :]),
        "cut-end.warc.gz": b"".join(compressed)[:-200],
        "cut-end.warc": b"".join(found)[:-200],
        "lie.warc.gz": b"".join(gzip.compress(r) for r in lie),
        "lie.warc": b"".join(lie),
        "short.warc.gz": b"".join(gzip.compress(r) for r in short),
        "garbage-between.warc.gz": b"".join(compressed[:k]) + b"junk" + b"".join(compressed[k:]),
        "garbage-end.warc.gz": b"".join(compressed) + b"\x00\x00",
        "two-per-member.warc.gz": b"".join(compressed[:k]) + gzip.compress(found[k] + found[k + 1])
        + b"".join(compressed[k + 2 :]),
        "split-member.warc.gz": b"".join(compressed[:k]) + gzip.compress(found[k][:40]) + gzip.compress(found[k][40:])
        + b"".join(compressed[k + 1 :]),
        "lf-endings.warc": b"".join(r[:-4] + b"\n\n" for r in found),
        "extra-breaks.warc.gz": b"".join(gzip.compress(r + b"\r\n") for r in found),
        "empty.warc.gz": b"",
    }
    paths = {}
    for name, data in files.items():
        paths[name] = tmp_path / name
        paths[name].write_bytes(data)
    return paths


@pytest.mark.parametrize("inflater", ["zlib", "isal"])
@pytest.mark.parametrize("max_block", [None, 4096])
def test_the_fast_reader_gives_what_the_record_reader_gives(tmp_path, monkeypatch, max_block, inflater):
    monkeypatch.setattr(_heads, "_inflate", inflaters()[inflater])
    if max_block is not None:  # blocks over the limit are not kept: only their first bytes are read
        monkeypatch.setattr(_warc, "MAX_BLOCK", max_block)
    for name, path in variants(tmp_path, sample_records()).items():
        expected = reference(str(path))
        assert fast(str(path)) == expected, name
        if name == "members.warc.gz":
            assert len(expected[0]) >= 12 and len(expected[1]) >= 9  # the sample holds both kinds
        if name in ("truncated-member.warc.gz", "lie.warc", "garbage-between.warc.gz"):
            assert expected[1] and any(path.name in where for where, _ in expected[1])


@pytest.mark.parametrize("inflater", ["zlib", "isal"])
def test_pieces_of_a_file_read_fast_give_what_the_record_reader_gives(tmp_path, monkeypatch, inflater):
    monkeypatch.setattr(_heads, "_inflate", inflaters()[inflater])
    found = sample_records(3) * 6
    for name, path in variants(tmp_path, found).items():
        size = path.stat().st_size
        for piece in pieces([str(path)], max(1, size // 7)):
            span = (piece.start, piece.end)
            assert fast(str(path), span) == reference(str(path), span), (name, span)


def test_the_wget_archive_and_its_damaged_copies(wget_archive, tmp_path):
    found = members(wget_archive)
    redirects = sum(b"WARC-Type: response" in r and b"HTTP/1.1 30" in r for r in found)
    assert redirects >= 10
    expected = reference(str(wget_archive))
    assert fast(str(wget_archive)) == expected
    assert sum(300 <= c[2] < 400 for c in expected[0]) == redirects
    paths = variants(tmp_path, found[:400])
    for name in ("truncated-member.warc.gz", "lie.warc.gz", "plain.warc", "whole.warc.gz", "cut-end.warc.gz"):
        assert fast(str(paths[name])) == reference(str(paths[name])), name


lines = st.lists(st.sampled_from([
    "Location: /a", "location:/b", " Location : /c", "LOCATION: /d", "Vary: Cookie", "vary: accept", "Set-Cookie: x=1",
    "Date: Fri, 01 Mar 2024 12:00:01 GMT", "Expires: Fri, 01 Mar 2024 13:00:01 GMT", "Cache-Control: max-age=5",
    "X-Location: /e", "Server: s", "Locat\x85ion: /f", "Date\x0b: x", "\tVary: Cookie", "Location\xa0: /g",
    "no colon", "", "Cache-Control: must-revalidate", "Set-Cookie: a=1; expires=Fri, 01 Mar 2024",
]), max_size=8)


@settings(max_examples=300, deadline=None)
@given(status=st.sampled_from(["HTTP/1.1 301 M", "HTTP/1.0 302", "HTTP/1.1 30", "HTTP/1.1 2\xb20 X", "HTP/1.1 301",
                               "", "HTTP/1.1 301 see Location: x"]),
       headers=lines, breaks=st.sampled_from(["\r\n", "\n", "\r"]))
def test_the_wanted_headers_are_read_as_http_response_reads_them(status, headers, breaks):
    block = (breaks.join([status, *headers]) + "\r\n\r\nbody").encode("latin-1")
    full = http_response(block)
    got = _http_head(block)
    if isinstance(full, str):
        assert got == full
    else:
        wanted = {name: values for name, values in full.headers.items()
                  if name in ("location", "cache-control", "expires", "date", "set-cookie", "vary")}
        assert got == (full.status, wanted)


@settings(max_examples=300, deadline=None)
@given(st.datetimes(), st.sampled_from(["Z", "", "+00:00", ".5Z", "Z "]), st.booleans())
def test_warc_dates_are_read_as_iso_8601_reads_them(moment, suffix, mangle):
    text = moment.strftime("%Y-%m-%dT%H:%M:%S") + suffix
    if mangle:
        text = text.replace("T", "T2", 1)[:19] + "Z"
    assert _epoch(text) == _iso_epoch(text.strip())


def test_captures_are_ordered_by_date_across_files_as_a_stable_sort(tmp_path):
    def warc(name: str, dates: list[str]) -> str:
        path = tmp_path / name
        path.write_bytes(b"".join(gzip.compress(redirect(f"http://o.test/{name}/{i}", 301, f"/n{i}", d))
                                  for i, d in enumerate(dates)))
        return str(path)

    a = warc("a.warc.gz", ["2024-01-01T00:00:01Z", "2024-01-01T00:00:03Z", "2024-01-01T00:00:03Z"])
    b = warc("b.warc.gz", ["2024-01-01T00:00:02Z", "2024-01-01T00:00:03Z", "2024-01-01T00:00:00Z"])
    c = warc("c.warc.gz", ["2024-01-01T00:00:04Z", "2024-01-01T00:00:05Z"])
    for names in ([a, b, c], [c, b, a], [a, c], [b]):
        everything = [capture for name in names for capture in warc_captures(name, Reading())]
        expected = sorted(everything, key=lambda capture: capture.time)
        assert [capture.url for capture in ordered_captures(names, Reading())] == [c.url for c in expected]


def test_store_learn_learns_what_it_learned_from_the_record_reader(tmp_path):
    from scrapy_iri.store import Observation, open_store

    path = variants(tmp_path, sample_records())["truncated-member.warc.gz"]
    captures, bad = reference(str(path))
    expected = open_store("memory:")
    expected.learn(Observation(url, status, target, context, location, time, max_age)
                   for time, url, status, target, location, context, max_age in sorted(captures, key=lambda c: c[0]))
    store = open_store("memory:")
    summary, reading = learn_files(store, [str(path)])
    assert reading.bad == bad and summary.observations == len(captures)
    assert sorted(map(repr, store.export())) == sorted(map(repr, expected.export()))


def test_store_learn_shows_its_progress_on_request(tmp_path, capsys):
    from scrapy_iri._cli import main

    path = variants(tmp_path, sample_records())["members.warc.gz"]
    store = f"sqlite:///{tmp_path / 'p.db'}"
    assert main(["store", "--store", store, "learn", "--progress", "--max-reported", "0", str(path)]) == 1
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.startswith("scrapy-iri: store learn:")]
    # 12: /7's Location holds a NEL byte (0x85), which is no HTTP line end (RFC 9112 2.2) and no UTF-8
    assert lines and lines[-1].startswith("scrapy-iri: store learn: learned 12 of 12 captures (at ")
    assert "learned from 1 files: 12 captures" in captured.out and "Traceback" not in captured.err
    assert main(["store", "--store", store, "learn", str(path)]) == 1  # not a terminal: no progress
    assert "store learn:" not in capsys.readouterr().err


@settings(max_examples=500, deadline=None)
@given(st.text("0123456789", min_size=1, max_size=16) | st.datetimes().map(lambda d: d.strftime("%Y%m%d%H%M%S")))
def test_cdx_timestamps_are_read_as_strptime_reads_them(stamp):
    from datetime import datetime, timezone

    digits = (stamp + "0101000000")[:14] if len(stamp) < 14 else stamp[:14]
    try:
        expected = datetime.strptime(digits, "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        expected = None
    assert _epoch(stamp) == expected
    assert _epoch("20240229235959") == 1709251199.0 and _epoch("20230229000000") is None
