"""Archives whose captures the protocol rung's learning pass cannot all learn: each one it rejects is
listed with its file, its offset (worked out from the bytes written, not read back) and why."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

from test_graph_archive_faults import http, page, record

GOOD = "2024-03-01T12:00:00Z"


def redirect(uri: str, status: int, location: str | None, date: str = GOOD) -> bytes:
    headers = [] if location is None else [f"Location: {location}"]
    return record("response", uri, http(status, b"", *headers), date)


def wat(uri: str, envelope: dict) -> bytes:
    return record("metadata", uri, json.dumps({"Envelope": envelope}).encode(), content_type="application/json")


def _text(seed: int) -> str:
    """2,048 characters that gzip does not shrink much (so that a few pages make several pieces)."""
    return "".join(hashlib.sha256(f"{seed}.{i}".encode()).hexdigest() for i in range(32))


def unlearned_directory(tmp_path: Path, filler: int = 0) -> tuple[Path, list[tuple[str, int, str]]]:
    """A directory of archives and the captures its learning pass must report: ``(file, offset, reason
    text)``, in file order; ``filler`` good pages before each bad capture of ``a.warc.gz`` (for pieces)."""
    directory = tmp_path / "unlearned"
    directory.mkdir()
    expected: list[tuple[str, int, str]] = []
    fill = [page(f"http://docs.test/f{i}.html", f'<a href="f{i + 1}.html">next</a><p>{_text(i)}</p>')
            for i in range(filler)]
    a = [
        redirect("http://www.docs.test/", 301, "http://docs.test/"),
        page("http://docs.test/", '<a href="a.html">a</a>'),
        *fill,
        (redirect("http://docs.test/old", 301, "/new", date="yesterday"), "no valid WARC-Date"),
        *fill,
        (page("http://docs.test/dated", '<a href="/x">x</a>', date="2024-13-45T99:99:99Z"), "no valid WARC-Date"),
        (redirect("http://docs.test/bad", 301, "http://[oops/"), "Location 'http://[oops/' is not an IRI reference"),
        *fill,
        (redirect("http://docs.test/none", 308, None), "a 308 redirect without a Location"),
        (record("response", "http://docs.test/raw", b"garbage, not HTTP\r\n\r\n"),
         "the record's block is not an HTTP response"),
        (record("response", "http://docs.test/status", b"HTTP/1.1 OK\r\n\r\n"), "bad HTTP status line"),
        record("response", "ftp://docs.test/file", http(301, b"", "Location: /elsewhere")),  # not HTTP: not a capture
        page("http://docs.test/a.html", '<a href="http://www.docs.test/">home</a>'),
    ]
    offset = 0
    members = []
    for item in a:
        data, reason = item if isinstance(item, tuple) else (item, None)
        member = gzip.compress(data, mtime=0)
        if reason is not None:
            expected.append((str(directory / "a.warc.gz"), offset, reason))
        members.append(member)
        offset += len(member)
    (directory / "a.warc.gz").write_bytes(b"".join(members))

    http_meta = {"Response-Message": {"Status": "301"}, "Headers": {"Location": "http://docs.test/w2"}}
    b = [
        (wat("http://docs.test/w1", {"WARC-Header-Metadata": {"WARC-Type": "response",
                                                               "WARC-Target-URI": "http://docs.test/w1",
                                                               "WARC-Date": GOOD}}),
         "WAT: no Envelope.Payload-Metadata"),
        (wat("http://docs.test/w3", {"WARC-Header-Metadata": {"WARC-Type": "response",
                                                               "WARC-Target-URI": "http://docs.test/w3"},
                                     "Payload-Metadata": {"HTTP-Response-Metadata": http_meta}}),
         "WAT: no WARC-Date"),
    ]
    offset = 0
    members = []
    for data, reason in b:
        members.append(gzip.compress(data, mtime=0))
        expected.append((str(directory / "b.wat.gz"), offset, reason))
        offset += len(members[-1])
    (directory / "b.wat.gz").write_bytes(b"".join(members))

    # a plain WARC cut off in its last record: a bad record for both passes, reported once
    good = redirect("http://docs.test/c1", 301, "http://docs.test/c2")
    cut = redirect("http://docs.test/c3", 301, "http://docs.test/c4")
    (directory / "c.warc").write_bytes(good + cut[:-20])
    expected.append((str(directory / "c.warc"), len(good), "record cut off at the end of the file"))
    return directory, expected


def assert_engine_reports_as_local(engine: str, capsys, tmp_path: Path, monkeypatch) -> None:
    """``graph --rung protocol --engine ENGINE`` over pieces cut inside a file (the first pass on the
    workers): the same output and bad rows as the local engine, in the same order, each one expected."""
    import csv
    import io

    from _messy import run_archive_cli

    from scrapy_iri.graph import _split

    monkeypatch.setattr(_split, "PIECE_BYTES", 4000)
    archives, expected = unlearned_directory(tmp_path, filler=4)
    assert len(_split.pieces(sorted(str(path) for path in archives.iterdir()), 4000)) >= 5
    local = run_archive_cli(capsys, tmp_path, "local", archives, "--rung", "protocol")
    remote = run_archive_cli(capsys, tmp_path, engine, archives, "--rung", "protocol", "--engine", engine,
                             "--workers", "2")
    assert local["code"] == remote["code"] == 1
    assert remote == local
    assert b"http://www.docs.test/,http://docs.test/\n" in local["aliases"]  # learned as of the archive's date
    rows = list(csv.DictReader(io.StringIO(local["bad"].decode())))
    assert [(row["file"], int(row["offset"])) for row in rows] == [(file, offset) for file, offset, _ in expected]
