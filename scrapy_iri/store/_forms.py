"""Scheme-rung forms: the URLs the store keeps, and their parts.

Every URL the store holds is a scheme-rung canonical form without a fragment
(an ASCII URI). Such a string splits exactly with the RFC 3986 appendix B
pattern, so the store never needs the full parser on its hot path.
"""

from __future__ import annotations

import re
from functools import lru_cache
from collections.abc import Callable
from typing import NamedTuple, TypeVar

from ..errors import IRIError
from .._grammar import SPLIT as _TOP
from .._ladder import Rung, canonicalize


_T = TypeVar("_T")

#: the longest string a cache of the store's learner keeps (a hostile URL is computed each time, never held)
CACHED_LENGTH = 2048


def short_cache(size: int) -> Callable[[Callable[[str], _T]], Callable[[str], _T]]:
    """Remember the last ``size`` results of a function of one string, for strings of at most :data:`CACHED_LENGTH`."""

    def wrap(function: Callable[[str], _T]) -> Callable[[str], _T]:
        cached = lru_cache(maxsize=size)(function)

        def lookup(text: str) -> _T:
            return cached(text) if len(text) <= CACHED_LENGTH else function(text)

        lookup.__doc__ = function.__doc__
        lookup.cache_info = cached.cache_info  # type: ignore[attr-defined]
        lookup.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
        return lookup

    return wrap


class Form(NamedTuple):
    """The parts of a scheme-rung form; ``query`` is ``None`` when absent."""

    scheme: str
    authority: str | None
    path: str
    query: str | None

    @property
    def origin(self) -> str:
        """``scheme://authority``: the key rules are learned under."""
        return f"{self.scheme}://{self.authority}" if self.authority is not None else f"{self.scheme}:"

    @property
    def host(self) -> str | None:
        """The host, when the authority has neither userinfo nor port."""
        auth = self.authority
        if auth is None or "@" in auth or auth.startswith("["):
            return None
        return None if ":" in auth else auth

    def unsplit(self) -> str:
        out = self.scheme + ":"
        if self.authority is not None:
            out += "//" + self.authority
        out += self.path
        if self.query is not None:
            out += "?" + self.query
        return out


@lru_cache(maxsize=16)
def split_form(url: str) -> Form:
    """Split a scheme form (a fragment, if any, is ignored); the last few are remembered
    (learning splits each URL of an observation several times)."""
    m = _TOP.fullmatch(url)
    assert m is not None  # the pattern matches every string
    scheme, authority, path, query, _ = m.groups()
    return Form(scheme or "", authority, path, query)


_ORIGIN = re.compile(r"[^:/?#]+://[^/?#]*")


def origin_of(url: str) -> str:
    """``split_form(url).origin``, without splitting the rest (on every lookup)."""
    m = _ORIGIN.match(url)
    return m.group() if m is not None else split_form(url).origin


def split_fragment(url: str) -> tuple[str, str]:
    """``(url without fragment, "#fragment" or "")``."""
    base, sep, fragment = url.partition("#")
    return base, sep + fragment


class SchemeForm(str):
    """A URL already in scheme-rung canonical form, without fragment: the store takes it as it is.

    The crawl computes each request's form once (its identity); passing it
    as a ``SchemeForm`` tells the store not to canonicalize it again.
    """

    __slots__ = ()


def scheme_form(url: str) -> SchemeForm | None:
    """The scheme-rung form of any URL as Scrapy holds it, without fragment; ``None`` if invalid.

    A :class:`SchemeForm` is returned as it is.
    """
    if isinstance(url, SchemeForm):
        return url
    try:
        return SchemeForm(canonicalize(url, Rung.SCHEME, keep_fragment=False, lenient=True))
    except IRIError:
        return None


_PARAMS = re.compile(r";[^/]*")


@short_cache(1 << 15)  # more than a learned chunk reads ahead: learning it finds them again
def sink_key(url: str) -> str:
    """The page a redirect lands on, normalized so that one sink has one key.

    The query and ``;params`` of each segment are ignored, and so are a
    trailing slash and the case of the path: ``/login?next=...``,
    ``/login;jsessionid=...``, ``/login/`` and ``/LOGIN`` are one page to
    count sources for (the key only counts; nothing is merged by it).
    """
    form = split_form(url.partition("#")[0])
    path = _PARAMS.sub("", form.path) if ";" in form.path else form.path
    return Form(form.scheme, form.authority, path.rstrip("/").lower() or "/", None).unsplit()


def source_key(url: str) -> str:
    """A page that redirects into a possible sink: its query kept (``/item?id=1`` and ``/item?id=2`` are two)."""
    return url.partition("#")[0]


def has_userinfo(url: str) -> bool:
    """Whether the scheme form ``url`` has userinfo (``user@host``)."""
    return "@" in (split_form(url).authority or "")


def spelling_key(url: str) -> str:
    """What is left of a URL once its spellings are set aside: scheme, ``www.``, case, slash, default document.

    A redirect between two URLs with one spelling key fixes how a page is
    written (``http://www.x/Docs/index.html`` -> ``https://x/docs/``): it is
    not a sign of many pages sent to one, so it never counts towards a sink.
    """
    return form_spelling(split_form(url.partition("#")[0]))


def form_spelling(form: Form) -> str:
    """:func:`spelling_key` of a split URL."""
    host = (form.authority or "").rpartition("@")[2].lower()
    host = host[4:] if host.startswith("www.") else host
    path = (_PARAMS.sub("", form.path) if ";" in form.path else form.path).lower()
    head, _, last = path.rpartition("/")
    if last in ("index.html", "index.htm", "index.php", "default.htm", "default.html", "default.asp", "default.aspx"):
        path = head
    query = "" if form.query is None else "?" + form.query
    return f"//{host}{path.rstrip('/') or '/'}{query}"
