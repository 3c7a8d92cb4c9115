"""scrapy-iri as a new user meets it: a wheel, a fresh venv without extras, ``scrapy startproject``.

One venv per test session (:mod:`userenv`; pip's cache keeps the install
short): the wheel built from this checkout, installed with its dependencies
only. The project gets the README's one line (``ADDONS``) and the spiders of
``user_spiders.py``, written the way Scrapy's tutorial writes them; among
them one with ``response.follow(link)``, one a ``CrawlSpider`` with
``Rule(IRILinkExtractor())``. Each is crawled with
``scrapy crawl`` against ``python -m http.server`` (its 301s to the slash
form of directories) and against the simulated web. Every crawl: every
resource fetched exactly once (``/e?`` and ``/e`` both), no ERROR logged,
no traceback.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapy_iri import canonicalize
from hostile_site import TRUTH
from simweb import SimulatedWeb, demo_sites
from userenv import clean_env, run


def test_install_has_no_extras_and_the_core_does_not_import_scrapy(user_env):
    check = "import sys, scrapy_iri; scrapy_iri.canonicalize('http://a/'); print('scrapy' in sys.modules)"
    process = run([user_env.bin("python"), "-c", check], env=clean_env())
    assert process.stdout.strip() == "False", process.stderr
    listed = run([user_env.bin("pip"), "list", "--format=freeze"], env=clean_env()).stdout.lower()
    assert "publicsuffixlist==" in listed and "scrapy==" in listed
    assert "redis==" not in listed  # an extra, not installed


# -- python -m http.server


INDEX = """<html><body>
<a href="sub">a directory, no slash (301)</a>
<a href="e.html?">empty query</a> <a href="e.html">no query</a>
<a href="?">this page, empty query</a> <a href="#">this page</a> <a href="index.html#top">index</a>
<a href="HTTP://127.0.0.1:{port}/upper.html">upper-case scheme</a>
<a href="http://127.0.0.1:{port}/%75pper.html">the same, escaped</a>
<a href="./a/../page2.html">dot segments</a> <a href="  page3.html ">spaces</a>
</body></html>"""
SUB = """<html><body><a href="../index.html">up</a> <a href="x.html">x</a> <a href="deep">deep (301)</a>
<a href="deep/">deep</a> <a href="x.html?">x?</a> <a href="/sub/">self</a></body></html>"""
LEAF = "<html><body><a href='/'>home</a></body></html>"

#: request target as http.server logs it -> times served (robots.txt aside): each resource once, except
#: that start requests are ``dont_filter`` in Scrapy, so "/" linked from itself is fetched again.
#: ``/e.html?`` goes out as ``/e.html?`` (the add-on's download handler keeps the empty query).
HTTP_SERVER_TRUTH = {
    "/": 2, "/?": 1, "/e.html": 1, "/e.html?": 1, "/index.html": 1, "/index.html?": 1, "/sub/x.html": 1,
    "/sub/x.html?": 1, "/sub": 1, "/sub/": 1, "/upper.html": 1, "/page2.html": 1, "/page3.html": 1,
    "/sub/deep": 1, "/sub/deep/": 1,
}
#: what the spider's callbacks received, without fragments: each resource once (the start URL twice, as above)
PARSED_TRUTH = {
    "/": 2, "/?": 1, "/e.html": 1, "/e.html?": 1, "/index.html": 1, "/index.html?": 1, "/sub/": 1,
    "/sub/x.html": 1, "/sub/x.html?": 1, "/sub/deep/": 1, "/upper.html": 1, "/page2.html": 1, "/page3.html": 1,
}


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tree = tmp_path_factory.mktemp("site")
    log = tree.parent / f"{tree.name}.log"
    with log.open("w") as err:
        server = subprocess.Popen(
            [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", str(tree)],
            stdout=subprocess.PIPE, stderr=err, text=True,
        )
    try:
        line = server.stdout.readline()
        port = int(re.search(r"port (\d+)", line).group(1))
        for name, body in {
            "index.html": INDEX.format(port=port), "e.html": LEAF, "upper.html": LEAF, "page2.html": LEAF,
            "page3.html": LEAF, "sub/index.html": SUB, "sub/x.html": LEAF, "sub/deep/index.html": LEAF,
        }.items():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_text(body, encoding="utf-8")
        yield f"http://127.0.0.1:{port}/", log
    finally:
        server.terminate()
        server.wait(10)


def _served(log: Path, since: int) -> Counter:
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()[since:]
    return Counter(m.group(1) for line in lines if (m := re.search(r'"GET (\S+) HTTP/1\.[01]"', line)))


@pytest.mark.parametrize("spider", ["follow", "rules"])
def test_crawl_of_python_http_server(user_env, http_server, spider, tmp_path):
    start, log = http_server
    since = len(log.read_text(encoding="utf-8").splitlines())
    process, result = user_env.crawl(spider, start, tmp_path)
    assert process.returncode == 0, process.stderr[-3000:]
    time.sleep(0.2)
    served = _served(log, since)
    served.pop("/robots.txt", None)
    assert dict(served) == HTTP_SERVER_TRUTH, process.stderr[-3000:]
    origin = start.rstrip("/")
    parsed = Counter(url.partition("#")[0].removeprefix(origin) for url in result["parsed"])
    assert dict(parsed) == PARSED_TRUTH
    assert result["stats"].get("log_count/ERROR", 0) == 0, process.stderr[-3000:]
    assert "Traceback" not in process.stderr
    assert result["stats"].get("iri/links/verbatim", 0) >= 4  # /e.html?, /?, /index.html?, /sub/x.html?
    store = user_env.project / ".scrapy" / "iri" / f"{spider}.sqlite"
    assert store.exists()


# -- the simulated web


@pytest.fixture(scope="module")
def web() -> Iterator[SimulatedWeb]:
    with SimulatedWeb(demo_sites()) as simulated:
        yield simulated


@pytest.mark.parametrize("spider", ["follow", "rules"])
def test_crawl_of_the_simulated_web(user_env, web, spider, tmp_path):
    web.reset_counts()
    process, result = user_env.crawl(
        spider, " ".join(web.start_urls()), tmp_path, env=web.proxy_env(), IRI_STORE="memory:", ROBOTSTXT_OBEY="False"
    )
    assert process.returncode == 0, process.stderr[-3000:]
    fetches = web.fetch_counts()
    assert web.resource_ids() - set(fetches) == set(), process.stderr[-3000:]
    assert "news:p-empty-query" in fetches  # /p? through response.follow / a CrawlSpider rule
    # a resource served under several aliases is fetched once per alias the web never announced
    # (a missed merge costs one fetch); one URL, up to the scheme rung, is fetched once
    forms: Counter = Counter()
    for url, count in web.url_counts().items():
        forms[canonicalize(url, "scheme", keep_fragment=False)] += count
    starts = {canonicalize(url, "scheme") for url in web.start_urls()}  # dont_filter: linked back, fetched again
    assert {form: n for form, n in forms.items() if n > (2 if form in starts else 1)} == {}, process.stderr[-3000:]
    assert result["stats"].get("log_count/ERROR", 0) == 0, process.stderr[-3000:]
    assert "Traceback" not in process.stderr


def test_a_missing_backend_stops_the_crawl_at_start_with_one_error(user_env, tmp_path):
    process, result = user_env.crawl("follow", "http://127.0.0.1:9/", tmp_path, IRI_STORE="redis://127.0.0.1:9/0")
    assert process.returncode != 0
    last = process.stderr.strip().splitlines()[-1]
    assert last.startswith("scrapy_iri.errors.IRISettingsError: IRI_STORE") and "pip install 'scrapy-iri[redis]'" in last
    assert process.stderr.count("IRISettingsError:") == 1  # one error, before the crawl, not one per response
    assert result == {}  # the spider never ran


# -- a hostile site, with the spiders users write from Scrapy's tutorial


@pytest.fixture(scope="module")
def hostile_site() -> Iterator[str]:
    server = subprocess.Popen(
        [sys.executable, "-u", str(Path(__file__).with_name("hostile_site.py"))], stdout=subprocess.PIPE, text=True
    )
    try:
        yield f"http://127.0.0.1:{int(server.stdout.readline())}"
    finally:
        server.terminate()
        server.wait(10)


def _hostile_counts(origin: str, reset: bool = False) -> Counter:
    from urllib.request import urlopen

    with urlopen(f"{origin}/__reset" if reset else f"{origin}/__counts", timeout=30) as answer:
        data = [] if reset else json.loads(answer.read())
    return Counter({(m, p, b): n for m, p, b, n in data if p != "/robots.txt"})


def _fast(concurrency: int) -> dict[str, str]:
    return {"DOWNLOAD_DELAY": "0", "CONCURRENT_REQUESTS": str(concurrency), "CONCURRENT_REQUESTS_PER_DOMAIN": str(concurrency)}


@pytest.mark.parametrize(
    ("spider", "concurrency", "rung"),
    [("href", 1, None), ("href", 16, None), ("scrapyrules", 16, None), *[("href", 16, r) for r in ("string", "syntax", "scheme")]],
)
def test_crawl_of_a_hostile_site(user_env, hostile_site, spider, concurrency, rung, tmp_path):
    _hostile_counts(hostile_site, reset=True)
    # startproject's settings.py asks for 1 request per second per domain: the test asks for speed
    rung_setting = {"IRI_RUNG": rung} if rung else {}  # None: the add-on's default, the protocol rung
    process, result = user_env.crawl(
        spider, hostile_site + "/", tmp_path, allowed="127.0.0.1", **_fast(concurrency), **rung_setting
    )
    assert process.returncode == 0, process.stderr[-3000:]
    counts = _hostile_counts(hostile_site)
    if rung == "string":  # /%61.html is another string than /a.html
        counts[("GET", "/%61.html", "")] -= 1
        counts = +counts
    assert {k: v for k, v in counts.items() if TRUTH.get(k) != v} == {}, process.stderr[-3000:]
    assert {k: v for k, v in TRUTH.items() if counts.get(k) != v} == {}, process.stderr[-3000:]
    assert result["stats"].get("log_count/ERROR", 0) == 0, process.stderr[-3000:]
    assert "Traceback" not in process.stderr


@pytest.mark.parametrize("spider", ["href", "scrapyrules"])
def test_a_crawl_stopped_with_ctrl_c_and_resumed_fetches_everything_once(user_env, hostile_site, spider, tmp_path):
    """JOBDIR: SIGINT after 6 pages, as a user stops a crawl, then ``scrapy crawl`` again resumes it."""
    _hostile_counts(hostile_site, reset=True)
    job = str(tmp_path / "job")
    first, _ = user_env.crawl(spider, hostile_site + "/", tmp_path, JOBDIR=job, stop_after="6", allowed="127.0.0.1", **_fast(2))
    assert first.returncode == 0 and "(shutdown)" in first.stderr, first.stderr[-3000:]
    stopped = _hostile_counts(hostile_site)
    assert 6 <= sum(stopped.values()) < sum(TRUTH.values())
    second, result = user_env.crawl(spider, hostile_site + "/", tmp_path, JOBDIR=job, allowed="127.0.0.1", **_fast(2))
    assert second.returncode == 0 and "Resuming crawl" in second.stderr, second.stderr[-3000:]
    counts = _hostile_counts(hostile_site)
    truth = TRUTH | {("GET", "/", ""): 3}  # a resumed job yields its start requests again (dont_filter)
    assert {k: v for k, v in counts.items() if truth.get(k) != v} == {}, second.stderr[-3000:]
    assert {k: v for k, v in truth.items() if counts.get(k) != v} == {}, second.stderr[-3000:]
    assert result["stats"].get("log_count/ERROR", 0) == 0, second.stderr[-3000:]


def test_a_recrawl_after_the_site_removed_its_redirects_loses_nothing(user_env, hostile_site, tmp_path):
    """The same store, a changed site: every former redirect is a page now, and each is fetched."""
    store = f"sqlite:///{tmp_path / 'store.sqlite'}"
    _hostile_counts(hostile_site, reset=True)
    first, _ = user_env.crawl("scrapyrules", hostile_site + "/", tmp_path, IRI_STORE=store, allowed="127.0.0.1", **_fast(4))
    assert first.returncode == 0, first.stderr[-3000:]
    from urllib.request import urlopen

    _hostile_counts(hostile_site, reset=True)
    urlopen(f"{hostile_site}/__pages", timeout=30).close()
    second, result = user_env.crawl("scrapyrules", hostile_site + "/", tmp_path, IRI_STORE=store, allowed="127.0.0.1", **_fast(4))
    assert second.returncode == 0, second.stderr[-3000:]
    counts = _hostile_counts(hostile_site)
    former = ["rel", "space", "nonascii", "schemerel", "missing", "self", "loopa", "alt", "302", "307", "308"]
    assert {f"/r/{name}": counts.get(("GET", f"/r/{name}", "")) for name in former} == {f"/r/{name}": 1 for name in former}
    assert {k: v for k, v in counts.items() if v > TRUTH.get(k, 1)} == {}
    assert result["stats"].get("iri/alias/ended", 0) >= 7  # 301 and 308 aliases learned in the first crawl, ended
    assert result["stats"].get("log_count/ERROR", 0) == 0, second.stderr[-3000:]


def test_requests_that_handle_redirects_get_them_after_the_store_learned_the_alias(user_env, hostile_site, tmp_path):
    """``dont_redirect``, ``handle_httpstatus_list``, ``handle_httpstatus_all``: never rewritten to the alias's target."""
    store = f"sqlite:///{tmp_path / 'store.sqlite'}"
    _hostile_counts(hostile_site, reset=True)
    first, _ = user_env.crawl("scrapyrules", hostile_site + "/", tmp_path, IRI_STORE=store, allowed="127.0.0.1", **_fast(4))
    assert first.returncode == 0, first.stderr[-3000:]
    _hostile_counts(hostile_site, reset=True)
    starts = " ".join(f"{hostile_site}/r/{name}" for name in ("rel", "308", "schemerel"))
    second, result = user_env.crawl("redirects", starts, tmp_path, IRI_STORE=store, **_fast(4))
    assert second.returncode == 0, second.stderr[-3000:]
    counts = _hostile_counts(hostile_site)
    for name, status in (("rel", 301), ("308", 308), ("schemerel", 301)):
        assert counts[("GET", f"/r/{name}", "")] == 3, (name, dict(counts))
        assert result["parsed"].count(f"{status} {hostile_site}/r/{name}") == 3, result["parsed"]
    assert result["stats"].get("iri/rewritten", 0) == 0
    assert result["stats"].get("log_count/ERROR", 0) == 0, second.stderr[-3000:]
