"""Server behaviour and redirect policies, answered in memory (no sockets)."""

from __future__ import annotations

import pytest

from simweb import (
    CONTROL_HOST,
    Chain,
    CookieRedirect,
    Moves,
    Resource,
    Router,
    SimRequest,
    SimulatedWeb,
    Site,
    SlashRedirect,
    WwwRedirect,
    demo_sites,
    protocol_sites,
)
from simweb.router import MAX_REDIRECTS

DEMO = SimulatedWeb(demo_sites())
PROTOCOL = SimulatedWeb(protocol_sites())


def web_request(url: str) -> SimRequest:
    return SimRequest.from_url(url)


def answer(web: SimulatedWeb, url: str) -> tuple[int, str | None, str | None, str | None]:
    """(status, resource id, Location, policy) of one in-memory request."""
    response = web.router.route(web_request(url))
    return response.status, response.resource_id, response.location, response.policy


# -- server behaviour like real servers ---------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://xn--bcher-kva.example/~antiquariat/",
        "http://xn--bcher-kva.example/%7Eantiquariat/",
        "http://xn--bcher-kva.example/%7eantiquariat/",
        "http://XN--BCHER-KVA.EXAMPLE/~antiquariat/",
        "http://xn--bcher-kva.example:80/~antiquariat/",
        "http://xn--bcher-kva.example./~antiquariat/",
        "http://xn--bcher-kva.example/katalog/../~antiquariat/./",
        "https://xn--bcher-kva.example:443/%7Eantiquariat/",
    ],
)
def test_equivalent_spellings_serve_the_same_resource(url: str) -> None:
    assert answer(DEMO, url)[:2] == (200, "buecher:antiquariat")


def test_paths_are_case_sensitive() -> None:
    assert answer(DEMO, "http://xn--bcher-kva.example/KATALOG/")[0] == 404


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/",  # a real host: never contacted
        "http://b%C3%BCcher.example/",  # percent-encoded host: unresolvable
        "http://bücher.example/",  # raw Unicode host: unresolvable
        "http://xn--bcher-kva.example:8080/",  # nothing listens there
        "http://[::1]/",
    ],
)
def test_unknown_hosts_get_502(url: str) -> None:
    assert answer(DEMO, url)[0] == 502


def test_bad_percent_encoding_is_400() -> None:
    assert answer(DEMO, "http://xn--bcher-kva.example/%zz")[0] == 400


def test_static_server_ignores_unknown_queries_but_not_declared_ones() -> None:
    assert answer(DEMO, "https://www.shop.example/produkte/p-1?utm_source=x")[:2] == (200, "shop:p-1")
    assert answer(DEMO, "http://news.example/a?z=1")[0] == 404


def test_host_only_serving_declared_schemes() -> None:
    site = Site("plain.example", schemes=("http",))
    site.page("plain:home", "/")
    router = Router([site])
    assert router.serves("plain.example", "http")
    assert not router.serves("plain.example", "https")


# -- trap pairs: different documents at every rung below protocol --------------

TRAP_PAIRS = [
    ("http://news.example/a?x=1&y=2", "http://news.example/a?y=2&x=1"),
    ("http://news.example/Page", "http://news.example/page"),
    ("http://news.example/p?", "http://news.example/p"),
    ("http://news.example/files/a%2Fb", "http://news.example/files/a/b"),
    ("http://news.example/caf%E9", "http://news.example/caf%C3%A9"),
    ("http://news.example/edition", "https://news.example/edition"),
    ("http://news.example/", "http://www.news.example/"),
    ("http://xn--bcher-kva.example/caf%C3%A9", "http://xn--bcher-kva.example/cafe%CC%81"),
    ("http://xn--bcher-kva.example/angebote", "https://xn--bcher-kva.example/angebote"),
    ("http://xn--fa-hia.example/", "http://fass.example/"),
]


@pytest.mark.parametrize(("first", "second"), TRAP_PAIRS)
def test_trap_pairs_are_different_documents(first: str, second: str) -> None:
    one, other = answer(DEMO, first), answer(DEMO, second)
    assert one[0] == other[0] == 200
    assert one[1] != other[1]


def test_every_trap_group_has_two_members() -> None:
    for web in (DEMO, PROTOCOL):
        for name, ids in web.traps().items():
            assert len(ids) >= 2, name


# -- redirect policies ---------------------------------------------------------

