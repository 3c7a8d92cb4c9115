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
from ._grammar import NON_ASCII_TRIPLET_RUN, NOT_HOST_NAME_ASCII, UNRESERVED_CHARS
from ._percent import (
    decode_octets,
    decode_utf8_run,
    encode_non_ascii,
    has_non_ascii_escape,
    normalize_triplets,
    uppercase_triplets,
)


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


def _normalize_reg_name_encoded(host: str) -> str:
    """The non-ASCII or percent-encoded case of :func:`normalize_host_syntax`.

    Cached (a pure function of the string) for hosts up to
    ``HOST_CACHE_MAX_LENGTH`` characters: a crawl meets the same host names
    over and over, and encoding every character of an IDN costs more than
    the lookup. Longer hosts are computed every time, so the cache stays
    bounded in bytes whatever the input.
    """
    if len(host) <= HOST_CACHE_MAX_LENGTH:
        return _reg_name_encoded_cached(host)
    return _reg_name_encoded(host)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _reg_name_encoded(host: str) -> str:
    if "%" not in host:  # no escape to normalize: lowercase the ASCII letters, encode the rest
        return encode_non_ascii(host.translate(_ASCII_LOWER))
    text = normalize_triplets(encode_non_ascii(host)).lower()
    return uppercase_triplets(text)


HOST_CACHE_MAX_LENGTH = 256
"""Longest host (in characters) the host caches keep. Each cache holds at most
16,384 such keys and their forms (256 four-byte characters and their escapes:
about 4 kB), so the syntax cache stays under 70 MB and the DNS one (whose keys
are syntax forms, ASCII) under 25 MB in the worst case, and near 100 bytes per
entry for real host names. Longer hosts are computed each time."""

_reg_name_encoded_cached = lru_cache(maxsize=1 << 14)(_reg_name_encoded)


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


def decode_utf8_escapes(host: str) -> str:
    """Decode percent-encoded non-ASCII UTF-8 in a host (draft-ietf-idn-uri sec. 3).

    Escapes of ASCII octets (``%2F``, ``%20``) stay encoded: decoding them
    would change where the authority ends or put a delimiter in a label.
    """
    decoded = NON_ASCII_TRIPLET_RUN.sub(lambda m: decode_utf8_run(m.group()), host)
    if has_non_ascii_escape(decoded):
        raise IRIError("percent-encoded octets in the host name are not UTF-8", "host")
    return decoded


def _check_a_label(label: str) -> None:
    """RFC 5891 5.4: an ``xn--`` label must decode to a valid U-label and back."""
    try:
        ulabel = idna.ulabel(label)
        if idna.alabel(ulabel).decode("ascii") != label:
            raise idna.IDNAError("not the canonical encoding of its U-label")
    except (idna.IDNAError, UnicodeError) as exc:
        raise IRIError(f"invalid A-label {label!r}: {exc}", "host") from None


# RFC 1034 3.1 / RFC 1035 2.3.4: at most 63 octets per label and 255 octets on
# the wire, which is 253 in text (254 with the trailing dot of a rooted name).
MAX_LABEL_OCTETS = 63
MAX_NAME_OCTETS = 253
# UTS #46 removes a few characters (soft hyphen, joiners, variation selectors),
# so a mapped name of 253 octets may be spelt longer; not four times longer
# (idna >= 3.17 refuses longer input to its mapping outright).
MAX_IDNA_INPUT = 1024


def check_dns_length(host: str, *, mapped: bool) -> None:
    """RFC 1034 3.1 length limits, checked before IDNA's own (costlier) checks run.

    ``mapped=False``: the host before UTS #46 mapping, where only a generous
    bound is sound (mapping may drop ignored characters). ``mapped=True``:
    the mapped host, whose A-label form is at least as long (Punycode writes
    every code point with at least one octet, after "xn--").
    """
    limit = MAX_NAME_OCTETS + host.endswith(".")
    if not mapped:
        if len(host) > MAX_IDNA_INPUT:
            raise IRIError(f"the host name has {len(host)} characters; DNS allows {MAX_NAME_OCTETS} octets", "host")
        return
    if len(host) > limit:
        raise IRIError(f"the host name has {len(host)} octets or more; DNS allows {MAX_NAME_OCTETS}", "host")
    longest = max(host.split("."), key=len)
    if len(longest) > MAX_LABEL_OCTETS:
        shown = longest if len(longest) <= 20 else longest[:20] + "..."
        raise IRIError(f"the label {shown!r} has {len(longest)} octets or more; DNS allows {MAX_LABEL_OCTETS}", "host")


def normalize_dns_host(host: str) -> str:
    """Scheme-based form of a DNS host name; see :func:`_normalize_dns_host`.

    Cached for hosts up to ``HOST_CACHE_MAX_LENGTH`` characters (the cache
    is then bounded in bytes, not only in entries).
    """
    if len(host) <= HOST_CACHE_MAX_LENGTH:
        return _normalize_dns_host_cached(host)
    return _normalize_dns_host(host)


