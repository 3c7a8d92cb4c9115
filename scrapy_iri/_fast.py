"""Fast path of the ladder: the common case of a crawl, recognised by one regex.

Almost every URL a crawler meets is an ``http``/``https`` URI or IRI without
userinfo, IP literal or escape in the host, and without characters the
grammar forbids. For such a string the reference path
(:func:`scrapy_iri._ladder.canonicalize_step_by_step`: preprocess, parse,
validate, normalize every component, recompose) edits each component on its
own: the scheme's case, the host (case, percent-encoding, IDNA), the port,
the escapes and non-ASCII characters of the path, query and fragment, the
dot segments and an empty path; the fragment may be dropped.
:func:`web_form` recognises the case with one compiled regex and makes
those edits with the very functions the reference path calls on each
component, skipping the ones known to change nothing.

It returns exactly what the reference path returns, or ``None``: "not sure,
take the reference path". It never raises: whatever might be an error goes
back to the reference path, which reports it with its component and
position. ``tests/core/test_fastpath.py`` checks the equality on every
corpus and on generated strings, IRIs in many scripts among them.

Why the recognised strings need nothing else (a proof sketch, following the
reference path step by step):

* Preprocessing (``lenient=True``, 3987bis sec. 7) rewrites only controls,
  spaces, ``\\``, lone surrogates, characters a component forbids, a ``%``
  starting no triplet and ``@`` in the authority; the regex admits none of
  these (ucschar is allowed in every component, ``%`` only in a triplet,
  ``@`` only after the host), so the preprocessed string is the input and
  ``lenient`` does not matter.
* Parsing: the regex splits the string where RFC 3986 appendix B splits it
  (the scheme holds no ``:``, the host none of ``:/?#@[``, the path none of
  ``?#``, the query no ``#``), and each component holds only characters its
  3987bis rule allows: parsing succeeds with exactly these components, no
  userinfo, a reg-name host and a path that is empty or starts with ``/``.
* Syntax-based normalization (3987bis 5.3.2, ``normalize_syntax_based``):
  the scheme is lowercased; the host goes through ``normalize_host_syntax``
  (for ASCII without ``%``: ``str.lower``); path, query and fragment go
  through ``normalize_component``, which returns an ASCII string without
  ``%`` unchanged; the fragment holds no ``#`` to escape; the path, which
  has an authority before it, goes through ``remove_dot_segments``, which
  changes nothing unless the path holds ``/.``.
* Scheme-based normalization (5.3.3) for ``http`` and ``https``: the port
  goes through ``normalize_port``, the host through ``normalize_dns_host``
  (skipped where its result is known to be the host itself), an empty path
  becomes ``/``; nothing else (no special rule).

Non-ASCII hosts take both host steps through one cache (``_idn_host_forms``),
bounded like the host caches of :mod:`scrapy_iri._host`.
"""

from __future__ import annotations

import re
from functools import lru_cache

from . import _grammar as g
from .errors import IRIError
from ._host import HOST_CACHE_MAX_LENGTH, normalize_dns_host, normalize_host_syntax
from ._idn import dns_form
from ._percent import encode_iri_chars, normalize_triplets
from ._resolve import remove_dot_segments
from ._schemes import SCHEMES, normalize_port

_TRIPLET = r"%[0-9A-Fa-f]{2}"


def _run(chars: str) -> str:
    """Characters of a class and triplets, any number (unrolled: no backtracking)."""
    return f"[{chars}]*(?:{_TRIPLET}[{chars}]*)*"


# Lowercase ASCII hosts have a group of their own, tried first: the common
# case then needs no case mapping. Possessive repeats: what follows a host
# (":", "/", "?", "#", the end) is never a host character. The tail (path,
# query and fragment) is a group too: the fast path normalizes it whole.
_WEB = re.compile(
    r"([Hh][Tt][Tt][Pp][Ss]?)://"  # 1 scheme, any case
    rf"(?:([a-z0-9\-._~{g.SUB_DELIMS}]++)|([{g.URI_REG_NAME}{g.UCSCHAR}]++))"  # 2, 3 host: ireg-name without '%'
    r"(?::([0-9]*+))?"  # 4 port
    rf"(((?:/{_run(g.URI_PATH + g.UCSCHAR)})?)"  # 5 tail, 6 path-abempty
    rf"(?:\?{_run(g.URI_QUERY + g.UCSCHAR)})?"  # query (iprivate: left to the reference)
    rf"(?:#({_run(g.URI_FRAGMENT + g.UCSCHAR)}))?)"  # 7 fragment
)
_web_fullmatch = _WEB.fullmatch

_HTTP = SCHEMES["http"]
_HTTPS = SCHEMES["https"]


