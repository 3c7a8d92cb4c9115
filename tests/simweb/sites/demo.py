"""`demo_sites()`: a small web with IDN hosts, link forms, aliases and traps.

Six sites (plus one alias host), a few dozen resources. What it shows:
- the same resource linked in many spellings (relative, absolute, raw
  Unicode host and path, percent-encoded, upper-case host, explicit default
  port, ``%7E`` vs ``~``, dot segments, fragments, tracking parameters);
- ``faß.example`` and ``fass.example``: two hosts (IDNA2008), one under
  IDNA2003; a host only reachable through a percent-encoded host name;
- redirect aliases on the shop (``shop.example`` -> ``www``, http -> https,
  slash, ``index.html``, a moved page, a temporary redirect);
- trap pairs on ``news.example`` that a false merge would lose (``trap`` set
  on each resource: query order, path case, empty query, ``%2F``, Latin-1
  vs UTF-8, http vs https, ``www`` vs apex, composed vs decomposed).
"""

from __future__ import annotations

from ..model import Site
from ..policies import HttpsRedirect, IndexRedirect, Moves, SlashRedirect, Temporaries, WwwRedirect


def _buecher() -> Site:
    site = Site("bücher.example", name="buecher")
    site.page(
        "buecher:home", "/",
        "katalog/",
        "http://BÜCHER.example/autoren/",
        "http://xn--bcher-kva.example:80/neu",
        "/~antiquariat/",
        "/über-uns",
        "/caf%C3%A9",
        "/cafe%CC%81",
        "http://bücher.example/angebote",
        "https://bücher.example/angebote",
        "https://faß.example/",
        "http://fass.example/",
        "http://shop.example/",
        "http://news.example/",
        "#top",
        title="Bücher",
    )
    site.page(
        "buecher:catalog", "/katalog/",
        "band-1",
        "./band-2",
        "../katalog/band-3#kapitel-2",
        "HTTP://B%C3%9CCHER.EXAMPLE/katalog/band-1",
        "http://bücher.example/%6Batalog/band-2",
        "..",
        title="Katalog",
    )
    for number in (1, 2, 3):
        site.page(
            f"buecher:band-{number}", f"/katalog/band-{number}",
            "./", f"band-{number % 3 + 1}", "../autoren/",
            title=f"Band {number}",
        )
    site.page(
        "buecher:authors", "/autoren/",
        "/%7Eantiquariat/", "/%C3%BCber-uns", "goethe", "./schiller#werke", "/autoren/./goethe",
        title="Autoren",
    )
    site.page("buecher:goethe", "/autoren/goethe", "/caf%c3%a9", "/café", "../", title="Goethe")
    site.page("buecher:schiller", "/autoren/schiller", "/cafe%CC%81", "/", title="Schiller")
    site.page(
        "buecher:new", "/neu",
        "http://xn--bcher-kva.example/katalog/band-3?ref=neu",
        "/katalog/band-1?utm_source=demo&utm_medium=link",
        "/",
        title="Neu",
    )
    site.page(
        "buecher:antiquariat", "/~antiquariat/",
        "../~antiquariat/seltene-drucke", "/%7eantiquariat/karten", "/",
        title="Antiquariat",
    )
    site.page("buecher:rare", "/~antiquariat/seltene-drucke", "./karten", title="Seltene Drucke")
    site.page("buecher:maps", "/~antiquariat/karten", "/%7Eantiquariat/", title="Karten")
    site.page(
        "buecher:about", "/über-uns",
        "http://b%C3%BCcher.example/kontakt", "/%C3%BCber-uns#team",
        title="Über uns",
    )
    site.page("buecher:contact", "/kontakt", "/", title="Kontakt")
    site.page("buecher:cafe-nfc", "/caf%C3%A9", "/", title="Café (composed)", trap="composed/decomposed")
    site.page(
        "buecher:cafe-nfd", "/cafe%CC%81", "/", title="Café (decomposed)", trap="composed/decomposed"
    )
    site.page("buecher:offers-http", "/angebote", "/", scheme="http", trap="http/https", title="Angebote (http)")
    site.page(
        "buecher:offers-https", "/angebote", "http://bücher.example/",
        scheme="https", trap="http/https", title="Angebote (https)",
    )
    return site