POLICY_CASES = [
    ("http://slash.example/topic-1", 301, "/topic-1/", "slash"),
    ("http://slash.example/topic-1?x=1", 301, "/topic-1/?x=1", "slash"),
    ("http://noslash.example/note-1/", 301, "/note-1", "slash"),
    ("http://index.example/area-1/index.html", 301, "/area-1/", "index"),
    ("http://secure.example/doc-1", 301, "https://secure.example/doc-1", "https"),
    ("http://secure308.example/doc-1?a=b", 308, "https://secure308.example/doc-1?a=b", "https"),
    ("http://store.example/item-1", 301, "http://www.store.example/item-1", "www"),
    ("https://store.example/item-1", 301, "https://www.store.example/item-1", "www"),
    ("http://www.blog.example/post-1", 301, "http://blog.example/post-1", "www"),
    ("http://moved.example/old/page-1", 301, "/new/page-1", "moves"),
    ("http://moved.example/old/page-2", 308, "/new/page-2", "moves"),
    ("http://daily.example/today", 302, "/2026-11-22", "temporaries"),
    ("http://daily.example/latest", 307, "/2026-11-20", "temporaries"),
    ("http://daily.example/subscribe", 303, "/thanks", "303"),
    ("http://daily.example/search?q=iri", 303, "/results", "303"),
    ("http://members.example/members/area-3", 302, "/login", "sink"),
    ("http://members.example/private/file-9", 301, "/login", "sink_permanent"),
    ("http://go.example/out?url=http://slash.example/topic-1/", 302, "http://slash.example/topic-1/", "open_redirect"),
    ("http://go.example/away?to=http%3A%2F%2Fnoslash.example%2Fnote-1", 301, "http://noslash.example/note-1",
     "open_redirect_permanent"),
    ("http://tempslash.example/dir-1", 302, "/dir-1/", "temporary_slash"),
    ("http://lang.example/guide-1", 301, "/guide-1/", "cookie_redirect"),
    ("http://loops.example/loop/a", 301, "/loop/b", "loop"),
    ("http://loops.example/self", 301, "/self", "loop"),
    ("http://loops.example/chain/0", 301, "/chain/1", "chain"),
    ("http://loops.example/chain/24", 301, "/chain-end", "chain"),
    ("http://soft404.example/gone-1", 301, "/", "soft404"),
    ("http://iis.example/docs/page-1", 301, "/Docs/Page-1", "case"),
    ("http://iis.example/DOCS/PAGE-1", 301, "/Docs/Page-1", "case"),
]


@pytest.mark.parametrize(("url", "status", "location", "policy"), POLICY_CASES)
def test_redirect_policies(url: str, status: int, location: str, policy: str) -> None:
    assert answer(PROTOCOL, url) == (status, None, location, policy)


def test_cookie_redirect_sets_a_cookie_and_varies() -> None:
    response = PROTOCOL.router.route(web_request("http://lang.example/guide-2"))
    assert response.header("Set-Cookie")
    assert response.header("Vary") == "Cookie"


@pytest.mark.parametrize("host", ["twin.example", "tempslash.example", "lang.example"])
def test_slash_twins_are_two_documents(host: str) -> None:
    bare, slashed = answer(PROTOCOL, f"http://{host}/both-1"), answer(PROTOCOL, f"http://{host}/both-1/")
    assert bare[0] == slashed[0] == 200 and bare[1] != slashed[1]


def test_sink_has_high_fan_in() -> None:
    targets = {answer(PROTOCOL, f"http://members.example/members/area-{i}")[2] for i in range(1, 16)}
    assert targets == {"/login"}


def test_long_chain_outlasts_the_redirect_limit() -> None:
    final, response = PROTOCOL.router.fetch("http://loops.example/chain/0")
    assert response.status == 301 and final.endswith(f"/chain/{MAX_REDIRECTS}")
    final, response = PROTOCOL.router.fetch("http://loops.example/short/0")
    assert (response.status, response.resource_id) == (200, "loops:short-end")


def test_loop_never_ends_on_a_document() -> None:
    assert PROTOCOL.router.fetch("http://loops.example/loop/a")[1].status == 301


def test_chained_policies_reach_the_canonical_page() -> None:
    final, response = DEMO.router.fetch("http://shop.example/warenkorb")
    assert final == "https://www.shop.example/warenkorb/"
    assert response.resource_id == "shop:cart"


# -- the declared webs ---------------------------------------------------------


@pytest.mark.parametrize("web", [DEMO, PROTOCOL], ids=["demo", "protocol"])
def test_every_declared_resource_is_reachable(web: SimulatedWeb) -> None:
    assert web.resource_ids() == set(web.router.resources)


def test_demo_web_shape() -> None:
    hosts = DEMO.router.hosts
    assert {"xn--bcher-kva.example", "xn--fa-hia.example", "fass.example"} <= set(hosts)
    assert 4 <= len(DEMO.sites) <= 8
    assert 30 <= len(DEMO.resource_ids()) <= 80
    assert DEMO.start_urls() == ["http://xn--bcher-kva.example/"]
    assert DEMO.start_urls(iri=True) == ["http://bücher.example/"]


