"""Archives cut into pieces for Dask and Spark: record boundaries found cheaply, and never a wrong one."""

from __future__ import annotations

import gzip

import pytest
from _messy import archive_directory

from scrapy_iri.graph import _split
from scrapy_iri.graph._warc import records


def whole(path):
    with open(path, "rb") as f:
        return [(r.offset, getattr(r, "reason", None), getattr(r, "block", None)) for r in records(f)]


def in_pieces(path, piece_bytes):
    found = _split.pieces([str(path)], piece_bytes)
    rows = []
    for piece in found:
        with open(path, "rb") as f:
            rows.extend((r.offset, getattr(r, "reason", None), getattr(r, "block", None))
                        for r in _split.span_records(f, piece.start, piece.end))
    return found, rows


@pytest.fixture(scope="module")
def archives(wget_archive, tmp_path_factory):
    directory = archive_directory(wget_archive, tmp_path_factory.mktemp("split"))
    (directory / "e.warc.gz").write_bytes(gzip.compress(gzip.decompress(wget_archive.read_bytes())))
    return directory


@pytest.mark.parametrize("name", ["a.warc.gz", "b.warc.gz", "c.warc", "d.wat.gz", "e.warc.gz"])
@pytest.mark.parametrize("piece_bytes", [1, 5_000, 40_000])
def test_the_pieces_hold_the_records_of_the_whole_file_with_its_offsets(archives, name, piece_bytes):
    found, rows = in_pieces(archives / name, piece_bytes)
    assert rows == whole(archives / name)  # offsets, bad records and their reasons, blocks
    size = (archives / name).stat().st_size
    assert found[0].start == 0 and found[-1].end == size
    assert all(a.end == b.start for a, b in zip(found, found[1:]))


def test_where_a_file_can_be_cut(archives):
    count = len(whole(archives / "a.warc.gz"))
    assert len(_split.pieces([str(archives / "a.warc.gz")], 1)) == count  # every gzip member a record
    assert len(_split.pieces([str(archives / "c.warc")], 1)) == count  # by header and Content-Length
    assert len(_split.pieces([str(archives / "e.warc.gz")], 1)) == 1  # whole-file gzip: one piece
    damaged = _split.pieces([str(archives / "b.warc.gz")], 1)
    assert len(damaged) == 8  # the cutting ends before the record whose Content-Length lies (the 8th)
    assert len(_split.pieces([str(archives / "a.warc.gz")], 10 << 20)) == 1  # smaller than two pieces


def test_a_file_with_records_inside_records_is_cut_only_at_its_own(tmp_path, wget_archive):
    """An archive of archives: a stored .warc.gz in a record's body holds gzip members that start
    'WARC/1.'; they are inside a member and are never taken for boundaries."""
    inner = wget_archive.read_bytes()[:20_000]
    body = b"HTTP/1.1 200 OK\r\nContent-Type: application/warc\r\n\r\n" + inner
    head = (f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://x.test/a.warc.gz\r\n"
            f"WARC-Date: 2024-01-01T00:00:00Z\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    record = head + body + b"\r\n\r\n"
    path = tmp_path / "nested.warc.gz"
    member = gzip.compress(record, compresslevel=0)  # stored blocks: the inner members verbatim
    assert b"\x1f\x8b\x08" in member[10:]
    path.write_bytes(member * 3)
    found, rows = in_pieces(path, 1)
    assert [piece.start for piece in found] == [0, len(member), 2 * len(member)]
    assert rows == whole(path) and len(rows) == 3
