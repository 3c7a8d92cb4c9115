"""Benchmark of ``scrapy-iri graph`` on web archives that Debian's wget wrote.

The archive: wget (``--recursive --warc-file --warc-cdx``) crawls Debian's
python3-doc HTML, served on loopback by the alias site of the tests
(``tests/graph/_archive_web.py``: www host, 302 host, directory slashes,
``index.html``, case fixes). Built once into ``--dir`` and reused.

Figures, all CPU time of this process (``time.process_time``), in one run:

* ``hand-written``: the pipeline users write today: ``warcio`` reads the
  records, ``lxml.html`` parses each HTML response, every link of the same
  elements is joined with ``urllib.parse.urljoin`` and the edge written as
  CSV (no canonicalization, no de-duplication);
* ``raw extraction``: this project's reader (:mod:`scrapy_iri.graph._warc`)
  and lxml: the link values of every HTML response, not resolved;
* ``graph``: :func:`scrapy_iri.graph.normalize_graph_file` at the scheme
  rung, CSV out: read, parse, resolve, canonicalize, de-duplicate, write;

each per link (the links ``graph`` reads). ``--hostile`` reads one hostile
record (a page of links, a chunked body, a ``Location``) of 0.5, 1 and 2 MB
and reports the CPU of the link pass and of ``store learn``'s reading of it.
``--memory`` runs ``graph`` as
a subprocess on 1x, 4x and 16x the archive (copies concatenated) and
reports the peak RSS. ``--learn N`` times ``store learn`` on a synthetic
WARC of N responses: 301 records over ``--hosts`` hosts (997), or with
``--mix realistic`` a crawl's archive (each response after its request
record; 200 pages of HTML, the 301s of the usual conventions, 302s and
404s); ``--learn-wget`` on the wget archive. Each reports reading the
captures alone, reading and ordering them by date, the whole ``scrapy-iri
store learn`` command into SQLite in a new process (CPU of the child by
``getrusage``, and its start-up alone), the one-time cost of a process's
first learning (loading the public suffix list), ``learn()`` of the same
observations built beforehand (the learner alone), a CDX and a CDXJ of the
same captures read and learned into memory, and ``learn_files`` into memory
and SQLite in this process (``--redis``: into a private ``redis-server``
too); the archive is not built for ``--learn`` with ``--no-per-link``.
``--nodes`` gives the
nodes per document at the scheme and protocol rungs (ground truth: the
site's rules). ``--engines COPIES`` runs ``scrapy-iri graph`` on COPIES
copies of the archive with each engine and reports the CPU of each job's
process tree per WARC record (``graph_bench.measure``) and whether the
outputs are identical.

    nice .venv/bin/python benchmarks/archive_bench.py [--dir DIR] [--memory [--copies 1,4,16]]
                                                      [--learn N [--redis] [--hosts H] [--mix realistic]] [--learn-wget]
                                                      [--nodes] [--engines COPIES [--rung RUNG] [--parallel]]
                                                      [--hostile] [--no-per-link] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "graph"))
sys.path.insert(0, str(HERE))

TAGS = {"a": "href", "area": "href", "link": "href", "img": "src", "script": "src", "iframe": "src",
        "frame": "src", "form": "action", "embed": "src", "source": "src"}


def archive(directory: Path) -> Path:
    from _archive_web import DocsSite, crawl

    path = directory / "pydocs.warc.gz"
    if not path.exists():
        crawl(DocsSite(section=""), directory, "pydocs")
    return path


def hand_written(path: Path, out: io.TextIOBase) -> int:
    import lxml.html
    from urllib.parse import urljoin
    from warcio.archiveiterator import ArchiveIterator

    links = 0
    with open(path, "rb") as f:
        for record in ArchiveIterator(f):
            if record.rec_type != "response" or record.http_headers.get_statuscode() != "200":
                continue
            if "html" not in (record.http_headers.get_header("Content-Type") or ""):
                continue
            url = record.rec_headers.get_header("WARC-Target-URI")
            body = record.content_stream().read()
            try:
                root = lxml.html.document_fromstring(body)
            except Exception:
                continue
            base = url
            for element in root.iter(*TAGS):
                value = element.get(TAGS[element.tag])
                if value is not None:
                    out.write(f"{url},{urljoin(base, value.strip())}\n")
                    links += 1
    return links


def raw_extraction(path: Path) -> int:
    import lxml.html

    from scrapy_iri.graph._archive import http_response
    from scrapy_iri.graph._warc import Record, records

    links = 0
    with open(path, "rb") as f:
        for record in records(f):
            if not isinstance(record, Record) or record.header("warc-type") != "response" or record.block is None:
                continue
            response = http_response(record.block)
            if isinstance(response, str) or response.status != 200 or "html" not in response.content_type()[0]:
                continue
            root = lxml.html.document_fromstring(response.body)
            for element in root.iter(*TAGS):
                if element.get(TAGS[element.tag]) is not None:
                    links += 1
    return links


def cpu(function, *args) -> tuple[float, object]:
    started = time.process_time()
    result = function(*args)
    return time.process_time() - started, result


def per_link(path: Path) -> dict[str, float]:
    from scrapy_iri.graph import normalize_graph_file

    with tempfile.TemporaryDirectory() as tmp:
        seconds_graph, summary = cpu(normalize_graph_file, str(path), os.path.join(tmp, "out.csv"), "scheme")
        with open(os.devnull, "w") as sink:
            seconds_hand, hand_links = cpu(hand_written, path, sink)
        seconds_raw, raw_links = cpu(raw_extraction, path)
    links = summary.edges_in + summary.bad_rows
    return {
        "links (graph)": links,
        "links (hand-written)": hand_links,
        "links (raw)": raw_links,
        "graph us/link": 1e6 * seconds_graph / links,
        "hand-written us/link": 1e6 * seconds_hand / hand_links,
        "raw extraction us/link": 1e6 * seconds_raw / raw_links,
        "graph / hand-written": seconds_graph / links / (seconds_hand / hand_links),
        "graph / raw": seconds_graph / links / (seconds_raw / raw_links),
    }


def memory(path: Path, directory: Path, sizes: list[int]) -> dict[str, float]:
    found = {}
    for copies in sizes:
        big = directory / f"x{copies}.warc.gz"
        if not big.exists():
            data = path.read_bytes()
            with open(big, "wb") as f:
                for _ in range(copies):
                    f.write(data)
        script = (
            "import resource,sys;from scrapy_iri.graph import normalize_graph_file;"
            "normalize_graph_file(sys.argv[1], '/dev/null');"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
        )
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", script, str(big)], capture_output=True, text=True, check=True)
        found[f"{copies}x ({big.stat().st_size / 1e6:.0f} MB) peak RSS MB"] = int(out.stdout.split()[-1]) / 1024
        found[f"{copies}x seconds"] = time.perf_counter() - started
    return found


def engines(path: Path, directory: Path, copies: int, rung: str = "scheme", parallel: bool = False) -> dict[str, float]:
    """``scrapy-iri graph --rung RUNG`` on ``copies`` copies of the archive (one file), on each engine
    (process-tree CPU; Dask and Spark workers read pieces of the file: see ``graph._split``)."""
    import hashlib

    from graph_bench import measure

    from scrapy_iri.graph._warc import records

    big = directory / f"x{copies}.warc.gz"
    if not big.exists():
        data = path.read_bytes()
        with open(big, "wb") as f:
            for _ in range(copies):
                f.write(data)
    with open(big, "rb") as f:
        count = sum(1 for _ in records(f))
    found: dict[str, float] = {f"engines: records in {copies}x": count}
    script = str(Path(sys.executable).with_name("scrapy-iri"))
    jobs = (("local", []), ("dask 2 workers", ["--engine", "dask", "--workers", "2"]),
            ("spark local[2]", ["--engine", "spark", "--workers", "2"]))

    def run(job: tuple[str, list[str]]) -> tuple[str, dict[str, float], str]:
        label, options = job
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.csv")
            figures = measure([script, "graph", str(big), out, "-q", "--rung", rung, *options])
            return label, figures, hashlib.sha256(Path(out).read_bytes()).hexdigest()

    if parallel:  # at the same time: on a shared machine, a share of its cores for each
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(jobs)) as pool:
            results = list(pool.map(run, jobs))
    else:
        results = [run(job) for job in jobs]
    digests = set()
    for label, figures, digest in results:
        digests.add(digest)
        found[f"{label}: CPU us per record"] = 1e6 * figures["cpu_s"] / count
        found[f"{label}: wall s"] = figures["wall_s"]
        found[f"{label}: peak RSS MB"] = figures["peak_rss_mb"]
    found["engines: outputs identical"] = float(len(digests) == 1)
    return found


def redirect_warc(path: str, count: int, hosts: int = 997) -> None:
    """``count`` 301 response records (over ``hosts`` hosts, one second apart), one gzip member each."""
    with open(path, "wb") as f:
        for i in range(count):
            block = (f"HTTP/1.1 301 Moved Permanently\r\nLocation: http://h{i % hosts}.test/new/{i}\r\n"
                     "Content-Length: 0\r\n\r\n").encode()
            head = (f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://h{i % hosts}.test/old/{i}\r\n"
                    f"WARC-Date: 2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z\r\n"
                    f"Content-Length: {len(block)}\r\n\r\n").encode()
            f.write(gzip.compress(head + block + b"\r\n\r\n", compresslevel=1))


_WORDS = ("the module function class object returns value list string file data type name version "
          "example section library reference index module python").split()


def _http(status: int, reason: str, headers: list[str], body: bytes) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}", "Date: Mon, 01 Jan 2024 00:00:00 GMT", "Server: Apache/2.4.62 (Debian)",
             *headers, f"Content-Length: {len(body)}", "Keep-Alive: timeout=5, max=100", "Connection: Keep-Alive"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _warc(kind: str, uri: str, when: str, block: bytes, serial: int) -> bytes:
    msgtype = "request" if kind == "request" else "response"
    head = (f"WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-{serial:012x}>\r\n"
            f"WARC-Warcinfo-ID: <urn:uuid:00000000-0000-4000-8000-000000000000>\r\n"
            f"WARC-Target-URI: <{uri}>\r\nWARC-Date: {when}\r\nWARC-IP-Address: 127.0.0.1\r\n"
            f"WARC-Block-Digest: sha1:{serial:032X}\r\nContent-Type: application/http;msgtype={msgtype}\r\n"
            f"Content-Length: {len(block)}\r\n\r\n").encode()
    return gzip.compress(head + block + b"\r\n\r\n", compresslevel=6)


def realistic_mix(rng: Any, count: int, hosts: int = 997) -> Iterator[tuple[int, str, str, str, int, str | None]]:
    """``(i, host, page, uri, status, location)`` of ``count`` fetches of a crawler of ``hosts`` sites:
    45% pages (200), 301s of the usual conventions (http -> https 15%, www -> apex 10%, a directory's
    slash 10%, ``index.html`` 8%), 9% temporary 302s to another host, 3% 404s. ``rng`` (a
    ``random.Random``) may be drawn from between fetches."""
    for i in range(count):
        host = f"site{rng.randrange(hosts)}.test"
        page = f"/docs/{rng.choice(_WORDS)}/{i}"
        roll = rng.random()
        if roll < 0.45:
            yield i, host, page, f"https://{host}{page}.html", 200, None
        elif roll < 0.60:
            yield i, host, page, f"http://{host}{page}.html", 301, f"https://{host}{page}.html"
        elif roll < 0.70:
            yield i, host, page, f"https://www.{host}{page}.html", 301, f"https://{host}{page}.html"
        elif roll < 0.80:
            yield i, host, page, f"https://{host}{page}", 301, f"https://{host}{page}/"
        elif roll < 0.88:
            yield i, host, page, f"https://{host}{page}/index.html", 301, f"https://{host}{page}/"
        elif roll < 0.97:
            yield i, host, page, f"https://{host}/go/{i}", 302, f"https://tmp.{host}{page}.html"
        else:
            yield i, host, page, f"https://{host}{page}.htm", 404, None


def realistic_warc(path: str, count: int, hosts: int = 997, seed: int = 1) -> dict[str, int]:
    """``count`` response records of :func:`realistic_mix`, each after its request record, in crawl
    (date) order: pages of 2-12 kB of HTML, redirects with the bodies servers send."""
    import random

    rng = random.Random(seed)
    kinds = {"200": 0, "301": 0, "302": 0, "404": 0}
    start = 1704067200  # 2024-01-01T00:00:00Z
    with open(path, "wb") as f:
        for i, host, page, uri, status, location in realistic_mix(rng, count, hosts):
            kinds[str(status)] += 1
            moment = time.gmtime(start + i // 20)  # a crawl of 20 fetches a second
            when = time.strftime("%Y-%m-%dT%H:%M:%SZ", moment)
            request = (f"GET {uri.split(host, 1)[1] or '/'} HTTP/1.1\r\nUser-Agent: Wget/1.21.4\r\n"
                       f"Accept: */*\r\nHost: {host}\r\nConnection: Keep-Alive\r\n\r\n").encode()
            f.write(_warc("request", uri, when, request, 2 * i))
            if status == 200:
                words = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(300, 1800)))
                body = f"<!DOCTYPE html><html><head><title>{page}</title></head><body><p>{words}</p></body></html>"
                block = _http(200, "OK", ["Content-Type: text/html; charset=utf-8",
                                          "Last-Modified: Mon, 01 Jan 2024 00:00:00 GMT"], body.encode())
            elif status == 404:
                block = _http(404, "Not Found", ["Content-Type: text/html; charset=iso-8859-1"],
                              b"<html><body>Not Found</body></html>")
            else:
                body = f'<html><body><p>The document has moved <a href="{location}">here</a>.</p></body></html>'
                reason = "Moved Permanently" if status == 301 else "Found"
                block = _http(status, reason, [f"Location: {location}", "Content-Type: text/html; charset=iso-8859-1"],
                              body.encode())
            f.write(_warc("response", uri, when, block, 2 * i + 1))
    return kinds


def _timed(function, *args) -> tuple[float, float, object]:
    started, cpu = time.perf_counter(), time.process_time()
    result = function(*args)
    return time.perf_counter() - started, time.process_time() - cpu, result


def command(argv: list[str]) -> tuple[float, float, str]:
    """Run a command to its end: (wall s, CPU s of it and its children, stdout)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1) or "Traceback" in done.stderr:
        sys.exit(f"archive_bench: {' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def learn_figures(path: str, label: str, redis: bool = False, in_process: bool = True) -> dict[str, float]:
    """``store learn`` on one archive: reading the captures alone, reading and putting them in date order,
    the whole command into SQLite (a new process: start-up, reading, ordering, learning, commit), and
    ``learn_files`` into memory, SQLite (and Redis) in this process; records and captures per second."""
    from scrapy_iri.graph._heads import heads
    from scrapy_iri.graph._learn import Reading, captures_of, learn_files, observations
    from scrapy_iri.store import open_store

    with open(path, "rb") as f:
        records = sum(1 for _ in heads(f))
    found: dict[str, float] = {f"{label}: records": records, f"{label}: MB": os.path.getsize(path) / 1e6}
    wall, cpu, captures = _timed(lambda: sum(1 for _ in captures_of([path], Reading())))
    found[f"{label}: captures"] = captures
    found[f"{label}: reading records/CPU-s"] = records / cpu
    found[f"{label}: reading captures/CPU-s"] = captures / cpu
    found[f"{label}: reading captures/s wall"] = captures / wall
    wall, cpu, _ = _timed(lambda: sum(1 for _ in observations([path], Reading())))
    found[f"{label}: reading+ordering captures/CPU-s"] = captures / cpu
    found[f"{label}: reading+ordering captures/s wall"] = captures / wall
    script = str(Path(sys.executable).with_name("scrapy-iri"))
    with tempfile.TemporaryDirectory() as tmp:
        empty = os.path.join(tmp, "empty.warc")
        Path(empty).write_bytes(b"WARC/1.1\r\nWARC-Type: warcinfo\r\nContent-Length: 0\r\n\r\n\r\n\r\n")
        _, start_up, _ = command([script, "store", "--store", f"sqlite:///{tmp}/empty.db", "learn", empty])
        found[f"{label}: store learn command start-up CPU s"] = start_up
        wall, cpu, out = command([script, "store", "--store", f"sqlite:///{tmp}/cmd.db", "learn", path])
        found[f"{label}: store learn command captures/CPU-s"] = captures / cpu
        found[f"{label}: store learn command captures/s wall"] = captures / wall
        found[f"{label}: store learn command CPU s"] = cpu
        found[f"{label}: store learn command past start-up captures/CPU-s"] = captures / max(cpu - start_up, 1e-9)
        if not in_process:
            return found
        from scrapy_iri.store import Observation

        # the first learning of a process loads the public suffix list: timed alone, before the others
        _, cpu, _ = _timed(open_store("memory:").learn, [Observation("http://a.test/x", 301, "http://a.test/y")])
        found[f"{label}: first learning in a process (public suffix list) CPU s"] = cpu
        prebuilt = list(observations([path], Reading()))
        store = open_store("memory:")
        _, cpu, _ = _timed(store.learn, iter(prebuilt))
        found[f"{label}: learn() of the observations, prebuilt, memory captures/CPU-s"] = captures / cpu
        del prebuilt
        for kind in ("cdx", "cdxj"):
            index = os.path.join(tmp, f"index.{kind}")
            write_index(path, index, kind)
            _, cpu, read = _timed(lambda: sum(1 for _ in observations([index], Reading())))
            found[f"{label}: {kind} of the captures: reading+ordering captures/CPU-s"] = read / cpu
            store = open_store("memory:")
            _, cpu, (summary, _) = _timed(learn_files, store, [index])
            found[f"{label}: {kind} of the captures: learn_files memory captures/CPU-s"] = read / cpu
            found[f"{label}: {kind} of the captures: aliases learned"] = summary.aliases_learned
        uris = ["memory:", f"sqlite:///{tmp}/s.db"]
        with contextlib.ExitStack() as stack:
            if redis:
                from redis_bench import redis_server

                uris.append(stack.enter_context(redis_server()) + "?namespace=learn")
            for uri in uris:
                name = uri.split(":")[0]
                store = open_store(uri)
                wall, cpu, (summary, _) = _timed(learn_files, store, [path])
                store.close()
                found[f"{label}: learn_files {name} captures/CPU-s"] = captures / cpu
                found[f"{label}: learn_files {name} captures/s wall"] = captures / wall
                found[f"{label}: learn_files {name} aliases learned"] = summary.aliases_learned
    return found


def write_index(path: str, index: str, kind: str) -> None:
    """A CDX of the captures of the archive at ``path`` as wget writes one (its columns, the redirect's
    target resolved, file order), or a CDXJ as Common Crawl's (the ``Location`` as sent, lines sorted
    by a SURT-like key: not in date order)."""
    from scrapy_iri.graph._learn import Reading, captures_of

    lines = []
    for i, c in enumerate(captures_of([path], Reading())):
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(c.time))
        if kind == "cdx":
            redirect = c.target.replace("://", "%3A//", 1) if c.target else "-"
            lines.append(f"{c.url} {stamp} {c.url} text/html {c.status} X {redirect} - {i} a.warc.gz u{i}\n")
            continue
        data = {"url": c.url, "mime": "text/html", "status": str(c.status), "digest": "X", "length": "1",
                "offset": str(i), "filename": "a.warc.gz"}
        if c.location is not None:
            data["redirect"] = c.location
        host, _, rest = c.url.partition("://")[2].partition("/")
        lines.append(f"{','.join(reversed(host.split('.')))})/{rest} {stamp} {json.dumps(data)}\n")
    with open(index, "w", encoding="utf-8") as out:
        if kind == "cdx":
            out.write(" CDX a b a m s k r M V g u\n")
        out.writelines(lines if kind == "cdx" else sorted(lines))