def _normalize_dns_host(host: str) -> str:
    """Scheme-based form of a DNS host name (3987bis 3.4, 5.3.3; UTS #46; RFC 5891).

    ASCII labels are lowercased and kept (DNS allows more than IDNA2008's
    letters-digits-hyphens, and ``_`` is common); ``xn--`` labels must be
    valid A-labels; labels with non-ASCII characters become A-labels, or the
    host is an invalid IDN and :class:`IRIError` is raised. The trailing dot
    of a fully qualified name is kept: it is a different name to HTTP.
    """
    given = host
    if "%" in host:
        if len(host) > 12 * MAX_IDNA_INPUT and has_non_ascii_escape(host):
            # a character is at most four escaped octets: the decoded name is too long too
            raise IRIError(f"the host name has {len(host)} characters; DNS allows {MAX_NAME_OCTETS} octets", "host")
        host = decode_utf8_escapes(host)
    if not host.isascii():
        check_dns_length(host, mapped=False)
        try:
            host = idna.uts46_remap(host, std3_rules=False)
        except (idna.IDNAError, UnicodeError) as exc:
            raise IRIError(f"invalid IDN: {exc}", "host") from None
        if not host:
            raise IRIError("the host name maps to nothing under UTS #46", "host")
        bad = NOT_HOST_NAME_ASCII.search(host)
        if bad is not None:  # e.g. U+FF0F -> '/', U+00A0 -> ' ': never let a mapping add a delimiter
            raise IRIError(f"the host name maps to {bad.group()!r} under UTS #46", "host")
    else:
        host = uppercase_triplets(host.lower())  # escapes kept ('%2F') keep uppercase hex
    if not host.isascii() or "xn--" in host:  # IDNA runs: the name must fit DNS first
        check_dns_length(host, mapped=True)
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


_normalize_dns_host_cached = lru_cache(maxsize=1 << 14)(_normalize_dns_host)


def to_unicode_host(host: str) -> str:
    """3987bis 3.7 step 6: ``xn--`` labels to U-labels where they are valid, others as they are.

    A name longer than DNS allows has no valid A-labels to convert.
    """
    if len(host) > MAX_NAME_OCTETS + host.endswith(".") or "xn--" not in host.lower():
        return host
    labels = host.split(".")
    for index, label in enumerate(labels):
        if label[:4].lower() == "xn--" and len(label) <= MAX_LABEL_OCTETS:
            try:
                labels[index] = idna.ulabel(label.lower())
            except (idna.IDNAError, UnicodeError):
                pass
    return ".".join(labels)


_HOST_TOKEN = re.compile(r"(?:%[89A-Fa-f][0-9A-Fa-f])+|%[0-7][0-9A-Fa-f]|.", re.S)
"""A run of escapes of octets >= 0x80, an escape of an ASCII octet, or one character."""
_LABEL_SEPARATOR = re.compile("[.\u3002\uff0e\uff61]|%2[Ee]")
"""What separates labels as written (UTS #46 maps the three ideographic full stops to '.')."""


def _characters(host: str) -> list[tuple[int, str]]:
    """The host's characters as its DNS form sees them, each with where it is written.

    Escapes are decoded (an octet that is not UTF-8 becomes a lone surrogate);
    an escape of an ASCII octet other than an unreserved one stays ``%``.
    """
    out = []
    for m in _HOST_TOKEN.finditer(host):
        token, start = m.group(), m.start()
        if len(token) == 1:
            out.append((start, token))
        elif len(token) == 3 and token[1] in "01234567":
            char = chr(int(token[1:], 16))
            out.append((start, char if char in UNRESERVED_CHARS else "%"))
        else:
            octets = 0
            for char in decode_octets(token).decode("utf-8", "surrogateescape"):
                out.append((start + 3 * octets, char))
                octets += 1 if "\udc80" <= char <= "\udcff" else len(char.encode("utf-8"))
    return out


def fault_offset(host: str) -> int:
    """Where, in a reg-name as written, ``normalize_dns_host(normalize_host_syntax(host))`` fails.

    The offset of the first offending character (escaped octets that are not
    UTF-8, a code point UTS #46 disallows or maps to a delimiter), else of
    the first label that fails on its own, else 0 (the whole name: too long
    for DNS). Only for error messages: it never raises.
    """
    if len(host) > 12 * MAX_IDNA_INPUT:
        return 0
    chars = _characters(host)
    for start, char in chars:
        if "\udc80" <= char <= "\udcff":
            return start
    if not all(char.isascii() for _, char in chars):  # UTS #46 maps the name: in its order of checks
        mapped = []
        for start, char in chars:
            try:
                mapped.append((start, char if char.isascii() else idna.uts46_remap(char, std3_rules=False)))
            except (idna.IDNAError, UnicodeError):
                return start
        for start, text in mapped:
            if NOT_HOST_NAME_ASCII.search(text) is not None:
                return start
    start = 0
    for separator in [*_LABEL_SEPARATOR.finditer(host), None]:
        end = len(host) if separator is None else separator.start()
        if end > start:
            try:
                normalize_dns_host(normalize_host_syntax(host[start:end]))
            except IRIError:
                return start
        if separator is not None:
            start = separator.end()
    return 0