def test_protocol_web_shape() -> None:
    kinds = {policy.name for site in PROTOCOL.sites for policy in site.policies}
    assert {"slash", "index", "https", "www", "moves", "temporaries", "303", "sink", "open_redirect",
            "cookie_redirect", "chain", "loop", "soft404", "case"} <= kinds
    for site in PROTOCOL.sites:
        assert len(site.resources) >= 10, site.host
    assert len(PROTOCOL.start_urls()) == len(PROTOCOL.sites)


def test_protocol_web_size_is_a_parameter() -> None:
    """Every host grows with ``pages_per_host``; the default web is the one the tests know."""
    assert [len(site.resources) for site in protocol_sites(20)] == [len(site.resources) for site in PROTOCOL.sites]
    small, large = SimulatedWeb(protocol_sites(10)), SimulatedWeb(protocol_sites(60))
    for web in (small, large):
        assert web.resource_ids() == set(web.router.resources)  # every page, trap and chain end linked
        assert web.traps()["slash twins"] == PROTOCOL.traps()["slash twins"]  # the trap pairs stay
    for site, default, big in zip(small.sites, PROTOCOL.sites, large.sites):
        assert len(site.resources) <= len(default.resources) <= len(big.resources), site.host
    assert len(large.resource_ids()) > 2.5 * len(PROTOCOL.resource_ids())
    with pytest.raises(ValueError, match="pages_per_host"):
        protocol_sites(9)


def test_url_of_answers_with_the_resource() -> None:
    for web in (DEMO, PROTOCOL):
        for resource_id in web.resource_ids():
            assert answer(web, web.url_of(resource_id))[:2] == (200, resource_id)


def test_page_carries_its_id_and_links() -> None:
    response = DEMO.router.route(web_request("http://xn--bcher-kva.example/"))
    html = response.body.decode("utf-8")
    assert '<meta name="resource-id" content="buecher:home">' in html
    assert 'href="https://faß.example/"' in html
    assert response.header("Content-Type") == "text/html; charset=utf-8"


# -- extending and validating site data ----------------------------------------


def test_custom_site() -> None:
    site = Site("tiny.example", policies=[SlashRedirect(), Moves({"/old": "/dir/"})])
    site.page("tiny:home", "/", "dir", "/old", "https://tiny.example/x#y")
    site.page("tiny:dir", "/dir/")
    site.add(Resource("tiny:x", "/x", title="X"))
    web = SimulatedWeb([site])
    assert web.resource_ids() == {"tiny:home", "tiny:dir", "tiny:x"}
    assert answer(web, "http://tiny.example/dir")[2:] == ("/dir/", "slash")
    assert answer(web, "http://tiny.example/old")[2:] == ("/dir/", "moves")


def test_chain_as_loop_and_cookie_wrapper() -> None:
    site = Site("c.example", policies=[Chain(prefix="/c/", hops=2, target="/c/0"),
                                       CookieRedirect(inner=Moves({"/a": "/b"}), set_cookie=None)])
    site.page("c:home", "/")
    web = SimulatedWeb([site])
    assert answer(web, "http://c.example/c/1")[2] == "/c/0"
    response = web.router.route(web_request("http://c.example/a"))
    assert response.header("Set-Cookie") is None and response.header("Vary") == "Cookie"


@pytest.mark.parametrize(
    "sites",
    [
        [Site("a.example", [Resource("x", "/")]), Site("b.example", [Resource("x", "/")])],
        [Site("a.example", [Resource("x", "/p"), Resource("y", "/%70")])],
        [Site("a.example"), Site("A.example")],
        [Site("www.a.example", policies=[WwwRedirect()]), Site("a.example")],
        [Site(CONTROL_HOST)],
    ],
    ids=["duplicate id", "duplicate path", "duplicate host", "alias clash", "control host"],
)
def test_invalid_site_sets(sites: list[Site]) -> None:
    with pytest.raises(ValueError):
        SimulatedWeb(sites)


def test_loopback_only() -> None:
    with pytest.raises(ValueError):
        SimulatedWeb(demo_sites(), address="0.0.0.0")


def test_in_memory_requests_are_counted() -> None:
    web = SimulatedWeb(demo_sites())
    web.request("http://shop.example/")
    web.request("https://www.shop.example/")
    web.request("https://www.shop.example/")
    assert web.fetches("shop:home") == 2
    assert web.redirect_counts() == {"www": 1}
    assert web.url_counts()["https://www.shop.example/"] == 2
    assert web.requests_served() == 3
    web.reset_counts()
    assert web.fetch_counts() == {} and web.redirects_served() == 0
