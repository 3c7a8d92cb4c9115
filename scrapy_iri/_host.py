"""Host names: syntax-based case normalization and scheme-based DNS normalization.

DNS host names are compared the way resolvers will see them: percent-encoded
UTF-8 is decoded first (draft-ietf-idn-uri), then the UTS #46
non-transitional mapping and IDNA2008 ToASCII are applied label by label with
the ``idna`` package (never Python's IDNA2003 codec: it maps ``faß`` to
``fass``, another name). IP literals take their RFC 5952 text form.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache

import idna

from .errors import IRIError
from ._percent import TRIPLET_RUN, decode_octets, encode_non_ascii, normalize_triplets, uppercase_triplets


def normalize_host_syntax(host: str) -> str:
    """3987bis 5.3.2.1: lowercase the ASCII letters of a reg-name; normalize its escapes.

    IP literals only have their hex digits lowercased. Non-ASCII characters
    are percent-encoded as UTF-8 and never case-mapped at this rung.
    """
    if host.startswith("["):
        return host.lower()
    if host.isascii() and "%" not in host:
        return host.lower()
    return _normalize_reg_name_encoded(host)


@lru_cache(maxsize=1 << 14)
def _normalize_reg_name_encoded(host: str) -> str:
    """The non-ASCII or percent-encoded case of :func:`normalize_host_syntax`.

    Cached (a pure function of the string): a crawl meets the same host
    names over and over, and encoding every character of an IDN costs more
    than the lookup.
    """
    text = normalize_triplets(encode_non_ascii(host)).lower()
    return uppercase_triplets(text)


def ip_literal_rfc5952(literal: str) -> str:
    """``[2001:DB8:0::1]`` -> ``[2001:db8::1]`` (RFC 5952 sec. 4 and 5); IPvFuture as is."""
    inner = literal[1:-1]
    if inner[:1] in ("v", "V"):
        return literal
    address = ipaddress.IPv6Address(inner)
    mapped = address.ipv4_mapped
    if mapped is not None:  # RFC 5952 5: IPv4-mapped addresses keep the dotted quad
        return f"[::ffff:{mapped}]"
    return f"[{address.compressed}]"


def _decode_utf8_escapes(host: str) -> str:
    """Decode percent-encoded non-ASCII UTF-8 in a host (draft-ietf-idn-uri sec. 3).

    Escapes of ASCII octets (``%2F``, ``%20``) stay encoded: decoding them
    would change where the authority ends or put a delimiter in a label.
    """

    def decode(m: re.Match[str]) -> str:
        run = m.group()
        octets = decode_octets(run)
        out = []
        i = 0
        while i < len(octets):
            if octets[i] < 0x80:
                out.append(run[3 * i : 3 * i + 3])
                i += 1
                continue
            j = i
            while j < len(octets) and octets[j] >= 0x80:
                j += 1
            try:
                out.append(octets[i:j].decode("utf-8"))
            except UnicodeDecodeError:
                raise IRIError("percent-encoded octets in the host name are not UTF-8", "host") from None
            i = j
        return "".join(out)

    return TRIPLET_RUN.sub(decode, host)


# After UTS #46 mapping, the ASCII a DNS name may hold: letters, digits, '-', '_', '.'.
_NOT_HOST_NAME_ASCII = re.compile(r"[\x00-\x2c\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]")


def _check_a_label(label: str) -> None:
    """RFC 5891 5.4: an ``xn--`` label must decode to a valid U-label and back."""
    try:
        ulabel = idna.ulabel(label)
        if idna.alabel(ulabel).decode("ascii") != label:
            raise idna.IDNAError("not the canonical encoding of its U-label")
    except (idna.IDNAError, UnicodeError) as exc:
        raise IRIError(f"invalid A-label {label!r}: {exc}", "host") from None


@lru_cache(maxsize=1 << 16)
def normalize_dns_host(host: str) -> str:
    """Scheme-based form of a DNS host name (3987bis 3.4, 5.3.3; UTS #46; RFC 5891).

    ASCII labels are lowercased and kept (DNS allows more than IDNA2008's
    letters-digits-hyphens, and ``_`` is common); ``xn--`` labels must be
    valid A-labels; labels with non-ASCII characters become A-labels, or the
    host is an invalid IDN and :class:`IRIError` is raised. The trailing dot
    of a fully qualified name is kept: it is a different name to HTTP.
    """
    given = host
    if "%" in host:
        host = _decode_utf8_escapes(host)
    if not host.isascii():
        try:
            host = idna.uts46_remap(host, std3_rules=False, transitional=False)
        except (idna.IDNAError, UnicodeError) as exc:
            raise IRIError(f"invalid IDN: {exc}", "host") from None
        if not host:
            raise IRIError("the host name maps to nothing under UTS #46", "host")
        bad = _NOT_HOST_NAME_ASCII.search(host)
        if bad is not None:  # e.g. U+FF0F -> '/', U+00A0 -> ' ': never let a mapping add a delimiter
            raise IRIError(f"the host name maps to {bad.group()!r} under UTS #46", "host")
    else:
        host = uppercase_triplets(host.lower())  # escapes kept ('%2F') keep uppercase hex
    labels = host.split(".")
    for index, label in enumerate(labels):
        if label.isascii():
            if label.startswith("xn--"):
                _check_a_label(label)
            continue
        try:
            labels[index] = idna.alabel(label).decode("ascii")
        except (idna.IDNAError, UnicodeError) as exc:
            raise IRIError(f"invalid IDN label {label!r}: {exc}", "host") from None
    host = ".".join(labels)
    return given if host == given else host  # the cache then keeps one string, not two equal ones


def to_unicode_host(host: str) -> str:
    """3987bis 3.7 step 6: ``xn--`` labels to U-labels where they are valid, others as they are."""
    labels = host.split(".")
    for index, label in enumerate(labels):
        if label[:4].lower() == "xn--":
            try:
                labels[index] = idna.ulabel(label.lower())
            except (idna.IDNAError, UnicodeError):
                pass
    return ".".join(labels)
