"""Fast path of the ladder: the common case of a crawl, recognised by one regex.

Almost every URL a crawler meets is an ``http``/``https`` URI or IRI with a
lowercase scheme, no userinfo, no dot segments and no escapes that
syntax-based normalization would rewrite. For such a string the reference
path (:func:`scrapy_iri._ladder.canonicalize_step_by_step`: preprocess, parse,
validate, normalize every component, recompose) changes at most the
fragment (dropped), the host (case, IDNA), the port, an empty path and the
non-ASCII characters (percent-encoded). :func:`web_form` recognises the case
with one compiled regex and makes only those edits, with the very functions
the reference path calls for the host and the port.

It returns exactly what the reference path returns, or ``None``: "not sure,
take the reference path". It never raises: whatever might be an error goes
back to the reference path, which reports it with its component and
position. ``tests/core/test_fastpath.py`` checks the equality on every
corpus and on generated strings.

Why the recognised strings need nothing else (a proof sketch, following the
reference path step by step):

* Preprocessing (``lenient=True``, 3987bis sec. 7) rewrites only controls,
  spaces, ``\\``, characters a component forbids, a ``%`` starting no
  triplet and ``#`` or ``@`` where they cannot be delimiters; the regex
  admits none of these (ucschar is allowed in every component), so the
  preprocessed string is the input and ``lenient`` does not matter.
* Parsing: the regex splits the string where RFC 3986 appendix B splits it
  (the host holds none of ``:/?#@[``, the path none of ``?#``, the query no
  ``#``), and each component holds only characters its 3987bis rule allows,
  ``%`` only in a triplet: parsing succeeds with exactly these components.
* Syntax-based normalization (3987bis 5.3.2): the scheme is lowercase
  already; the host goes through ``normalize_host_syntax`` (for ASCII
  without ``%``, that is ``str.lower``); the other components hold only
  triplets that are uppercase and encode a non-unreserved octet, which
  ``normalize_component`` leaves alone, so it only percent-encodes their
  non-ASCII characters (``encode_non_ascii``); a path without ``.`` or
  ``..`` segments is not changed by ``remove_dot_segments``.
* Scheme-based normalization (5.3.3) for ``http`` and ``https``: the port
  goes through ``normalize_port``, the host through ``normalize_dns_host``
  (skipped where its result is known to be the host itself), an empty path
  becomes ``/``; nothing else (no special rule).
"""

from __future__ import annotations

import re

from . import _grammar as g
from .errors import IRIError
from ._host import normalize_dns_host, normalize_host_syntax
from ._percent import encode_non_ascii
from ._schemes import SCHEMES, normalize_port

# A triplet the syntax-based rung leaves as it is (see the grammar).
_NORMAL_TRIPLET = g.NORMAL_TRIPLET


def _run(chars: str) -> str:
    """Characters of a class and normal triplets, any number (unrolled: no backtracking)."""
    return f"[{chars}]*(?:{_NORMAL_TRIPLET}[{chars}]*)*"


_WEB = re.compile(
    r"(https?)://"  # scheme: already lowercase
    rf"([{g.URI_REG_NAME}{g.UCSCHAR}]+)"  # host: ireg-name without '%' (not empty, not an IP literal)
    r"(?::([0-9]*))?"  # port
    rf"((?:/{_run(g.URI_PATH + g.UCSCHAR)})?)"  # path-abempty (dot segments: checked apart)
    rf"(?:\?({_run(g.URI_QUERY + g.UCSCHAR)}))?"  # query (iprivate: left to the reference)
    rf"(?:#({_run(g.URI_FRAGMENT + g.UCSCHAR)}))?"  # fragment
)
_web_fullmatch = _WEB.fullmatch

_DOT_SEGMENT = g.DOT_SEGMENT

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


def web_form(iri: str, scheme_rung: bool, keep_fragment: bool) -> str | None:
    """The syntax form (``scheme_rung=False``) or scheme form of a common web IRI, or ``None``.

    Shortcuts :func:`scrapy_iri._ladder.canonicalize_step_by_step` at the syntax
    and scheme rungs for the strings ``_WEB`` matches (see the module
    docstring for why the result is the same); ``None`` for any other
    string, for a path with dot segments, and whenever the host or port
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
    new_fragment = fragment if keep_fragment else None
    if iri.isascii():
        new_host = host.lower()  # normalize_host_syntax() of an ASCII host without '%'
        new_path, new_query = path, query
    else:  # ucschar somewhere: the syntax rung percent-encodes it (3987bis 5.3.2.3)
        new_host = normalize_host_syntax(host)
        new_path = encode_non_ascii(path)
        new_query = None if query is None else encode_non_ascii(query)
        if new_fragment is not None:
            new_fragment = encode_non_ascii(new_fragment)
    new_port = port
    if scheme_rung:
        try:
            if port is not None:
                new_port = normalize_port(port, _HTTPS if len(scheme) == 5 else _HTTP)
            if not _dns_form_is_itself(new_host):
                new_host = normalize_dns_host(new_host)
        except IRIError:
            return None
        if not new_path:
            new_path = "/"
    if new_host == host and new_port == port and new_path == path and new_query == query:
        # Nothing to edit before the fragment: the input is its own canonical form,
        if new_fragment == fragment:
            return iri
        if new_fragment is None:  # ... once the fragment is dropped.
            return iri[: m.start(6) - 1]
    out = f"{scheme}://{new_host}" if new_port is None else f"{scheme}://{new_host}:{new_port}"
    out += new_path
    if new_query is not None:
        out += "?" + new_query
    if new_fragment is not None:
        out += "#" + new_fragment
    return out
