"""Webs that change between crawls: the same hosts in two phases, seeded.

A redirect is a fact about the day it was seen. Each web here is served in
phase 0 (the first crawl) and phase 1 (the next one, on the same store),
and what changed is what a store of aliases and rules must not keep
believing:

* :func:`hostile_web`: a site that 301s four account pages to
  ``/maintenance`` (fewer sources than a sink needs) and slash-redirects
  four item pages in phase 0, then serves all eight pages in phase 1;
* :func:`changing_web`: a random class of such webs. Each host draws
  https-only or not, www or apex canonical, a directory slash or not; one-off
  moves (``/old-k`` -> a page), a group of pages sent to one maintenance
  page; then, in phase 1, each redirect source independently stays,
  becomes a page of its own, moves to another page or is gone (404), the
  maintenance group comes back as pages or not, and the slash convention
  may flip (``/d-k/`` -> ``/d-k``, documents moved).

Links are the same in both phases (written in canonical or alias forms), so
a crawl of phase 1 meets every URL the store learned about in phase 0. Which
resources must be reached is not declared: the tests take Scrapy's own crawl
of each phase as the ground truth.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..model import Site
from ..policies import HttpsRedirect, Moves, Policy, SlashRedirect, Stated, WwwRedirect

PHASES = (0, 1)


def hostile_web(phase: int, host: str = "hostile.example") -> list[Site]:
    """Four accounts sent to ``/maintenance`` and four items slash-redirected (phase 0); eight pages (phase 1)."""
    accounts = [f"/account/{k}" for k in range(1, 5)]
    items = [f"/item-{k}" for k in range(1, 5)]
    site = Site(host, schemes=("http",))
    site.page("hostile:home", "/", *accounts, *items, "/about")
    site.page("hostile:about", "/about", "/")
    if phase == 0:
        site.policies.append(Moves({path: "/maintenance" for path in accounts}))
        site.policies.append(SlashRedirect(add=True))
        site.page("hostile:maintenance", "/maintenance", "/")
        for k, path in enumerate(items, 1):
            site.page(f"hostile:item-{k}/", path + "/", "/")
    else:
        for k, path in enumerate(accounts, 1):
            site.page(f"hostile:account-{k}", path, "/")
        for k, path in enumerate(items, 1):
            site.page(f"hostile:item-{k}", path, "/")
    return [site]


#: what a redirect source becomes in phase 1, and how likely
FATES = (("stays", 0.4), ("page", 0.25), ("moves", 0.2), ("gone", 0.15))


@dataclass
class _Host:
    name: str
    https: bool
    www: str | None  # None, "apex" or "www": the canonical form
    slash: bool  # documents are directories (/d-k/), /d-k redirected
    flip: bool  # phase 1: documents become files (/d-k), /d-k/ redirected
    stated: str | None  # a Cache-Control the host's one-off moves carry
    pages: int
    moves: dict[str, int] = field(default_factory=dict)  # /old-k -> page number
    fates: dict[str, str] = field(default_factory=dict)
    moved_to: dict[str, int] = field(default_factory=dict)  # phase 1 targets of "moves"
    group: list[str] = field(default_factory=list)  # sent to /maintenance in phase 0
    group_returns: bool = False

    @property
    def canonical_host(self) -> str:
        return f"www.{self.name}" if self.www == "www" else self.name

    @property
    def scheme(self) -> str:
        return "https" if self.https else "http"

    def path(self, k: int, phase: int) -> str:
        directory = self.slash and not (phase == 1 and self.flip)
        return f"/d-{k}/" if directory else f"/d-{k}"

    def url(self, path: str) -> str:
        return f"{self.scheme}://{self.canonical_host}{path}"

    def alias_form(self, rng: random.Random, path: str) -> str:
        """``path`` written with a random stack of the host's phase-0 alias conventions."""
        scheme = "http" if self.https and rng.random() < 0.5 else self.scheme
        authority = self.canonical_host
        if self.www and rng.random() < 0.5:
            authority = self.name if self.www == "www" else f"www.{self.name}"
        if self.slash and path.endswith("/") and len(path) > 1 and rng.random() < 0.6:
            path = path[:-1]
        return f"{scheme}://{authority}{path}"


