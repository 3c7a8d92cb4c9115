"""Percent-encoding (RFC 3986 sec. 2.1, 2.3, 6.2.2; 3987bis sec. 3.3, 5.3.2.3)."""

from __future__ import annotations

import re

from ._grammar import (
    LOWER_HEX_TRIPLET,
    NON_ASCII_RUN,
    NON_ASCII_TRIPLET_RUN,
    NOT_NORMAL_TRIPLET,
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
    return NON_ASCII_RUN.sub(encode_match, text)


def normalize_triplets(text: str) -> str:
    """Uppercase the hex digits of each triplet and decode unreserved ones (RFC 3986 6.2.2)."""
    if "%" not in text:
        return text
    return NOT_NORMAL_TRIPLET.sub(lambda m: _NORMAL_TRIPLET[m.group()], text)  # the others map to themselves


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
