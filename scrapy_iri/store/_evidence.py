"""Evidence: what was observed, and whether it may teach anything.

An exchange teaches nothing about the URL alone when its answer may depend
on who asked: a request that carried cookies or credentials, or a response
that sets cookies or varies on ``Cookie``, ``User-Agent`` or
``Accept-Language`` (the shape of web-cache poisoning), or a method other
than GET and HEAD. Such exchanges are recorded with their *context* flags;
they can contradict a rule, never support one, and never make an alias.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import NamedTuple

#: request headers / response headers whose presence makes an exchange context-dependent
COOKIE = "cookie"
AUTHORIZATION = "authorization"
USERINFO = "userinfo"
SET_COOKIE = "set-cookie"
#: ``Vary`` values that make a redirect depend on who asked ("*": on anything)
VARY_SENSITIVE = frozenset({"cookie", "user-agent", "accept-language", "*"})
SAFE_METHODS = frozenset({"GET", "HEAD"})


def context_flags(
    *,
    method: str = "GET",
    userinfo: bool = False,
    cookie: bool = False,
    authorization: bool = False,
    set_cookie: bool = False,
    vary: Iterable[str] = (),
) -> frozenset[str]:
    """The reasons an exchange may depend on its context (empty: it is clean)."""
    flags = set()
    if method.upper() not in SAFE_METHODS:
        flags.add(f"method:{method.upper()}")
    if userinfo:
        flags.add(USERINFO)
    if cookie:
        flags.add(COOKIE)
    if authorization:
        flags.add(AUTHORIZATION)
    if set_cookie:
        flags.add(SET_COOKIE)
    for value in vary:
        for name in value.split(","):
            name = name.strip().lower()
            if name in VARY_SENSITIVE:
                flags.add(f"vary:{name}")
    return frozenset(flags)


@dataclass(frozen=True)
class Evidence:
    """One observation as the store logs it (URLs in scheme form)."""

    time: float
    url: str
    status: int
    target: str | None = None
    context: frozenset[str] = field(default_factory=frozenset)
    note: str = ""
    location: str | None = None  #: the Location header as sent, when it differs from ``target``

    def describe(self) -> str:
        where = f" -> {self.target}" if self.target else ""
        if self.location:
            where += f" (Location: {self.location})"
        flags = f" [{', '.join(sorted(self.context))}]" if self.context else ""
        note = f" ({self.note})" if self.note else ""
        return f"{self.url}: {self.status}{where}{flags}{note}"

    def as_dict(self) -> dict[str, object]:
        return {
            "time": self.time,
            "url": self.url,
            "status": self.status,
            "target": self.target,
            "context": sorted(self.context),
            "note": self.note,
            "location": self.location,
        }


class Alias(NamedTuple):
    """An exact alias: ``source`` answered a permanent redirect to ``target`` (a tuple: one is made per lookup read).

    ``time`` is when the server last said so; ``expires`` when that
    statement goes stale (``None``: the redirect stated no lifetime, the
    policy's ``alias_ttl`` after ``time`` applies); ``confirmations`` how
    many times the server said it again after the first.
    """

    source: str
    target: str
    status: int
    time: float
    expires: float | None = None
    confirmations: int = 0

    def stale_at(self, alias_ttl: float) -> float:
        """When this alias stops being used without asking the server again."""
        return self.time + alias_ttl if self.expires is None else self.expires

    def as_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "target": self.target,
            "status": self.status,
            "time": self.time,
            "expires": self.expires,
            "confirmations": self.confirmations,
        }


_DIRECTIVE = re.compile(r'\s*([!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*(?:=\s*("[^"]*"|[^,\s]*))?\s*(?:,|$)')
#: directives after which a stored answer may not be reused without asking the server again
_NOT_REUSABLE = frozenset({"no-store", "no-cache"})


def _http_date(value: str) -> float | None:
    try:
        return parsedate_to_datetime(value.strip()).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def stated_lifetime(
    cache_control: Iterable[str] = (),
    expires: str | None = None,
    date: str | None = None,
    age: str | None = None,
    *,
    now: float | None = None,
) -> float | None:
    """The seconds a redirect said it stays true (RFC 9111 freshness), ``None`` when it said nothing.

    ``no-store`` and ``no-cache`` (the answer may not be reused without
    asking again) and ``max-age=0`` give 0. ``max-age`` and ``s-maxage``
    win over ``Expires`` (the smaller of the two when both are given: the
    store is shared by every process of a crawl); ``Expires`` counts from
    ``Date`` when given (else from ``now``), and an ``Expires`` that is not a date means already
    expired. ``Age`` (time spent in caches on the way) is subtracted.
    """
    ages: list[float] = []
    for header in cache_control:
        for match in _DIRECTIVE.finditer(header):
            name, value = match.group(1).lower(), (match.group(2) or "").strip('"')
            if name in _NOT_REUSABLE:
                return 0.0
            if name in ("max-age", "s-maxage"):
                ages.append(float(value) if value.isdigit() else 0.0)
    lifetime: float | None
    if ages:
        lifetime = min(ages)
    elif expires is not None:
        until = _http_date(expires)
        if until is None:
            return 0.0
        since = _http_date(date) if date is not None else None
        if since is None:
            since = time.time() if now is None else now
        lifetime = until - since
    else:
        return None
    if age is not None and age.strip().isdigit():
        lifetime -= float(age.strip())
    return max(0.0, lifetime)
