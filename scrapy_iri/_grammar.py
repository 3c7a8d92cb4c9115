"""The grammar: every character class and pattern of RFC 3986 and 3987bis sec. 2.2.

Character classes are regular-expression bracket bodies (without the
brackets), so that component patterns are composed from them; compiled
patterns follow. Nothing else in the package writes a character range or
the appendix-B split: they import it from here.
"""

from __future__ import annotations

import re

# --- character classes --------------------------------------------------------

# RFC 3986 2.3: unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~"
UNRESERVED = "A-Za-z0-9\\-._~"
UNRESERVED_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# RFC 3986 2.2: sub-delims
SUB_DELIMS = "!$&'()*+,;="

# 3987bis 2.2: ucschar, minus the bidi formatting characters that 4.1 forbids
# (LRM U+200E, RLM U+200F, LRE..RLO U+202A-202E), which lie inside %xA0-D7FF.
UCSCHAR = (
    "\u00a0-\u200d\u2010-\u2029\u202f-\ud7ff"
    "\uf900-\ufdcf\ufdf0-\uffef"
    "\U00010000-\U0001fffd\U00020000-\U0002fffd\U00030000-\U0003fffd"
    "\U00040000-\U0004fffd\U00050000-\U0005fffd\U00060000-\U0006fffd"
    "\U00070000-\U0007fffd\U00080000-\U0008fffd\U00090000-\U0009fffd"
    "\U000a0000-\U000afffd\U000b0000-\U000bfffd\U000c0000-\U000cfffd"
    "\U000d0000-\U000dfffd\U000e1000-\U000efffd"
)
# 3987bis 2.2: iprivate (allowed in iquery only), the tag characters included
IPRIVATE = "\ue000-\uf8ff\U000e0000-\U000e0fff\U000f0000-\U000ffffd\U00100000-\U0010fffd"

IUNRESERVED = UNRESERVED + UCSCHAR
# ipchar = iunreserved / pct-encoded / sub-delims / ":" / "@"  ("%" checked apart)
IPCHAR = IUNRESERVED + SUB_DELIMS + ":@"

# Allowed characters per IRI component (percent signs are validated separately).
USERINFO = IUNRESERVED + SUB_DELIMS + ":"
REG_NAME = IUNRESERVED + SUB_DELIMS
PATH = IPCHAR + "/"
QUERY = IPCHAR + IPRIVATE + "/?"
# 3987bis-03 2.2 lets '#' into ifragment (RFC 3986's fragment does not: 3.3 maps it to %23).
FRAGMENT = IPCHAR + "/?#"

IRI_COMPONENTS = {
    "userinfo": USERINFO,
    "host": REG_NAME,
    "path": PATH,
    "query": QUERY,
    "fragment": FRAGMENT,
}
"""Component name -> the characters its 3987bis rule allows (besides triplets)."""

# The same classes restricted to ASCII: what a URI allows (RFC 3986 3.2.2, 3.3-3.5).
URI_REG_NAME = UNRESERVED + SUB_DELIMS
URI_PATH = UNRESERVED + SUB_DELIMS + ":@/"
URI_QUERY = URI_PATH + "?"
URI_FRAGMENT = URI_QUERY

# --- patterns ---------------------------------------------------------------

SPLIT = re.compile(r"(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?", re.S)
"""RFC 3986 appendix B: scheme, authority, path, query, fragment of any string (groups 1-5)."""

SCHEME_PATTERN = r"[A-Za-z][A-Za-z0-9+\-.]*"
SCHEME = re.compile(SCHEME_PATTERN)
"""RFC 3986 3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )."""
SCHEME_PREFIX = re.compile(SCHEME_PATTERN + ":")
"""A scheme and its colon at the start of a string."""

PORT = re.compile(r"[0-9]*")
IPV_FUTURE = re.compile(r"[vV][0-9A-Fa-f]+\.[" + UNRESERVED + SUB_DELIMS + ":]+")


def _forbidden(allowed: str) -> re.Pattern[str]:
    """The first character a component may not contain, or a '%' that starts no triplet."""
    return re.compile(f"[^{allowed}%]|%(?![0-9A-Fa-f]{{2}})")


FORBIDDEN = {name: _forbidden(allowed) for name, allowed in IRI_COMPONENTS.items()}
"""Component name -> pattern finding a character the 3987bis grammar forbids there."""

NOT_IRI_CHARS = {name: re.compile(f"[^{allowed}]+") for name, allowed in IRI_COMPONENTS.items()}
"""Component name -> runs of characters an IRI may not hold there, even decoded (3.7 step 4)."""

DOT_SEGMENT = re.compile(r"(?:^|/)\.\.?(?:/|$)")
"""A "." or ".." segment: RFC 3986 5.2.4 has work to do only if a path has one."""

ASCII_TRIPLET = re.compile(r"%[0-7][0-9A-Fa-f]")
NON_ASCII_TRIPLET_RUN = re.compile(r"(?:%[89A-Fa-f][0-9A-Fa-f])+")
"""A run of escapes of octets >= 0x80: where UTF-8 sequences can be (they hold no ASCII octet)."""

NORMAL_TRIPLET = r"%(?:[01][0-9A-F]|2[0-9A-CF]|3[A-F]|40|5[B-E]|60|7[B-DF]|[89A-F][0-9A-F])"
"""A triplet the syntax rung leaves as it is (RFC 3986 6.2.2.1, 6.2.2.2): uppercase hex digits,
and not the escape of an unreserved character (%2D %2E %30-39 %41-5A %5F %61-7A %7E are
missing). ``tests/core/test_grammar.py`` derives it from ``UNRESERVED_CHARS``."""
NOT_NORMAL_TRIPLET = re.compile(f"%(?!{NORMAL_TRIPLET[1:]})[0-9A-Fa-f]{{2}}")
"""A triplet the syntax rung rewrites: lowercase hex digits, or an unreserved character."""
LOWER_HEX_TRIPLET = re.compile(r"%[0-9a-f]{2}")
TRIPLET_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
UNRESERVED_TRIPLET = re.compile(r"%(?:2[DdEe]|3[0-9]|4[1-9A-Fa-f]|5[0-9AaFf]|6[1-9A-Fa-f]|7[0-9AaEe])")
"""The escape of an unreserved character (RFC 3986 2.3), which the syntax rung decodes."""
"""A run of triplets (pct-encoded, RFC 3986 2.1), any octets."""

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""Not a character: what undecodable input leaves in a ``str`` (``surrogateescape``)."""
UNDECODABLE_OCTETS = re.compile("[\udc80-\udcff]+")
"""The lone surrogates ``surrogateescape`` writes for octets that are not UTF-8."""

NOT_HOST_NAME_ASCII = re.compile(r"[\x00-\x2c\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]")
"""ASCII a DNS name may not hold after UTS #46 mapping: all but letters, digits, '-', '_', '.'."""


def split(text: str) -> re.Match[str]:
    """RFC 3986 appendix B applied to ``text`` (it matches every string)."""
    m = SPLIT.fullmatch(text)
    assert m is not None
    return m
