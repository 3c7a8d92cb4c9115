"""Fast path of the ladder: the common case of a crawl, recognised by a regex.

Almost every URL a crawler meets is an ``http``/``https`` URI or IRI without
userinfo or IP literal, and without characters the grammar forbids. For
such a string the reference path
(:func:`scrapy_iri._ladder.canonicalize_step_by_step`: preprocess, parse,
validate, normalize every component, recompose) edits each component on its
own: the scheme's case; the host's case, escapes and IDNA form; the port;
the escapes and non-ASCII characters of the path, query and fragment; dot
segments and an empty path; the fragment may be dropped. :func:`web_form`
recognises the case with one compiled regex (two: the commonest case of
all, a URL that is its own form, has one of its own) and makes those edits
with the functions the reference path calls on each component, or with
faster ones proven equal to them, skipping the ones known to change
nothing.

It returns exactly what the reference path returns, or ``None``: "not sure,
take the reference path". It never raises: whatever might be an error goes
back to the reference path, which reports it with its component and
position. ``tests/core/test_fastpath.py`` checks the equality on every
corpus and on generated strings, IRIs in many scripts among them.

Why the recognised strings need nothing else (a proof sketch, following the
reference path step by step):

* Preprocessing (``lenient=True``, 3987bis sec. 7) rewrites only controls,
  spaces, ``\\``, lone surrogates, characters a component forbids, a ``%``
  starting no triplet and ``@`` in the authority; the regexes admit none of
  these (ucschar is allowed in every component, ``@`` only after the host;
  a ``%`` starting no triplet is turned away by ``_bad_percent``), so the
  preprocessed string is the input and ``lenient`` does not matter.
* Parsing: the regex splits the string where RFC 3986 appendix B splits it
  (the scheme holds no ``:``, the host none of ``:/?#@[``, the path none of
  ``?#``, the query no ``#``), and each component holds only characters its
  3987bis rule allows: parsing succeeds with exactly these components, no
  userinfo, a reg-name host and a path that is empty or starts with ``/``.
* Syntax-based normalization (3987bis 5.3.2, ``normalize_syntax_based``):
  the scheme is lowercased; the host goes through ``normalize_host_syntax``
  (for ASCII without ``%``: ``str.lower``); path, query and fragment go
  through ``normalize_component``, which returns an ASCII string without
  ``%`` unchanged (``encode_iri_chars`` and ``normalize_encoded_utf8`` are
  the same function on the strings they get here); the fragment holds no
  ``#`` to escape; the path, which has an authority before it, goes
  through ``remove_dot_segments``, which changes nothing unless the path
  holds ``/.``.
* Scheme-based normalization (5.3.3) for ``http`` and ``https``: the port
  goes through ``normalize_port``, the host through ``normalize_dns_host``
  (skipped where its result is known to be the host itself, and computed
  label by label for IDNs as written, :mod:`scrapy_iri._idn`), an empty
  path becomes ``/``; nothing else (no special rule).
"""

from __future__ import annotations

import re
from functools import lru_cache

from . import _grammar as g
from .errors import IRIError
from ._host import HOST_CACHE_MAX_LENGTH, decode_utf8_escapes, normalize_dns_host, normalize_host_syntax
from ._idn import dns_form
from ._percent import encode_iri_chars, normalize_encoded_utf8, normalize_triplets
from ._resolve import remove_dot_segments
from ._schemes import SCHEMES, normalize_port

_TRIPLET = r"%[0-9A-Fa-f]{2}"
_HOST = g.URI_REG_NAME + g.UCSCHAR


def _run(chars: str) -> str:
    """Characters of a class and triplets, any number (unrolled: no backtracking)."""
    return f"[{chars}]*+(?:{_TRIPLET}[{chars}]*+)*+"


# The tail (path, query and fragment) is one group: the fast path normalizes
# it whole. A '%' in the tail is checked apart (see web_form): a class
# without it would cost every URL more time than the check costs those
# with one. Possessive repeats: what follows a run is never in its class.
_WEB = re.compile(
    r"([Hh][Tt][Tt][Pp][Ss]?)://"  # 1 scheme, any case
    rf"((?:[{_HOST}]|{_TRIPLET}){_run(_HOST)})"  # 2 host: ireg-name (not empty, not an IP literal)
    r"(?::([0-9]*+))?"  # 3 port
    rf"((?:/[{g.URI_PATH}{g.UCSCHAR}%]*+)?"  # 4 tail: path-abempty,
    rf"(?:\?[{g.URI_QUERY}{g.UCSCHAR}%]*+)?"  # query (iprivate: left to the reference),
    rf"(?:#([{g.URI_FRAGMENT}{g.UCSCHAR}%]*+))?)"  # 5 fragment
)
_web_fullmatch = _WEB.fullmatch

# The most common case of all, in which the input is its own form (up to
# the fragment): lowercase scheme and host, no port, no '%', ASCII, a path
# with no dot segment ("." or ".." between "/" and "/", "?", "#" or the end).
_SEGMENT = r"/(?!\.\.?(?:[/?#]|\Z))[A-Za-z0-9\-._~!$&'()*+,;=:@]*+"
_PLAIN = re.compile(
    rf"https?://[a-z0-9\-._~{g.SUB_DELIMS}]++(?:{_SEGMENT})++"
    r"(?:\?[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*+)?"
    r"(?:#([A-Za-z0-9\-._~!$&'()*+,;=:@/?]*+))?"  # 1 fragment
)
_plain_fullmatch = _PLAIN.fullmatch

