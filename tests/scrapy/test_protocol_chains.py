"""The two measured two-hop chains, crawled with the add-on's defaults (invariants 1 and 2).

- ``http://www.x/P`` -> ``http://x/P`` -> ``http://x/p``: www -> apex, then a case fix;
- ``http://www.x/p`` -> ``https://www.x/p`` -> ``https://x/p``: the web's most common chain.

Every page links the next pages both as the canonical URL and as the head of
the chain, so rules are learned early and the heads that follow are merged
by them. A head picked for verification is fetched as it is: each hop of its
own chain lands on its own identity and must pass the dupefilter, or the
page is lost (it was, before the identity travelled with the request).
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("simweb")
from simweb import CaseRedirect, HttpsRedirect, SimulatedWeb, Site, WwwRedirect  # noqa: E402
from simweb.crawl import run_crawl  # noqa: E402

ADDON = {"ADDONS": {"scrapy_iri.Addon": 0}}
PAGES = 24


def _linked(site: Site, key: str, head: str, canonical: str) -> None:
    """Pages ``/page-k.html``; page k links k+1 as a chain head, k+2 canonical, k+3 as a head."""
    for k in range(1, PAGES + 1):
        forms = ((k + 1, head), (k + 2, canonical), (k + 3, head))
        links = [form.format(n) for n, form in forms if n <= PAGES]
        site.page(f"{key}:{k}", f"/page-{k}.html", *links, "/")
    site.page(f"{key}:home", "/", head.format(1), canonical.format(2))


def www_then_case_site() -> Site:
    """``http://www.case-chain.example/Page-k.html`` -> apex -> ``/page-k.html`` (http only)."""
    site = Site("case-chain.example", schemes=("http",), policies=[WwwRedirect(), CaseRedirect()])
    _linked(site, "cc", "http://www.case-chain.example/Page-{}.html", "http://case-chain.example/page-{}.html")
    return site


def https_then_www_site() -> Site:
    """``http://www.tls-chain.example/page-k.html`` -> https -> ``https://tls-chain.example/...``."""
    site = Site("tls-chain.example", schemes=("https",), policies=[HttpsRedirect(), WwwRedirect()])
    _linked(site, "tc", "http://www.tls-chain.example/page-{}.html", "https://tls-chain.example/page-{}.html")
    site.start = ("https://tls-chain.example/",)
    return site


SITES = {"www-then-case": www_then_case_site, "https-then-www": https_then_www_site}


@pytest.mark.parametrize("share", [None, 1.0])
@pytest.mark.parametrize("concurrency", [1, 8])
@pytest.mark.parametrize("name", sorted(SITES))
def test_two_hop_chain_fetches_every_page_once(tmp_path: Any, name: str, concurrency: int, share: float | None) -> None:
    settings: dict[str, Any] = {
        **ADDON,
        "IRI_STORE": f"sqlite:///{tmp_path / 'store.db'}",
        "CONCURRENT_REQUESTS": concurrency,
    }
    if share is not None:
        settings["IRI_VERIFY_SHARE"] = share
    with SimulatedWeb([SITES[name]()]) as web:
        # start requests are dont_filter in Scrapy: the home page may be fetched twice, as by Scrapy
        default = run_crawl(web).counts["resources"]
        for run in ("cold", "warm"):
            result = run_crawl(web, settings=settings)
            assert result.returncode == 0, result.log[-3000:]
            assert result.stat("log_count/ERROR") == 0, result.log[-3000:]
            missed = web.resource_ids() - result.resource_ids
            assert missed == set(), (run, sorted(missed))
            twice = {rid: n for rid, n in result.counts["resources"].items() if n > max(1, default.get(rid, 1))}
            assert twice == {}, run
            if run == "cold":
                assert result.stat("iri/learned/rule") >= 1
