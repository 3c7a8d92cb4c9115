"""Parsing IRI references into components (3987bis sec. 2.2 and 3.2, RFC 3986 sec. 3).

Absent and empty components are different values: ``None`` means the
delimiter was not there, ``""`` means it was there with nothing after it
(``http://a/?`` has the query ``""``, ``http://a/`` has none).
"""

from __future__ import annotations

import ipaddress
from typing import NamedTuple

from .errors import IRIError, describe
from ._grammar import FORBIDDEN, IPV_FUTURE, PORT, SCHEME, split
from ._lenient import preprocess, source_position


class IRIReference(NamedTuple):
    """The components of an IRI reference; ``None`` = absent, ``""`` = empty.

    ``host`` is not ``None`` exactly when the reference has an authority
    (``//`` after the scheme), so ``userinfo`` and ``port`` are ``None``
    whenever ``host`` is.
    """

    scheme: str | None
    userinfo: str | None
    host: str | None
    port: str | None
    path: str
    query: str | None
    fragment: str | None

    @property
    def authority(self) -> str | None:
        """The authority as written: ``[userinfo "@"] host [":" port]``."""
        if self.host is None:
            return None
        auth = self.host
        if self.userinfo is not None:
            auth = f"{self.userinfo}@{auth}"
        if self.port is not None:
            auth = f"{auth}:{self.port}"
        return auth

    def unsplit(self) -> str:
        """Recompose the reference (RFC 3986 5.3)."""
        return recompose(self)


def recompose(ref: IRIReference) -> str:
    """RFC 3986 5.3 component recomposition."""
    out = []
    if ref.scheme is not None:
        out.append(ref.scheme)
        out.append(":")
    if ref.host is not None:
        out.append("//")
        if ref.userinfo is not None:
            out.append(ref.userinfo)
            out.append("@")
        out.append(ref.host)
        if ref.port is not None:
            out.append(":")
            out.append(ref.port)
    out.append(ref.path)
    if ref.query is not None:
        out.append("?")
        out.append(ref.query)
    if ref.fragment is not None:
        out.append("#")
        out.append(ref.fragment)
    return "".join(out)


def _check(component: str, text: str, offset: int) -> None:
    bad = FORBIDDEN[component].search(text)
    if bad is not None:
        pos = bad.start()
        char = text[pos]
        if char == "%":
            raise IRIError("'%' not followed by two hexadecimal digits", component, offset + pos)
        raise IRIError(f"character {describe(char)} not allowed", component, offset + pos)


def _check_ip_literal(literal: str, offset: int) -> None:
    """RFC 3986 3.2.2: IP-literal = "[" ( IPv6address / IPvFuture ) "]" (no zone IDs)."""
    inner = literal[1:-1]
    if IPV_FUTURE.fullmatch(inner):
        return
    if "%" not in inner:
        try:
            ipaddress.IPv6Address(inner)
            return
        except ValueError:
            pass
    raise IRIError(f"{literal!r} is not an IPv6 address or IPvFuture literal", "host", offset)


def split_authority(authority: str, offset: int) -> tuple[str | None, str, str | None]:
    """Split ``[userinfo "@"] host [":" port]``, validating each part."""
    userinfo = None
    at = authority.rfind("@")
    if at >= 0:
        userinfo = authority[:at]
        _check("userinfo", userinfo, offset)
        offset += at + 1
        authority = authority[at + 1 :]
    port = None
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise IRIError("'[' without a closing ']'", "host", offset)
        host = authority[: close + 1]
        _check_ip_literal(host, offset)
        rest = authority[close + 1 :]
        if rest:
            if rest[0] != ":":
                raise IRIError(f"character {describe(rest[0])} after IP literal", "host", offset + close + 1)
            port = rest[1:]
    else:
        colon = authority.find(":")
        if colon >= 0:
            host, port = authority[:colon], authority[colon + 1 :]
        else:
            host = authority
        _check("host", host, offset)
    if port is not None and not PORT.fullmatch(port):
        bad = next(i for i, c in enumerate(port) if not c.isascii() or not c.isdigit())
        raise IRIError(f"character {describe(port[bad])} in port", "port", offset + len(host) + 1 + bad)
    return userinfo, host, port


def _reject_scheme(scheme: str) -> None:
    first = scheme[0]
    if not (first.isascii() and first.isalpha()):
        raise IRIError(
            f"{describe(first)} cannot start a scheme (and the first segment of a"
            " relative path may not contain ':')",
            "scheme",
            0,
        )
    bad = next(i for i, c in enumerate(scheme) if not (c.isascii() and (c.isalnum() or c in "+-.")))
    raise IRIError(f"character {describe(scheme[bad])} not allowed", "scheme", bad)


def parse(iri_reference: str, *, lenient: bool = False, base_scheme: str | None = None) -> IRIReference:
    """Parse and validate an IRI reference against the 3987bis grammar (sec. 2.2).

    With ``lenient=True`` the input is first preprocessed as 3987bis sec. 7
    describes (see :func:`scrapy_iri._lenient.preprocess`); ``base_scheme``,
    the scheme of the base a relative reference will be resolved against,
    tells it whether ``\\`` is a path separator there (web schemes only).
    """
    if not isinstance(iri_reference, str):
        raise TypeError(f"an IRI reference must be str, not {type(iri_reference).__name__}")
    if lenient:
        text = preprocess(iri_reference, base_scheme=base_scheme)
        if text != iri_reference:
            try:
                return _parse_strict(text)
            except IRIError as exc:  # its position is in the preprocessed string
                position = source_position(iri_reference, exc.position or 0, base_scheme=base_scheme)
                raise exc.at(position) from None
    return _parse_strict(iri_reference)


def _parse_strict(iri_reference: str) -> IRIReference:
    m = split(iri_reference)
    scheme, authority, path, query, fragment = m.groups()
    if scheme is not None and not SCHEME.fullmatch(scheme):
        _reject_scheme(scheme)
    userinfo = host = port = None
    if authority is not None:
        userinfo, host, port = split_authority(authority, m.start(2))
    _check("path", path, m.start(3))
    if scheme is None and authority is None:
        colon = path.find(":")
        if colon >= 0 and "/" not in path[:colon]:
            raise IRIError(
                "':' in the first segment of a relative path (write './' before it)", "path", colon
            )
    if query is not None:
        _check("query", query, m.start(4))
    if fragment is not None:
        _check("fragment", fragment, m.start(5))
    return IRIReference(scheme, userinfo, host, port, path, query, fragment)
