"""The comparison ladder (3987bis sec. 5.3; draft-masinter-iri-equivalence sec. 5).

Each rung's canonical form merges more aliases than the one below it and
never merges what the specs say may differ. The syntax and scheme forms are
ASCII URIs; every form is idempotent, and the scheme form of ``x`` equals the
scheme form of the syntax form of ``x``.
"""

from __future__ import annotations

from enum import IntEnum
from functools import lru_cache
from typing import Protocol

from .errors import IRIError
from ._fast import web_form
from ._host import normalize_host_syntax
from ._lenient import preprocess
from ._parse import IRIReference, parse, recompose
from ._percent import normalize_component
from ._resolve import keep_apart_from_authority, remove_dot_segments
from ._schemes import normalize_scheme_based, placed


class Rung(IntEnum):
    """The rungs, cheapest first (3987bis 5.3.1-5.3.4)."""

    STRING = 0
    SYNTAX = 1
    SCHEME = 2
    PROTOCOL = 3

    @classmethod
    def parse(cls, value: Rung | str) -> Rung:
        """A member from itself or its name, case-insensitively (``"scheme"``)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                pass
        names = ", ".join(repr(r.name.lower()) for r in cls)
        raise ValueError(f"unknown rung {value!r}: choose one of {names}")


class Representatives(Protocol):
    """What the protocol rung needs of an equivalence store: the representative of a scheme form."""

    def representative(self, url: str) -> str: ...


def normalize_syntax_based(ref: IRIReference) -> IRIReference:
    """3987bis 5.3.2: case, percent-encoding and path-segment normalization."""
    host = ref.host
    if host is not None:
        host = normalize_host_syntax(host)
    path = normalize_component(ref.path)
    if path.startswith("/"):
        path = keep_apart_from_authority(remove_dot_segments(path), host)
    return IRIReference(
        ref.scheme.lower() if ref.scheme is not None else None,
        None if ref.userinfo is None else normalize_component(ref.userinfo),
        host,
        ref.port,
        path,
        None if ref.query is None else normalize_component(ref.query),
        None if ref.fragment is None else normalize_component(ref.fragment).replace("#", "%23"),
    )


def canonicalize(
    iri: str,
    rung: Rung | str = Rung.SCHEME,
    *,
    keep_fragment: bool = True,
    lenient: bool = False,
    store: Representatives | None = None,
) -> str:
    """The canonical form of an absolute IRI at ``rung``.

    ``keep_fragment=False`` drops the fragment, as comparisons for a network
    action do (3987bis 5.1). ``lenient=True`` first applies the sec. 7
    preprocessing. The protocol rung needs ``store``: it maps the scheme form
    to the representative the store has learned. Raises :class:`IRIError`
    for any string that is not an absolute IRI (after preprocessing).
    """
    level = rung if type(rung) is Rung else Rung.parse(rung)
    if level is _SCHEME or level is _SYNTAX:
        # Fast path 1 (see scrapy_iri._fast): a common http(s) IRI, edited
        # component by component; the result is the reference path's, or
        # None when the reference path must decide.
        form = web_form(iri, level is _SCHEME, keep_fragment)
        if form is not None:
            return form
    if level is _PROTOCOL:
        if store is None:
            raise ValueError("the protocol rung needs an equivalence store: pass store=")
        return store.representative(
            canonicalize(iri, Rung.SCHEME, keep_fragment=keep_fragment, lenient=lenient)
        )
    if type(iri) is str and len(iri) <= MEMO_MAX_LENGTH:
        # Fast path 2: the URLs fast path 1 declines (userinfo, IP literals,
        # messy input) cost ~10 µs each and come back again and again in a
        # crawl's links. The lower rungs are pure functions of these four
        # arguments, so a bounded memo returns what the reference path would
        # (errors are not memoized: the reference raises them anew).
        return _memo(iri, level, bool(keep_fragment), bool(lenient))
    return _declined(iri, level, keep_fragment, lenient)


# Rung members as module constants for the per-URL code above: attribute
# access on an Enum class costs ~80 ns in CPython 3.11.
_SYNTAX, _SCHEME, _PROTOCOL = Rung.SYNTAX, Rung.SCHEME, Rung.PROTOCOL

MEMO_SIZE = 4096
"""Entries of the memo of recent canonical forms: about 2 MB for typical URLs."""
MEMO_MAX_LENGTH = 256
"""Longer strings (about 1% of real URLs) are not memoized: the memo stays under
20 MB whatever the input (256 four-byte characters in, their escapes out)."""


def _declined(iri: str, level: Rung, keep_fragment: bool, lenient: bool) -> str:
    """:func:`canonicalize_step_by_step` of a string fast path 1 declined.

    Lenient input is preprocessed first, and fast path 1 tried on the
    result: at the syntax and scheme rungs, the reference path with
    ``lenient=True`` is the reference path on the preprocessed string
    (parsing preprocesses, and nothing else reads the flag), and messy real
    URLs (a stray ``\\`` or ``"``) are common web IRIs once preprocessed.
    """
    if lenient and level is not Rung.STRING and type(iri) is str:
        try:
            text = preprocess(iri)
        except IRIError:  # the reference path raises it, with its position
            text = iri
        if text != iri:
            form = web_form(text, level is _SCHEME, keep_fragment)
            if form is not None:
                return form
    return canonicalize_step_by_step(iri, level, keep_fragment=keep_fragment, lenient=lenient)


_memo = lru_cache(maxsize=MEMO_SIZE)(_declined)
"""The memo of :func:`canonicalize` (fast path 2)."""


def canonicalize_step_by_step(
    iri: str,
    rung: Rung | str = Rung.SCHEME,
    *,
    keep_fragment: bool = True,
    lenient: bool = False,
    store: Representatives | None = None,
) -> str:
    """:func:`canonicalize` without its fast paths: the ladder as the specs describe it.

    Kept callable as the reference the fast paths are tested against
    (``tests/core/test_fastpath.py``).
    """
    level = Rung.parse(rung)
    if level is Rung.PROTOCOL:
        if store is None:
            raise ValueError("the protocol rung needs an equivalence store: pass store=")
        return store.representative(
            canonicalize_step_by_step(iri, Rung.SCHEME, keep_fragment=keep_fragment, lenient=lenient)
        )
    ref = parse(iri, lenient=lenient)
    if ref.scheme is None:
        raise IRIError(
            "a relative reference has no identity of its own: resolve it against a base first",
            "scheme",
            0,
        )
    if not keep_fragment and ref.fragment is not None:
        ref = ref._replace(fragment=None)
    if level is Rung.STRING:
        return iri if keep_fragment and not lenient else recompose(ref)
    ref = normalize_syntax_based(ref)
    if level is Rung.SCHEME:
        try:
            ref = normalize_scheme_based(ref)
        except IRIError as exc:
            raise placed(exc, iri, lenient=lenient) from None
    return recompose(ref)


def equivalent(
    a: str,
    b: str,
    rung: Rung | str = Rung.SCHEME,
    *,
    keep_fragment: bool = True,
    lenient: bool = False,
    store: Representatives | None = None,
) -> bool:
    """Whether ``a`` and ``b`` are equivalent at ``rung`` (their canonical forms are equal).

    An error says which of the two is at fault ("in a: ..."); its position is in that one.
    """
    options = dict(keep_fragment=keep_fragment, lenient=lenient, store=store)
    forms = []
    for name, iri in (("a", a), ("b", b)):
        try:
            forms.append(canonicalize(iri, rung, **options))
        except IRIError as exc:
            raise exc.within(name) from None
    return forms[0] == forms[1]


def lowest_common_rung(
    a: str,
    b: str,
    highest: Rung | str = Rung.SCHEME,
    *,
    keep_fragment: bool = True,
    lenient: bool = False,
    store: Representatives | None = None,
) -> Rung | None:
    """The lowest rung (up to ``highest``) at which ``a`` and ``b`` are equivalent, or ``None`` (errors as :func:`equivalent`)."""
    top = Rung.parse(highest)
    for level in Rung:
        if level > top:
            break
        if equivalent(a, b, level, keep_fragment=keep_fragment, lenient=lenient, store=store):
            return level
    return None
