"""Fixtures: running simulated webs and a client that talks through the proxy."""

from __future__ import annotations

import http.client
import ssl
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pytest

from scrapy_iri.testing import SimulatedWeb, demo_sites, protocol_sites


@pytest.fixture(scope="session")
def demo_web() -> Iterator[SimulatedWeb]:
    with SimulatedWeb(demo_sites()) as web:
        yield web


@pytest.fixture(scope="session")
def protocol_web() -> Iterator[SimulatedWeb]:
    with SimulatedWeb(protocol_sites()) as web:
        yield web


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


def unverified_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def via_proxy(
    web: SimulatedWeb,
    url: str,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
) -> Answer:
    """One request through the proxy: absolute-form for http, CONNECT for https."""
    scheme, _, rest = url.partition("://")
    authority, slash, target = rest.partition("/")
    if scheme == "https":
        connection: http.client.HTTPConnection = http.client.HTTPSConnection(
            "127.0.0.1", web.port, timeout=10, context=unverified_context()
        )
        host, _, port = authority.partition(":")
        connection.set_tunnel(host, int(port or 443))
        request_target = slash + target
    else:
        connection = http.client.HTTPConnection("127.0.0.1", web.port, timeout=10)
        request_target = url
    try:
        connection.request(method, request_target, body=body, headers=dict(headers or {}))
        response = connection.getresponse()
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    finally:
        connection.close()


@pytest.fixture(scope="session")
def fetch() -> object:
    """``fetch(web, url, method="GET", headers=None, body=None) -> Answer``."""
    return via_proxy


@pytest.fixture(scope="session")
def insecure_tls() -> ssl.SSLContext:
    return unverified_context()
