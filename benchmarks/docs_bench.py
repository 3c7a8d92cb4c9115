"""Benchmark of the protocol rung on a real documentation tree: PostgreSQL 15's HTML docs.

The tree is Debian's ``postgresql-doc-15`` (1,169 pages). When it is missing
from the cache directory (``--cache``, default ``~/.cache/scrapy-iri``, never
the repository) the benchmark fetches it itself: ``apt-get download
postgresql-doc-15``, then ``dpkg-deb -x``.

The pages are served on loopback by the simulated web (``tests/simweb``) as
``https://docs.test/docs/15/<page>.html``, with each page's real links (and
its text, so pages weigh what they weigh) and the conventions of a real
site, every one a permanent redirect:

* ``http://`` -> ``https://`` (through the simulated web's TLS proxy);
* ``www.docs.test`` -> ``docs.test``;
* case fixes (``/docs/15/SQL-Select.html`` -> ``/docs/15/sql-select.html``);
* ``index.html`` -> its directory, and a slash on the directory (``/docs/15``).

One link in five is written in an alias form stacking some of these (chains
of one to four hops, ``http://www.docs.test/docs/15/Sql-select.html`` among
them), and every 25th page is also a start URL in alias form (alias
backlinks from elsewhere).

Four crawls, each a real Scrapy crawl in a subprocess: Scrapy's defaults,
the add-on at the scheme rung, and at the protocol rung cold (an empty
store) and warm (the store the cold crawl left). For each: pages missed
(against the pages of the tree), duplicate fetches beyond Scrapy's own (its
start requests are ``dont_filter``), redirect round trips and the share
saved against Scrapy's, and the CPU time of the crawling process (user +
system, from ``getrusage`` of the children: the server runs in this
process, not in theirs).

    nice .venv/bin/python benchmarks/docs_bench.py [--concurrency 1 8] [--repeat N] [--out PATH] [--set NAME=VALUE]

Targets: zero pages missed, zero duplicate fetches, and the protocol rung
costing at most 10% CPU over the scheme rung.
"""

from __future__ import annotations

import argparse
import html
import json
import random
import re
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the simulated web
sys.path.insert(0, str(Path(__file__).resolve().parent))

from simweb import CaseRedirect, HttpsRedirect, IndexRedirect, SimulatedWeb, Site, SlashRedirect, WwwRedirect
from simweb.crawl import CrawlResult, run_crawl

from crawl_table import compare, crawl_settings, over_scrapy, print_crawls, saved

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "docs.json"
PACKAGE = "postgresql-doc-15"
HTML_DIR = Path("usr/share/doc/postgresql-doc-15/html")
HOST = "docs.test"
BASE = "/docs/15/"

_HREF = re.compile(r'href="([^"#:]+\.html)(#[^"]*)?"')
_TAGS = re.compile(r"<[^>]+>")


def tree(cache: Path) -> Path:
    """The HTML directory of the package, fetched and unpacked into ``cache`` when missing."""
    root = cache / PACKAGE
    html_dir = root / "tree" / HTML_DIR
    if html_dir.is_dir():
        return html_dir
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", PACKAGE], cwd=root, check=True)
    deb = sorted(root.glob(f"{PACKAGE}_*.deb"))[-1]
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root / "tree")], check=True)
    return html_dir


def _case_variant(rng: random.Random, name: str) -> str:
    """``sql-select.html`` -> ``Sql-Select.html`` (or another mix): a case the server fixes."""
    parts = name.split("-")
    return "-".join(p[:1].upper() + p[1:] if rng.random() < 0.7 else p for p in parts)


def alias(rng: random.Random, name: str) -> str:
    """A link to page ``name`` stacking some of the site's alias conventions."""
    scheme = "http" if rng.random() < 0.6 else "https"
    host = f"www.{HOST}" if rng.random() < 0.6 else HOST
    if name == "index.html" and rng.random() < 0.5:
        path = BASE if rng.random() < 0.5 else BASE.rstrip("/")
    else:
        shown = _case_variant(rng, name) if rng.random() < 0.6 else name
        path = BASE + shown
    return f"{scheme}://{host}{path}"


