"""Registrable domains, from the Public Suffix List the ``publicsuffixlist`` package ships.

No network: the list is the one bundled with the installed package. Two hosts
are the same *site* when their registrable domains (public suffix plus one
label) are equal; an IP address (compared by value, in any IPv4 spelling) or
a host that is itself a public suffix (``localhost``, ``github.io``) is a site
of its own; a URI without a host belongs to no site.
"""

from __future__ import annotations

from functools import lru_cache

WWW = "www."


@lru_cache(maxsize=1)
def _list():  # type: ignore[no-untyped-def]
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList()


def _ipv4_part(part: str) -> int | None:
    """One part of an IPv4 address in any spelling inet_aton accepts: decimal, octal (``0``), hex (``0x``)."""
    try:
        if part[:2].lower() == "0x":
            return int(part[2:] or "0", 16)
        if len(part) > 1 and part.startswith("0"):
            return int(part[1:], 8)
        return int(part, 10) if part.isdigit() else None
    except ValueError:
        return None


def ipv4_address(host: str) -> str | None:
    """The dotted-decimal address a host spells in any IPv4 form, else ``None``.

    ``0300.0250.0.1``, ``0xc0.0xa8.0.1``, ``192.168.1`` and ``3232235521``
    are all ``192.168.0.1`` (WHATWG URL's IPv4 parser, as browsers and
    ``inet_aton`` read them): one site, compared by address.
    """
    parts = host.rstrip(".").split(".")
    if not 1 <= len(parts) <= 4 or not all(parts):
        return None
    numbers = [_ipv4_part(part) for part in parts]
    if any(n is None for n in numbers):
        return None
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):  # type: ignore[operator]
        return None
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))  # type: ignore[operator]
    return ".".join(str((value >> shift) & 255) for shift in (24, 16, 8, 0))  # type: ignore[operator]


def _looks_numeric(host: str) -> bool:
    """A host whose last label is a number: an IPv4 spelling, or no domain name at all."""
    last = host.rstrip(".").rpartition(".")[2].lower()
    return bool(last) and (last.isdigit() or (last.startswith("0x") and all(c in "0123456789abcdef" for c in last[2:])))


def is_ip_host(host: str) -> bool:
    """Whether a host is an IP literal (``[v6]``) or a numeric host (any IPv4 spelling): rules never apply there."""
    return host.startswith("[") or _looks_numeric(host)


@lru_cache(maxsize=65536)
def registrable_domain(host: str) -> str | None:
    """The registrable domain of an ASCII (A-label) host, or ``None`` for IPs and public suffixes."""
    host = host.rstrip(".").lower()
    if not host or is_ip_host(host):
        return None
    return _list().privatesuffix(host)


def site_of(host: str) -> str:
    """The site a host belongs to: its registrable domain, an IPv4 address by value, else the host itself.

    A host whose last label is numeric but that is no IPv4 address is a
    site of its own.
    """
    host = host.rstrip(".").lower()
    if _looks_numeric(host):
        return ipv4_address(host) or host
    return registrable_domain(host) or host


def same_site(a: str, b: str) -> bool:
    """Whether two hosts belong to one registrable domain (or are the same host or address).

    A URI without a host (``mailto:``, an empty host) is no site: it is never the same site as anything.
    """
    if not a or not b:
        return False
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
