"""Webs whose conventions flip between crawls: three phases of the same hosts, seeded.

:func:`flipping_web` widens :mod:`.changing`. Each host draws, for each of
three phases (crawled one after the other on the same store), its
conventions independently of the phase before, with a bias to keep them:

* the scheme: https only (``http`` redirected to ``https``) or http only
  (``https`` redirected back to ``http``);
* the host: apex or ``www.`` canonical (the other redirected), or no partner;
* directories: ``/d-k/`` with ``/d-k`` redirected, files ``/d-k`` with
  ``/d-k/`` redirected, or files with no slash redirect at all;
* case: a case-insensitive server redirecting ``/D-k`` to the declared case,
  or a case-sensitive one where some ``/D-k`` are pages of their own;

and stable features: IDN hosts (``bücher``, ``пример``), ``/t-k`` and
``/t-k/`` twins both pages, links across hosts. One-off sources
``/old-k`` draw a fate per phase: a 301 or 308 to a page, a 302 or 307 to
it, a page of its own, gone (404), a chain that grows a hop, a loop, a 301
whose ``Cache-Control``/``Expires`` says it may not be reused (``max-age=0``,
``no-store``, an ``Expires`` in the past) or may (``max-age=86400``), a 301
that varies on ``Cookie``, or a move to another page. A group of pages may
be sent to ``/maintenance`` (below the sink fan-in), and a larger group may
become a sink (many sources to one page) only in a later phase.

Links are the same in every phase, written in the canonical form of the
first phase or in alias forms, so every crawl meets what the store learned
before. The ground truth is Scrapy's own crawl of each phase.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..model import Site
from ..policies import (
    CaseRedirect,
    CookieRedirect,
    HttpRedirect,
    HttpsRedirect,
    Moves,
    Policy,
    SlashRedirect,
    Stated,
    Temporaries,
    WwwRedirect,
)

PHASES = (0, 1, 2)

#: fates of a one-off source ``/old-k`` in a phase, and their weights
FATES = (
    ("301", 4),
    ("308", 1),
    ("302", 1),
    ("307", 1),
    ("page", 2),
    ("gone", 1),
    ("hop", 1),
    ("loop", 1),
    ("max-age=0", 1),
    ("no-store", 1),
    ("expired", 1),
    ("max-age=86400", 1),
    ("vary", 1),
    ("moves", 2),
)

_NAMES = ("f{seed}-{i}.example", "bücher{seed}-{i}.example", "пример{seed}-{i}.example")
_EXPIRED = (("Date", "Thu, 26 Nov 2026 07:00:00 GMT"), ("Expires", "Thu, 26 Nov 2026 06:00:00 GMT"))


@dataclass
class _State:
    """A host's conventions in one phase."""

    https: bool
    www: str | None  # None, "apex" or "www": the canonical form
    slash: str | None  # "add" (directories), "remove" (files, /x/ redirected) or None (files)
    case: str  # "insensitive" or "sensitive"


@dataclass
class _Host:
    name: str
    pages: int
    twins: bool
    states: list[_State] = field(default_factory=list)
    fates: dict[str, list[str]] = field(default_factory=dict)  # /old-k -> fate per phase
    targets: dict[str, list[int]] = field(default_factory=dict)  # /old-k -> page per phase
    small_group: list[str] = field(default_factory=list)  # to /maintenance in phase 0
    sink_group: list[str] = field(default_factory=list)  # pages, then a sink from sink_phase on
    sink_phase: int = 1
    sink_ends: bool = False  # pages again in phase 2
    case_twins: list[int] = field(default_factory=list)  # /D-k are pages where case-sensitive

    def host(self, phase: int) -> str:
        return f"www.{self.name}" if self.states[phase].www == "www" else self.name

    def scheme(self, phase: int) -> str:
        return "https" if self.states[phase].https else "http"

    def path(self, k: int, phase: int) -> str:
        return f"/d-{k}/" if self.states[phase].slash == "add" else f"/d-{k}"

    def url(self, path: str, phase: int) -> str:
        return f"{self.scheme(phase)}://{self.host(phase)}{path}"


