"""Run a Scrapy crawl of a simulated web in a subprocess.

`run_crawl` starts ``python -m simweb.crawl CONFIG`` with the
proxy in its environment; the child runs `FollowAllSpider` under Scrapy's
``AsyncCrawlerProcess`` (its default Twisted download handler, the one
users run) and writes the pages and the crawl stats as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .web import SimulatedWeb

#: settings every simulated crawl gets (callers' settings override them)
BASE_SETTINGS: dict[str, Any] = {
    "TELNETCONSOLE_ENABLED": False,
    "REMOTE_CONTROL_ENABLED": False,
    "LOG_LEVEL": "INFO",
    "DOWNLOAD_TIMEOUT": 30,
    "CLOSESPIDER_PAGECOUNT": 5000,
}


@dataclass
class CrawlResult:
    """What a crawl saw (pages, Scrapy stats) and what the server counted."""

    returncode: int
    pages: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)
    log: str = ""

    @property
    def resource_ids(self) -> set[str]:
        """Ids of the resources the spider's callback received."""
        return {p["resource_id"] for p in self.pages if p.get("resource_id")}

    def stat(self, key: str) -> int:
        return int(self.stats.get(key, 0) or 0)


def subprocess_env(web: SimulatedWeb, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """os.environ + the proxy variables + a PYTHONPATH that finds scrapy_iri and simweb."""
    here = Path(__file__).resolve()
    roots = (str(here.parents[2]), str(here.parents[1]), os.environ.get("PYTHONPATH", ""))
    python_path = os.pathsep.join(p for p in roots if p)
    return {**os.environ, **web.proxy_env(), "PYTHONPATH": python_path, **(extra or {})}


def run_crawl(
    web: SimulatedWeb,
    *,
    start_urls: Iterable[str] | None = None,
    extractor: str = "scrapy",
    settings: Mapping[str, Any] | None = None,
    timeout: float = 120.0,
    reset: bool = True,
) -> CrawlResult:
    """Crawl ``web`` from start_urls (its own by default) in a subprocess.

    ``extractor`` is ``"scrapy"`` (Scrapy's LinkExtractor), ``"iri"``
    (scrapy_iri.IRILinkExtractor) or a dotted class path; ``settings`` are
    Scrapy settings (``{"ADDONS": {"scrapy_iri.Addon": 0}}``...). The
    server's counters are reset first unless ``reset=False``.
    """
    if reset:
        web.reset_counts()
    with tempfile.TemporaryDirectory(prefix="simweb-crawl-") as workdir:
        config = {
            "start_urls": list(web.start_urls() if start_urls is None else start_urls),
            "extractor": extractor,
            "settings": {**BASE_SETTINGS, **(settings or {})},
            "out": workdir,
        }
        config_path = Path(workdir, "config.json")
        config_path.write_text(json.dumps(config), encoding="utf-8")
        process = subprocess.run(
            [sys.executable, "-m", "simweb.crawl", str(config_path)],
            env=subprocess_env(web),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=workdir,
        )
        result = CrawlResult(process.returncode, log=process.stderr)
        for name in ("pages", "stats"):
            path = Path(workdir, f"{name}.json")
            if path.exists():
                setattr(result, name, json.loads(path.read_text(encoding="utf-8")))
    result.counts = web.counts.snapshot()
    return result


def main(argv: list[str] | None = None) -> int:
    """Child side: run the configured crawl, write pages.json and stats.json."""
    from scrapy.crawler import AsyncCrawlerProcess

    from .spider import FollowAllSpider

    args = sys.argv[1:] if argv is None else argv
    config = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    process = AsyncCrawlerProcess(config["settings"])
    crawler = process.create_crawler(FollowAllSpider)
    process.crawl(crawler, start_urls=config["start_urls"], extractor=config["extractor"])
    process.start()
    out = Path(config["out"])
    pages = crawler.spider.pages if crawler.spider is not None else []
    out.joinpath("pages.json").write_text(json.dumps(pages), encoding="utf-8")
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    out.joinpath("stats.json").write_text(json.dumps(stats, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
