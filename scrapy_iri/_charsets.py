"""Character classes of RFC 3986 sec. 2 and draft-ietf-iri-3987bis sec. 2.2.

Each class is a regular-expression bracket body (without the brackets) so
that the component grammars in ``parse`` can be composed from them.
"""

from __future__ import annotations

# RFC 3986 2.3: unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~"
UNRESERVED = "A-Za-z0-9\\-._~"
# RFC 3986 2.2: sub-delims
SUB_DELIMS = "!$&'()*+,;="
# RFC 3986 2.2: gen-delims
GEN_DELIMS = ":/?#\\[\\]@"

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

# Allowed characters per component (percent signs are validated separately).
USERINFO = IUNRESERVED + SUB_DELIMS + ":"
REG_NAME = IUNRESERVED + SUB_DELIMS
PATH = IPCHAR + "/"
QUERY = IPCHAR + IPRIVATE + "/?"
# 3987bis-03 2.2 lets '#' into ifragment (RFC 3986's fragment does not: 3.3 maps it to %23).
FRAGMENT = IPCHAR + "/?#"

# Component name -> the characters its 3987bis rule allows (besides triplets).
IRI_COMPONENTS = {
    "userinfo": USERINFO,
    "host": REG_NAME,
    "path": PATH,
    "query": QUERY,
    "fragment": FRAGMENT,
}

# The same classes restricted to ASCII: what a URI allows (RFC 3986).
URI_USERINFO = UNRESERVED + SUB_DELIMS + ":"
URI_REG_NAME = UNRESERVED + SUB_DELIMS
URI_PATH = UNRESERVED + SUB_DELIMS + ":@/"
URI_QUERY = URI_PATH + "?"
URI_FRAGMENT = URI_QUERY

UNRESERVED_CHARS = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
)
RESERVED_CHARS = frozenset(":/?#[]@!$&'()*+,;=")
