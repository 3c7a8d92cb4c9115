"""Fast paths of the ladder: the common case of a crawl, decided by one regex.

Almost every URL a crawler meets is already an ASCII ``http``/``https`` URI
with a lowercase scheme, no userinfo, no dot segments and no escapes that
syntax-based normalization would rewrite. For such a string the reference
path (:func:`scrapy_iri.ladder.canonicalize_reference`: parse, validate,
normalize every component, recompose) returns the input itself, give or take
the fragment, the host's case, an empty path and the port. The functions
here recognise that case with one compiled regex and apply only those edits,
calling the very same normalizers the reference path calls for the host and
the port.

Each fast path returns either exactly what the reference path returns, or
``None``: "not sure, take the reference path". It never raises; anything
that might be an error goes back to the reference path, which produces the
error with its component and position. ``tests/core/test_fastpath.py``
checks the equality on every corpus and on generated strings.

Why the recognised strings need nothing else (a proof sketch, step by step
through the reference path):

* Preprocessing (``lenient=True``, 3987bis sec. 7) changes only controls,
  spaces, ``\\``, characters a component forbids and a stray ``%`` or
  ``#``; the regex admits none of these, so the preprocessed string is the
  input itself and ``lenient`` does not matter.
* Parsing: the regex splits the string where RFC 3986 appendix B splits it
  (the host has no ``:/?#@[``, the path no ``?#``, the query no ``#``), and
  every component holds only characters its 3987bis rule allows, ``%`` only
  as a triplet: parsing succeeds with exactly these components.
* Syntax-based normalization (3987bis 5.3.2): the scheme is lowercase
  already; an ASCII host without ``%`` is only lowercased; the other
  components are ASCII and hold only triplets that are uppercase and encode
  a non-unreserved octet, which ``normalize_component`` leaves as they are;
  a path without dot segments is not changed by ``remove_dot_segments``.
* Scheme-based normalization (5.3.3) for ``http`` and ``https``: the port
  goes through ``normalize_port``, the host through ``normalize_dns_host``
  (the same functions, in the same order), an empty path becomes ``/``.
"""

from __future__ import annotations

import re

from . import charsets as cs
from .errors import IRIError
from .host import normalize_dns_host
from .schemes import SCHEMES, normalize_port

# A triplet the syntax-based rung leaves as it is: uppercase hex digits, and
# not the escape of an unreserved character (those are decoded, RFC 3986
# 2.3): %2D %2E %30-%39 %41-%5A %5F %61-%7A %7E are missing below. The test
# suite checks this against ``percent.normalize_triplets`` for all 256 octets.
_NORMAL_TRIPLET = r"%(?:[01][0-9A-F]|2[0-9A-CF]|3[A-F]|40|5[B-E]|60|7[B-DF]|[89A-F][0-9A-F])"


def _run(chars: str) -> str:
    """Characters of a class and normal triplets, any number (unrolled: no backtracking)."""
    return f"[{chars}]*(?:{_NORMAL_TRIPLET}[{chars}]*)*"


_WEB = re.compile(
    r"(https?)://"  # scheme: already lowercase
    rf"([{cs.URI_REG_NAME}]+)"  # host: ASCII reg-name, no '%' (so not empty, not an IP literal)
    r"(?::([0-9]*))?"  # port
    rf"((?:/{_run(cs.URI_PATH)})?)"  # path-abempty: empty or "/" ... (dot segments: see below)
    rf"(?:\?({_run(cs.URI_QUERY)}))?"  # query
    rf"(?:#({_run(cs.URI_FRAGMENT)}))?"  # fragment
)

# RFC 3986 5.2.4 has work to do only if a segment is "." or ".." (as in resolve.py).
_DOT_SEGMENT = re.compile(r"(?:^|/)\.\.?(?:/|$)")

_web_fullmatch = _WEB.fullmatch
_HTTP = SCHEMES["http"]
_HTTPS = SCHEMES["https"]


def web_form(iri: str, scheme_rung: bool, keep_fragment: bool) -> str | None:
    """The syntax form (``scheme_rung=False``) or scheme form of a common web URI, or ``None``.

    Shortcuts :func:`scrapy_iri.ladder.canonicalize_reference` at the syntax
    and scheme rungs for strings ``_WEB`` recognises (see the module
    docstring for why the result is the same); ``None`` for any other
    string, for a path with dot segments and whenever the host or port
    normalizer reports an error (the reference path then raises it).
    """
    if type(iri) is not str:  # str subclasses and non-strings: the reference path decides
        return None
    m = _web_fullmatch(iri)
    if m is None:
        return None
    scheme, host, port, path, query, fragment = m.groups()
    if "/." in path and _DOT_SEGMENT.search(path):
        return None
    new_host = host.lower()  # normalize_host_syntax() of an ASCII host without '%'
    new_port = port
    new_path = path
    if scheme_rung:
        try:
            if port is not None:
                new_port = normalize_port(port, _HTTPS if len(scheme) == 5 else _HTTP)
            new_host = normalize_dns_host(new_host)
        except IRIError:
            return None
        if not path:
            new_path = "/"
    if new_host == host and new_port == port and new_path == path:
        # Nothing to edit but maybe the fragment: the input is its own canonical form.
        if fragment is None or keep_fragment:
            return iri
        return iri[: m.start(6) - 1]
    out = f"{scheme}://{new_host}" if new_port is None else f"{scheme}://{new_host}:{new_port}"
    out += new_path
    if query is not None:
        out += "?" + query
    if fragment is not None and keep_fragment:
        out += "#" + fragment
    return out
