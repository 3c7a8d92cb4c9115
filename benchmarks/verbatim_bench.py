"""CPU the add-on's ``VerbatimLinkMiddleware`` adds per followed link, for spiders without ``IRILinkExtractor``.

Reads ``--pages`` HTML pages of Debian's ``python3.11-doc`` (a seeded
sample), builds ``response.follow(href)`` for every ``<a href>`` (as the
tutorial's spider does; built before the clock starts), then times, in CPU
(``time.process_time``), the middleware's ``process_spider_output`` over
each page's requests, and for reference ``response.follow`` itself on the
same links. Prints microseconds per link and how many pages the middleware
read (a page is read only when its text shows a link form Scrapy rewrites).

    nice .venv/bin/python benchmarks/verbatim_bench.py --pages 200
"""

from __future__ import annotations

import argparse
import glob
import random
import time

from scrapy.http import HtmlResponse
from scrapy.spiders import Spider
from scrapy.utils.test import get_crawler

from scrapy_iri.scrapy._pending import pending_links
from scrapy_iri.scrapy._verbatim import VerbatimLinkMiddleware


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--docs", default="/usr/share/doc/python3.11-doc/html")
    args = parser.parse_args()
    files = sorted(glob.glob(f"{args.docs}/**/*.html", recursive=True))
    random.Random(1).shuffle(files)
    crawler = get_crawler(Spider, {"ADDONS": {"scrapy_iri.Addon": 0}, "IRI_RUNG": "scheme"})
    middleware = VerbatimLinkMiddleware.from_crawler(crawler)
    pages = []
    for name in files[: args.pages]:
        with open(name, "rb") as f:
            page = HtmlResponse("http://docs.test/" + name.split("/html/")[-1], body=f.read(), encoding="utf-8")
        hrefs = [h for h in page.css("a::attr(href)").getall() if not h.startswith(("mailto:", "javascript:"))]
        pages.append((page, [page.follow(h) for h in hrefs]))
    links = sum(len(requests) for _, requests in pages)
    start = time.process_time()
    for page, requests in pages:
        list(middleware.process_spider_output(page, iter(requests)))
    cpu = time.process_time() - start
    read = sum(1 for page, _ in pages if getattr(pending_links.get(page), "read", False))
    start = time.process_time()
    for page, requests in pages:
        [page.follow(r.url) for r in requests]
    follow = time.process_time() - start
    print(
        f"pages {len(pages)}, links {links}, pages read {read}: middleware {cpu / links * 1e6:.1f} us/link,"
        f" response.follow {follow / links * 1e6:.1f} us/link"
    )


if __name__ == "__main__":
    main()
