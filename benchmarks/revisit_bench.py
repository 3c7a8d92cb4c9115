"""Revisits in a whole-file gzip WARC: reading them stays linear in the number of revisits.

Writes a WARC of ``N`` pages (20 kB of HTML, 50 links each) followed by a
revisit of each page at another URI, once as a single gzip member (the whole
file) and once as one gzip member per record, and reads the links of each
with :func:`scrapy_iri.graph.archive_links` (CPU seconds, one run). Both
must give the same links.

    nice .venv/bin/python benchmarks/revisit_bench.py 400 1600
"""

from __future__ import annotations

import gzip
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scrapy_iri.graph import archive_links  # noqa: E402


def _record(kind: str, uri: str, block: bytes, date: str, record_id: str, *headers: str) -> bytes:
    head = f"WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Target-URI: {uri}\r\nWARC-Date: {date}\r\n"
    head += f"WARC-Record-ID: <urn:uuid:{record_id}>\r\n" + "".join(f"{line}\r\n" for line in headers)
    head += "Content-Type: application/http; msgtype=response\r\n"
    return f"{head}Content-Length: {len(block)}\r\n\r\n".encode() + block + b"\r\n\r\n"


def dedup_records(n: int) -> list[bytes]:
    body = ("<html><body>" + "".join(f'<a href="/p{j}">x</a>' for j in range(50)) + "x" * 20_000).encode()
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    pages = [_record("response", f"http://a.example/p{i}", answer, "2024-03-01T12:00:00Z", f"p{i}") for i in range(n)]
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
    revisits = [
        _record("revisit", f"http://a.example/q{i}", head, "2024-03-02T12:00:00Z", f"r{i}", f"WARC-Refers-To: <urn:uuid:p{i}>")
        for i in range(n)
    ]
    return pages + revisits


def main() -> int:
    sizes = [int(arg) for arg in sys.argv[1:]] or [400, 1600]
    with tempfile.TemporaryDirectory(prefix="revisit-bench-") as directory:
        for n in sizes:
            items = dedup_records(n)
            links = {}
            for layout, data in (("whole-file gzip", gzip.compress(b"".join(items))),
                                 ("a gzip member per record", b"".join(gzip.compress(item) for item in items))):
                path = Path(directory, f"{n}.warc.gz")
                path.write_bytes(data)
                started = time.process_time()
                rows = list(archive_links(str(path)))
                spent = time.process_time() - started
                links[layout] = sorted(row[:4] for row in rows)
                bad = sum(1 for row in rows if row[5] is not None)
                print(f"{n} revisits, {layout}: {len(rows):,} links, {bad} bad, {spent:.2f} CPU-s", flush=True)
            assert len(set(map(tuple, links.values()))) == 1, "the two layouts gave different links"
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
