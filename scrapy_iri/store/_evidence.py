"""Evidence: what was observed, and whether it may teach anything.

An exchange teaches nothing about the URL alone when its answer may depend
on who asked: a request that carried cookies or credentials, or a response
that sets cookies or varies on ``Cookie``, ``User-Agent`` or
``Accept-Language`` (the shape of web-cache poisoning), or a method other
than GET and HEAD. Such exchanges are recorded with their *context* flags;
they can contradict a rule, never support one, and never make an alias.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
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
    """An exact alias: ``source`` answered a permanent redirect to ``target`` (a tuple: one is made per lookup read)."""

    source: str
    target: str
    status: int
    time: float

    def as_dict(self) -> dict[str, object]:
        return {"source": self.source, "target": self.target, "status": self.status, "time": self.time}