def _dns_form_is_itself(host: str) -> bool:
    """Whether ``normalize_dns_host(host) == host`` is known without calling it.

    True for a syntax-normal (so lowercase) ASCII name without ``%`` and
    without ``xn--``: ``normalize_dns_host`` only lowercases such a name and
    checks its A-labels (``tests/core/test_fastpath.py`` pins this down).
    Skipping the call spares the host-name cache the ASCII names of a crawl.
    """
    return host.isascii() and "%" not in host and "xn--" not in host


_dns_form_cached = lru_cache(maxsize=1 << 14)(dns_form)


def _idn_host_form(host: str, scheme_rung: bool) -> str | None:
    """The syntax or scheme form of a non-ASCII host without ``%``, ``None`` if the scheme rung rejects it.

    The scheme form is ``normalize_dns_host(normalize_host_syntax(host))``,
    computed label by label (:func:`scrapy_iri._idn.dns_form`) and cached
    by the host as written, within the bounds of the other host caches.
    """
    if not scheme_rung:
        return normalize_host_syntax(host)
    if len(host) <= HOST_CACHE_MAX_LENGTH:
        return _dns_form_cached(host)
    return dns_form(host)


def web_form(iri: str, scheme_rung: bool, keep_fragment: bool) -> str | None:
    """The syntax form (``scheme_rung=False``) or scheme form of a common web IRI, or ``None``.

    Shortcuts :func:`scrapy_iri._ladder.canonicalize_step_by_step` at the syntax
    and scheme rungs for the strings ``_WEB`` matches (see the module
    docstring for why the result is the same); ``None`` for any other
    string, and whenever the host or port normalizer reports an error (the
    reference path then raises it).
    """
    if type(iri) is not str:  # str subclasses and non-strings: the reference path decides
        return None
    m = _web_fullmatch(iri)
    if m is None:
        return None
    scheme, host, other_host, port, tail, path, fragment = m.groups()
    if (
        host is not None
        and port is None
        and scheme.islower()
        and iri.isascii()
        and "%" not in tail
        and "/." not in path
        and (not scheme_rung or (path and "xn--" not in host))
    ):
        # Lowercase scheme and host (_dns_form_is_itself), nothing to encode or
        # normalize, no dot segment, no port, a path if the scheme rung needs
        # one: the input is its own canonical form, once the fragment is dropped.
        if fragment is None or keep_fragment:
            return iri
        return iri[: len(iri) - len(fragment) - 1]
    if host is None:
        host = other_host
    if fragment is not None and not keep_fragment:
        tail = tail[: len(tail) - len(fragment) - 1]
    return _edited(scheme, host, port, tail, not path, scheme_rung)


def _edited(scheme: str, host: str, port: str | None, tail: str, no_path: bool, scheme_rung: bool) -> str | None:
    """:func:`web_form` of the components of a match with something to edit.

    ``tail`` is the path, query and fragment (if kept) with their
    delimiters; they are normalized as one string: each step of
    ``normalize_component`` acts on characters and on triplets, and no
    triplet spans the ``?`` or ``#`` between two components, so the form
    of the tail is the forms of the components joined by the same
    delimiters. ``encode_iri_chars`` is ``encode_non_ascii`` for them.
    """
    if not scheme.islower():
        scheme = scheme.lower()
    if host.isascii():
        host = host.lower()  # normalize_host_syntax() of an ASCII host without '%'
        if scheme_rung and not _dns_form_is_itself(host):
            try:
                host = normalize_dns_host(host)
            except IRIError:
                return None
    else:
        host = _idn_host_form(host, scheme_rung)
        if host is None:
            return None
    if "%" in tail:
        tail = normalize_triplets(tail)
    if not tail.isascii():  # ucschar: the syntax rung percent-encodes it (3987bis 5.3.2.3)
        tail = encode_iri_chars(tail)
    if "/." in tail:
        tail = _without_dot_segments(tail)
    if scheme_rung:
        if port is not None:
            try:
                port = normalize_port(port, _HTTPS if len(scheme) == 5 else _HTTP)
            except IRIError:
                return None
        if no_path:  # the form of an empty path is empty too
            tail = "/" + tail
    if port is None:
        return f"{scheme}://{host}{tail}"
    return f"{scheme}://{host}:{port}{tail}"


def _without_dot_segments(tail: str) -> str:
    """``remove_dot_segments`` applied to the path of a normalized tail (RFC 3986 5.2.4)."""
    cut = len(tail)
    for delimiter in "?#":
        found = tail.find(delimiter, 0, cut)
        if found >= 0:
            cut = found
    return remove_dot_segments(tail[:cut]) + tail[cut:]
