"""The scheme registry of the scheme-based rung (3987bis 5.3.3).

One row per scheme, each fact with its source. A scheme missing here gets
the syntax-based form only: without a scheme definition nothing more can be
merged safely.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .errors import IRIError
from ._grammar import split
from ._host import fault_offset, ip_literal_rfc5952, normalize_dns_host
from ._lenient import preprocess, source_position
from ._parse import IRIReference
from ._percent import normalize_component


@dataclass(frozen=True)
class SchemeRule:
    """What a scheme's definition licenses beyond the generic syntax."""

    default_port: int | None = None
    """Port that an explicit ``:port`` may be dropped for; with it, ports are numbers."""
    empty_path_is_slash: bool = False
    """An empty path with an authority means ``/``."""
    dns_host: bool = False
    """The reg-name is a DNS name (IDNA applies, ASCII case folds)."""
    host_required: bool = False
    """An empty host is an error (RFC 9110 4.2.1, RFC 6455 3)."""
    special: Callable[[IRIReference], IRIReference] | None = None
    """Further scheme-specific normalization of the whole reference."""
    source: str = ""


def _file_localhost(ref: IRIReference) -> IRIReference:
    """RFC 8089 sec. 2 and appendix B: ``file://localhost/p`` is ``file:///p``."""
    if ref.host == "localhost" and ref.userinfo is None and ref.port is None:
        return ref._replace(host="")
    return ref


def _mailto_domains(ref: IRIReference) -> IRIReference:
    """RFC 6068 sec. 2 and 6: each address's domain is a case-insensitive (IDN) host name.

    Local parts are case-sensitive and stay as they are. Only the addresses
    of the path (``to``) are touched; header fields in the query are not.
    """
    if ref.host is not None or "@" not in ref.path or "%22" in ref.path:
        # A quoted local part ("%22...%22", RFC 5322 3.4.1) may hold ',' and
        # '@': splitting would misread it, so such paths are left as they are.
        return ref
    addresses = []
    for address in ref.path.split(","):
        local, at, domain = address.rpartition("@")
        if at and domain and not domain.startswith("["):
            domain = normalize_dns_host(domain)
        addresses.append(f"{local}{at}{domain}")
    return ref._replace(path=",".join(addresses))


def _urn_nid(ref: IRIReference) -> IRIReference:
    """RFC 8141 sec. 3.1: the NID is case-insensitive, the NSS is not."""
    nid, colon, nss = ref.path.partition(":")
    if not colon:
        return ref
    return ref._replace(path=f"{nid.lower()}:{nss}")


_WEB = dict(empty_path_is_slash=True, dns_host=True, host_required=True)

SCHEMES: dict[str, SchemeRule] = {
    "http": SchemeRule(80, **_WEB, source="RFC 9110 sec. 4.2.1, 4.2.3"),
    "https": SchemeRule(443, **_WEB, source="RFC 9110 sec. 4.2.2, 4.2.3"),
    "ws": SchemeRule(80, **_WEB, source="RFC 6455 sec. 3"),
    "wss": SchemeRule(443, **_WEB, source="RFC 6455 sec. 3"),
    "ftp": SchemeRule(21, empty_path_is_slash=True, dns_host=True, source="RFC 1738 sec. 3.2"),
    "coap": SchemeRule(5683, empty_path_is_slash=True, dns_host=True, source="RFC 7252 sec. 6.1, 6.3"),
    "coaps": SchemeRule(5684, empty_path_is_slash=True, dns_host=True, source="RFC 7252 sec. 6.2, 6.3"),
    "ldap": SchemeRule(389, dns_host=True, source="RFC 4516 sec. 2"),
    "telnet": SchemeRule(23, dns_host=True, source="RFC 4248 sec. 2"),
    "gopher": SchemeRule(70, dns_host=True, source="RFC 4266 sec. 2.1"),
    "nntp": SchemeRule(119, dns_host=True, source="RFC 5538 sec. 2.2"),
    "file": SchemeRule(special=_file_localhost, source="RFC 8089 sec. 2"),
    "mailto": SchemeRule(special=_mailto_domains, source="RFC 6068 sec. 2, 6"),
    "urn": SchemeRule(special=_urn_nid, source="RFC 8141 sec. 3.1"),
}


def normalize_port(port: str | None, rule: SchemeRule) -> str | None:
    """RFC 3986 6.2.3: drop an empty or default port; ports are decimal numbers."""
    if port is None or port == "":
        return None
    digits = port.lstrip("0") or "0"
    if len(digits) > 5 or int(digits) > 65535:
        shown = port if len(port) <= 20 else f"{port[:20]}... ({len(port)} digits)"
        raise IRIError(f"port {shown} is above 65535", "port")
    number = int(digits)
    if number == rule.default_port:
        return None
    return str(number)


def normalize_scheme_based(ref: IRIReference) -> IRIReference:
    """3987bis 5.3.3 for a syntax-normalized absolute reference."""
    rule = SCHEMES.get(ref.scheme or "")
    if rule is None:
        return ref
    host, port, path = ref.host, ref.port, ref.path
    if host is None and rule.host_required:
        raise IRIError(f"{ref.scheme} URIs need an authority with a host ('//host')", "host")
    if host is not None:
        if rule.default_port is not None:
            port = normalize_port(port, rule)
        if rule.dns_host:
            if host.startswith("["):
                host = ip_literal_rfc5952(host)
            elif host:
                host = normalize_dns_host(host)
            elif rule.host_required:
                raise IRIError(f"{ref.scheme} URIs need a host", "host")
        if path == "" and rule.empty_path_is_slash:
            path = "/"
    ref = ref._replace(host=host, port=port, path=path)
    return rule.special(ref) if rule.special is not None else ref


def placed(exc: IRIError, iri: str, *, lenient: bool = False) -> IRIError:
    """A host or port error of :func:`normalize_scheme_based` (or of mapping a host to a URI),
    at its position in ``iri``, the string the reference was parsed from.

    A port error points at the port; a host error at the offending character
    or label of the host as written (see :func:`scrapy_iri._host.fault_offset`),
    at the offending mailto domain, or where a missing host should be.
    """
    if exc.position is not None:
        return exc
    text = preprocess(iri) if lenient else iri
    position = _position_in(exc.component, text)
    return exc.at(source_position(iri, position) if lenient else position)


def _position_in(component: str, text: str) -> int:
    m = split(text)
    authority = m.group(2)
    if authority is not None and component in ("host", "port"):
        offset = m.start(2) + authority.rfind("@") + 1
        hostport = authority[authority.rfind("@") + 1 :]
        if hostport.startswith("["):
            host = hostport[: hostport.find("]") + 1]
        else:
            host = hostport.partition(":")[0]
        if component == "port":
            return offset + len(host) + 1
        return offset + (fault_offset(host) if host and host[0] != "[" else 0)
    if component == "host" and (m.group(1) or "").lower() == "mailto":
        return m.start(3) + _mailto_fault_offset(m.group(3))
    return m.start(3) if component == "host" else 0


def _mailto_fault_offset(path: str) -> int:
    """Where, in a mailto path as written, the first domain that is not a valid host name starts."""
    offset = 0
    for address in path.split(","):
        local, at, domain = address.rpartition("@")
        if at and domain and not domain.startswith("["):
            try:
                normalize_dns_host(normalize_component(domain))
            except IRIError:
                return offset + len(local) + 1 + fault_offset(domain)
        offset += len(address) + 1
    return 0