# A '%' that starts no triplet, or a triplet of an ASCII octet: either sends
# the tail the long way (or back to the reference path).
_not_high_triplet = re.compile(r"%(?:[0-7]|(?![0-9A-Fa-f]{2}))").search
_bad_percent = re.compile(r"%(?![0-9A-Fa-f]{2})").search

_HTTP = SCHEMES["http"]
_HTTPS = SCHEMES["https"]


def _dns_host(host: str) -> str | None:
    """``normalize_dns_host(normalize_host_syntax(host))`` of a reg-name, ``None`` where it raises.

    Non-ASCII names (IDNs as written, or written with UTF-8 escapes) are
    mapped label by label (:func:`scrapy_iri._idn.dns_form`). An ASCII name
    without ``%`` nor ``xn--`` is its own form once lowercased:
    ``normalize_dns_host`` only lowercases such a name, checks its A-labels
    and, if it holds ``xn--``, its length.
    """
    if "%" not in host:
        if not host.isascii():
            return dns_form(host)
        host = host.lower()
        if "xn--" not in host:
            return host
        syntax = host
    else:
        # normalize_dns_host decodes the UTF-8 escapes of the syntax form
        # first (whose ASCII letters are lowercase), then maps what it got.
        syntax = normalize_host_syntax(host)
        try:
            decoded = decode_utf8_escapes(syntax)
        except IRIError:
            return None
        if not decoded.isascii():
            # A '%' left (an escaped ASCII octet) survives the mapping and is refused.
            return None if "%" in decoded else dns_form(decoded)
    try:
        return normalize_dns_host(syntax)
    except IRIError:
        return None


_dns_host_cached = lru_cache(maxsize=1 << 14)(_dns_host)
"""Scheme forms of hosts by the host as written (not lowercase-ASCII-only ones), keys of
at most ``HOST_CACHE_MAX_LENGTH`` characters: bounded as the caches of :mod:`scrapy_iri._host`
are, among them the one ``normalize_host_syntax`` keeps of the syntax forms."""


def web_form(iri: str, scheme_rung: bool, keep_fragment: bool) -> str | None:
    """The syntax form (``scheme_rung=False``) or scheme form of a common web IRI, or ``None``.

    Shortcuts :func:`scrapy_iri._ladder.canonicalize_step_by_step` at the syntax
    and scheme rungs for the strings ``_WEB`` matches (see the module
    docstring for why the result is the same); ``None`` for any other
    string, and whenever the host or port normalizer reports an error (the
    reference path then raises it).

    The path, query and fragment (if kept) are normalized as one string, the
    tail: each step of ``normalize_component`` acts on characters and on
    triplets, and no triplet spans the ``?`` or ``#`` between two
    components, so the form of the tail is the forms of the components
    joined by the same delimiters.
    """
    if type(iri) is not str:  # str subclasses and non-strings: the reference path decides
        return None
    if iri.isascii():
        m = _plain_fullmatch(iri)
        if m is not None and "xn--" not in iri:  # normalize_dns_host(host) is host: see _dns_host
            # Nothing to edit: the input is its own form, once the fragment is dropped.
            end = m.start(1) - 1
            return iri if end < 0 or keep_fragment else iri[:end]
    m = _web_fullmatch(iri)
    if m is None:
        return None
    scheme, host, port, tail, fragment = m.groups()
    # normalize_component (3987bis 5.3.2.1, 5.3.2.3): escapes normalized, ucschar percent-encoded
    if "%" in tail:
        if _not_high_triplet(tail) is None:
            normalize = normalize_encoded_utf8
        elif _bad_percent(tail) is None:
            normalize = _normalize_escapes
        else:  # not an IRI (in the fragment too, dropped or not): the reference path says why
            return None
    elif tail.isascii():
        normalize = None
    else:
        normalize = encode_iri_chars
    if host.isascii() and "%" not in host:  # no cache: lowercasing costs less than a lookup
        host = host.lower()
        if scheme_rung and "xn--" in host:  # see _dns_host
            try:
                host = normalize_dns_host(host)
            except IRIError:
                return None
    elif not scheme_rung:
        host = normalize_host_syntax(host)
    else:
        host = _dns_host_cached(host) if len(host) <= HOST_CACHE_MAX_LENGTH else _dns_host(host)
        if host is None:
            return None
    if fragment is not None and not keep_fragment:
        tail = tail[: len(tail) - len(fragment) - 1]
    if normalize is not None:
        tail = normalize(tail)
    if "/." in tail:
        tail = _without_dot_segments(tail)
    if not scheme.islower():
        scheme = scheme.lower()
    if scheme_rung:
        if port is not None:
            try:
                port = normalize_port(port, _HTTPS if len(scheme) == 5 else _HTTP)
            except IRIError:
                return None
        if tail[:1] != "/":  # an empty path (its form is empty too): "/"
            tail = "/" + tail
    if port is None:
        return f"{scheme}://{host}{tail}"
    return f"{scheme}://{host}:{port}{tail}"


def _normalize_escapes(tail: str) -> str:
    """``normalize_component`` of a tail with escapes of ASCII octets (``encode_iri_chars`` being ``encode_non_ascii`` there)."""
    return encode_iri_chars(normalize_triplets(tail))


def _without_dot_segments(tail: str) -> str:
    """``remove_dot_segments`` applied to the path of a normalized tail (RFC 3986 5.2.4)."""
    cut = len(tail)
    for delimiter in "?#":
        found = tail.find(delimiter, 0, cut)
        if found >= 0:
            cut = found
    return remove_dot_segments(tail[:cut]) + tail[cut:]
