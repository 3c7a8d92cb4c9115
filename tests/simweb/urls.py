"""URL handling as the simulated servers (and a reference crawler) see it.

Deliberately independent of the rest of scrapy_iri: the simulated web is the
oracle the library is measured against, so it must not share its code.

Server side (what Apache and nginx do before looking a path up):
- percent-encoded unreserved characters are decoded (``/%7Efoo`` is
  ``/~foo``), other triplets only get upper-case hex (``%2f`` is ``%2F``,
  never ``/``); raw bytes outside printable ASCII are percent-encoded;
- dot segments are removed (RFC 3986 sec. 5.2.4), after the decoding above;
- path case is significant, host case is not.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from urllib.parse import quote, unquote

import idna

#: RFC 3986 sec. 2.3
UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
#: bytes a request target may carry without encoding (RFC 3986 pchar + "/?")
_TARGET_SAFE = frozenset((string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@/?%").encode())
_HEX = frozenset(b"0123456789abcdefABCDEF")
_LDH = frozenset(string.ascii_lowercase + string.digits + "-._")

DEFAULT_PORTS = {"http": 80, "https": 443}


class BadTarget(ValueError):
    """A request target a real server would answer with 400."""


def normalize_component(raw: bytes) -> str:
    """Percent-encoding normalization of one path or query, on raw bytes."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        byte = raw[i]
        if byte == 0x25:  # "%"
            pair = raw[i + 1 : i + 3]
            if len(pair) != 2 or not all(b in _HEX for b in pair):
                raise BadTarget(f"malformed percent-encoding at byte {i}")
            value = int(pair, 16)
            char = chr(value)
            out.append(char if char in UNRESERVED else f"%{value:02X}")
            i += 3
            continue
        out.append(chr(byte) if byte in _TARGET_SAFE else f"%{byte:02X}")
        i += 1
    return "".join(out)


def remove_dot_segments(path: str) -> str:
    """RFC 3986 sec. 5.2.4, for a path that starts with ``/``."""
    output: list[str] = []
    segments = path.split("/")[1:]
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
        elif segment == "..":
            if output:
                output.pop()
            if last:
                output.append("")
        else:
            output.append(segment)
    return "/" + "/".join(output)


@dataclass(frozen=True)
class Target:
    """A normalized origin-form request target: path and optional query."""

    path: str
    query: str | None = None

    def __str__(self) -> str:
        return self.path if self.query is None else f"{self.path}?{self.query}"


def normalize_target(raw: str | bytes) -> Target:
    """Normalize ``/path?query`` the way the simulated servers do.

    ``str`` input is taken as text (non-ASCII becomes UTF-8 escapes);
    ``bytes`` as they came off the wire.
    """
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    if not data.startswith(b"/"):
        raise BadTarget("request target must start with '/'")
    path, sep, query = data.partition(b"?")
    norm_path = remove_dot_segments(normalize_component(path))
    return Target(norm_path, normalize_component(query) if sep else None)


def wire_host(host: str) -> str | None:
    """The host key of a host name received on the wire, or None.

    Only what a DNS resolver would accept: ASCII letters, digits, hyphens and
    dots, case-insensitive, one trailing dot ignored. Percent-encoded or raw
    non-ASCII host names cannot be resolved, so they match nothing.
    """
    key = host.lower()
    if key.endswith("."):
        key = key[:-1]
    if not key or not set(key) <= _LDH:
        return None
    return key


def a_label_host(host: str) -> str:
    """The A-label form of a declared host (IDNA2008 with UTS #46 mapping)."""
    if host.isascii():
        return host.lower()
    return idna.encode(host, uts46=True).decode("ascii")


def u_label_host(host: str) -> str:
    """The Unicode form of an A-label host, for display and IRI start URLs."""
    try:
        return idna.decode(host)
    except idna.IDNAError:
        return host


def split_authority(authority: str) -> tuple[str, int | None]:
    """``host[:port]`` (userinfo dropped) -> (host, port or None)."""
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        host, _, rest = hostport.partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
        host += "]"
    else:
        host, _, port_text = hostport.partition(":")
    if not port_text:
        return host, None
    if not port_text.isdigit():
        raise BadTarget(f"bad port {port_text!r}")
    return host, int(port_text)


#: RFC 3986 appendix B, with absent and empty components told apart
_REFERENCE = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$", re.S)
#: characters left as they are in a path (and, with "?", in a query)
_PATH_SAFE = "/%:@!$&'()*+,;=~"


def split_reference(reference: str) -> tuple[str | None, str | None, str, str | None, str | None]:
    """(scheme, authority, path, query, fragment); None when absent (RFC 3986 appendix B)."""
    match = _REFERENCE.match(reference)
    assert match is not None  # every string matches: all parts are optional
    scheme, authority, path, query, fragment = match.groups()
    return scheme, authority, path or "", query, fragment


def resolve_reference(base: str, reference: str) -> str:
    """RFC 3986 sec. 5.2.2 (strict), fragment dropped; an empty ``?`` is kept."""
    r_scheme, r_auth, r_path, r_query, _ = split_reference(reference)
    b_scheme, b_auth, b_path, b_query, _ = split_reference(base)
    if r_scheme is not None:
        scheme, auth, path, query = r_scheme, r_auth, _dots(r_path), r_query
    elif r_auth is not None:
        scheme, auth, path, query = b_scheme, r_auth, _dots(r_path), r_query
    elif r_path == "":
        scheme, auth, path = b_scheme, b_auth, b_path
        query = r_query if r_query is not None else b_query
    else:
        scheme, auth, query = b_scheme, b_auth, r_query
        if r_path.startswith("/"):
            path = _dots(r_path)
        elif b_auth is not None and b_path == "":
            path = _dots("/" + r_path)
        else:
            path = _dots(b_path[: b_path.rfind("/") + 1] + r_path)
    uri = f"{scheme}:" if scheme is not None else ""
    uri += f"//{auth}" if auth is not None else ""
    uri += path
    return uri if query is None else f"{uri}?{query}"


def _dots(path: str) -> str:
    return remove_dot_segments(path) if path.startswith("/") else path


def resolve_href(base: str, href: str) -> str | None:
    """Resolve a link the way a correct crawler would, to an ASCII URI.

    The reference behaviour the simulator uses to compute which resources
    are reachable: RFC 3986 resolution, IDNA2008 hosts (percent-encoded
    UTF-8 decoded first), UTF-8 for non-ASCII path and query characters.
    Returns None for non-HTTP(S) links and hosts that cannot be encoded.
    """
    href = "".join(ch for ch in href.strip() if ch not in "\t\n\r")
    raw_scheme, authority, path, query, _ = split_reference(resolve_reference(base, href))
    scheme = (raw_scheme or "").lower()
    if scheme not in DEFAULT_PORTS or not authority:
        return None
    try:
        host, port = split_authority(authority)
        host = idna.encode(unquote(host), uts46=True).decode("ascii")
    except (BadTarget, idna.IDNAError, UnicodeError):
        return None
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    uri = f"{scheme}://{netloc}{quote(path or '/', safe=_PATH_SAFE)}"
    return uri if query is None else f"{uri}?{quote(query, safe=_PATH_SAFE + '?')}"
