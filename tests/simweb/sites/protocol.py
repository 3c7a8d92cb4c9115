"""`protocol_sites()`: one redirect policy per host, enough pages to generalize.

Every host has a home page and a series of pages (see `series`): each page
links its neighbours in the alias form the host redirects (``/dir`` without
slash, ``http://`` on an https host, ``/dir/index.html``, the apex or
``www`` form, an old path) and in canonical form, so rules learned on the
first pages can save round trips on the rest. Adversarial hosts mix in what
must never be learned: temporary and context-dependent redirects, sinks,
an open redirector, loops and long chains, and ``/x`` vs ``/x/`` twins.

The web's size is a parameter: ``protocol_sites(pages_per_host=60)`` is the
same web with three times the pages on every host (the series of the main
hosts have ``pages_per_host`` pages, the others keep their proportion). The
trap pairs (slash twins) and the loops and chains stay as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta

from ..model import Site
from ..policies import (
    CaseRedirect,
    Chain,
    CookieRedirect,
    HttpsRedirect,
    IndexRedirect,
    Moves,
    NotFoundRedirect,
    OpenRedirector,
    SeeOther,
    Sink,
    SlashRedirect,
    Temporaries,
    WwwRedirect,
)
from .builders import numbered, same, series

#: pages in the series of a main host (the default size of the web)
PAGES = 20
#: the smallest ``pages_per_host`` whose web still links every trap and loop
MIN_PAGES = 10


def _home(site: Site, key: str, entry: Sequence[str], *more: str) -> None:
    site.page(f"{key}:home", "/", *entry, *more, title=f"{site.name} home")


def _strip_slash(target: str) -> str:
    return target.rstrip("/")


def _add_slash(target: str) -> str:
    return target + "/"


def _slash(pages: int) -> Site:
    site = Site("slash.example", policies=[SlashRedirect()])
    _home(site, "slash", series(site, "slash", numbered("/topic-{}/", pages), _strip_slash))
    return site


def _noslash(pages: int) -> Site:
    site = Site("noslash.example", policies=[SlashRedirect(add=False)])
    _home(site, "noslash", series(site, "noslash", numbered("/note-{}", pages), _add_slash))
    return site


def _index(pages: int) -> Site:
    site = Site("index.example", policies=[IndexRedirect()])
    targets = numbered("/area-{}/", pages)
    _home(site, "index", series(site, "index", targets, lambda t: t + "index.html"))
    return site


def _secure(host: str, key: str, status: int, pages: int) -> Site:
    site = Site(host, policies=[HttpsRedirect(status=status)])
    entry = series(
        site, key, numbered("/doc-{}", pages),
        alias=lambda t: f"http://{host}{t}",
        canonical=lambda t: f"https://{host}{t}",
    )
    _home(site, key, entry)
    return site


def _www_store(pages: int) -> Site:
    site = Site("www.store.example", policies=[WwwRedirect()], start=("http://store.example/",))
    entry = series(site, "store", numbered("/item-{}", pages), lambda t: f"http://store.example{t}")
    _home(site, "store", entry)
    return site


def _blog(pages: int) -> Site:
    site = Site("blog.example", policies=[WwwRedirect()], start=("http://www.blog.example/",))
    entry = series(site, "blog", numbered("/post-{}", pages), lambda t: f"http://www.blog.example{t}")
    _home(site, "blog", entry)
    return site


def _moved(pages: int) -> Site:
    odd = {f"/old/page-{i}": f"/new/page-{i}" for i in range(1, pages + 1, 2)}
    even = {f"/old/page-{i}": f"/new/page-{i}" for i in range(2, pages + 1, 2)}
    site = Site("moved.example", policies=[Moves(odd), Moves(even, status=308)])
    entry = series(site, "moved", numbered("/new/page-{}", pages), lambda t: t.replace("/new/", "/old/"))
    _home(site, "moved", entry)
    return site


def _daily(pages: int) -> Site:
    site = Site(
        "daily.example",
        policies=[
            Temporaries({"/today": "/2026-11-22", "/edition/current": "/2026-11-21"}),
            Temporaries({"/latest": "/2026-11-20"}, status=307),
            SeeOther({"/subscribe": "/thanks", "/search?q=iri": "/results"}),
        ],
    )
    last = date(2026, 11, 22)  # the days up to the current edition, oldest first
    days = [f"/{last - timedelta(days=n)}" for n in reversed(range(pages))]
    moving = ("/today", "/latest", "/edition/current", "/subscribe", "/search?q=iri")
    entry = series(site, "daily", days, same, extra=lambda i: (moving[i % len(moving)],))
    _home(site, "daily", entry, *moving)
    site.page("daily:thanks", "/thanks", "/", title="Thanks")
    site.page("daily:results", "/results", "/", title="Results")
    return site


def _twins(site: Site, key: str, count: int) -> list[str]:
    """``/both-k`` and ``/both-k/``: two different documents (trap pairs)."""
    for k in range(1, count + 1):
        site.page(f"{key}:both-{k}", f"/both-{k}", "/", trap="slash twins", title=f"both {k} (file)")
        site.page(f"{key}:both-{k}/", f"/both-{k}/", "/", trap="slash twins", title=f"both {k} (dir)")
    return [link for k in range(1, count + 1) for link in (f"/both-{k}", f"/both-{k}/")]


def _twin(pages: int) -> Site:
    site = Site("twin.example", policies=[SlashRedirect()])
    twins = _twins(site, "twin", 4)

    def extra(i: int) -> Sequence[str]:
        # a pair every fourth page; a short series links the pairs it did not reach from its last page
        linked = twins[2 * (i // 4 + 1) : 2 * (i // 4 + 2)] if i % 4 == 3 else []
        if i == pages - 1:
            linked += twins[2 * (pages // 4 + 1) :]
        return linked

    entry = series(site, "twin", numbered("/dir-{}/", pages), _strip_slash, extra=extra)
    _home(site, "twin", [*twins[:2], *entry])
    return site


def _tempslash(pages: int) -> Site:
    site = Site("tempslash.example", policies=[SlashRedirect(status=302, label="temporary_slash")])
    twins = _twins(site, "tempslash", 3)
    entry = series(site, "tempslash", numbered("/dir-{}/", pages), _strip_slash,
                   extra=lambda i: twins if i == min(12, pages - 1) else ())
    _home(site, "tempslash", entry)
    return site


def _lang(pages: int) -> Site:
    site = Site("lang.example", policies=[CookieRedirect(inner=SlashRedirect())])
    twins = _twins(site, "lang", 3)
    entry = series(site, "lang", numbered("/guide-{}/", pages), _strip_slash,
                   extra=lambda i: twins if i == min(12, pages - 1) else ())
    _home(site, "lang", entry)
    return site


def _members(pages: int) -> Site:
    site = Site(
        "members.example",
        policies=[
            Sink(target="/login", prefixes=("/members/",)),
            Sink(target="/login", prefixes=("/private/",), status=301, label="sink_permanent"),
        ],
    )
    entry = series(
        site, "members", numbered("/public-{}", pages), same,
        extra=lambda i: (f"/members/area-{i + 1}", f"/private/file-{i + 1}"),
    )
    _home(site, "members", entry, "/members/")
    site.page("members:login", "/login", "/", title="Log in")
    return site


def _go(pages: int) -> Site:
    site = Site(
        "go.example",
        policies=[
            OpenRedirector(path="/out", param="url"),
            OpenRedirector(path="/away", param="to", status=301, label="open_redirect_permanent"),
        ],
    )
    entry = series(
        site, "go", numbered("/link-{}", pages), same,
        extra=lambda i: (
            f"/out?url=http://slash.example/topic-{i + 1}/",
            f"/away?to=http%3A%2F%2Fnoslash.example%2Fnote-{i + 1}",
            f"/out?url=http://go.example/link-{i + 1}",
        ),
    )
    _home(site, "go", entry)
    return site


def _loops(pages: int) -> Site:
    site = Site(
        "loops.example",
        policies=[
            Moves({"/loop/a": "/loop/b", "/loop/b": "/loop/a", "/self": "/self"}, label="loop"),
            Chain(prefix="/chain/", hops=25, target="/chain-end"),
            Chain(prefix="/short/", hops=3, target="/short-end", label="chain_short"),
        ],
    )
    odd = ("/loop/a", "/self", "/chain/0", "/short/0", "/loop/b", "/chain/10")
    entry = series(site, "loops", numbered("/page-{}", pages), same, extra=lambda i: (odd[i % len(odd)],))
    _home(site, "loops", entry, "/chain-end")
    site.page("loops:chain-end", "/chain-end", "/", title="End of the long chain")
    site.page("loops:short-end", "/short-end", "/", title="End of the short chain")
    return site


def _soft404(pages: int) -> Site:
    site = Site("soft404.example", policies=[NotFoundRedirect(target="/")])
    entry = series(site, "soft404", numbered("/p-{}", pages), same, extra=lambda i: (f"/gone-{i + 1}",))
    _home(site, "soft404", entry)
    return site


def _iis(pages: int) -> Site:
    site = Site("iis.example", policies=[CaseRedirect()])
    targets = numbered("/Docs/Page-{}", pages)
    entry = series(site, "iis", targets, str.lower, extra=lambda i: (targets[i].upper(),))
    _home(site, "iis", entry)
    return site


def _case(pairs: int) -> Site:
    site = Site("case.example")
    links: list[str] = []
    for k in range(1, pairs + 1):
        for path in (f"/Item-{k}", f"/item-{k}"):
            site.page(f"case:{path[1:]}", path, "/", trap="path case")
            links.append(path)
    _home(site, "case", links)
    return site


def protocol_sites(pages_per_host: int = PAGES) -> list[Site]:
    """The redirect-policy web: one policy per host (18 sites, ~340 resources by default).

    ``pages_per_host`` is the length of the series of the main hosts (20 by
    default, at least :data:`MIN_PAGES`); the other hosts' series keep their
    proportion to it (a host of 15 pages at the default size has 45 at 60).
    """
    if not isinstance(pages_per_host, int) or pages_per_host < MIN_PAGES:
        raise ValueError(f"pages_per_host must be an integer of at least {MIN_PAGES}, got {pages_per_host!r}")

    def n(pages_at_default: int) -> int:
        return round(pages_at_default * pages_per_host / PAGES)

    return [
        _slash(n(20)),
        _noslash(n(20)),
        _index(n(20)),
        _secure("secure.example", "secure", 301, n(20)),
        _secure("secure308.example", "secure308", 308, n(10)),
        _www_store(n(20)),
        _blog(n(20)),
        _moved(n(20)),
        _daily(n(22)),
        _twin(n(15)),
        _tempslash(n(15)),
        _lang(n(15)),
        _members(n(15)),
        _go(n(12)),
        _loops(n(10)),
        _soft404(n(15)),
        _iis(n(15)),
        _case(n(6)),
    ]
