"""The real-server benchmark's site: Debian's nginx serving Debian's Python docs with stock conventions.

``benchmarks/realserver_bench.py`` crawls it; here each convention is
checked hop by hop through the benchmark's loopback proxy, as Scrapy reaches
it: every alias form ends, by permanent redirects only, at the URL of the
file, and a path that is no file stays a 404 (nothing is invented).
"""

from __future__ import annotations

import http.client
import importlib.util
import shutil
import ssl
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "realserver_bench.py"

pytestmark = [
    pytest.mark.skipif(
        shutil.which("nginx") is None and shutil.which("nginx", path="/usr/sbin") is None,
        reason="needs Debian's nginx (scripts/test.sh installs it)",
    ),
    pytest.mark.skipif(
        not Path("/usr/share/doc/python3-doc/html/library/os.html").is_file(),
        reason="needs Debian's python3-doc (scripts/test.sh installs it)",
    ),
]


@pytest.fixture(scope="module")
def bench() -> Any:
    spec = importlib.util.spec_from_file_location("realserver_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["realserver_bench"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(bench: Any) -> Iterator[Any]:
    with bench.running_site() as running:
        yield running


def fetch(site: Any, url: str) -> tuple[int, str | None]:
    """(status, Location) of one GET through the proxy, redirects not followed."""
    parts = urlsplit(url)
    proxy_port = site.proxy.server_address[1]
    if parts.scheme == "https":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # self-signed, as Scrapy accepts by default
        conn: http.client.HTTPConnection = http.client.HTTPSConnection("127.0.0.1", proxy_port, context=context, timeout=10)
        conn.set_tunnel(parts.hostname or "", 443)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
    else:
        conn = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=10)
        target = url
    try:
        conn.request("GET", target)
        response = conn.getresponse()
        response.read()
        return response.status, response.getheader("Location")
    finally:
        conn.close()


def chain(site: Any, url: str) -> tuple[list[int], str]:
    statuses = []
    for _ in range(8):
        status, location = fetch(site, url)
        statuses.append(status)
        if status not in (301, 302, 303, 307, 308):
            return statuses, url
        assert location is not None
        url = location
    raise AssertionError(f"a redirect chain longer than 8 from {url}")


@pytest.mark.parametrize(
    ("start", "hops", "end"),
    [
        ("https://docs.test/3/library/os.html", 0, "https://docs.test/3/library/os.html"),
        ("http://docs.test/3/library/os.html", 1, "https://docs.test/3/library/os.html"),  # http -> https
        ("https://www.docs.test/3/library/os.html", 1, "https://docs.test/3/library/os.html"),  # www -> apex
        ("https://docs.test/3/library", 1, "https://docs.test/3/library/"),  # nginx's directory slash
        ("https://docs.test/3/library/index.html", 1, "https://docs.test/3/library/"),  # index.html -> directory
        ("https://docs.test/3/Library/OS.html", 1, "https://docs.test/3/library/os.html"),  # case fix
        ("http://www.docs.test/3/Library/Index.html", 4, "https://docs.test/3/library/"),  # all stacked
    ],
)
def test_each_alias_form_ends_at_the_file_by_permanent_redirects(site: Any, start: str, hops: int, end: str) -> None:
    statuses, final = chain(site, start)
    assert final == end
    assert statuses == [301] * hops + [200]


def test_the_case_fix_never_invents_a_page(site: Any) -> None:
    assert chain(site, "https://docs.test/3/library/no-such-module.html") == ([404], "https://docs.test/3/library/no-such-module.html")
    # a case fix keeps what differs besides case: os.path is not os
    assert chain(site, "https://docs.test/3/Library/Os.Path.html")[1] == "https://docs.test/3/library/os.path.html"


def test_the_seed_page_links_alias_forms_of_served_files(site: Any) -> None:
    assert fetch(site, "http://links.test/")[0] == 200
    seeds = [u for u in site.starts if not u.startswith(("https://docs.test/3/", "https://docs.test/git/", "http://links.test/"))]
    assert seeds
    for url in seeds[:5]:
        statuses, final = chain(site, url)
        assert statuses[-1] == 200 and set(statuses[:-1]) <= {301}
        assert urlsplit(final).path in site.files