def _flip(rng: random.Random, old: object, choices: list, keep: float = 0.65) -> object:
    return old if rng.random() < keep else rng.choice(choices)


def _draw(rng: random.Random, name: str, pages: int) -> _Host:
    host = _Host(name=name, pages=pages, twins=rng.random() < 0.3)
    state = _State(
        https=rng.random() < 0.5,
        www=rng.choice([None, "apex", "www"]),
        slash=rng.choice(["add", "remove", None]),
        case=rng.choice(["insensitive", "sensitive"]),
    )
    host.states.append(state)
    for _ in PHASES[1:]:
        # a host with a www partner keeps one (the partner name must stay served)
        www = _flip(rng, state.www, ["apex", "www"]) if state.www else None
        state = _State(
            https=bool(_flip(rng, state.https, [True, False])),
            www=www,  # type: ignore[arg-type]
            slash=_flip(rng, state.slash, ["add", "remove", None]),  # type: ignore[arg-type]
            case=_flip(rng, state.case, ["insensitive", "sensitive"]),  # type: ignore[arg-type]
        )
        host.states.append(state)
    names, weights = [f for f, _ in FATES], [w for _, w in FATES]
    for k in range(1, rng.randint(3, 6) + 1):
        source = f"/old-{k}"
        first = rng.choice(["301", "301", "308", "max-age=86400"])
        host.fates[source] = [first, *rng.choices(names, weights, k=len(PHASES) - 1)]
        host.targets[source] = [rng.randint(1, pages) for _ in PHASES]
        host.targets[source][1] = host.targets[source][0]
        if host.fates[source][1] == "moves":
            host.targets[source][1] = rng.choice([j for j in range(1, pages + 1) if j != host.targets[source][0]])
    if rng.random() < 0.4:
        host.small_group = [f"/acct/{k}" for k in range(1, rng.randint(2, 4) + 1)]
    if rng.random() < 0.5:
        host.sink_group = [f"/member/{k}" for k in range(1, rng.randint(5, 7) + 1)]
        host.sink_phase = rng.choice([1, 2])
        host.sink_ends = host.sink_phase == 1 and rng.random() < 0.5
    host.case_twins = rng.sample(range(1, pages + 1), 2)
    return host


def _alias_form(rng: random.Random, host: _Host, path: str) -> str:
    """``path`` on ``host`` written with a random stack of alias forms of any phase."""
    scheme = rng.choice(["http", "https"])
    authority = host.name
    if any(s.www for s in host.states) and rng.random() < 0.5:
        authority = f"www.{host.name}"
    if path.startswith("/d-") and rng.random() < 0.5:
        path = path[:-1] if path.endswith("/") else path + "/"
    if path.startswith("/d-") and rng.random() < 0.25:
        path = path.upper()
    return f"{scheme}://{authority}{path}"


def _one_offs(host: _Host, phase: int, site: Site) -> list[Policy]:
    """The policies that serve the host's ``/old-k`` sources in ``phase`` (pages are added to ``site``)."""
    by_status: dict[int, dict[str, str]] = {}
    stated: dict[str, dict[str, str]] = {}
    varying: dict[str, str] = {}
    for source, fates in host.fates.items():
        fate = fates[phase]
        target = host.path(host.targets[source][phase], phase)
        if fate in ("301", "308", "302", "307", "moves"):
            status = 301 if fate == "moves" else int(fate)
            by_status.setdefault(status, {})[source] = target
        elif fate == "page":
            site.page(f"{host.name}:{source}@{phase}", source, host.url(host.path(1, phase), phase))
        elif fate == "hop":
            by_status.setdefault(301, {})[source] = f"/mid{source}"
            by_status[301][f"/mid{source}"] = target
        elif fate == "loop":
            by_status.setdefault(301, {})[source] = f"/loop{source}"
            by_status[301][f"/loop{source}"] = source
        elif fate in ("max-age=0", "no-store", "expired", "max-age=86400"):
            stated.setdefault(fate, {})[source] = target
        elif fate == "vary":
            varying[source] = target
    policies: list[Policy] = []
    for status, moves in sorted(by_status.items()):
        kind = Moves if status in (301, 308) else Temporaries
        policies.append(kind(moves, status=status, label=f"one_off_{status}"))
    for fate, moves in sorted(stated.items()):
        headers = _EXPIRED if fate == "expired" else (("Cache-Control", fate),)
        policies.append(Stated(inner=Moves(moves), headers=headers, label=f"stated_{fate}"))
    if varying:
        policies.append(CookieRedirect(inner=Moves(varying), set_cookie=None, vary="Cookie", label="vary_cookie"))
    return policies


