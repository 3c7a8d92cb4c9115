"""CPU per scheduled request of the dupefilter and the request fingerprinter, as a crawl calls them.

Builds a crawler with the add-on (``scrapy.utils.test.get_crawler``), takes
the dupefilter Scrapy's scheduler builds, and times ``request_seen`` (which
computes the request's identity through the crawl's fingerprinter) over a
seeded stream of requests: 20 hosts, paths and queries of crawl-like
shapes, a third of them spelling variants or repeats of earlier ones.
Requests are built before the clock starts (their cost is Scrapy's either
way); each request is new, so nothing is cached in its meta. CPU time
(``time.process_time``, the cyclic garbage collector paused as ``timeit``
pauses it: whether a full collection of the 20000 requests falls inside
the timed loop or not swings a figure by 4 us), the best of ``--repeat``
passes, in microseconds per request, for:

* ``scrapy``: Scrapy's own ``RFPDupeFilter`` and ``RequestFingerprinter`` (no add-on), for reference;
* ``scheme``: the add-on at ``IRI_RUNG = "scheme"``;
* ``protocol``: the add-on's default rung, an in-memory store that knows an alias and a rule;
* ``scheme+user``: the scheme rung with the project's own ``REQUEST_FINGERPRINTER_CLASS``
  (Scrapy's, set above the add-on): it decides on the canonical request.

``--code DIR`` imports scrapy_iri from another checkout (``git archive REV | tar -x -C DIR``) to
compare revisions on one machine:

    nice .venv/bin/python benchmarks/dupefilter_bench.py --requests 20000 --label after
    git archive dd383c0 | tar -x -C /tmp/before
    nice .venv/bin/python benchmarks/dupefilter_bench.py --requests 20000 --label before --code /tmp/before

Writes ``benchmarks/results/dupefilter.json`` (merged with earlier runs, by label).
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "dupefilter.json"


def _use_code(directory: str | None) -> None:
    """Import scrapy_iri from ``directory`` rather than the installed (editable) checkout."""
    if directory is None:
        return
    sys.meta_path[:] = [f for f in sys.meta_path if not str(getattr(f, "__module__", "")).startswith("__editable__")]
    sys.path.insert(0, str(Path(directory).resolve()))


def urls(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    hosts = [f"site{i}.example" for i in range(20)]
    made: list[str] = []
    for _ in range(n):
        roll = rng.random()
        if made and roll < 0.15:
            made.append(rng.choice(made))  # a repeat
            continue
        host = rng.choice(hosts)
        if made and roll < 0.33:  # a spelling variant of an earlier URL
            base = rng.choice(made)
            variant = rng.choice((base.replace("http://", "HTTP://"), base.replace(".example/", ".example:80/"), base.replace("/", "/./", 3)))
            made.append(variant)
            continue
        depth = rng.randint(1, 4)
        path = "/".join(rng.choice(("docs", "Items", "a b", "caf%C3%A9", "x-1", "index.html")) + str(rng.randint(0, 999)) for _ in range(depth))
        query = "" if rng.random() < 0.6 else "?" + "&".join(f"k{j}={rng.randint(0, 99)}" for j in range(rng.randint(1, 3)))
        made.append(f"http://{host}/{path}{query}")
    return made


CONFIGS: dict[str, dict[str, Any]] = {
    "scrapy": {},
    "scheme": {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_RUNG": "scheme"},
    "protocol": {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_STORE": "memory:"},
    "scheme+user": {
        "ADDONS": {"scrapy_iri.Addon": 0},
        "IRI_RUNG": "scheme",
        "REQUEST_FINGERPRINTER_CLASS": "scrapy.utils.request.RequestFingerprinter",
    },
}


def dupefilter(name: str) -> Any:
    from scrapy import Spider
    from scrapy.core.scheduler import Scheduler
    from scrapy.utils.misc import build_from_crawler
    from scrapy.utils.test import get_crawler

    class BenchSpider(Spider):
        name = "bench"

    crawler = get_crawler(BenchSpider, {**CONFIGS[name], "LOG_LEVEL": "ERROR"})
    df = build_from_crawler(Scheduler, crawler).df
    if name == "protocol":
        from scrapy import Request

        # teach the store an alias and a rule through the crawl's own path: the fingerprinter opens it
        crawler.request_fingerprinter.fingerprint(Request("http://site0.example/"))
        store = _store(crawler)
        store.record_redirect("http://site1.example/docs1", 301, "https://site1.example/docs1")
        for k in range(1, 4):
            store.record_redirect(f"http://site2.example/d{k}", 301, f"http://site2.example/d{k}/")
    return df


def _store(crawler: Any) -> Any:
    crawl = getattr(crawler, "iri_crawl", None)
    if crawl is not None:
        return crawl.store
    from scrapy_iri.scrapy._resources import crawler_store  # the layout before the crawl object

    return crawler_store(crawler)


def measure(name: str, stream: list[str], repeat: int) -> dict[str, Any]:
    from scrapy import Request

    best = float("inf")
    filtered = 0
    for _ in range(repeat):
        df = dupefilter(name)
        requests = [Request(url) for url in stream]
        gc.collect()
        gc.disable()  # as timeit does: a full collection of the requests' objects is not the filter's cost
        try:
            start = time.process_time()
            seen = df.request_seen
            filtered = sum(1 for request in requests if seen(request))
            best = min(best, time.process_time() - start)
        finally:
            gc.enable()
        df.close("finished")
    return {"us_per_request": round(best / len(stream) * 1e6, 2), "filtered": filtered}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--label", default="current")
    parser.add_argument("--code", help="import scrapy_iri from this directory")
    parser.add_argument("--only", nargs="*", choices=sorted(CONFIGS))
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    _use_code(args.code)
    import scrapy
    import scrapy_iri

    stream = urls(args.requests)
    figures = {name: measure(name, stream, args.repeat) for name in (args.only or CONFIGS)}
    run = {
        "requests": args.requests,
        "repeat": args.repeat,
        "scrapy_iri": str(Path(scrapy_iri.__file__).parent.parent),
        "scrapy": scrapy.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "figures": figures,
    }
    print(json.dumps({args.label: run}, indent=2))
    if not args.no_save:
        saved = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
        saved[args.label] = run
        RESULTS.write_text(json.dumps(saved, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
