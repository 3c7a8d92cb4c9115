"""Mapping IRIs to URIs (3987bis sec. 3.3-3.6) and URIs to IRIs (sec. 3.7)."""

from __future__ import annotations

import codecs
import re

from .errors import IRIError
from ._grammar import ASCII_TRIPLET, NON_ASCII_TRIPLET_RUN, NOT_IRI_CHARS, UNRESERVED_CHARS
from ._host import normalize_dns_host, normalize_host_syntax, to_unicode_host
from ._parse import IRIReference, parse, recompose
from ._percent import decode_utf8_run, encode_non_ascii
from ._schemes import SCHEMES, placed


def has_dns_host(ref: IRIReference) -> bool:
    """Whether the reference's scheme says its reg-name is a DNS name (3987bis 3.4)."""
    rule = SCHEMES.get((ref.scheme or "").lower())
    return rule is not None and rule.dns_host


def map_host_to_uri(ref: IRIReference) -> str | None:
    """3987bis 3.4: ToASCII for a DNS ireg-name; 3.3 percent-encoding otherwise.

    A DNS host with non-ASCII characters is first put in syntax-normal form,
    as the ladder does: escapes of unreserved characters (``%2E``) are
    decoded, since UTS #46 would see their ``%`` as part of the name.
    """
    host = ref.host
    if host is None or host.isascii():
        return host
    if has_dns_host(ref):
        return normalize_dns_host(normalize_host_syntax(host))
    return encode_non_ascii(host)


def to_uri(iri: str, *, lenient: bool = False) -> str:
    """Map an IRI reference to a URI reference (3987bis 3.6).

    Non-ASCII characters become percent-encoded UTF-8, DNS host names become
    A-labels (IDNA2008 with UTS #46); existing escapes, reserved characters
    and everything else already allowed in URIs are left untouched, so the
    mapping is the identity on URIs and idempotent.
    """
    ref = parse(iri, lenient=lenient)
    text = recompose(ref) if lenient else iri
    if text.isascii() and (ref.fragment is None or "#" not in ref.fragment):
        return text
    try:
        host = map_host_to_uri(ref)
    except IRIError as exc:
        raise placed(exc, iri, lenient=lenient) from None
    return recompose(
        IRIReference(
            ref.scheme,
            None if ref.userinfo is None else encode_non_ascii(ref.userinfo),
            host,
            ref.port,
            encode_non_ascii(ref.path),
            None if ref.query is None else encode_non_ascii(ref.query),
            None if ref.fragment is None else fragment_to_uri(ref.fragment),
        )
    )


def fragment_to_uri(fragment: str) -> str:
    """3.3 for an ifragment: non-ASCII and '#' (allowed in IRI fragments only) percent-encoded."""
    return encode_non_ascii(fragment).replace("#", "%23")


def _decode_unreserved(m: re.Match[str]) -> str:
    """Step 2 for an ASCII octet: only unreserved characters are decoded."""
    char = chr(int(m.group()[1:], 16))
    return char if char in UNRESERVED_CHARS else m.group()


def _to_iri_component(text: str | None, component: str) -> str | None:
    """3987bis 3.7 steps 2-5 on one component."""
    if text is None or "%" not in text:
        return text
    keep = NOT_IRI_CHARS[component]
    text = NON_ASCII_TRIPLET_RUN.sub(lambda m: decode_utf8_run(m.group(), keep), text)
    return ASCII_TRIPLET.sub(_decode_unreserved, text)


def _dns_host_to_iri(given: str, decoded: str) -> str:
    """3.7 step 6, and the check 3.7 asks for: the IRI's host must map back to the URI's.

    ``decoded`` is ``given`` after steps 2-5. Its ``xn--`` labels become
    U-labels where valid; if the result does not map back (an escape
    decoded into an invalid IDN, a U-label beside a label UTS #46 refuses,
    ``xn--fa-hia.a~b``), the host is kept as the URI wrote it.
    """
    host = to_unicode_host(decoded)
    if host.isascii():
        return host  # to_uri leaves ASCII hosts alone
    form = _dns_form(host)
    return host if form is not None and form == _dns_form(given) else given


def _dns_form(host: str) -> str | None:
    """What to_uri writes for a DNS host (and the scheme rung), or None if it refuses it."""
    try:
        return normalize_dns_host(normalize_host_syntax(host))
    except IRIError:
        return None


def to_iri(uri: str) -> str:
    """Convert a URI reference to an IRI reference (3987bis 3.7, steps 1-6).

    Escapes of UTF-8 characters allowed in IRIs and of unreserved ASCII are
    decoded; escapes of reserved characters, of octets that are not strictly
    legal UTF-8, and of characters IRIs forbid (bidi controls, private use
    outside the query, ...) stay encoded; ``xn--`` labels of DNS host names
    become U-labels where they are valid. The result always maps back to a
    URI with :func:`to_uri`: a DNS host that would not is kept as written.
    """
    ref = parse(uri)
    host = ref.host
    if host and not host.startswith("["):
        host = _to_iri_component(host, "host")
        if has_dns_host(ref):
            host = _dns_host_to_iri(ref.host, host)
    return recompose(
        IRIReference(
            ref.scheme,
            _to_iri_component(ref.userinfo, "userinfo"),
            host,
            ref.port,
            _to_iri_component(ref.path, "path"),
            _to_iri_component(ref.query, "query"),
            _to_iri_component(ref.fragment, "fragment"),
        )
    )


#: 3987bis 7.2: a document in a Unicode-based charset submits its queries as UTF-8
_UNICODE_CHARSETS = frozenset({"utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"})


def is_unicode_charset(charset: str | None) -> bool:
    """Whether a document in ``charset`` submits its queries as UTF-8: a Unicode-based charset
    (3987bis 7.2), none, or one Python does not know."""
    if not charset:
        return True
    try:
        return codecs.lookup(charset).name in _UNICODE_CHARSETS
    except LookupError:
        return True


def query_in_charset(query: str, charset: str) -> str:
    """3987bis 3.5: non-ASCII query characters as percent-encoded ``charset`` octets (a form
    submitted from a document in that charset).

    A character the charset cannot encode is submitted as browsers do: as
    a numeric character reference, ``%26%2312354%3B`` (``&#12354;``).
    """
    out = []
    for char in query:
        if char.isascii():
            out.append(char)
            continue
        try:
            out.append("".join(f"%{octet:02X}" for octet in char.encode(charset)))
        except UnicodeEncodeError:
            out.append(f"%26%23{ord(char)}%3B")
    return "".join(out)
