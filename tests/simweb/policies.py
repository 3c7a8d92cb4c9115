"""Redirect policies: declarative server behaviour, one class per kind.

A policy looks at a normalized request (`Context`) and answers with a
`Redirect` or ``None``. Policies with ``stage = "before"`` run before the
resource lookup (host-wide and path-map redirects); ``"after"`` ones only
when no resource matched (slash, index, case, soft 404). Each redirect is
counted under the policy's ``name`` (its ``label`` or its ``kind``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import ClassVar
from urllib.parse import parse_qsl

from .urls import Target, normalize_target


@dataclass(frozen=True)
class Redirect:
    """A redirect answer: status, Location (absolute or origin-relative)."""

    status: int
    location: str
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Context:
    """What a policy may look at: the normalized request and its site."""

    scheme: str
    host: str  #: A-label of the requested host
    site_host: str  #: A-label of the site's own host
    target: Target
    headers: Mapping[str, str]
    exists: Callable[[Target], bool]  #: does a resource answer 200 there?
    find_casefold: Callable[[str], str | None]  #: path of a resource, any case

    @property
    def path(self) -> str:
        return self.target.path


@dataclass(frozen=True, kw_only=True)
class Policy:
    """Base class. Subclasses set ``kind`` and implement ``redirect``."""

    status: int = 301
    label: str = ""
    kind: ClassVar[str] = "policy"
    stage: ClassVar[str] = "before"

    @property
    def name(self) -> str:
        return self.label or self.kind

    def alias_hosts(self, host: str) -> tuple[str, ...]:
        """Extra host names (A-labels) this policy makes the site answer."""
        return ()

    def redirect(self, ctx: Context) -> Redirect | None:
        raise NotImplementedError

    def _to(self, location: str, *headers: tuple[str, str]) -> Redirect:
        return Redirect(self.status, location, tuple(headers))


def _with_query(path: str, target: Target) -> str:
    return str(Target(path, target.query))


@lru_cache(maxsize=1024)
def _path(declared: str) -> str:
    """The normalized path of a declared target (``/~a?x`` -> ``/~a``)."""
    return normalize_target(declared).path


@dataclass(frozen=True)
class SlashRedirect(Policy):
    """``/dir`` -> ``/dir/`` when only the latter exists (or the reverse)."""

    add: bool = True
    kind: ClassVar[str] = "slash"
    stage: ClassVar[str] = "after"

    def redirect(self, ctx: Context) -> Redirect | None:
        path = ctx.path
        if self.add and not path.endswith("/"):
            other = path + "/"
        elif not self.add and path.endswith("/") and path != "/":
            other = path[:-1]
        else:
            return None
        if ctx.exists(Target(other, ctx.target.query)):
            return self._to(_with_query(other, ctx.target))
        return None


@dataclass(frozen=True)
class IndexRedirect(Policy):
    """``/dir/index.html`` -> ``/dir/`` (a default document to its directory)."""

    names: tuple[str, ...] = ("index.html",)
    kind: ClassVar[str] = "index"
    stage: ClassVar[str] = "after"

    def redirect(self, ctx: Context) -> Redirect | None:
        head, _, last = ctx.path.rpartition("/")
        if last in self.names and ctx.exists(Target(head + "/", ctx.target.query)):
            return self._to(_with_query(head + "/", ctx.target))
        return None


@dataclass(frozen=True)
class CaseRedirect(Policy):
    """A case-insensitive server that redirects to the declared case."""

    kind: ClassVar[str] = "case"
    stage: ClassVar[str] = "after"

    def redirect(self, ctx: Context) -> Redirect | None:
        declared = ctx.find_casefold(ctx.path)
        if declared is not None and declared != ctx.path:
            return self._to(_with_query(declared, ctx.target))
        return None


@dataclass(frozen=True)
class HttpsRedirect(Policy):
    """Every ``http`` request -> the same URL with ``https``."""

    kind: ClassVar[str] = "https"

    def redirect(self, ctx: Context) -> Redirect | None:
        if ctx.scheme != "http":
            return None
        return self._to(f"https://{ctx.host}{ctx.target}")


@dataclass(frozen=True)
class WwwRedirect(Policy):
    """The other form of the host (``www.`` added or removed) -> the site.

    The site's declared host is the canonical one: a site declared as
    ``www.shop.example`` redirects ``shop.example`` to it, and a site
    declared as ``blog.example`` redirects ``www.blog.example``.
    """

    kind: ClassVar[str] = "www"

    def alias_hosts(self, host: str) -> tuple[str, ...]:
        return (host[4:],) if host.startswith("www.") else ("www." + host,)

    def redirect(self, ctx: Context) -> Redirect | None:
        if ctx.host == ctx.site_host:
            return None
        return self._to(f"{ctx.scheme}://{ctx.site_host}{ctx.target}")


@dataclass(frozen=True)
class Moves(Policy):
    """An explicit map old target -> new target (path or absolute URL)."""

    moves: Mapping[str, str] = field(default_factory=dict)
    kind: ClassVar[str] = "moves"

    @cached_property
    def _table(self) -> dict[Target, str]:
        return {normalize_target(old): new for old, new in self.moves.items()}

    def redirect(self, ctx: Context) -> Redirect | None:
        new = self._table.get(ctx.target)
        return None if new is None else self._to(new)


@dataclass(frozen=True)
class Temporaries(Moves):
    """302/307 redirects: "keep using the original URL" (never an alias)."""

    status: int = field(default=302, kw_only=True)
    kind: ClassVar[str] = "temporaries"


@dataclass(frozen=True)
class SeeOther(Moves):
    """303 See Other: the target is a different resource."""

    status: int = field(default=303, kw_only=True)
    kind: ClassVar[str] = "303"


@dataclass(frozen=True)
class Sink(Policy):
    """Many paths -> one page (login, consent): high fan-in, never a rule."""

    target: str = "/login"
    prefixes: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    status: int = field(default=302, kw_only=True)
    kind: ClassVar[str] = "sink"

    def redirect(self, ctx: Context) -> Redirect | None:
        if ctx.path == _path(self.target):
            return None
        hit = any(ctx.path == _path(p) for p in self.paths) or any(
            ctx.path.startswith(_path(p)) for p in self.prefixes
        )
        return self._to(self.target) if hit else None


@dataclass(frozen=True)
class OpenRedirector(Policy):
    """``/out?url=<anything>`` -> that URL, on any host."""

    path: str = "/out"
    param: str = "url"
    status: int = field(default=302, kw_only=True)
    kind: ClassVar[str] = "open_redirect"

    def redirect(self, ctx: Context) -> Redirect | None:
        if ctx.path != _path(self.path) or ctx.target.query is None:
            return None
        for key, value in parse_qsl(ctx.target.query, keep_blank_values=True):
            if key == self.param and value:
                return self._to(value)
        return None


@dataclass(frozen=True)
class Chain(Policy):
    """``{prefix}0`` -> ``{prefix}1`` -> ... -> ``target``: ``hops`` redirects.

    With ``target`` equal to ``{prefix}0`` the chain is a loop.
    """

    prefix: str = "/chain/"
    hops: int = 25
    target: str = "/"
    kind: ClassVar[str] = "chain"

    def redirect(self, ctx: Context) -> Redirect | None:
        prefix = _path(self.prefix)
        if not ctx.path.startswith(prefix):
            return None
        step = ctx.path[len(prefix) :]
        if not step.isdigit() or int(step) >= self.hops:
            return None
        following = int(step) + 1
        return self._to(self.target if following == self.hops else f"{self.prefix}{following}")


@dataclass(frozen=True)
class NotFoundRedirect(Policy):
    """Soft 404: every unknown path -> one page (a sink, often permanent)."""

    target: str = "/"
    kind: ClassVar[str] = "soft404"
    stage: ClassVar[str] = "after"

    def redirect(self, ctx: Context) -> Redirect | None:
        return None if ctx.path == _path(self.target) else self._to(self.target)


@dataclass(frozen=True)
class CookieRedirect(Policy):
    """Another policy's redirects, made context-dependent.

    The answer sets a cookie and/or varies on Cookie: evidence a learner
    must ignore (the same shape as web-cache poisoning).
    """

    inner: Policy = field(default_factory=SlashRedirect)
    set_cookie: str | None = "visited=1; Path=/"
    vary: str | None = "Cookie"
    kind: ClassVar[str] = "cookie_redirect"

    @property
    def stage(self) -> str:  # type: ignore[override]
        return self.inner.stage

    def alias_hosts(self, host: str) -> tuple[str, ...]:
        return self.inner.alias_hosts(host)

    def redirect(self, ctx: Context) -> Redirect | None:
        answer = self.inner.redirect(ctx)
        if answer is None:
            return None
        extra = []
        if self.set_cookie:
            extra.append(("Set-Cookie", self.set_cookie))
        if self.vary:
            extra.append(("Vary", self.vary))
        return Redirect(answer.status, answer.location, answer.headers + tuple(extra))


@dataclass(frozen=True)
class Stated(Policy):
    """Another policy's redirects, with headers that state their lifetime (``Cache-Control``, ``Expires``)."""

    inner: Policy = field(default_factory=SlashRedirect)
    headers: tuple[tuple[str, str], ...] = (("Cache-Control", "max-age=3600"),)
    kind: ClassVar[str] = "stated"

    @property
    def stage(self) -> str:  # type: ignore[override]
        return self.inner.stage

    @property
    def name(self) -> str:
        return self.label or self.inner.name

    def alias_hosts(self, host: str) -> tuple[str, ...]:
        return self.inner.alias_hosts(host)

    def redirect(self, ctx: Context) -> Redirect | None:
        answer = self.inner.redirect(ctx)
        if answer is None:
            return None
        return Redirect(answer.status, answer.location, answer.headers + self.headers)


@dataclass(frozen=True)
class HttpRedirect(Policy):
    """Every ``https`` request -> the same URL with ``http`` (a site that gave up TLS)."""

    kind: ClassVar[str] = "http"

    def redirect(self, ctx: Context) -> Redirect | None:
        if ctx.scheme != "https":
            return None
        return self._to(f"http://{ctx.host}{ctx.target}")
