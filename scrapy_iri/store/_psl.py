"""Registrable domains, from the Public Suffix List the ``publicsuffixlist`` package ships.

No network: the list is the one bundled with the installed package. Two hosts
are the same *site* when their registrable domains (public suffix plus one
label) are equal; an IP address or a host that is itself a public suffix
(``localhost``, ``github.io``) is a site of its own.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

WWW = "www."


@lru_cache(maxsize=1)
def _list():  # type: ignore[no-untyped-def]
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList()


def _is_ip(host: str) -> bool:
    if host.startswith("["):
        return True
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True


@lru_cache(maxsize=65536)
def registrable_domain(host: str) -> str | None:
    """The registrable domain of an ASCII (A-label) host, or ``None`` for IPs and public suffixes."""
    host = host.rstrip(".").lower()
    if not host or _is_ip(host):
        return None
    return _list().privatesuffix(host)


def site_of(host: str) -> str:
    """The site a host belongs to: its registrable domain, else the host itself."""
    return registrable_domain(host) or host.lower()


def same_site(a: str, b: str) -> bool:
    """Whether two hosts belong to one registrable domain (or are the same host)."""
    return site_of(a) == site_of(b)


def www_partner(host: str) -> str | None:
    """The other member of a ``www.`` <-> apex pair within one registrable domain, if any.

    ``www.example.com`` <-> ``example.com``; ``None`` when the apex is not
    a registrable domain (``www.co.uk``, ``www.github.io``) or for IPs.
    """
    apex = host[len(WWW) :] if host.startswith(WWW) else host
    if registrable_domain(apex) != apex:
        return None
    return apex if host.startswith(WWW) else WWW + apex
