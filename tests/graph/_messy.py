"""A seeded generator of messy link graphs: spellings that merge, traps that must not, bad rows of every kind."""

from __future__ import annotations

import csv
import io
import random

PAGES = [
    "http://a.example/",
    "http://a.example/x",
    "http://a.example/a?x=1&y=2",
    "http://a.example/a?y=2&x=1",  # trap: parameter order
    "http://a.example/A",  # trap: path case
    "http://a.example/p/",
    "http://a.example/p",  # trap: trailing slash
    "http://a.example/e?",  # trap: empty query
    "https://a.example/x",  # trap: another scheme
    "http://faß.example/",
    "http://fass.example/",  # trap: IDNA2008 vs 2003
    "http://例え.jp/パス",
    "http://b.example/%7Euser/",
    "http://b.example/a,b",  # a comma: quoted in CSV
    'http://b.example/q"uote',
    "http://b.example/%2F",
    "http://b.example//",
    "mailto:someone@example.org",
    "urn:isbn:0451450523",
]
BAD_ENDS = ["relative/only", "", "   ", "http://[::1/", "http://a b.example:99999/", "//host/no-scheme", "http://exa mple.com/"]


def spelling(url: str, rng: random.Random) -> str:
    """Another spelling of ``url`` that the scheme rung merges (or ``url`` itself)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    host, slash, path = rest.partition("/")
    choice = rng.randrange(6)
    if choice == 0:
        return f"{scheme.upper()}://{host.upper()}{slash}{path}"
    if choice == 1:
        return f"{scheme}://{host}{':80' if scheme == 'http' else ':443'}{slash}{path}"
    if choice == 2 and "#" not in url:
        return url + "#frag"
    if choice == 3:
        return f" {url}\t"
    return url


def messy_graph(rows: int, seed: int) -> str:
    """CSV text (header source,target,anchor) with ``rows`` rows, some of them bad."""
    rng = random.Random(seed)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["source", "target", "anchor"])
    for _ in range(rows):
        roll = rng.random()
        source = spelling(rng.choice(PAGES), rng)
        target = spelling(rng.choice(PAGES), rng)
        if roll < 0.05:
            source = rng.choice(BAD_ENDS)
        elif roll < 0.1:
            target = rng.choice(BAD_ENDS)
        elif roll < 0.12:
            out.write(f"{source},{target},x,extra\n")  # wrong field count
            continue
        elif roll < 0.13:
            out.write(f'{source},"{target}"oops,x\n')  # malformed quoting
            continue
        anchor = rng.choice(["home", "a, b", 'say "hi"', "two\nlines", ""])
        writer.writerow([source, target, anchor])
    return out.getvalue()


def run_cli(capsys, tmp_path, name: str, text: str, *options: str) -> dict[str, object]:
    """``scrapy-iri graph`` on ``text`` (CSV) in process: exit code, stderr and every output file's bytes."""
    from scrapy_iri._cli import main

    src = tmp_path / "in.csv"
    if not src.exists():
        src.write_text(text, encoding="utf-8", newline="")
    out, aliases, bad = (tmp_path / f"{name}-{kind}.csv" for kind in ("out", "aliases", "bad"))
    code = main(["graph", str(src), str(out), "--aliases", str(aliases), "--bad-rows", str(bad), *options])
    err = capsys.readouterr().err
    lines = [  # the summary's first line has the time; a note names the --bad-rows file
        line.replace(str(bad), "BAD") for line in err.splitlines() if not line.startswith("scrapy-iri: graph: ")
    ]
    return {"code": code, "err": lines, "out": out.read_bytes(), "aliases": aliases.read_bytes(),
            "bad": bad.read_bytes()}


def archive_directory(wget_archive, tmp_path):
    """A directory with wget's archive and a damaged copy (a lying Content-Length, a cut-off end)."""
    import gzip
    import zlib

    directory = tmp_path / "archives"
    directory.mkdir(exist_ok=True)
    (directory / "a.warc.gz").write_bytes(wget_archive.read_bytes())
    data, records = wget_archive.read_bytes(), []
    while data:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        records.append(inflater.decompress(data))
        data = inflater.unused_data
    (directory / "c.warc").write_bytes(b"".join(records))  # uncompressed: cut by headers and Content-Length
    (directory / "d.wat.gz").write_bytes(b"".join(gzip.compress(r) for r in wat_records(records)))
    records[7] = records[7].replace(b"Content-Length: ", b"Content-Length: 1", 1)
    damaged = b"".join(gzip.compress(r) for r in records)
    (directory / "b.warc.gz").write_bytes(damaged[: len(damaged) - 5000])
    return directory


