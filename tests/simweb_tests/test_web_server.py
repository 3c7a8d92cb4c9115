"""The loopback proxy: absolute-form HTTP, CONNECT + TLS, counting, control endpoint."""

from __future__ import annotations

import json
import socket
import ssl
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from simweb import (
    SimulatedWeb,
    Site,
    demo_sites,
    remote_counts,
    remote_reset,
    remote_resources,
)


def resource_id(body: bytes) -> str | None:
    marker = b'<meta name="resource-id" content="'
    start = body.find(marker)
    if start < 0:
        return None
    start += len(marker)
    return body[start : body.index(b'"', start)].decode("utf-8")


def opener(web: SimulatedWeb, context: ssl.SSLContext) -> urllib.request.OpenerDirector:
    proxies = {"http": web.proxy_url, "https": web.proxy_url}
    return urllib.request.build_opener(
        urllib.request.ProxyHandler(proxies), urllib.request.HTTPSHandler(context=context)
    )


def raw_exchange(web: SimulatedWeb, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", web.port), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_http_through_the_proxy(demo_web: SimulatedWeb, fetch: Any) -> None:
    demo_web.reset_counts()
    answer = fetch(demo_web, "http://xn--bcher-kva.example/%7Eantiquariat/")
    assert answer.status == 200
    assert resource_id(answer.body) == "buecher:antiquariat"
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    assert demo_web.fetches("buecher:antiquariat") == 1
    assert demo_web.url_counts() == {"http://xn--bcher-kva.example/%7Eantiquariat/": 1}


def test_https_through_a_connect_tunnel(demo_web: SimulatedWeb, fetch: Any) -> None:
    demo_web.reset_counts()
    answer = fetch(demo_web, "https://news.example/edition")
    assert (answer.status, resource_id(answer.body)) == (200, "news:edition-https")
    assert fetch(demo_web, "http://news.example/edition").body != answer.body
    assert demo_web.url_counts()["https://news.example/edition"] == 1


def test_urllib_verifies_the_certificate_and_follows_redirects(demo_web: SimulatedWeb) -> None:
    demo_web.reset_counts()
    context = ssl.create_default_context(cafile=demo_web.certificate_path)
    with opener(demo_web, context).open("http://shop.example/warenkorb/", timeout=10) as response:
        assert response.geturl() == "https://www.shop.example/warenkorb/"
        assert resource_id(response.read()) == "shop:cart"
    assert demo_web.redirect_counts() == {"www": 1, "https": 1}
    assert demo_web.redirects_served() == 2
    assert demo_web.status_counts() == {301: 2, 200: 1}


def test_idn_hosts_through_the_proxy(demo_web: SimulatedWeb, fetch: Any) -> None:
    eszett = fetch(demo_web, "https://xn--fa-hia.example/")
    double_s = fetch(demo_web, "https://fass.example/")
    assert resource_id(eszett.body) == "fass-eszett:home"
    assert resource_id(double_s.body) == "fass:home"


def test_unknown_hosts_are_refused_by_the_simulator(demo_web: SimulatedWeb, fetch: Any) -> None:
    answer = fetch(demo_web, "http://example.com/")
    assert answer.status == 502
    assert answer.headers["server"].startswith("simweb")
    with pytest.raises(OSError, match="502"):
        fetch(demo_web, "https://example.com/")
    with pytest.raises(OSError, match="502"):
        fetch(demo_web, "https://fass.example:8443/")


def test_keep_alive_on_plain_and_tunnelled_connections(demo_web: SimulatedWeb, insecure_tls: ssl.SSLContext) -> None:
    import http.client

    plain = http.client.HTTPConnection("127.0.0.1", demo_web.port, timeout=10)
    tunnel = http.client.HTTPSConnection("127.0.0.1", demo_web.port, timeout=10, context=insecure_tls)
    tunnel.set_tunnel("xn--bcher-kva.example", 443)
    try:
        for path in ("/", "/katalog/", "/autoren/"):
            plain.request("GET", f"http://xn--bcher-kva.example{path}")
            assert plain.getresponse().read()
            tunnel.request("GET", path)
            assert resource_id(tunnel.getresponse().read())
    finally:
        plain.close()
        tunnel.close()


def test_raw_bytes_and_virtual_host_mode(demo_web: SimulatedWeb) -> None:
    raw = raw_exchange(
        demo_web,
        "GET http://xn--bcher-kva.example/über-uns HTTP/1.1\r\nHost: xn--bcher-kva.example\r\n"
        "Connection: close\r\n\r\n".encode("utf-8"),
    )
    assert raw.startswith(b"HTTP/1.1 200") and resource_id(raw) == "buecher:about"
    raw = raw_exchange(demo_web, b"GET /archiv HTTP/1.1\r\nHost: www.news.example\r\nConnection: close\r\n\r\n")
    assert resource_id(raw) == "www-news:archive"
    raw = raw_exchange(demo_web, b"GET /archiv HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert raw.startswith(b"HTTP/1.1 400")


def test_head_and_post(demo_web: SimulatedWeb, fetch: Any) -> None:
    head = fetch(demo_web, "http://fass.example/", method="HEAD")
    assert head.status == 200 and head.body == b"" and int(head.headers["content-length"]) > 0
    post = fetch(demo_web, "http://fass.example/strasse", method="POST", body=b"a=1")
    assert post.status == 200


def test_control_endpoint(demo_web: SimulatedWeb, fetch: Any) -> None:
    remote_reset(demo_web.proxy_url)
    fetch(demo_web, "http://fass.example/")
    fetch(demo_web, "http://shop.example/")
    counts = remote_counts(demo_web.proxy_url)
    assert counts["resources"] == {"fass:home": 1}
    assert counts["redirects"] == {"www": 1}
    assert counts["redirect_urls"] == {"www": {"http://shop.example/": 1}}
    assert counts["requests"] == 2 and counts["redirects_served"] == 1
    assert counts["statuses"] == {"200": 1, "301": 1}
    info = remote_resources(demo_web.proxy_url)
    assert set(info["reachable"]) == demo_web.resource_ids()
    assert info["start_urls"] == demo_web.start_urls()
    assert "faß/fass" in info["traps"]
    assert demo_web.requests_served() == 2  # control requests are not counted
    remote_reset(demo_web.proxy_url)
    assert demo_web.requests_served() == 0


def test_parallel_requests(demo_web: SimulatedWeb, fetch: Any) -> None:
    demo_web.reset_counts()
    urls = [demo_web.url_of(rid) for rid in sorted(demo_web.resource_ids())]
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda url: fetch(demo_web, url), urls))
    assert all(answer.status == 200 for answer in answers)
    assert demo_web.fetch_counts() == dict.fromkeys(demo_web.resource_ids(), 1)


