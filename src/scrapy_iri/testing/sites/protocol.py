"""`protocol_sites()`: one redirect policy per host, enough pages to generalize.

Every host has a home page and a series of pages (see `series`): each page
links its neighbours in the alias form the host redirects (``/dir`` without
slash, ``http://`` on an https host, ``/dir/index.html``, the apex or
``www`` form, an old path) and in canonical form, so rules learned on the
first pages can save round trips on the rest. Adversarial hosts mix in what
must never be learned: temporary and context-dependent redirects, sinks,
an open redirector, loops and long chains, and ``/x`` vs ``/x/`` twins.
"""

from __future__ import annotations

from collections.abc import Sequence

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

#: pages per host in a series
PAGES = 20


def _home(site: Site, key: str, entry: Sequence[str], *more: str) -> None:
    site.page(f"{key}:home", "/", *entry, *more, title=f"{site.name} home")


def _strip_slash(target: str) -> str:
    return target.rstrip("/")


def _add_slash(target: str) -> str:
    return target + "/"


def _slash() -> Site:
    site = Site("slash.example", policies=[SlashRedirect()])
    _home(site, "slash", series(site, "slash", numbered("/topic-{}/", PAGES), _strip_slash))
    return site


def _noslash() -> Site:
    site = Site("noslash.example", policies=[SlashRedirect(add=False)])
    _home(site, "noslash", series(site, "noslash", numbered("/note-{}", PAGES), _add_slash))
    return site


def _index() -> Site:
    site = Site("index.example", policies=[IndexRedirect()])
    targets = numbered("/area-{}/", PAGES)
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


def _www_store() -> Site:
    site = Site("www.store.example", policies=[WwwRedirect()], start=("http://store.example/",))
    entry = series(site, "store", numbered("/item-{}", PAGES), lambda t: f"http://store.example{t}")
    _home(site, "store", entry)
    return site


def _blog() -> Site:
    site = Site("blog.example", policies=[WwwRedirect()], start=("http://www.blog.example/",))
    entry = series(site, "blog", numbered("/post-{}", PAGES), lambda t: f"http://www.blog.example{t}")
    _home(site, "blog", entry)
    return site


def _moved() -> Site:
    odd = {f"/old/page-{i}": f"/new/page-{i}" for i in range(1, PAGES + 1, 2)}
    even = {f"/old/page-{i}": f"/new/page-{i}" for i in range(2, PAGES + 1, 2)}
    site = Site("moved.example", policies=[Moves(odd), Moves(even, status=308)])
    entry = series(site, "moved", numbered("/new/page-{}", PAGES), lambda t: t.replace("/new/", "/old/"))
    _home(site, "moved", entry)
    return site


def _daily() -> Site:
    site = Site(
        "daily.example",
        policies=[
            Temporaries({"/today": "/2026-11-22", "/edition/current": "/2026-11-21"}),
            Temporaries({"/latest": "/2026-11-20"}, status=307),
            SeeOther({"/subscribe": "/thanks", "/search?q=iri": "/results"}),
        ],
    )
    days = [f"/2026-11-{day:02d}" for day in range(1, 23)]
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