def flipping_web(seed: int, phase: int, hosts: int = 3, pages: int = 8) -> list[Site]:
    """The flipping web of ``seed`` in ``phase`` (0, 1 or 2: three crawls on one store)."""
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, not {phase!r}")
    rng = random.Random(f"flipping:{seed}")
    draws = [_draw(rng, _NAMES[(seed + i) % len(_NAMES)].format(seed=seed, i=i), pages) for i in range(hosts)]
    sites: list[Site] = []
    for index, host in enumerate(draws):
        state = host.states[phase]
        policies: list[Policy] = [HttpsRedirect() if state.https else HttpRedirect()]
        if state.www:
            policies.append(WwwRedirect())
        schemes = ("https",) if state.https else ("http", "https")
        site = Site(host.host(phase), schemes=schemes, policies=policies, start=(host.url("/", 0),))
        site.policies.extend(_one_offs(host, phase, site))
        if host.small_group:
            if phase == 0:
                site.policies.append(Moves({p: "/maintenance" for p in host.small_group}, label="maintenance"))
                site.page(f"{host.name}:maintenance", "/maintenance", "/")
            else:
                for path in host.small_group:
                    site.page(f"{host.name}:{path}", path, "/")
        if host.sink_group:
            sinking = phase >= host.sink_phase and not (phase == 2 and host.sink_ends)
            if sinking:
                site.policies.append(Moves({p: "/closed" for p in host.sink_group}, label="late_sink"))
                site.page(f"{host.name}:closed", "/closed", "/")
            else:
                for path in host.sink_group:
                    site.page(f"{host.name}:{path}", path, "/")
        if state.slash:
            site.policies.append(SlashRedirect(add=state.slash == "add"))
        if state.case == "insensitive":
            site.policies.append(CaseRedirect())
        links_rng = random.Random(f"flipping:{seed}:{host.name}")  # the same links in every phase
        sources = [*host.fates, *host.small_group, *host.sink_group]
        others = [h for h in draws if h is not host]
        for k in range(1, pages + 1):
            links = []
            for _ in range(links_rng.randint(2, 5)):
                linked = host.path(links_rng.randint(1, pages), 0)
                canonical = links_rng.random() < 0.4
                links.append(host.url(linked, 0) if canonical else _alias_form(links_rng, host, linked))
            if sources and links_rng.random() < 0.7:
                links.append(host.url(links_rng.choice(sources), 0))
            if others and links_rng.random() < 0.3:
                other = links_rng.choice(others)
                links.append(_alias_form(links_rng, other, other.path(links_rng.randint(1, pages), 0)))
            if host.twins and k <= 2:
                links += [f"/t-{k}", f"/t-{k}/"]
            site.page(f"{host.name}:{k}", host.path(k, phase), *links, "/")
        if state.case == "sensitive":
            for k in host.case_twins:
                path = host.path(k, phase).upper()
                site.page(f"{host.name}:{path}", path, "/")
        if host.twins:
            for k in (1, 2):
                site.page(f"{host.name}:t-{k}", f"/t-{k}", "/")
                site.page(f"{host.name}:t-{k}/", f"/t-{k}/", "/")
        entry = [host.url(host.path(1, 0), 0), *(host.url(s, 0) for s in sources)]
        entry += [_alias_form(links_rng, host, host.path(k, 0)) for k in links_rng.sample(range(1, pages + 1), 3)]
        entry += [f"/D-{k}" for k in host.case_twins] + [f"/D-{k}/" for k in host.case_twins]
        if index + 1 < len(draws):
            nxt = draws[index + 1]
            entry.append(nxt.url("/", 0))
        site.page(f"{host.name}:home", "/", *entry)
        sites.append(site)
    return sites
