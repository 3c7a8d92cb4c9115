"""One Scrapy process of a shared crawl (run by the Redis tests as ``python crawl_child.py CONFIG``).

The config (JSON) holds ``start_urls``, ``settings`` and ``out`` (a directory
that receives ``stats.json`` and ``pages.json``). The spider follows every
link of the simulated web; unlike the usual start requests, its start
requests go through the dupefilter (``dont_filter=False``), so processes
seeded with the same URLs share them instead of each fetching them, as
with scrapy-redis's start URL queue.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import scrapy
from scrapy.crawler import AsyncCrawlerProcess

from simweb.spider import FollowAllSpider


class SharedSpider(FollowAllSpider):
    name = "shared"

    async def start(self) -> AsyncIterator[Any]:
        for url in self.start_urls:
            yield scrapy.Request(url, callback=self.parse, dont_filter=False)


def main(path: str) -> int:
    config = json.loads(Path(path).read_text(encoding="utf-8"))
    out = Path(config["out"])
    process = AsyncCrawlerProcess(config["settings"])
    crawler = process.create_crawler(SharedSpider)
    failure: list[str] = []

    def failed(error: Any) -> None:
        failure.append(repr(getattr(error, "value", error)))
        print(f"crawl failed: {failure[-1]}", file=sys.stderr)

    result = process.crawl(crawler, start_urls=config["start_urls"])
    if hasattr(result, "addErrback"):
        result.addErrback(failed)
    else:  # an asyncio future
        result.add_done_callback(lambda f: f.exception() and failed(f.exception()))
    process.start()
    spider = crawler.spider or getattr(getattr(crawler, "iri_crawl", None), "spider", None)  # a crawl that gave up
    pages = spider.pages if spider is not None else []
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    out.joinpath("pages.json").write_text(json.dumps(pages), encoding="utf-8")
    out.joinpath("stats.json").write_text(json.dumps({**stats, "_failure": failure}, default=str), encoding="utf-8")
    return 1 if failure or process.bootstrap_failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