def wat_records(records: list[bytes]) -> list[bytes]:
    """WAT records (Common Crawl's layout) for the HTTP responses of WARC records: links by a plain
    pattern (what a WAT writer found), redirects with their Location."""
    import json
    import re

    found = []
    for data in records:
        head, _, rest = data.partition(b"\r\n\r\n")
        if b"WARC-Type: response" not in head:
            continue
        uri = re.search(rb"WARC-Target-URI: <?([^\r>]*)", head).group(1).decode()
        date = re.search(rb"WARC-Date: ([^\r]*)", head).group(1).decode()
        status_line, _, after = rest.partition(b"\r\n")
        headers_text, _, body = after.partition(b"\r\n\r\n")
        headers = dict(line.decode("latin-1").split(": ", 1) for line in headers_text.split(b"\r\n") if b": " in line)
        http = {"Response-Message": {"Version": "HTTP/1.1", "Status": status_line.split()[1].decode(), "Reason": ""},
                "Headers": headers}
        if b"text/html" in headers_text:
            hrefs = re.findall(rb'(?:href|src)="([^"]*)"', body)[:40]
            http["HTML-Metadata"] = {"Head": {}, "Links": [{"path": "A@/href", "url": h.decode("utf-8", "replace")}
                                                          for h in hrefs]}
        envelope = {"Format": "WARC",
                    "WARC-Header-Metadata": {"WARC-Type": "response", "WARC-Target-URI": uri, "WARC-Date": date},
                    "Payload-Metadata": {"HTTP-Response-Metadata": http}}
        block = json.dumps({"Container": {}, "Envelope": envelope}).encode()
        found.append(f"WARC/1.0\r\nWARC-Type: metadata\r\nWARC-Target-URI: {uri}\r\nWARC-Date: {date}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(block)}\r\n\r\n".encode()
                     + block + b"\r\n\r\n")
    return found


def run_archive_cli(capsys, tmp_path, name: str, archive, *options: str) -> dict[str, object]:
    """``scrapy-iri graph`` on an archive, in process: as :func:`run_cli`."""
    from scrapy_iri._cli import main

    out, aliases, bad = (tmp_path / f"{name}-{kind}.csv" for kind in ("out", "aliases", "bad"))
    code = main(["graph", str(archive), str(out), "--aliases", str(aliases), "--bad-rows", str(bad), *options])
    err = capsys.readouterr().err
    lines = [line.replace(str(bad), "BAD") for line in err.splitlines() if not line.startswith("scrapy-iri: graph: ")]
    return {"code": code, "err": lines, "out": out.read_bytes(), "aliases": aliases.read_bytes(),
            "bad": bad.read_bytes()}


def assert_hostile_archives_as_local(engine: str, capsys, tmp_path, rung: str) -> None:
    """``graph`` of the hostile archives on ``engine`` (two workers) writes what the local engine writes."""
    from test_graph_hostile import hostile_directory

    archives = hostile_directory(tmp_path)
    options = ("--rung", rung, "--redirects", "edges")
    local = run_archive_cli(capsys, tmp_path, "local", archives, *options)
    other = run_archive_cli(capsys, tmp_path, engine, archives, *options, "--engine", engine, "--workers", "2")
    assert local["code"] == other["code"] == 1
    assert other == local
    assert b"2 different Locations" in local["bad"] and b"WAT: no Envelope" in local["bad"]


def assert_dedup_recrawl_as_local(engine: str, capsys, tmp_path, monkeypatch, wget_archive, dedup_archive) -> None:
    """wget's crawl and its ``--warc-dedup`` recrawl in one file, cut in pieces of 50 kB, on ``engine``:
    what the local engine writes, each revisit's record found in another piece."""
    from scrapy_iri.graph import _split

    monkeypatch.setattr(_split, "PIECE_BYTES", 50_000)
    both = tmp_path / "both.warc.gz"
    both.write_bytes(wget_archive.read_bytes() + dedup_archive.read_bytes())
    local = run_archive_cli(capsys, tmp_path, "local", both, "--rung", "protocol")
    other = run_archive_cli(capsys, tmp_path, engine, both, "--rung", "protocol", "--engine", engine, "--workers", "2")
    assert local["code"] == other["code"] == 0
    assert other == local