def _fass_eszett() -> Site:
    site = Site("faß.example", name="fass-eszett", start=())
    trap = "faß/fass"
    site.page("fass-eszett:home", "/", "/straße", "weine/", "http://FASS.example/", title="Faß", trap=trap)
    site.page("fass-eszett:street", "/straße", "/weine/", title="Straße", trap=trap)
    site.page("fass-eszett:wines", "/weine/", "rot", "weiß", "../", title="Weine", trap=trap)
    site.page("fass-eszett:red", "/weine/rot", "weiß", title="Rot", trap=trap)
    site.page("fass-eszett:white", "/weine/weiß", "rot", "http://faß.example/", title="Weiß", trap=trap)
    return site


def _fass() -> Site:
    site = Site("fass.example", name="fass", start=())
    site.page("fass:home", "/", "/strasse", "http://faß.example/", title="Fass", trap="faß/fass")
    site.page("fass:street", "/strasse", "/", title="Strasse")
    return site


def _shop() -> Site:
    site = Site("www.shop.example", name="shop", start=())
    site.policies += [
        WwwRedirect(),
        HttpsRedirect(),
        SlashRedirect(),
        IndexRedirect(),
        Moves({"/alt/p-1": "/produkte/p-1"}, status=308),
        Temporaries({"/angebot-des-tages": "/produkte/p-2"}),
    ]
    site.page(
        "shop:home", "/",
        "produkte",
        "/produkte/index.html",
        "http://shop.example/warenkorb/",
        "/angebot-des-tages",
        "/alt/p-1",
        "https://www.shop.example/produkte/p-1?utm_source=demo",
        "/hilfe",
        title="Shop",
    )
    site.page(
        "shop:products", "/produkte/",
        "p-1", "p-2", "p-3", "http://www.shop.example/produkte/p-3", "HTTPS://WWW.SHOP.EXAMPLE:443/",
        title="Produkte",
    )
    for number in (1, 2, 3):
        site.page(f"shop:p-{number}", f"/produkte/p-{number}", "../", "/warenkorb", title=f"Produkt {number}")
    site.page("shop:cart", "/warenkorb/", "/hilfe/index.html", title="Warenkorb")
    site.page("shop:help", "/hilfe/", "/", title="Hilfe")
    return site


def _news() -> Site:
    site = Site("news.example", name="news", start=())
    site.page(
        "news:home", "/",
        "/a?x=1&y=2", "/a?y=2&x=1",
        "/Page", "/page",
        "/p?", "/p",
        "/files/a%2Fb", "/files/a/b",
        "/caf%E9", "/caf%C3%A9",
        "http://news.example/edition", "https://news.example/edition",
        "http://www.news.example/",
        title="News", trap="www/apex",
    )
    pairs = {
        "query order": (("news:a-xy", "/a?x=1&y=2"), ("news:a-yx", "/a?y=2&x=1")),
        "path case": (("news:Page", "/Page"), ("news:page", "/page")),
        "empty query": (("news:p-empty-query", "/p?"), ("news:p", "/p")),
        "%2F vs /": (("news:a-2F-b", "/files/a%2Fb"), ("news:a-b", "/files/a/b")),
        "latin-1/utf-8": (("news:cafe-latin1", "/caf%E9"), ("news:cafe-utf8", "/caf%C3%A9")),
    }
    for trap, members in pairs.items():
        for resource_id, path in members:
            site.page(resource_id, path, "/", title=f"{trap}: {path}", trap=trap)
    site.page("news:edition-http", "/edition", "/", scheme="http", trap="http/https", title="Edition (http)")
    site.page(
        "news:edition-https", "/edition", "http://news.example/",
        scheme="https", trap="http/https", title="Edition (https)",
    )
    return site


def _www_news() -> Site:
    site = Site("www.news.example", name="www-news", start=())
    site.page("www-news:home", "/", "/archiv", "http://news.example/", title="WWW News", trap="www/apex")
    site.page("www-news:archive", "/archiv", "/", title="Archiv")
    return site


def demo_sites() -> list[Site]:
    """The demo web: bücher, faß, fass, shop (+ apex alias), news, www.news.

    The crawl starts at ``http://bücher.example/`` only: every other host is
    reached through links, so a crawler that maps ``faß`` to ``fass``
    never sees the real ``faß.example``.
    """
    return [_buecher(), _fass_eszett(), _fass(), _shop(), _news(), _www_news()]
