"""Benchmark of the protocol rung: redirect round trips on the simulated redirect-policy web.

Three real Scrapy crawls (each in a subprocess, through the simulated web's
loopback proxy) of ``simweb.protocol_sites(pages_per_host)``:
18 hosts, one redirect policy each (slash, index, https, www, moves, case,
temporaries, 303, sinks, an open redirector, cookie-setting redirects, loops
and chains, ``/x`` vs ``/x/`` twins), every resource with an id.

* ``scrapy``: Scrapy's defaults (no add-on);
* ``cold``: the add-on (``IRI_RUNG = "protocol"``) with a new, empty store;
* ``warm``: the add-on again, with the store the cold crawl left.

For each crawl: redirect round trips (3xx answers the server sent), split
into *saveable* ones (permanent, clean, within one site, at most Scrapy's 20
hops: slash, index, https, www, moves, case, short chains) and the rest
(temporaries, 303, sinks, open redirectors, cookie-dependent redirects,
loops, a 25-hop chain), which a correct learner must keep paying; resources
missed; duplicate fetches; and, from the store, rules and aliases learned
across registrable domains. Savings are relative to the ``scrapy`` crawl, as
a share of its saveable redirects and of all its redirects.

Why each saveable redirect the add-on still paid was paid comes from
``protocol_probe.RedirectProbe`` (a downloader middleware that looks at the
store as each redirect arrives): ``unpredicted`` (no rule predicts it: a
one-off move, a chain, the first contact with a page's case), ``learning``
(one of the K observations that make a rule), ``verification``
(``IRI_VERIFY_SHARE``), ``in_flight`` (learned while the request was on its
way), ``refuted`` (its rule has a counterexample).

The web is crawled at several sizes (``--pages``, pages per main host; 20 is
``protocol_sites()``'s default): the per-host cost of learning is fixed, the
savings grow with the pages a host has.

Each size is crawled at every concurrency of ``--concurrency`` (1 and 8 by
default: in flight, requests meet rules learned and refuted meanwhile).

Targets: cold saves >= 80% and warm >= 97% of Scrapy's saveable round
trips, zero resources missed, zero duplicate fetches beyond Scrapy's own
(its start requests are ``dont_filter``), zero rules learned across sites.

    .venv/bin/python benchmarks/protocol_bench.py [--repeat N] [--pages 20 60] [--concurrency 1 8]
        [--out PATH] [--set NAME=VALUE ...]

Prints the tables and writes ``benchmarks/results/protocol.json``.

``--web random`` and ``--web changing`` crawl seeded webs instead (``--seeds``
of them, ``--hosts`` hosts of ``--pages`` pages each, at every
``--concurrency`` and ``--share``): ``random`` is ``simweb.sites.random_web``
(small hosts with random conventions, one-off moves, sinks, chains) crawled
cold then warm; ``changing`` is ``simweb.sites.changing`` (phase 0 cold, then
phase 1, where redirects disappeared, moved or became pages, warm on the same
store); each is crawled a third time (``again``, unchanged since ``warm``). Each of our crawls is compared with Scrapy's crawl of the same phase:
round trips saved (summed over the seeds), pages missed, fetches beyond
Scrapy's, and where the saveable round trips still paid went, by policy and
reason (the probe's reasons above, and ``alias_check``: an alias of an
earlier crawl checked by fetching its source; ``alias_stale``: one past its
lifetime), with the earlier crawls' aliases checked, confirmed and ended.
Writes ``benchmarks/results/protocol_<web>.json``.

    .venv/bin/python benchmarks/protocol_bench.py --web random --seeds 6 --hosts 8 --pages 10 --concurrency 1 8 --share 0 0.1 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from scrapy.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the simulated web

from scrapy_iri import IRIError, Rung, canonicalize
from scrapy_iri.scrapy._settings import IRISettings, learning_policy
from scrapy_iri.store import RuleStatus, open_store
from scrapy_iri.store._psl import same_site
from scrapy_iri.store._rules import ALIAS
from simweb import SimulatedWeb, protocol_sites
from simweb.crawl import CrawlResult, run_crawl

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "protocol.json"
ADDON = {"ADDONS": {"scrapy_iri.Addon": 0}}
PROBE = {"DOWNLOADER_MIDDLEWARES": {"protocol_probe.RedirectProbe": 39}}
SIZES = (20, 60)

#: simulated-web policy name -> whether a correct learner may save its redirects
POLICIES = {
    "slash": True,
    "index": True,
    "https": True,
    "www": True,
    "moves": True,
    "case": True,
    "chain_short": True,
    "temporaries": False,  # 302/307: "keep using the original"
    "303": False,  # a different resource
    "temporary_slash": False,  # a slash convention, but served as 302
    "cookie_redirect": False,  # sets a cookie and varies on Cookie
    "sink": False,  # many pages -> /login (302)
    "sink_permanent": False,  # many pages -> /login (301): never merged into a sink
    "soft404": False,  # unknown pages -> / (301): a sink too
    "open_redirect": False,  # /out?url=... (302)
    "open_redirect_permanent": False,  # /away?to=... (301) to other sites
    "loop": False,
    "chain": False,  # 25 hops: longer than Scrapy follows
    # the random and the changing webs (simweb.sites.random_web, simweb.sites.changing)
    "cross_site_moves": True,  # a clean 301 to another site: an exact alias (source -> target)
    "one_off_moves": True,
    "maintenance": True,  # a few pages -> /maintenance (301), below the sink fan-in
}
SAVEABLE = [name for name, ok in POLICIES.items() if ok]
#: why a saveable redirect was paid (protocol_probe), in the order of the tables
REASONS = ("unpredicted", "learning", "verification", "alias_check", "alias_stale", "in_flight", "refuted")
TARGETS = {"cold": 0.80, "warm": 0.97}
CONCURRENCY = (1, 8)


def _host(url: str) -> str:
    return url.split("/")[2] if "://" in url else url


def _form(url: str) -> str:
    try:
        return canonicalize(url, Rung.SCHEME, lenient=True)
    except IRIError:
        return url


def cross_site_learning(store_uri: str, extra: dict[str, Any]) -> dict[str, int]:
    """Rules and aliases of the store whose evidence crosses registrable domains."""
    rules = aliases = 0
    with open_store(store_uri, create=False, policy=learning_policy(Settings(extra))) as store:
        for record in store.rules():
            if record.key.kind == ALIAS:  # an origin's aliases taken together: no rule, nothing predicted
                continue
            if store.rule_status(record) is RuleStatus.ACTIVE and record.example:
                source, _, target = record.example.split(" ")
                rules += not same_site(_host(source), _host(target))
        for alias in store.aliases():
            aliases += not same_site(_host(alias.source), _host(alias.target))
        active = sum(store.rule_status(r) is RuleStatus.ACTIVE for r in store.rules() if r.key.kind != ALIAS)
    return {"rules_across_sites": rules, "aliases_across_sites": aliases, "rules_active": active}


def reasons(result: CrawlResult, probe_file: Path) -> dict[str, dict[str, int]]:
    """Saveable policy -> why its redirects were paid (the probe's lines joined with the server's counts)."""
    policy_of = {
        _form(url): policy for policy, urls in result.counts["redirect_urls"].items() for url in urls
    }
    table: dict[str, Counter[str]] = {name: Counter() for name in SAVEABLE}
    lines = probe_file.read_text(encoding="utf-8").splitlines() if probe_file.exists() else []
    for line in lines:
        event = json.loads(line)
        policy = policy_of.get(_form(event["url"]))
        if policy in table:
            table[policy][event["why"]] += 1
    return {name: dict(counts) for name, counts in table.items()}


def measure(web: SimulatedWeb, result: CrawlResult, baseline: CrawlResult | None) -> dict[str, Any]:
    """The figures of one crawl (``baseline``: Scrapy's, for duplicates beyond it)."""
    if result.returncode != 0:
        raise SystemExit(f"protocol_bench: a crawl failed:\n{result.log[-3000:]}")
    by_policy: dict[str, int] = result.counts["redirects"]
    unknown = set(by_policy) - set(POLICIES)
    if unknown:
        raise SystemExit(f"protocol_bench: classify the new policies {sorted(unknown)} in POLICIES")
    fetched = result.counts["resources"]
    reference = baseline.counts["resources"] if baseline else fetched
    return {
        "requests": result.counts["requests"],
        "redirects": sum(by_policy.values()),
        "redirects_saveable": sum(n for name, n in by_policy.items() if POLICIES[name]),
        "redirects_by_policy": dict(sorted(by_policy.items())),
        "resources_missed": sorted(web.resource_ids() - result.resource_ids),
        "duplicate_fetches": sum(n - 1 for n in fetched.values() if n > 1),
        "duplicates_beyond_scrapy": sum(max(0, n - reference.get(rid, 1)) for rid, n in fetched.items()),
        "stats": {k: v for k, v in sorted(result.stats.items()) if k.startswith("iri/")},
    }


def saved(ours: int, theirs: int) -> float:
    return 1.0 - ours / theirs if theirs else 0.0


def run_once(web: SimulatedWeb, extra: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="protocol-bench-") as workdir:
        store_uri = f"sqlite:///{Path(workdir) / 'store.db'}"
        probes = {name: Path(workdir) / f"probe-{name}.jsonl" for name in ("cold", "warm")}

        def settings(name: str) -> dict[str, Any]:
            return {**ADDON, **PROBE, "PROTOCOL_PROBE_FILE": str(probes[name]), "IRI_STORE": store_uri, **extra}

        started = time.perf_counter()
        scrapy = run_crawl(web, settings={k: v for k, v in extra.items() if not k.startswith("IRI_")})
        cold = run_crawl(web, settings=settings("cold"))
        cold_learning = cross_site_learning(store_uri, extra)
        warm = run_crawl(web, settings=settings("warm"))
        elapsed = time.perf_counter() - started
        figures = {"scrapy": measure(web, scrapy, None)}
        figures["cold"] = {**measure(web, cold, scrapy), **cold_learning, "why": reasons(cold, probes["cold"])}
        figures["warm"] = {
            **measure(web, warm, scrapy),
            **cross_site_learning(store_uri, extra),
            "why": reasons(warm, probes["warm"]),
        }
    for name in ("cold", "warm"):
        crawl = figures[name]
        crawl["saved"] = saved(crawl["redirects"], figures["scrapy"]["redirects"])
        crawl["saved_saveable"] = saved(crawl["redirects_saveable"], figures["scrapy"]["redirects_saveable"])
    figures["seconds"] = round(elapsed, 1)
    return figures


def verdicts(run: dict[str, Any]) -> dict[str, bool]:
    cold, warm = run["cold"], run["warm"]
    return {
        "cold_saves_80pct_of_saveable": cold["saved_saveable"] >= TARGETS["cold"],
        "warm_saves_97pct_of_saveable": warm["saved_saveable"] >= TARGETS["warm"],
        "zero_resources_missed": not (cold["resources_missed"] or warm["resources_missed"]),
        "zero_rules_across_sites": not (cold["rules_across_sites"] or warm["rules_across_sites"]),
        "no_duplicates_beyond_scrapy": not (cold["duplicates_beyond_scrapy"] or warm["duplicates_beyond_scrapy"]),
    }


# -- printing ------------------------------------------------------------------


def print_crawls(run: dict[str, Any]) -> None:
    """The three crawls of one run side by side."""
    rows = [
        ("redirect round trips", lambda c: c["redirects"]),
        ("  saveable (permanent, clean, one site)", lambda c: c["redirects_saveable"]),
        ("  never saveable (temporaries, sinks, ...)", lambda c: c["redirects"] - c["redirects_saveable"]),
        ("requests", lambda c: c["requests"]),
        ("resources missed", lambda c: len(c["resources_missed"])),
        ("duplicate fetches", lambda c: c["duplicate_fetches"]),
        ("  beyond Scrapy's", lambda c: c["duplicates_beyond_scrapy"]),
        ("saved, % of saveable redirects", lambda c: f"{c['saved_saveable']:.1%}" if "saved" in c else ""),
        ("saved, % of all redirects", lambda c: f"{c['saved']:.1%}" if "saved" in c else ""),
        ("rules active", lambda c: c.get("rules_active", "")),
        ("rules / aliases across sites", lambda c: f"{c['rules_across_sites']} / {c['aliases_across_sites']}" if "saved" in c else ""),
    ]
    print(f"{'':44}{'scrapy':>10}{'cold':>10}{'warm':>10}")
    for label, cell in rows:
        print(f"{label:44}" + "".join(f"{cell(run[name])!s:>10}" for name in ("scrapy", "cold", "warm")))


def print_reasons(run: dict[str, Any]) -> None:
    """Saveable redirects still paid: policy x why, cold and warm."""
    for name in ("cold", "warm"):
        crawl, why = run[name], run[name]["why"]
        print(f"\n{name}: saveable redirects still paid, by policy and reason")
        print(f"  {'policy':14}{'scrapy':>8}{'paid':>7}" + "".join(f"{r:>14}" for r in REASONS))
        totals: Counter[str] = Counter()
        for policy in SAVEABLE:
            paid = crawl["redirects_by_policy"].get(policy, 0)
            counts = why.get(policy, {})
            totals.update(counts)
            print(
                f"  {policy:14}{run['scrapy']['redirects_by_policy'].get(policy, 0):>8}{paid:>7}"
                + "".join(f"{counts.get(r, 0):>14}" for r in REASONS)
            )
        print(
            f"  {'total':14}{run['scrapy']['redirects_saveable']:>8}{crawl['redirects_saveable']:>7}"
            + "".join(f"{totals.get(r, 0):>14}" for r in REASONS)
        )
    never = sorted(p for p in POLICIES if not POLICIES[p])
    print("\nnever saveable, paid by policy (scrapy / cold / warm):")
    print("  " + ", ".join(
        f"{p} {run['scrapy']['redirects_by_policy'].get(p, 0)}/{run['cold']['redirects_by_policy'].get(p, 0)}"
        f"/{run['warm']['redirects_by_policy'].get(p, 0)}"
        for p in never
    ))


def _span(values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.1%}" if f"{low:.1%}" == f"{high:.1%}" else f"{low:.1%}-{high:.1%}"


def print_summary(sizes: dict[Any, dict[str, Any]]) -> None:
    """One line per size: the figures the README quotes (ranges over the runs)."""
    print("\nsummary (ranges over the runs):")
    header = (
        f"{'pages/host, concurrency':>24}{'resources':>10}{'scrapy all/saveable':>21}"
        f"{'cold % saveable':>17}{'cold % all':>13}{'warm % saveable':>17}{'warm % all':>13}"
        f"{'missed':>8}{'dupl. beyond':>14}{'cross-site':>12}"
    )
    print(header)
    for pages, size in sizes.items():
        runs = size["runs"]
        scrapy = size["median_run"]["scrapy"]
        missed = max(len(r[c]["resources_missed"]) for r in runs for c in ("cold", "warm"))
        beyond = max(r[c]["duplicates_beyond_scrapy"] for r in runs for c in ("cold", "warm"))
        cross = max(r[c]["rules_across_sites"] + r[c]["aliases_across_sites"] for r in runs for c in ("cold", "warm"))
        print(
            f"{pages:>24}{size['resources']:>10}{scrapy['redirects']:>11}/{scrapy['redirects_saveable']:<9}"
            f"{_span([r['cold']['saved_saveable'] for r in runs]):>17}"
            f"{_span([r['cold']['saved'] for r in runs]):>13}"
            f"{_span([r['warm']['saved_saveable'] for r in runs]):>17}"
            f"{_span([r['warm']['saved'] for r in runs]):>13}"
            f"{missed:>8}{beyond:>14}{cross:>12}"
        )


def _print_run(run: dict[str, Any], checks: dict[str, bool]) -> None:
    print_crawls(run)
    print_reasons(run)
    for name, ok in checks.items():
        print(f"{'met' if ok else 'NOT MET':>8}  {name}")


#: the crawls of a seeded web on one store: the first, the next (on a changing web: changed), the next again
CRAWLS = ("cold", "warm", "again")


def crawl_phases(phases: list[list[Any]], extra: dict[str, Any]) -> list[dict[str, Any]]:
    """Scrapy's crawl and ours of each phase (ours on one store): the figures of ours against Scrapy's."""
    out = []
    with tempfile.TemporaryDirectory(prefix="protocol-webs-") as workdir:
        for n, sites in enumerate(phases):
            probe = Path(workdir) / f"probe-{n}.jsonl"
            settings = {
                **ADDON, **PROBE, "PROTOCOL_PROBE_FILE": str(probe),
                "IRI_STORE": f"sqlite:///{Path(workdir) / 'store.db'}", **extra,
            }
            with SimulatedWeb(sites) as web:
                truth = run_crawl(web, settings={k: v for k, v in extra.items() if not k.startswith("IRI_")})
                ours = run_crawl(web, settings=settings)
            for result in (truth, ours):
                if result.returncode != 0:
                    raise SystemExit(f"protocol_bench: a crawl failed:\n{result.log[-3000:]}")
            unknown = (set(truth.counts["redirects"]) | set(ours.counts["redirects"])) - set(POLICIES)
            if unknown:
                raise SystemExit(f"protocol_bench: classify the new policies {sorted(unknown)} in POLICIES")
            reference = truth.counts["resources"]
            out.append({
                "scrapy_saveable": sum(n for k, n in truth.counts["redirects"].items() if POLICIES[k]),
                "ours_saveable": sum(n for k, n in ours.counts["redirects"].items() if POLICIES[k]),
                "scrapy_redirects": sum(truth.counts["redirects"].values()),
                "ours_redirects": sum(ours.counts["redirects"].values()),
                "missed": sorted(truth.resource_ids - ours.resource_ids),
                "beyond_scrapy": sum(max(0, n - reference.get(rid, 1)) for rid, n in ours.counts["resources"].items()),
                "errors": ours.stat("log_count/ERROR"),
                "stats": {k: v for k, v in sorted(ours.stats.items()) if k.startswith("iri/")},
                "why": {k: v for k, v in reasons(ours, probe).items() if v},
            })
    return out


def _sum_why(tables: Any) -> dict[str, dict[str, int]]:
    """Policy -> reason -> redirects paid, summed over runs."""
    out: dict[str, Counter[str]] = {}
    for table in tables:
        for policy, counts in table.items():
            out.setdefault(policy, Counter()).update(counts)
    return {policy: dict(counts) for policy, counts in sorted(out.items())}


def main_webs(args: argparse.Namespace, extra: dict[str, Any]) -> int:
    """``--web random`` / ``--web changing``: seeded webs, cold then warm, against Scrapy's crawl of each phase."""
    from simweb.sites.changing import changing_web
    from simweb.sites.random_web import random_web

    hosts, pages = args.hosts, args.pages[0]
    # the crawls import the probe from here
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)

    def phases(seed: int) -> list[list[Any]]:
        if args.web == "random":
            return [random_web(seed, hosts, pages) for _ in CRAWLS]
        return [changing_web(seed, phase, hosts, pages) for phase in (0, 1, 1)]

    rows = []
    print(f"{args.web} webs: {args.seeds} seeds, {hosts} hosts of {pages} pages")
    print(f"{'concurrency':>12}{'share':>7}{'scrapy saveable':>17}{'cold saved':>12}{'warm saved':>12}"
          f"{'again saved':>13}{'missed':>8}{'beyond':>8}{'errors':>8}")
    for concurrency in args.concurrency:
        for share in args.share:
            settings = {"CONCURRENT_REQUESTS": concurrency, "IRI_VERIFY_SHARE": share, **extra}
            runs = [crawl_phases(phases(seed), settings) for seed in range(args.seeds)]
            row: dict[str, Any] = {"concurrency": concurrency, "share": share, "seeds": args.seeds}
            for i, name in enumerate(CRAWLS):
                theirs = sum(r[i]["scrapy_saveable"] for r in runs)
                ours = sum(r[i]["ours_saveable"] for r in runs)
                row[name] = {
                    "scrapy_saveable": theirs,
                    "ours_saveable": ours,
                    "saved_saveable": saved(ours, theirs),
                    "saved_all": saved(sum(r[i]["ours_redirects"] for r in runs), sum(r[i]["scrapy_redirects"] for r in runs)),
                    "missed": sum(len(r[i]["missed"]) for r in runs),
                    "beyond_scrapy": sum(r[i]["beyond_scrapy"] for r in runs),
                    "errors": sum(r[i]["errors"] for r in runs),
                    "why": _sum_why(r[i]["why"] for r in runs),
                    "aliases": {
                        part: sum(r[i]["stats"].get(f"iri/alias/{part}", 0) for r in runs)
                        for part in ("checked", "confirmed", "ended")
                    },
                }
            rows.append(row)
            cold, warm, again = (row[name] for name in CRAWLS)
            print(f"{concurrency:>12}{share:>7g}{cold['scrapy_saveable']:>8}/{warm['scrapy_saveable']:<8}"
                  f"{cold['saved_saveable']:>12.1%}{warm['saved_saveable']:>12.1%}{again['saved_saveable']:>13.1%}"
                  f"{sum(row[c]['missed'] for c in CRAWLS):>8}{sum(row[c]['beyond_scrapy'] for c in CRAWLS):>8}"
                  f"{sum(row[c]['errors'] for c in CRAWLS):>8}")
            for name in CRAWLS:
                why = row[name]["why"]
                total = sum((Counter(c) for c in why.values()), Counter())
                aliases = row[name]["aliases"]
                print(f"{'':>12}{name:>6} paid {row[name]['ours_saveable']:>4}: "
                      + ", ".join(f"{r} {total[r]}" for r in REASONS if total.get(r))
                      + f" (earlier crawls' aliases: checked {aliases['checked']},"
                      f" confirmed {aliases['confirmed']}, ended {aliases['ended']})")
                for policy, counts in sorted(why.items()):
                    print(f"{'':>24}{policy:>18}: " + ", ".join(f"{r} {counts[r]}" for r in REASONS if counts.get(r)))
    out = args.out if args.out != RESULTS else RESULTS.with_name(f"protocol_{args.web}.json")
    report = {
        "benchmark": f"protocol rung on seeded {args.web} webs",
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "seeds": args.seeds, "hosts": hosts, "pages": pages, "settings": extra, "targets": TARGETS, "rows": rows,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--web", choices=("policies", "random", "changing"), default="policies",
                        help="the redirect-policy web (default), seeded random webs, or webs that change")
    parser.add_argument("--seeds", type=int, default=4, help="random/changing: webs crawled (seeds 0..N-1)")
    parser.add_argument("--hosts", type=int, default=8, help="random/changing: hosts per web")
    parser.add_argument("--share", type=float, nargs="+", default=[0.01], help="random/changing: IRI_VERIFY_SHARE values")
    parser.add_argument("--repeat", type=int, default=1, help="run the three crawls N times per size (median shown)")
    parser.add_argument(
        "--pages", type=int, nargs="+", default=list(SIZES), metavar="N",
        help=f"pages per main host of the web, one size each (default: {' '.join(map(str, SIZES))})",
    )
    parser.add_argument(
        "--concurrency", type=int, nargs="+", default=list(CONCURRENCY), metavar="N",
        help=f"CONCURRENT_REQUESTS of every crawl, one series each (default: {' '.join(map(str, CONCURRENCY))})",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"JSON output (default: {RESULTS})")
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE",
        help="a setting of the add-on's crawls (JSON value), e.g. --set IRI_RULE_MIN_OBSERVATIONS=2",
    )
    args = parser.parse_args(argv)
    extra = {}
    for item in args.set:
        name, _, value = item.partition("=")
        try:
            extra[name] = json.loads(value)
        except json.JSONDecodeError:
            extra[name] = value
    config = IRISettings.from_settings(Settings(extra))  # a bad --set fails here, not in a crawl
    if args.web != "policies":
        return main_webs(args, extra)
    # the crawls import the probe from here
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)

    sizes: dict[Any, dict[str, Any]] = {}
    for pages in args.pages:
        for concurrency in args.concurrency:
            settings = {"CONCURRENT_REQUESTS": concurrency, **extra}
            with SimulatedWeb(protocol_sites(pages)) as web:
                runs = [run_once(web, settings) for _ in range(args.repeat)]
                resources = len(web.resource_ids())
            # the run with the median cold saving stands for all (every run is in the JSON)
            chosen = sorted(runs, key=lambda r: r["cold"]["saved_saveable"])[len(runs) // 2]
            checks = {name: all(verdicts(run)[name] for run in runs) for name in verdicts(chosen)}
            key = f"{pages}, c={concurrency}"
            sizes[key] = {"resources": resources, "median_run": chosen, "runs": runs, "checks": checks}
            print(
                f"\n== {pages} pages per main host ({resources} resources), concurrency {concurrency};"
                f" median of {len(runs)} run(s) =="
            )
            _print_run(chosen, checks)
    print_summary(sizes)

    print(
        f"\nsettings: K = IRI_RULE_MIN_OBSERVATIONS = {config.rule_min_observations},"
        f" IRI_VERIFY_SHARE = {config.verify_share:g}" + (f", {extra}" if extra else "")
    )
    report = {
        "benchmark": "protocol rung on the simulated redirect-policy web (protocol_sites)",
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "repeat": args.repeat,
        "settings": extra,
        "targets": TARGETS,
        "sizes": {
            str(pages): {
                **size,
                "cold_saved_saveable": [r["cold"]["saved_saveable"] for r in size["runs"]],
                "warm_saved_saveable": [r["warm"]["saved_saveable"] for r in size["runs"]],
                "cold_saved_saveable_median": statistics.median(r["cold"]["saved_saveable"] for r in size["runs"]),
            }
            for pages, size in sizes.items()
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
