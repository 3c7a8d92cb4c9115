"""What one observation changed, and the parts of URLs the learner and its bulk kernel both ask for."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ._forms import short_cache, split_form
from ._psl import site_of, www_partner
from ._rules import RuleKey

#: answers that say a redirect is gone: an alias of the URL ends
GONE = frozenset({404, 410})


@dataclass
class Outcome:
    """What one observation changed."""

    learned_alias: bool = False
    dropped_alias: bool = False
    sink: bool = False
    activated: list[RuleKey] = field(default_factory=list)
    confirmed: list[RuleKey] = field(default_factory=list)
    contradicted: list[RuleKey] = field(default_factory=list)
    #: aliases that ended (the source answered for itself, redirected elsewhere or is gone): their keys
    ended: list[RuleKey] = field(default_factory=list)
    #: the server stated an alias again (its first time in this store's session)
    confirmed_alias: bool = False
    ignored: str = ""


def host_of(url: str) -> str:
    """The host of a scheme form, without userinfo or port (an IP literal with its brackets)."""
    authority = split_form(url).authority or ""
    host = authority.rpartition("@")[2]
    if host.startswith("["):
        return host.partition("]")[0] + "]"
    return host.partition(":")[0]


#: the site of a host, asked twice for every redirect learned
site_cached = short_cache(1 << 14)(site_of)


def same_site(a: str, b: str) -> bool:
    """:func:`._psl.same_site`, each host's site remembered."""
    return bool(a) and bool(b) and site_cached(a) == site_cached(b)


class At:
    """The clock of a bulk learning run: each observation's own time, else the given clock's."""

    __slots__ = ("clock", "time")

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.time: float | None = None

    def __call__(self) -> float:
        when = self.time
        return self.clock() if when is None else when


@short_cache(1 << 12)
def site_and_family(origin: str) -> tuple[str, str]:
    """An origin's site (registrable domain) and host family (its host without a ``www.`` that has an apex partner)."""
    host = host_of(origin + "/")
    partner = www_partner(host) if host.startswith("www.") else None
    return site_cached(host), partner or host
