"""Scrapy's and scrapy-redis's own tests, run with scrapy-iri's drop-ins in their classes' place.

The tests come from the sources of exactly the installed versions (tests
are not in the wheels): ``pip download --no-binary :all: --no-deps`` into a
cache directory (``SCRAPY_IRI_PEER_CACHE``, default
``~/.cache/scrapy-iri/peers``), once. Each peer's modules run twice in a
subprocess of pytest from the peer's source tree: with its own classes (the
baseline: what fails there fails for reasons of this environment, not
ours) and with the drop-ins (``-p iri_swap``, see ``peers/iri_swap.py``).
Any failure with the drop-ins that is neither a baseline failure nor a
deliberate difference (``peers/deliberate.py``, with the reasons) fails
the test.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import warnings
from importlib.metadata import version
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "peers"))
from deliberate import SCRAPY, SCRAPY_REDIS  # noqa: E402

#: the peers' test modules: link extractors, CrawlSpider, dupefilters, the scheduler, fingerprints, redirects
SCRAPY_MODULES = [
    "tests/test_linkextractors.py",
    "tests/test_spider_crawl.py",
    "tests/test_dupefilters.py",
    "tests/test_scheduler.py",
    "tests/test_utils_request.py",
    "tests/test_downloadermiddleware_redirect.py",
]
SCRAPY_REDIS_MODULES = ["tests/test_dupefilter.py", "tests/test_scrapy_redis.py"]
SUMMARY = re.compile(r"^(FAILED|ERROR) (\S+)", re.M)
PASSED = re.compile(r"(\d+) passed")


def _cache() -> Path:
    return Path(os.environ.get("SCRAPY_IRI_PEER_CACHE") or Path.home() / ".cache" / "scrapy-iri" / "peers")


def peer_source(distribution: str) -> Path:
    """The source tree of the installed version of ``distribution`` (downloaded and unpacked once)."""
    installed = version(distribution)
    cache = _cache()
    tree = cache / f"{distribution}-{installed}"
    if (tree / "tests").is_dir():
        return tree
    downloads = cache / "sdist"
    downloads.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:", "--no-deps",
               "--dest", str(downloads), f"{distribution}=={installed}"]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"cannot download the sources of {distribution} {installed}: {result.stderr[-2000:]}"
    stem = re.sub(r"[-_.]+", "[-_.]", distribution)
    archive = next(p for p in downloads.iterdir() if re.fullmatch(rf"(?i){stem}-{re.escape(installed)}\.tar\.gz", p.name))
    unpacked = cache / "unpacking"
    shutil.rmtree(unpacked, ignore_errors=True)  # what an interrupted run left
    shutil.rmtree(tree, ignore_errors=True)
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    (unpacked / archive.name.removesuffix(".tar.gz")).rename(tree)
    return tree


def run_suite(tree: Path, modules: list[str], swap: bool, env: dict[str, str] | None = None) -> tuple[set[str], int, str]:
    """``(failed node ids, passed count, output)`` of the peer's modules, with its own classes or the drop-ins."""
    command = [sys.executable, "-m", "pytest", "-q", "-rfE", "--tb=line", "-p", "no:cacheprovider",
               "-p", "no:asyncio", "-p", "iri_swap", "-W", "ignore::DeprecationWarning", *modules]  # fmt: skip
    environment = {
        **os.environ,
        **(env or {}),
        "IRI_SWAP": "all" if swap else "none",
        "PYTHONPATH": os.pathsep.join(p for p in (str(HERE / "peers"), os.environ.get("PYTHONPATH", "")) if p),
    }
    result = subprocess.run(command, cwd=tree, env=environment, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode in (0, 1), f"pytest could not run the peer's tests ({result.returncode}): {output[-3000:]}"
    passed = PASSED.search(output)
    return {m.group(2) for m in SUMMARY.finditer(output)}, int(passed.group(1)) if passed else 0, output


def judge(tree: Path, modules: list[str], deliberate: dict[str, str], least: int, env: dict[str, str] | None = None) -> None:
    own_failures, own_passed, _ = run_suite(tree, modules, swap=False, env=env)
    failures, passed, output = run_suite(tree, modules, swap=True, env=env)
    assert own_passed + len(own_failures) >= least, "the peer's tests were not collected"
    unexpected = failures - own_failures - set(deliberate)
    assert not unexpected, f"failing with scrapy-iri's drop-ins: {sorted(unexpected)}\n{output[-4000:]}"
    for node in sorted(set(deliberate) - failures):
        warnings.warn(f"{node} passes now: remove it from tests/scrapy/peers/deliberate.py", stacklevel=1)
    if own_failures:
        warnings.warn(f"failing with the peer's own classes here (not judged): {sorted(own_failures)}", stacklevel=1)


def test_scrapys_own_tests_pass_with_the_drop_ins() -> None:
    judge(peer_source("scrapy"), SCRAPY_MODULES, SCRAPY, least=200)


def test_scrapy_redis_own_tests_pass_with_the_drop_ins(redis_server) -> None:
    env = {"REDIS_HOST": "127.0.0.1", "REDIS_PORT": str(redis_server.port)}
    judge(peer_source("scrapy-redis"), SCRAPY_REDIS_MODULES, SCRAPY_REDIS, least=20, env=env)
