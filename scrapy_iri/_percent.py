"""Percent-encoding (RFC 3986 sec. 2.1, 2.3, 6.2.2; 3987bis sec. 3.3, 5.3.2.3)."""

from __future__ import annotations

import re

try:
    from codecs import escape_decode  # the codec of Python's bytes literals (CPython, PyPy)
except ImportError:  # a Python without it takes the regex way
    escape_decode = None

from ._grammar import (
    LOWER_HEX_TRIPLET,
    NON_ASCII_TRIPLET_RUN,
    NOT_NORMAL_TRIPLET,
    TRIPLET_RUN,
    UNRESERVED_TRIPLET,
    UNDECODABLE_OCTETS,
    UNRESERVED_CHARS,
)


def _triplet_table() -> dict[str, str]:
    """Every spelling of every triplet -> its syntax-normal form (5.3.2.1, 5.3.2.3)."""
    table = {}
    for octet in range(256):
        hi, lo = f"{octet:02X}"
        normal = chr(octet) if chr(octet) in UNRESERVED_CHARS else f"%{hi}{lo}"
        for h in {hi, hi.lower()}:
            for low in {lo, lo.lower()}:
                table[f"%{h}{low}"] = normal
    return table


_NORMAL_TRIPLET = _triplet_table()

# str.translate tables indexed by octet (a str decoded as Latin-1 holds one
# character per octet): the whole string is rewritten in C, with no Python
# call per character or per match.
_ESCAPE_HIGH_OCTETS = [chr(octet) for octet in range(0x80)] + [f"%{octet:02X}" for octet in range(0x80, 0x100)]
"""Octet -> itself if ASCII, else its triplet (uppercase hex digits)."""
_NORMAL_OCTET = [_NORMAL_TRIPLET[f"%{octet:02X}"] for octet in range(0x100)]
"""Octet -> the syntax-normal spelling of its triplet: the character if unreserved, else ``%HH``."""


def pct_encode_octets(data: bytes) -> str:
    """Each octet as ``%HH`` with uppercase hex digits (3987bis 3.3)."""
    # bytes.hex("%") writes "c3%a9": the same digits, joined by the separator.
    return "%" + data.hex("%").upper() if data else ""


def encode_match(m: re.Match[str]) -> str:
    """The UTF-8 octets of a match, percent-encoded (lone surrogates as their would-be octets)."""
    return pct_encode_octets(m.group().encode("utf-8", "surrogatepass"))


def encode_non_ascii(text: str) -> str:
    """Percent-encode the UTF-8 octets of every non-ASCII character (3987bis 3.3).

    Lone surrogates (only reachable in lenient mode) are encoded as their
    would-be UTF-8 octets, which no valid IRI produces, so nothing merges.
    """
    if text.isascii():
        return text
    if _UNPARKABLE.search(text) is None:
        return encode_iri_chars(text)
    # Latin-1 maps octet n to U+00nn: ASCII octets stay, the others are escaped by the table.
    return text.encode("utf-8", "surrogatepass").decode("latin-1").translate(_ESCAPE_HIGH_OCTETS)


# encode_iri_chars: the letters the codec's escapes are made of ('x' and the
# hex digits a-f) move to control characters, out of the way, and back.
_PARK = bytes.maketrans(b"xabcdef", b"\x01\x02\x03\x04\x05\x06\x07")
_UNPARK = bytes.maketrans(b"\\abcdef\x01\x02\x03\x04\x05\x06\x07", b"%ABCDEFxabcdef")
_UNPARKABLE = re.compile(r"[\x01-\x07\\]")
"""What text must not hold for the parking to work."""


def encode_iri_chars(text: str) -> str:
    """:func:`encode_non_ascii` of text without ``\\`` and U+0001-U+0007 (so of any IRI component).

    Six passes in C, none per character in Python: the UTF-8 octets; the
    letters ``x`` and ``a``-``f`` parked on U+0001-U+0007; each octet >= 0x80
    written ``\\xhh`` by the codec; then one table turns ``\\`` into ``%``
    and the escapes' ``a``-``f`` into ``A``-``F``, drops their ``x`` and
    brings the parked letters back.
    """
    if text.isascii():
        return text
    parked = text.encode("utf-8", "surrogatepass").translate(_PARK).decode("latin-1")
    return parked.encode("ascii", "backslashreplace").translate(_UNPARK, b"x").decode("ascii")


