"""How an IRI is shown to a person (3987bis sec. 3.7, 4.1, 4.2 and 8.6).

The display form is the IRI of 3.7 (escapes decoded where the result is
allowed in an IRI and maps back; ``xn--`` labels as U-labels where valid),
made safe for the Unicode Bidirectional Algorithm:

* 4.2: a component that mixes right-to-left characters (bidi class R or AL)
  with left-to-right ones (L), or holds right-to-left characters without
  starting and ending with one, is shown in URI form, the whole component:
  percent-encoded (3.3), or for a label of a DNS host name its A-label
  (3.4), which is what ``to_uri`` writes for it. The components are the
  userinfo, each host label, each path segment, the query and the fragment.
* 4.1: a string that still holds a right-to-left character is shown inside
  LEFT-TO-RIGHT EMBEDDING ... POP DIRECTIONAL FORMATTING, so that it is
  rendered as if in a left-to-right context; a string without one needs no
  embedding.

What is shown, without the embedding characters, maps back with ``to_uri``
to the URI of the IRI; those two characters are not part of the IRI (4.1)
and do not belong in data files.
"""

from __future__ import annotations

import unicodedata

from .errors import IRIError
from ._host import normalize_dns_host, normalize_host_syntax
from ._mapping import has_dns_host, to_iri
from ._parse import IRIReference, parse, recompose
from ._percent import encode_non_ascii

LRE = "\u202a"
"""U+202A LEFT-TO-RIGHT EMBEDDING: opens the display form of a bidi IRI."""
PDF = "\u202c"
"""U+202C POP DIRECTIONAL FORMATTING: closes it."""

_RTL = frozenset({"R", "AL"})


def _is_rtl(char: str) -> bool:
    return unicodedata.bidirectional(char) in _RTL


def has_rtl(text: str) -> bool:
    """Whether ``text`` holds a right-to-left character (bidi class R or AL)."""
    return not text.isascii() and not _RTL.isdisjoint(map(unicodedata.bidirectional, text))


def bidi_safe_component(component: str) -> str:
    """A component as 4.2 lets it be shown: as it is, or percent-encoded whole.

    Kept as it is when it has no right-to-left character, or when it has
    no left-to-right character and starts and ends with right-to-left ones
    (digits and punctuation between them are fine: 4.4 example 7).
    """
    if component.isascii():
        return component
    classes = set(map(unicodedata.bidirectional, component))
    if not classes & _RTL:
        return component
    if "L" in classes or not (_is_rtl(component[0]) and _is_rtl(component[-1])):
        return encode_non_ascii(component)
    return component


def _segments(text: str, separator: str) -> str:
    if text.isascii():
        return text
    return separator.join(bidi_safe_component(part) for part in text.split(separator))


def _dns_labels(host: str) -> str:
    """Each label of a DNS host as 4.2 lets it be shown; in URI form, that is its A-label (3.4)."""
    if host.isascii():
        return host
    labels = host.split(".")
    for index, label in enumerate(labels):
        if bidi_safe_component(label) != label:
            try:
                labels[index] = normalize_dns_host(normalize_host_syntax(label))
            except IRIError:
                labels[index] = encode_non_ascii(label)
    return ".".join(labels)


def _optional(text: str | None) -> str | None:
    return None if text is None else bidi_safe_component(text)


def to_display(iri: str, *, lenient: bool = False) -> str:
    """The form of an IRI or URI to show to a person (3987bis 4.1, 4.2, 8.6).

    >>> to_display("http://www.example.org/D%C3%BCrst")
    'http://www.example.org/Dürst'

    Raises :class:`~scrapy_iri.errors.IRIError` for a string that is not an
    IRI reference (after sec. 7 preprocessing with ``lenient=True``).
    """
    if lenient:
        iri = parse(iri, lenient=True).unsplit()
    ref = parse(to_iri(iri))
    host = ref.host
    if host is not None and not host.startswith("["):
        host = _dns_labels(host) if has_dns_host(ref) else _segments(host, ".")
    shown = recompose(
        IRIReference(
            ref.scheme,
            _optional(ref.userinfo),
            host,
            ref.port,
            _segments(ref.path, "/"),
            _optional(ref.query),
            _optional(ref.fragment),
        )
    )
    return f"{LRE}{shown}{PDF}" if has_rtl(shown) else shown


def strip_embedding(shown: str) -> str:
    """The IRI of a display form: without the LRE ... PDF around it, if any."""
    if shown.startswith(LRE) and shown.endswith(PDF):
        return shown[1:-1]
    return shown
