"""docs/reference.md names every setting the code reads and every stats key it writes."""

from __future__ import annotations

import re
from pathlib import Path

from scrapy_iri.scrapy._redis_config import SETTINGS as REDIS_SETTINGS
from scrapy_iri.scrapy._settings import DEFAULTS
from scrapy_iri.store import open_store

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
SOURCES = [p.read_text(encoding="utf-8") for p in (ROOT / "scrapy_iri").rglob("*.py")]
STAT_CALL = re.compile(r"\.(?:inc_value|set_value|max_value)\(\s*f?\"([^\"]+)\"")
STAT_CONSTANT = re.compile(r"^[A-Z_]*STAT = \"([^\"]+)\"", re.M)
STORE_COUNTER = re.compile(r"_tally\(\"([a-z_]+)\"")


def documented(key: str) -> bool:
    return f"`{key}`" in REFERENCE


def test_every_setting_is_in_the_reference():
    missing = [name for name in [*DEFAULTS, *REDIS_SETTINGS] if not documented(name)]
    assert missing == []


def test_every_stats_key_is_in_the_reference():
    keys = set()
    for source in SOURCES:
        keys.update(STAT_CALL.findall(source))
        keys.update(STAT_CONSTANT.findall(source))
        keys.update(f"iri/redis/store/{name}" for name in STORE_COUNTER.findall(source))
    expanded = set()
    for key in keys:
        if "{name}" in key and key.startswith("iri/filtered/"):
            expanded.update(f"iri/filtered/{rung}" for rung in ("string", "syntax", "scheme", "protocol"))
        elif "{" not in key:
            expanded.add(key)
    assert len(expanded) > 25
    assert sorted(key for key in expanded if not documented(key)) == []


def test_every_store_statistic_is_in_the_reference():
    with open_store("memory:") as store:
        names = list(store.stats())
    assert sorted(name for name in names if not documented(name)) == []
