"""The four crawls a rung benchmark compares: Scrapy's defaults, the scheme rung, the protocol rung cold and warm.

Shared by ``docs_bench.py`` (a simulated server) and ``realserver_bench.py``
(nginx): the settings of each crawl, the round trips saved and the CPU
against Scrapy's defaults, and the table printed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ADDON = {"ADDONS": {"scrapy_iri.Addon": 0}}
CRAWLS = ("scrapy", "scheme", "cold", "warm")


def crawl_settings(base: dict[str, Any], store: dict[str, Any], extra: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each crawl's settings: ``base`` for all, the add-on for three, the ``store`` shared by cold and warm."""
    return {
        "scrapy": base,
        "scheme": {**base, **ADDON, **extra, "IRI_RUNG": "scheme"},
        "cold": {**base, **ADDON, **store, **extra},
        "warm": {**base, **ADDON, **store, **extra},
    }


def compare(out: dict[str, Any]) -> dict[str, float]:
    """Add each rung crawl's round trips saved and CPU over Scrapy's; return protocol CPU / scheme CPU, cold and warm."""
    scrapy = out["scrapy"]
    for name in CRAWLS[1:]:
        out[name]["saved"] = 1 - out[name]["redirects"] / max(1, scrapy["redirects"])
        out[name]["cpu_over_scrapy"] = out[name]["cpu_seconds"] / scrapy["cpu_seconds"] - 1
    return {name: out[name]["cpu_seconds"] / out["scheme"]["cpu_seconds"] for name in ("cold", "warm")}


def print_crawls(run: dict[str, Any], rows: list[tuple[str, Callable[[dict[str, Any]], Any]]]) -> None:
    """One column per crawl, one line per row (``rows``: label, the cell of a crawl's figures)."""
    print(f"{'':36}" + "".join(f"{n:>10}" for n in CRAWLS))
    for label, cell in rows:
        print(f"{label:36}" + "".join(f"{cell(run[n])!s:>10}" for n in CRAWLS))


def saved(c: dict[str, Any]) -> str:
    return f"{c['saved']:.1%}" if "saved" in c else ""


def over_scrapy(c: dict[str, Any]) -> str:
    return f"{c['cpu_over_scrapy']:+.1%}" if "cpu_over_scrapy" in c else ""