def _draw(rng: random.Random, name: str, pages: int) -> _Host:
    slash = rng.random() < 0.6
    host = _Host(
        name=name,
        https=rng.random() < 0.5,
        www=rng.choice([None, "apex", "www"]),
        slash=slash,
        flip=slash and rng.random() < 0.3,
        stated=rng.choice([None, None, "max-age=86400", "no-store"]),
        pages=pages,
    )
    for k in range(1, rng.randint(2, 5) + 1):
        source = f"/old-{k}"
        host.moves[source] = rng.randint(1, pages)
        fate = rng.choices([f for f, _ in FATES], [w for _, w in FATES])[0]
        host.fates[source] = fate
        if fate == "moves":
            host.moved_to[source] = rng.choice([j for j in range(1, pages + 1) if j != host.moves[source]] or [1])
    if rng.random() < 0.5:
        host.group = [f"/acct/{k}" for k in range(1, rng.randint(2, 4) + 1)]
        host.group_returns = rng.random() < 0.6
    return host


def changing_web(seed: int, phase: int, hosts: int = 2, pages: int = 8) -> list[Site]:
    """The changing web of ``seed`` in ``phase`` (0: the first crawl, 1: the next)."""
    if phase not in PHASES:
        raise ValueError(f"phase must be 0 or 1, not {phase!r}")
    rng = random.Random(seed)
    draws = [_draw(rng, f"w{seed}-{i}.example", pages) for i in range(hosts)]
    sites: list[Site] = []
    for host in draws:
        policies: list[Policy] = []
        if host.https:
            policies.append(HttpsRedirect())
        if host.www:
            policies.append(WwwRedirect())
        site = Site(host.canonical_host, schemes=(host.scheme,), policies=policies, start=(host.url("/"),))
        moves: dict[str, str] = {}
        own_pages: list[str] = []
        for source, k in host.moves.items():
            fate = host.fates[source] if phase == 1 else "stays"
            if fate == "stays":
                moves[source] = host.path(k, phase)
            elif fate == "moves":
                moves[source] = host.path(host.moved_to[source], phase)
            elif fate == "page":
                own_pages.append(source)
        one_offs: Policy = Moves(moves, label="one_off_moves")
        if host.stated:
            one_offs = Stated(inner=one_offs, headers=(("Cache-Control", host.stated),))
        policies.append(one_offs)
        if host.group and (phase == 0 or not host.group_returns):
            policies.append(Moves({path: "/maintenance" for path in host.group}, label="maintenance"))
            site.page(f"{host.name}:maintenance", "/maintenance", "/")
        elif host.group:
            own_pages += host.group
        if host.slash:
            site.policies.append(SlashRedirect(add=not (phase == 1 and host.flip)))
        links_rng = random.Random(f"{seed}:{host.name}")  # the same links in both phases
        sources = [*host.moves, *host.group]
        for k in range(1, pages + 1):
            links = []
            for _ in range(links_rng.randint(2, 5)):
                linked = host.path(links_rng.randint(1, pages), 0)
                links.append(host.alias_form(links_rng, linked) if links_rng.random() < 0.6 else host.url(linked))
            if sources and links_rng.random() < 0.6:
                links.append(host.url(links_rng.choice(sources)))
            site.page(f"{host.name}:{k}", host.path(k, phase), *links, "/")
        for path in own_pages:
            site.page(f"{host.name}:{path}@1", path, host.url(host.path(1, phase)))
        entry = [host.url(host.path(1, 0)), *(host.url(s) for s in sources)]
        entry += [host.alias_form(links_rng, host.path(k, 0)) for k in links_rng.sample(range(1, pages + 1), 3)]
        site.page(f"{host.name}:home", "/", *entry)
        sites.append(site)
    return sites
