"""DNS forms of non-ASCII host names, label by label, for the fast path.

:func:`scrapy_iri._host.normalize_dns_host` maps a whole name through UTS #46
and then converts each label to an A-label. Names are many, their labels
few (``www``, ``com``, ``рф``, ``中国``, a site's own name under several
suffixes): :func:`dns_form` maps the pieces between ASCII dots one at a time
and converts each label once, through bounded caches. It returns the string
``normalize_dns_host(normalize_host_syntax(host))`` returns, or ``None``
where that raises (the caller then takes the reference path and its error).

Why the pieces give the whole name's mapping: ``idna.uts46_remap`` maps
each code point on its own, then normalizes to NFC. "." maps to itself, and
NFC neither reorders nor composes across it: it is a starter, and no
canonical composition starts or ends with it. So the NFC of pieces joined by
"." is the join of their NFC forms. ``tests/core/test_fastpath.py`` checks
the equality on generated names (combining marks after dots, characters
that map to dots, mixed scripts) and on every corpus.
"""

from __future__ import annotations

from functools import lru_cache

import idna

from .errors import IRIError
from ._grammar import NOT_HOST_NAME_ASCII
from ._host import MAX_IDNA_INPUT, MAX_LABEL_OCTETS, _check_a_label, check_dns_length

LABEL_CACHE_SIZE = 1 << 12
"""Entries of each label cache (pieces mapped, labels converted)."""
LABEL_CACHE_MAX_LENGTH = 2 * MAX_LABEL_OCTETS
"""Longer pieces and labels (never valid ones, bar ignored characters) are
computed each time: the caches stay under about 4 MB whatever the input."""


def _mapped(piece: str) -> str | None:
    """UTS #46 mapping of a piece without ASCII dots, ``None`` if it holds a disallowed character."""
    try:
        return idna.uts46_remap(piece, std3_rules=False)
    except (idna.IDNAError, UnicodeError):
        return None


def _a_label(label: str) -> str | None:
    """What ``normalize_dns_host`` makes of one mapped label, ``None`` if it raises."""
    if label.isascii():
        if label.startswith("xn--"):
            try:
                _check_a_label(label)
            except IRIError:
                return None
        return label
    try:
        return idna.alabel(label).decode("ascii")
    except (idna.IDNAError, UnicodeError):
        return None


_mapped_cached = lru_cache(maxsize=LABEL_CACHE_SIZE)(_mapped)
_a_label_cached = lru_cache(maxsize=LABEL_CACHE_SIZE)(_a_label)


def dns_form(host: str) -> str | None:
    """``normalize_dns_host(normalize_host_syntax(host))`` of a non-ASCII reg-name without ``%``, or ``None``.

    ``None`` exactly where the whole-name path raises :class:`IRIError`.
    (An ASCII name takes another way there: no UTS #46 mapping.)
    """
    # normalize_host_syntax lowercases ASCII letters and percent-encodes the
    # rest; normalize_dns_host decodes that UTF-8 again: the host with its
    # ASCII letters lowercased, which UTS #46 maps as it maps the host.
    if len(host) > MAX_IDNA_INPUT:
        return None
    pieces = [
        _mapped_cached(piece) if len(piece) <= LABEL_CACHE_MAX_LENGTH else _mapped(piece) for piece in host.split(".")
    ]
    if None in pieces:
        return None
    name = ".".join(pieces)
    if not name or NOT_HOST_NAME_ASCII.search(name) is not None:
        return None
    if len(name) > MAX_LABEL_OCTETS and (not name.isascii() or "xn--" in name):  # shorter: within both limits
        try:
            check_dns_length(name, mapped=True)
        except IRIError:
            return None
    labels = []
    for label in name.split("."):
        a_label = _a_label_cached(label) if len(label) <= LABEL_CACHE_MAX_LENGTH else _a_label(label)
        if a_label is None:
            return None
        labels.append(a_label)
    return ".".join(labels)
