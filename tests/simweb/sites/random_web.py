"""`random_web(seed)`: a seeded random web of hosts with random redirect conventions.

Each host draws its conventions: https only (http redirected), www or apex
canonical (the other redirected), directories with a slash (``/d-k`` ->
``/d-k/``) or files without (``/f-k/`` -> ``/f-k``), index documents,
case-insensitive paths redirected to their declared case, or case-sensitive
paths where a few case variants are redirected and others are different
pages; escaped reserved characters redirected to raw ones; ``/t-k`` and
``/t-k/`` twins; a sink (login); temporary redirects; an open redirector;
permanent moves to another host. Links are written in the canonical form or
in an alias form that stacks several conventions, so redirect chains of one
to four hops mix them (``http://www.H/D-3`` -> https -> apex -> case).

The web is the same for the same seed; `random_web(seed, hosts, pages)`
scales it. Which resources a crawler must reach is not declared here: the
tests take Scrapy's own crawl as the ground truth.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..model import Site
from ..policies import (
    CaseRedirect,
    HttpsRedirect,
    IndexRedirect,
    Moves,
    OpenRedirector,
    Policy,
    Sink,
    SlashRedirect,
    Temporaries,
    WwwRedirect,
)


@dataclass
class _Host:
    """One host's draw of conventions and the canonical targets of its pages."""

    name: str
    https: bool
    www: str | None  # None, "apex" (apex canonical) or "www" (www canonical)
    slash: str | None  # None, "add" (directories) or "remove" (files)
    index: bool
    case: str | None  # None, "insensitive" or "sensitive"
    escapes: bool
    pages: list[str] = field(default_factory=list)

    @property
    def canonical_host(self) -> str:
        return f"www.{self.name}" if self.www == "www" else self.name

    @property
    def scheme(self) -> str:
        return "https" if self.https else "http"

    def url(self, target: str) -> str:
        return f"{self.scheme}://{self.canonical_host}{target}"


def _draw(rng: random.Random, name: str) -> _Host:
    return _Host(
        name=name,
        https=rng.random() < 0.5,
        www=rng.choice([None, "apex", "www"]),
        slash=rng.choice([None, "add", "remove"]),
        index=rng.random() < 0.3,
        case=rng.choice([None, None, "insensitive", "sensitive"]),
        escapes=rng.random() < 0.3,
    )


def _alias(rng: random.Random, host: _Host, target: str) -> str:
    """A link to ``target`` written with a random stack of the host's alias conventions."""
    scheme = "http" if host.https and rng.random() < 0.5 else host.scheme
    authority = host.canonical_host
    if host.www and rng.random() < 0.5:
        authority = host.name if host.www == "www" else f"www.{host.name}"
    path = target
    if host.case == "insensitive" and rng.random() < 0.5 and any(c.isalpha() for c in path):
        path = "/".join(part[:1].upper() + part[1:] for part in path.split("/"))
    elif host.slash == "add" and path.endswith("/") and len(path) > 1 and rng.random() < 0.6:
        path = path[:-1]
    elif host.slash == "remove" and not path.endswith("/") and rng.random() < 0.6:
        path = path + "/"
    elif host.index and path.endswith("/") and rng.random() < 0.6:
        path = path + "index.html"
    return f"{scheme}://{authority}{path}"


def random_web(seed: int, hosts: int = 3, pages: int = 10) -> list[Site]:
    """The random web of ``seed``: ``hosts`` hosts of about ``pages`` pages each (plus traps)."""
    rng = random.Random(seed)
    draws = [_draw(rng, f"r{seed}-{i}.example") for i in range(hosts)]
    sites: list[Site] = []
    for i, host in enumerate(draws):
        other = draws[(i + 1) % len(draws)]
        policies: list[Policy] = []
        if host.https:
            policies.append(HttpsRedirect())
        if host.www:
            policies.append(WwwRedirect())
        site = Site(host.canonical_host, schemes=(host.scheme,), policies=policies, start=(host.url("/"),))
        kind = "d" if host.slash == "add" or host.index else "f"
        for k in range(1, pages + 1):
            host.pages.append(f"/{kind}-{k}/" if kind == "d" else f"/{kind}-{k}")
        moves: dict[str, str] = {}
        extra: list[tuple[str, str]] = []  # (id suffix, target) of pages outside the series
        if host.case == "sensitive":
            # /u/Name-k and /u/name-k are two pages; under /c/ case variants are redirected
            for k in (1, 2):
                extra += [(f"U{k}", f"/u/Name-{k}"), (f"u{k}", f"/u/name-{k}")]
            for k in range(1, 5):
                extra.append((f"c{k}", f"/c/doc-{k}"))
                moves[f"/c/Doc-{k}"] = f"/c/doc-{k}"
        if host.escapes:
            for k in range(1, 5):
                extra.append((f"e{k}", f"/e/a:b-{k}"))
                moves[f"/e/a%3Ab-{k}"] = f"/e/a:b-{k}"
        twins = rng.random() < 0.4
        if twins:
            for k in (1, 2):
                extra += [(f"t{k}", f"/t-{k}"), (f"t{k}/", f"/t-{k}/")]
        policies_after: list[Policy] = []
        if host.slash:
            policies_after.append(SlashRedirect(add=host.slash == "add"))
        if host.index:
            policies_after.append(IndexRedirect())
        if host.case == "insensitive":
            policies_after.append(CaseRedirect())
        if moves:
            policies.append(Moves(moves))
        moved_away = {f"/gone-{k}": other.url(other.pages[k - 1] if other.pages else "/") for k in (1, 2)}
        if rng.random() < 0.4:
            policies.append(Moves(moved_away, label="cross_site_moves"))
        else:
            moved_away = {}
        if rng.random() < 0.3:
            policies.append(Sink(target="/login", prefixes=("/members/",)))
            extra.append(("login", "/login"))
        temporary = rng.random() < 0.3
        if temporary:
            policies.append(Temporaries({"/today": host.pages[-1]}))
        redirector = rng.random() < 0.3
        if redirector:
            policies.append(OpenRedirector())
        site.policies.extend(policies_after)

        targets = host.pages + [t for _, t in extra]
        for k, target in enumerate(host.pages, start=1):
            links = []
            for _ in range(rng.randint(2, 5)):
                linked = rng.choice(targets)
                links.append(_alias(rng, host, linked) if rng.random() < 0.6 else host.url(linked))
            if host.case == "sensitive":
                links.append(host.url(f"/c/Doc-{rng.randint(1, 4)}"))
            if host.escapes:
                links.append(host.url(f"/e/a%3Ab-{rng.randint(1, 4)}"))
            if moved_away and rng.random() < 0.3:
                links.append(host.url(rng.choice(list(moved_away))))
            if rng.random() < 0.2:
                links.append(host.url(f"/members/area-{k}"))
            if temporary and rng.random() < 0.2:
                links.append(host.url("/today"))
            if redirector and rng.random() < 0.3:
                links.append(host.url("/out?url=" + other.url(rng.choice(other.pages or ["/"]))))
            if rng.random() < 0.2:
                links.append(_alias(rng, other, rng.choice(other.pages or ["/"])))
            site.page(f"{host.name}:{k}", target, *links, "/")
        for suffix, target in extra:
            site.page(f"{host.name}:{suffix}", target, host.url(rng.choice(host.pages)))
        entry = [host.url(host.pages[0])] + [_alias(rng, host, t) for t in rng.sample(targets, min(4, len(targets)))]
        entry += [host.url(t) for _, t in extra]
        site.page(f"{host.name}:home", "/", *entry)
        sites.append(site)
    return sites