def docs_site(html_dir: Path, seed: int = 15) -> tuple[Site, list[str]]:
    """The site and its start URLs (the home page and alias backlinks)."""
    rng = random.Random(seed)
    names = sorted(p.name for p in html_dir.glob("*.html"))
    known = set(names)
    site = Site(
        HOST,
        schemes=("https",),
        policies=[HttpsRedirect(), WwwRedirect(), IndexRedirect(), SlashRedirect(), CaseRedirect()],
        start=(),
    )
    for name in names:
        raw = (html_dir / name).read_text(encoding="utf-8", errors="replace")
        links = []
        for match in _HREF.finditer(raw):
            target, fragment = match.group(1), match.group(2) or ""
            if target not in known:
                continue
            links.append(alias(rng, target) if rng.random() < 0.2 else target + fragment)
        text = html.unescape(_TAGS.sub(" ", raw))
        path = BASE if name == "index.html" else BASE + name
        site.page(f"pg:{name}", path, *links, text=" ".join(text.split()))
    starts = [f"https://{HOST}{BASE}"] + [alias(rng, name) for name in names[::25]]
    return site, starts


def _cpu_of(run: Any) -> tuple[CrawlResult, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = run()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return result, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(pages: set[str], result: CrawlResult, cpu: float, baseline: CrawlResult | None) -> dict[str, Any]:
    if result.returncode != 0:
        raise SystemExit(f"docs_bench: a crawl failed:\n{result.log[-3000:]}")
    fetched = result.counts["resources"]
    reference = baseline.counts["resources"] if baseline else fetched
    return {
        "pages": len(result.resource_ids),
        "missed": sorted(pages - result.resource_ids),
        "duplicates_beyond_scrapy": sum(max(0, n - reference.get(rid, 1)) for rid, n in fetched.items()),
        "redirects": sum(result.counts["redirects"].values()),
        "requests": result.counts["requests"],
        "cpu_seconds": round(cpu, 2),
        "errors": result.stat("log_count/ERROR"),
        "stats": {k: v for k, v in sorted(result.stats.items()) if k.startswith("iri/") and "filtered" not in k},
    }


def run_once(web: SimulatedWeb, starts: list[str], concurrency: int, extra: dict[str, Any]) -> dict[str, Any]:
    pages = {resource.id for site in web.sites for resource in site.resources}
    base = {"CONCURRENT_REQUESTS": concurrency, "LOG_LEVEL": "INFO", "CLOSESPIDER_PAGECOUNT": 0}
    with tempfile.TemporaryDirectory(prefix="docs-bench-") as workdir:
        store = {"IRI_STORE": f"sqlite:///{Path(workdir) / 'store.db'}"}
        crawls = crawl_settings(base, store, extra)
        out: dict[str, Any] = {}
        scrapy = None
        for name, settings in crawls.items():
            result, cpu = _cpu_of(lambda s=settings: run_crawl(web, start_urls=starts, settings=s, timeout=900))
            out[name] = measure(pages, result, cpu, scrapy)
            scrapy = scrapy or result
    out["protocol_cpu_over_scheme"] = {name: ratio - 1 for name, ratio in compare(out).items()}
    return out


def print_run(run: dict[str, Any]) -> None:
    print_crawls(run, [
        ("pages fetched", lambda c: c["pages"]),
        ("pages missed", lambda c: len(c["missed"])),
        ("duplicate fetches beyond Scrapy's", lambda c: c["duplicates_beyond_scrapy"]),
        ("redirect round trips", lambda c: c["redirects"]),
        ("  saved vs Scrapy", saved),
        ("requests", lambda c: c["requests"]),
        ("CPU seconds", lambda c: c["cpu_seconds"]),
        ("  over Scrapy's defaults", over_scrapy),
        ("errors logged", lambda c: c["errors"]),
    ])
    over = run["protocol_cpu_over_scheme"]
    print(f"protocol CPU over scheme: cold {over['cold']:+.1%}, warm {over['warm']:+.1%}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "scrapy-iri")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8], metavar="N")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE",
        help="a setting of the add-on's crawls (JSON value), e.g. --set IRI_VERIFY_SHARE=1",
    )
    args = parser.parse_args(argv)
    extra: dict[str, Any] = {}
    for item in args.set:
        name, _, value = item.partition("=")
        try:
            extra[name] = json.loads(value)
        except json.JSONDecodeError:
            extra[name] = value
    site, starts = docs_site(tree(args.cache))
    report: dict[str, Any] = {"benchmark": "protocol rung on PostgreSQL 15's HTML docs", "settings": extra, "runs": {}}
    with SimulatedWeb([site]) as web:
        print(f"{len(site.resources)} pages, {len(starts)} start URLs")
        for concurrency in args.concurrency:
            for i in range(args.repeat):
                run = run_once(web, starts, concurrency, extra)
                report["runs"][f"c={concurrency} #{i + 1}"] = run
                print(f"\n== concurrency {concurrency}, run {i + 1} ==")
                print_run(run)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
