"""A crawl that gives up says so: ``scrapy crawl`` and ``scrapy runspider`` exit non-zero.

Real processes of the ``scrapy`` command against the simulated web, with a
real redis-server as the store that is killed mid-crawl and never comes
back (``IRI_REDIS_RETRY_TIMEOUT`` is short). The log says why, how many
requests were left and how to resume; the store's pending writes are kept
(in JOBDIR, else in the project's data directory) and read back by the
next run.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fixtures.redis_helpers import HOSTS

SPIDER = textwrap.dedent(
    """
    import scrapy

    from scrapy_iri import IRILinkExtractor


    class SlowSpider(scrapy.Spider):
        name = "slow"
        custom_settings = {
            "ADDONS": {"scrapy_iri.Addon": 0},
            "DOWNLOAD_DELAY": 0.1,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
            "TELNETCONSOLE_ENABLED": False,
            "LOG_LEVEL": "INFO",
            "IRI_REDIS_RETRY_TIMEOUT": 1.0,
        }

        def __init__(self, start="", **kwargs):
            super().__init__(**kwargs)
            self.start_urls = start.split()

        def parse(self, response):
            for link in IRILinkExtractor().extract_links(response):
                yield response.follow(link, callback=self.parse)
    """
)


def _scrapy(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    log = (cwd / "crawl.log").open("wb")
    return subprocess.Popen([sys.executable, "-m", "scrapy", *args], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)


def _kill_redis_after(web, redis_server, process: subprocess.Popen[bytes], fetches: int) -> None:
    deadline = time.monotonic() + 60
    while sum(web.fetch_counts().values()) < fetches:
        assert process.poll() is None, "the crawl ended before Redis was lost"
        assert time.monotonic() < deadline, f"the crawl did not reach {fetches} fetches"
        time.sleep(0.02)
    redis_server.kill()


def _finish(process: subprocess.Popen[bytes], cwd: Path) -> tuple[int, str]:
    try:
        code = process.wait(timeout=90)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return code, (cwd / "crawl.log").read_text(encoding="utf-8", errors="replace")


def _assert_gave_up(code: int, log: str) -> None:
    assert code == 1, log[-3000:]
    assert "Spider closed (iri_redis_unavailable)" in log
    assert "scrapy-iri gives up (iri_redis_unavailable)" in log
    assert "requests were left unfetched" in log
    assert "'iri/gave_up': 'iri_redis_unavailable'" in log
    assert "Traceback" not in log
    assert "lost (what this process learned" not in log  # the store's pending writes are kept


@pytest.mark.parametrize("jobdir", [False, True], ids=["no-jobdir", "jobdir"])
def test_scrapy_runspider_exits_non_zero_when_the_crawl_gives_up(shared_web, redis_server, tmp_path, jobdir):
    from simweb.crawl import subprocess_env

    shared_web.reset_counts()
    (tmp_path / "slow.py").write_text(SPIDER, encoding="utf-8")
    args = ["runspider", "slow.py", "-a", f"start=http://{HOSTS[0]}/ http://{HOSTS[1]}/", "-s", f"IRI_STORE={redis_server.url}"]
    if jobdir:
        args += ["-s", f"JOBDIR={tmp_path / 'job'}"]
    process = _scrapy(args, tmp_path, subprocess_env(shared_web))
    _kill_redis_after(shared_web, redis_server, process, 15)
    code, log = _finish(process, tmp_path)
    _assert_gave_up(code, log)
    if jobdir:
        assert f"run the job again with JOBDIR={tmp_path / 'job'} to resume them" in log
        assert (tmp_path / "job" / "requests.seen").exists()
    else:
        assert "set JOBDIR" in log


def test_scrapy_crawl_exits_non_zero_when_the_crawl_gives_up(shared_web, redis_server, tmp_path):
    from simweb.crawl import subprocess_env

    shared_web.reset_counts()
    env = subprocess_env(shared_web)
    subprocess.run([sys.executable, "-m", "scrapy", "startproject", "proj"], cwd=tmp_path, env=env, check=True, capture_output=True)
    project = tmp_path / "proj"
    (project / "proj" / "spiders" / "slow.py").write_text(SPIDER, encoding="utf-8")
    args = ["crawl", "slow", "-a", f"start=http://{HOSTS[2]}/ http://{HOSTS[0]}/", "-s", f"IRI_STORE={redis_server.url}"]
    process = _scrapy(args, project, env)
    _kill_redis_after(shared_web, redis_server, process, 15)
    code, log = _finish(process, project)
    _assert_gave_up(code, log)
    assert "set JOBDIR" in log


def test_a_crawl_that_finishes_exits_zero(shared_web, redis_server, tmp_path):
    from simweb.crawl import subprocess_env

    shared_web.reset_counts()
    (tmp_path / "slow.py").write_text(SPIDER.replace('"DOWNLOAD_DELAY": 0.1', '"DOWNLOAD_DELAY": 0'), encoding="utf-8")
    args = ["runspider", "slow.py", "-a", f"start=http://{HOSTS[1]}/", "-s", f"IRI_STORE={redis_server.url}"]
    code, log = _finish(_scrapy(args, tmp_path, subprocess_env(shared_web)), tmp_path)
    assert code == 0, log[-3000:]
    assert "Spider closed (finished)" in log and "gives up" not in log


def test_a_store_refused_at_open_ends_the_crawl_with_the_error_counted(shared_web, tmp_path):
    """A SQLite store file replaced by an older copy is refused when the crawl opens it, before Scrapy counts log
    lines: the crawl gives up once the spider is open, so ``log_count/ERROR`` counts the refusal, which names the
    risk, and nothing is fetched."""
    from simweb.crawl import subprocess_env
    from store.test_sqlite_rollback import restore, write

    path = tmp_path / "crawl" / "store.sqlite"
    write(path, "learn")
    shutil.copyfile(path, tmp_path / "backup.sqlite")
    write(path, "end")
    restore(tmp_path / "backup.sqlite", path)
    shared_web.reset_counts()
    (tmp_path / "slow.py").write_text(SPIDER, encoding="utf-8")
    args = ["runspider", "slow.py", "-a", f"start=http://{HOSTS[1]}/", "-s", f"IRI_STORE=sqlite:///{path}"]
    code, log = _finish(_scrapy(args, tmp_path, subprocess_env(shared_web)), tmp_path)
    assert code == 1, log[-3000:]
    assert "'log_count/ERROR': 1" in log, log[-3000:]
    assert "scrapy-iri gives up (store_refused)" in log and "Spider closed (store_refused)" in log
    assert "went back to an older state" in log and "would merge pages that differ" in log
    assert "Traceback" not in log and "CRITICAL" not in log
    assert sum(shared_web.fetch_counts().values()) == 0
