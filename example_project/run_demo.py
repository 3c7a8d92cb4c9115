"""Crawl the bundled demo web twice and compare: Scrapy's defaults vs scrapy-iri.

    python run_demo.py                    # both crawls, side by side
    python run_demo.py --rung protocol    # scrapy-iri at another rung
    python run_demo.py --only baseline    # Scrapy's defaults only

The demo web (``simweb.demo_sites()``) runs in this process
behind a loopback proxy; each crawl is ``scrapy crawl web`` in a subprocess
with ``http_proxy``/``https_proxy`` pointing at it. Nothing leaves the
machine. Exit code 0 when the crawls ran, 1 when one failed, 2 when
scrapy-iri's add-on cannot be imported.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import runpy
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))  # the simulated web lives with the tests
if importlib.util.find_spec("scrapy_iri") is None:
    sys.path.insert(0, str(REPO))  # a checkout that was not pip-installed

from simweb import SimulatedWeb, demo_sites  # noqa: E402

RUNGS = ("string", "syntax", "scheme", "protocol")


@dataclass
class Run:
    """One crawl: what Scrapy reported and what the simulated web counted."""

    label: str
    uses_iri: bool
    returncode: int = 0
    items: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)
    log: str = ""

    def stat(self, key: str) -> int:
        return int(self.stats.get(key, 0) or 0)

    @property
    def reached(self) -> set[str]:
        return {item["resource_id"] for item in self.items if item.get("resource_id")}

    @property
    def fetched_more_than_once(self) -> dict[str, int]:
        return {rid: n for rid, n in self.counts.get("resources", {}).items() if n > 1}

    def urls_of(self, resource_id: str) -> list[str]:
        """The URLs the crawl fetched ``resource_id`` at (its pages' final URLs, in crawl order)."""
        return [item["url"] for item in self.items if item.get("resource_id") == resource_id]


def _form(url: str) -> str:
    """The scheme-rung form of a URL, without its fragment (the URL itself when it has none)."""
    from scrapy_iri import IRIError, canonicalize

    try:
        return canonicalize(url, "scheme", keep_fragment=False, lenient=True)
    except IRIError:
        return url


def why_not_merged(urls: list[str], start_urls: list[str]) -> str:
    """Why a resource fetched at ``urls`` was fetched more than once: what kept the requests apart.

    Each reason is one the first law asks for (never merge what may differ),
    or Scrapy's own behaviour; none is a missed merge of equivalent URLs.
    """
    from urllib.parse import urlsplit

    forms = list(dict.fromkeys(_form(url) for url in urls))
    if len(forms) == 1:
        if forms[0] in {_form(url) for url in start_urls}:
            return (
                "the start URL: Scrapy sends start requests with dont_filter, so the page"
                " is fetched again when a link leads back to it (Scrapy's own filter does the same)"
            )
        return "the same URL requested with dont_filter (a retry or a check of a learned rule)"
    parts = [urlsplit(form) for form in forms]
    if len({(p.netloc, p.path, p.query) for p in parts}) == 1:
        schemes = " and ".join(sorted({p.scheme for p in parts}))
        return (
            f"served on {schemes} without a redirect from one to the other: two origins, which"
            " may serve different pages; no redirect taught the protocol rung they are one"
        )
    if len({(p.scheme, p.netloc, p.path) for p in parts}) == 1:
        queries = ", ".join(f"?{p.query}" if p.query else "no query" for p in parts)
        return (
            f"the query differs ({queries}): different queries may name different pages, and the"
            " server answered each with the page itself, not a redirect to one URL"
        )
    return "different URLs that no redirect joined: " + ", ".join(forms)


def crawl(web: SimulatedWeb, label: str, uses_iri: bool, args: list[str]) -> Run:
    """``scrapy crawl web`` in a subprocess, through the simulated web's proxy."""
    web.reset_counts()
    env = {**os.environ, **web.proxy_env()}
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    with tempfile.TemporaryDirectory(prefix="scrapy-iri-demo-") as tmp:
        items_path, stats_path = Path(tmp, "items.jsonl"), Path(tmp, "stats.json")
        command = [
            sys.executable, "-m", "scrapy", "crawl", "web",
            "-O", str(items_path), "-a", f"stats_file={stats_path}", *args,
        ]
        if uses_iri:  # a fresh equivalence store per run: every demo starts cold, the same way
            command += ["-s", f"IRI_STORE=sqlite:///{Path(tmp, 'store.sqlite')}"]
        process = subprocess.run(command, cwd=HERE, env=env, capture_output=True, text=True, timeout=300)
        run = Run(label, uses_iri, process.returncode, log=process.stderr)
        if items_path.exists():
            lines = items_path.read_text(encoding="utf-8").splitlines()
            run.items = [json.loads(line) for line in lines if line.strip()]
        if stats_path.exists():
            run.stats = json.loads(stats_path.read_text(encoding="utf-8"))
        elif run.returncode == 0:
            run.returncode = 1  # the spider never closed cleanly
    run.counts = web.counts.snapshot()
    return run


def rows(web: SimulatedWeb, run: Run) -> dict[str, str]:
    """The report lines of one run, by label."""
    total = web.resource_ids()
    traps = web.trap_ids()
    reached = run.reached & total
    lines = {
        "requests made": str(run.counts.get("requests", 0)),
        "  redirects among them": str(run.counts.get("redirects_served", 0)),
        "duplicates avoided (dupefilter)": str(run.stat("dupefilter/filtered")),
    }
    for rung in RUNGS:
        lines[f"  at the {rung} rung"] = str(run.stat(f"iri/filtered/{rung}")) if run.uses_iri else "-"
    lines["distinct resources reached"] = f"{len(reached)} / {len(total)}"
    lines["resources fetched more than once"] = str(len(run.fetched_more_than_once))
    lines["trap resources reached"] = f"{len(reached & traps)} / {len(traps)}"
    return lines


def report(web: SimulatedWeb, runs: list[Run]) -> str:
    """The side-by-side table, then what each run missed."""
    table = [rows(web, run) for run in runs]
    width = max(len(label) for label in table[0]) + 2
    columns = [max(len(run.label), *(len(v) for v in t.values())) + 2 for run, t in zip(runs, table)]
    start = ", ".join(web.start_urls(iri=True))
    out = [
        f"scrapy-iri demo: {len(web.sites)} simulated sites, {len(web.resource_ids())} resources,"
        f" crawled from {start}",
        "",
        " " * width + "".join(run.label.rjust(col) for run, col in zip(runs, columns)),
    ]
    for label in table[0]:
        out.append(label.ljust(width) + "".join(t[label].rjust(col) for t, col in zip(table, columns)))
    out.append("")
    total = web.resource_ids()
    for run in runs:
        missed = sorted(total - run.reached)
        out.append(f"missed by {run.label}: {', '.join(missed) if missed else 'nothing'}")
    starts = web.start_urls()
    for run in runs:
        if not run.uses_iri or not run.fetched_more_than_once:
            continue
        out += ["", f"fetched more than once by {run.label}, and why they could not be merged:"]
        for rid, n in sorted(run.fetched_more_than_once.items()):
            urls = run.urls_of(rid)
            out.append(f"  {rid} ({n} fetches: {', '.join(dict.fromkeys(urls))})")
            out.append(f"    {why_not_merged(urls, starts)}")
    return "\n".join(out)


def project_rung() -> str:
    """IRI_RUNG as demo/settings.py sets it, else the add-on's default (protocol)."""
    return str(runpy.run_path(str(HERE / "demo" / "settings.py")).get("IRI_RUNG", "protocol"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rung", choices=RUNGS, default=project_rung(),
                        help="IRI_RUNG of the scrapy-iri crawl (default: demo/settings.py's)")
    parser.add_argument("--only", choices=("baseline", "iri"), default=None, help="run one crawl only")
    parser.add_argument("--json", metavar="PATH", help="also write the raw results as JSON")
    options = parser.parse_args(argv)

    wanted = ("baseline", "iri") if options.only is None else (options.only,)
    if "iri" in wanted and importlib.util.find_spec("scrapy_iri.scrapy._addon") is None:
        print("scrapy-iri's add-on (scrapy_iri.scrapy._addon) is not available", file=sys.stderr)
        return 2

    runs: list[Run] = []
    with SimulatedWeb(demo_sites()) as web:
        if "baseline" in wanted:
            runs.append(crawl(web, "Scrapy defaults", False, ["-s", "ADDONS={}", "-a", "extractor=scrapy"]))
        if "iri" in wanted:
            arguments = ["-s", f"IRI_RUNG={options.rung}", "-a", "extractor=iri"]
            runs.append(crawl(web, f"scrapy-iri ({options.rung})", True, arguments))
        failed = [run for run in runs if run.returncode != 0]
        for run in failed:
            print(f"{run.label}: crawl failed (exit {run.returncode})\n{run.log[-4000:]}", file=sys.stderr)
        print(report(web, runs))
        if options.json:
            payload = [
                {"label": r.label, "returncode": r.returncode, "items": r.items, "stats": r.stats,
                 "counts": r.counts, "report": rows(web, r)}
                for r in runs
            ]
            Path(options.json).write_text(json.dumps(payload, indent=1, default=str), encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