def _twin() -> Site:
    site = Site("twin.example", policies=[SlashRedirect()])
    twins = _twins(site, "twin", 4)
    entry = series(
        site, "twin", numbered("/dir-{}/", 15), _strip_slash,
        extra=lambda i: twins[2 * (i // 4 + 1) : 2 * (i // 4 + 2)] if i % 4 == 3 else (),
    )
    _home(site, "twin", [*twins[:2], *entry])
    return site


def _tempslash() -> Site:
    site = Site("tempslash.example", policies=[SlashRedirect(status=302, label="temporary_slash")])
    twins = _twins(site, "tempslash", 3)
    entry = series(site, "tempslash", numbered("/dir-{}/", 15), _strip_slash,
                   extra=lambda i: twins if i == 12 else ())
    _home(site, "tempslash", entry)
    return site


def _lang() -> Site:
    site = Site("lang.example", policies=[CookieRedirect(inner=SlashRedirect())])
    twins = _twins(site, "lang", 3)
    entry = series(site, "lang", numbered("/guide-{}/", 15), _strip_slash,
                   extra=lambda i: twins if i == 12 else ())
    _home(site, "lang", entry)
    return site


def _members() -> Site:
    site = Site(
        "members.example",
        policies=[
            Sink(target="/login", prefixes=("/members/",)),
            Sink(target="/login", prefixes=("/private/",), status=301, label="sink_permanent"),
        ],
    )
    entry = series(
        site, "members", numbered("/public-{}", 15), same,
        extra=lambda i: (f"/members/area-{i + 1}", f"/private/file-{i + 1}"),
    )
    _home(site, "members", entry, "/members/")
    site.page("members:login", "/login", "/", title="Log in")
    return site


def _go() -> Site:
    site = Site(
        "go.example",
        policies=[
            OpenRedirector(path="/out", param="url"),
            OpenRedirector(path="/away", param="to", status=301, label="open_redirect_permanent"),
        ],
    )
    entry = series(
        site, "go", numbered("/link-{}", 12), same,
        extra=lambda i: (
            f"/out?url=http://slash.example/topic-{i + 1}/",
            f"/away?to=http%3A%2F%2Fnoslash.example%2Fnote-{i + 1}",
            f"/out?url=http://go.example/link-{i + 1}",
        ),
    )
    _home(site, "go", entry)
    return site


def _loops() -> Site:
    site = Site(
        "loops.example",
        policies=[
            Moves({"/loop/a": "/loop/b", "/loop/b": "/loop/a", "/self": "/self"}, label="loop"),
            Chain(prefix="/chain/", hops=25, target="/chain-end"),
            Chain(prefix="/short/", hops=3, target="/short-end", label="chain_short"),
        ],
    )
    odd = ("/loop/a", "/self", "/chain/0", "/short/0", "/loop/b", "/chain/10")
    entry = series(site, "loops", numbered("/page-{}", 10), same, extra=lambda i: (odd[i % len(odd)],))
    _home(site, "loops", entry, "/chain-end")
    site.page("loops:chain-end", "/chain-end", "/", title="End of the long chain")
    site.page("loops:short-end", "/short-end", "/", title="End of the short chain")
    return site


def _soft404() -> Site:
    site = Site("soft404.example", policies=[NotFoundRedirect(target="/")])
    entry = series(site, "soft404", numbered("/p-{}", 15), same, extra=lambda i: (f"/gone-{i + 1}",))
    _home(site, "soft404", entry)
    return site


def _iis() -> Site:
    site = Site("iis.example", policies=[CaseRedirect()])
    targets = numbered("/Docs/Page-{}", 15)
    entry = series(site, "iis", targets, str.lower, extra=lambda i: (targets[i].upper(),))
    _home(site, "iis", entry)
    return site


def _case() -> Site:
    site = Site("case.example")
    links: list[str] = []
    for k in range(1, 7):
        for path in (f"/Item-{k}", f"/item-{k}"):
            site.page(f"case:{path[1:]}", path, "/", trap="path case")
            links.append(path)
    _home(site, "case", links)
    return site


def protocol_sites() -> list[Site]:
    """The redirect-policy web: one policy per host (18 sites, ~280 resources)."""
    return [
        _slash(),
        _noslash(),
        _index(),
        _secure("secure.example", "secure", 301, PAGES),
        _secure("secure308.example", "secure308", 308, 10),
        _www_store(),
        _blog(),
        _moved(),
        _daily(),
        _twin(),
        _tempslash(),
        _lang(),
        _members(),
        _go(),
        _loops(),
        _soft404(),
        _iis(),
        _case(),
    ]