def _escape_high_octets(octets: bytes) -> str:
    """``octets`` as ASCII text, each octet >= 0x80 as ``%HH`` (none of 0x01-0x07 and ``\\`` in them)."""
    parked = octets.translate(_PARK).decode("latin-1")
    return parked.encode("ascii", "backslashreplace").translate(_UNPARK, b"x").decode("ascii")


def normalize_triplets(text: str) -> str:
    """Uppercase the hex digits of each triplet and decode unreserved ones (RFC 3986 6.2.2)."""
    if "%" not in text or NOT_NORMAL_TRIPLET.search(text) is None:
        return text
    return TRIPLET_RUN.sub(_normalize_triplet_run, text)


def _normalize_triplet_run(m: re.Match[str]) -> str:
    """A run of triplets, each in its syntax-normal spelling."""
    run = m.group().upper()
    if UNRESERVED_TRIPLET.search(run) is None:  # the common case: only the hex digits change
        return run
    return decode_octets(run).decode("latin-1").translate(_NORMAL_OCTET)  # one table lookup per octet


def normalize_encoded_utf8(text: str) -> str:
    """:func:`normalize_component` of text whose ``%`` all start triplets of octets >= 0x80.

    The text must not hold ``\\``, U+0001-U+0007 nor lone surrogates (no
    IRI component does). Such triplets are only uppercased, and the
    non-ASCII characters become such triplets: so the form is the octets of
    the text, with the triplets decoded, each octet >= 0x80 written
    ``%HH``. In C: ``%`` becomes ``\\x`` for the codec that reads Python's
    bytes literals, and the passes of :func:`encode_iri_chars` write the
    octets.
    """
    if escape_decode is None:
        return encode_iri_chars(normalize_triplets(text))
    octets = escape_decode(text.encode("utf-8").replace(b"%", b"\\x"))[0]
    return _escape_high_octets(octets)


def normalize_component(text: str) -> str:
    """Syntax-normal form of a component other than the host (3987bis 5.3.2.1, 5.3.2.3)."""
    if "%" not in text and text.isascii():
        return text
    # Equal to normalize_triplets(encode_non_ascii(text)), cheaper: the
    # triplets encode_non_ascii writes (uppercase, octets >= 0x80) are already
    # normal, and a non-ASCII character is never a hex digit, so neither step
    # creates or destroys a triplet the other one would see.
    return encode_non_ascii(normalize_triplets(text))


def uppercase_triplets(text: str) -> str:
    """Uppercase the hex digits of triplets, leaving everything else alone."""
    if "%" not in text:
        return text
    return LOWER_HEX_TRIPLET.sub(lambda m: m.group().upper(), text)


def decode_octets(run: str) -> bytes:
    """``"%C3%BC"`` -> ``b"\\xc3\\xbc"``: the octets of a run of triplets."""
    return bytes.fromhex(run.replace("%", ""))


def _reencode(m: re.Match[str]) -> str:
    # surrogateescape gives back the octets a lone surrogate stands for
    return pct_encode_octets(m.group().encode("utf-8", "surrogateescape"))


def decode_utf8_run(run: str, keep_encoded: re.Pattern[str] = UNDECODABLE_OCTETS) -> str:
    """Decode a run of escapes of octets >= 0x80 as UTF-8 (3987bis 3.7 steps 3-5).

    Octets that are not part of a strictly legal UTF-8 sequence (overlong
    forms, surrogates, beyond U+10FFFF, truncated sequences) stay escaped,
    and so do the characters ``keep_encoded`` matches (step 4); it must
    match the lone surrogates ``U+DC80-U+DCFF`` that stand for undecodable
    octets. Escapes written here are uppercase.
    """
    text = decode_octets(run).decode("utf-8", "surrogateescape")
    return keep_encoded.sub(_reencode, text)


def has_non_ascii_escape(text: str) -> bool:
    """Whether ``text`` holds an escape of an octet >= 0x80."""
    return NON_ASCII_TRIPLET_RUN.search(text) is not None
