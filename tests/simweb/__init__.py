"""A simulated web for tests, benchmarks and the demo.

Many virtual hosts (IDN ones too) behind one HTTP proxy on 127.0.0.1:
Scrapy crawls them through ``http_proxy``/``https_proxy`` and the simulator
answers every request itself (``CONNECT`` tunnels included, with a
self-signed certificate). Sites are declarative data: resources with stable
ids and links written in many forms, plus redirect policies that behave like
real servers. Fetches are counted per resource, per URL and per policy.

This package is independent of the rest of scrapy_iri on purpose: it is the
oracle the library is measured against. It needs ``idna`` and
``cryptography``; running crawls needs Scrapy.
"""

from __future__ import annotations

from .client import remote_counts, remote_reset, remote_resources
from .model import Resource, Site
from .pages import RESOURCE_ID_META
from .policies import (
    CaseRedirect,
    Chain,
    CookieRedirect,
    HttpsRedirect,
    IndexRedirect,
    Moves,
    NotFoundRedirect,
    OpenRedirector,
    Policy,
    Redirect,
    SeeOther,
    Sink,
    SlashRedirect,
    Temporaries,
    WwwRedirect,
)
from .router import Router, SimRequest, SimResponse
from .sites import demo_sites, protocol_sites
from .web import CONTROL_HOST, SimulatedWeb

__all__ = [
    "CONTROL_HOST",
    "RESOURCE_ID_META",
    "CaseRedirect",
    "Chain",
    "CookieRedirect",
    "HttpsRedirect",
    "IndexRedirect",
    "Moves",
    "NotFoundRedirect",
    "OpenRedirector",
    "Policy",
    "Redirect",
    "Resource",
    "Router",
    "SeeOther",
    "SimRequest",
    "SimResponse",
    "SimulatedWeb",
    "Sink",
    "Site",
    "SlashRedirect",
    "Temporaries",
    "WwwRedirect",
    "demo_sites",
    "protocol_sites",
    "remote_counts",
    "remote_reset",
    "remote_resources",
]