def beside(count: int, directory: Path) -> dict[str, float]:
    """CPU-s of putting in date order the captures of ``count`` redirect records: the WARC alone, and the WARC
    with wget's CDX of it beside (each capture then held twice, and learned once)."""
    from scrapy_iri.graph._learn import Reading, ordered_captures

    warc, index = str(directory / "beside.warc.gz"), str(directory / "beside.cdx")
    redirect_warc(warc, count)
    write_index(warc, index, "cdx")
    found = {}
    for label, names in (("the WARC alone", [warc]), ("the WARC and its CDX", [warc, index])):
        started = time.process_time()
        captures = sum(1 for _ in ordered_captures(names, Reading()))
        found[f"beside: {label}: CPU s"] = time.process_time() - started
        found[f"beside: {label}: captures out"] = captures
    return found


def learn(count: int, redis: bool = False, hosts: int = 997, mix: str = "redirects") -> dict[str, float]:
    """``store learn`` on ``count`` synthetic response records (``mix``: 301s only, or ``realistic``)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"{mix}.warc.gz")
        if mix == "realistic":
            kinds = realistic_warc(path, count, hosts)
            label = "realistic"
            print(f"realistic: {count:,} responses over {hosts} hosts, each after its request: "
                  + ", ".join(f"{n:,} {status}" for status, n in kinds.items()), file=sys.stderr)
        else:
            redirect_warc(path, count, hosts)
            label = "301s"
            print(f"301s: {count:,} 301 records over {hosts} hosts", file=sys.stderr)
        return learn_figures(path, label, redis)


def nodes(path: Path) -> dict[str, float]:
    import csv

    from _archive_web import DocsSite

    from scrapy_iri.graph import normalize_graph_file

    site = DocsSite(section="")
    found = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rung in ("scheme", "protocol"):
            out = os.path.join(tmp, f"{rung}.csv")
            normalize_graph_file(str(path), out, rung)
            with open(out, newline="") as f:
                node_docs = {}
                for row in csv.DictReader(f):
                    for end in ("source", "target"):
                        node_docs[row[end]] = site.document(row[f"{end}_original"])
            kept = [doc for doc in node_docs.values() if doc is not None]
            found[f"{rung} nodes per document"] = len(kept) / len(set(kept))
            found[f"{rung} nodes (of documents)"] = len(kept)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "scrapy-iri-archive-bench")
    parser.add_argument("--memory", action="store_true")
    parser.add_argument("--copies", default="1,4,16", help="--memory: the input sizes, in copies of the archive")
    parser.add_argument("--no-per-link", action="store_true", help="skip the per-link figures")
    parser.add_argument("--learn", type=int, default=0, metavar="N", help="store learn on N redirect records")
    parser.add_argument("--redis", action="store_true", help="--learn: into a private redis-server too")
    parser.add_argument("--hosts", type=int, default=997, help="--learn: the hosts the redirects are spread over")
    parser.add_argument("--mix", choices=["redirects", "realistic"], default="redirects",
                        help="--learn: 301 records only, or a crawl's mix (requests, 200 pages, convention 301s, 302s)")
    parser.add_argument("--learn-wget", action="store_true", help="store learn on the wget-made archive")
    parser.add_argument("--beside", type=int, default=0, metavar="N",
                        help="ordering the captures of N redirect records, alone and with a CDX of them beside")
    parser.add_argument("--nodes", action="store_true")
    parser.add_argument("--engines", type=int, default=0, metavar="COPIES",
                        help="local, Dask and Spark on COPIES copies of the archive")
    parser.add_argument("--rung", default="scheme", help="--engines: the rung (protocol: two passes)")
    parser.add_argument("--parallel", action="store_true", help="--engines: run the three engines at the same time")
    parser.add_argument("--hostile", action="store_true",
                        help="CPU of one hostile record at 0.5, 1 and 2 MB (links, chunks, Location): linear?")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    figures: dict[str, float] = {}
    if args.hostile:
        figures.update(hostile(args.dir))
    if not args.no_per_link or args.memory or args.nodes or args.engines or args.learn_wget:
        path = archive(args.dir)
    if not args.no_per_link:
        figures.update(per_link(path))
    if args.memory:
        figures.update(memory(path, args.dir, [int(n) for n in args.copies.split(",")]))
    if args.learn:
        figures.update(learn(args.learn, args.redis, args.hosts, args.mix))
    if args.learn_wget:
        figures.update(learn_figures(str(path), "wget python3-doc", args.redis))
    if args.beside:
        figures.update(beside(args.beside, args.dir))
    if args.nodes:
        figures.update(nodes(path))
    if args.engines:
        figures.update(engines(path, args.dir, args.engines, args.rung, args.parallel))
    for name, value in figures.items():
        print(f"{name:<64}{value:>14,.2f}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


def _record(uri: str, block: bytes) -> bytes:
    head = (f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\nWARC-Date: 2024-03-01T12:00:00Z\r\n"
            f"Content-Length: {len(block)}\r\n\r\n")
    return head.encode() + block + b"\r\n\r\n"


def hostile(directory: Path) -> dict[str, float]:
    """CPU-s of reading one hostile record of 0.5, 1 and 2 MB, by ``archive_links`` (the link pass) and
    ``captures_of`` (``store learn``'s reading): a page of links, a chunked body, a long ``Location``."""
    from scrapy_iri.graph import archive_links
    from scrapy_iri.graph._learn import Reading, captures_of

    found = {}
    for size in (1 << 19, 1 << 20, 1 << 21):
        html = b'<a href="x">x</a>' * (size // 16)
        kinds = {
            "page of links": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + html,
            "chunked body": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
                            + b"1\r\nx\r\n" * (size // 6) + b"0\r\n\r\n",
            "Location": b"HTTP/1.1 301 Moved\r\nLocation: http://" + b"a" * size + b".test/\r\n\r\n",
        }
        for kind, block in kinds.items():
            path = directory / "hostile.warc.gz"
            path.write_bytes(gzip.compress(_record("http://a.test/", block)))
            started = time.process_time()
            rows = sum(1 for _ in archive_links(str(path), redirects="edges"))
            found[f"hostile {kind} {size >> 10} KiB: links CPU-s ({rows:,} rows)"] = time.process_time() - started
            started = time.process_time()
            sum(1 for _ in captures_of([str(path)], Reading()))
            found[f"hostile {kind} {size >> 10} KiB: captures CPU-s"] = time.process_time() - started
    return found


if __name__ == "__main__":
    raise SystemExit(main())