def test_start_and_stop_cleanly() -> None:
    site = Site("one.example")
    site.page("one:home", "/")
    before = {t.name for t in threading.enumerate()}
    web = SimulatedWeb([site], max_connections=4, idle_timeout=30)
    with web:
        port = web.port
        idle = socket.create_connection(("127.0.0.1", port), timeout=5)  # an idle keep-alive client
        with urllib.request.build_opener(
            urllib.request.ProxyHandler({"http": web.proxy_url})
        ).open("http://one.example/", timeout=5) as response:
            assert json.dumps(response.status) == "200"
    idle.close()
    leftover = {t.name for t in threading.enumerate() if t.name.startswith("simweb")} - before
    assert not leftover
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_proxy_env_and_addresses(demo_web: SimulatedWeb) -> None:
    env = demo_web.proxy_env()
    assert env["http_proxy"] == env["https_proxy"] == demo_web.proxy_url
    assert demo_web.proxy_url == f"http://127.0.0.1:{demo_web.port}"
    assert env["no_proxy"] == ""
    assert SimulatedWeb(demo_sites()).start_urls() == demo_web.start_urls()


def test_not_running_has_no_port() -> None:
    with pytest.raises(RuntimeError):
        _ = SimulatedWeb(demo_sites()).proxy_url


def test_urllib_http_error_for_missing_page(demo_web: SimulatedWeb) -> None:
    with pytest.raises(urllib.error.HTTPError) as caught:
        opener(demo_web, ssl.create_default_context()).open("http://news.example/missing", timeout=10)
    assert caught.value.code == 404
