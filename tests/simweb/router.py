"""Routing: from a received request to the answer of the simulated server.

Pure (no sockets, no counters): `Router.route` is what every simulated
host does with one request; `Router.reachable` walks the links from the
start URLs the way a correct crawler would.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .model import Resource, Site, check_unique_ids
from .pages import render_message, render_resource
from .policies import Context, Policy
from .urls import (
    DEFAULT_PORTS,
    BadTarget,
    Target,
    a_label_host,
    normalize_target,
    resolve_href,
    resolve_reference,
    split_authority,
    wire_host,
)

#: redirects a reference crawler follows in a row (Scrapy's REDIRECT_MAX_TIMES)
MAX_REDIRECTS = 20
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class SimRequest:
    """A request as received: the target is raw (not yet normalized)."""

    scheme: str
    host: str
    target: str | bytes
    port: int | None = None
    method: str = "GET"
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        """scheme://host[:port]target, as received."""
        target = self.target.decode("latin-1") if isinstance(self.target, bytes) else self.target
        port = "" if self.port is None else f":{self.port}"
        return f"{self.scheme}://{self.host}{port}{target}"

    @classmethod
    def from_url(
        cls, url: str, method: str = "GET", headers: Mapping[str, str] | None = None
    ) -> SimRequest:
        """Split an absolute ``http(s)://`` URL (the proxy's absolute-form)."""
        scheme, sep, rest = url.partition("://")
        if not sep:
            raise BadTarget(f"not an absolute URL: {url!r}")
        slash = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
        authority, target = rest[:slash], rest[slash:]
        if target.startswith("?") or not target:
            target = "/" + target
        host, port = split_authority(authority)
        return cls(scheme.lower(), host, target, port, method, dict(headers or {}))


@dataclass
class SimResponse:
    """The answer: status, headers, body, and what produced it."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    resource_id: str | None = None
    policy: str | None = None  #: name of the redirect policy that answered

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        return next((v for k, v in self.headers if k.lower() == lowered), None)

    @property
    def location(self) -> str | None:
        return self.header("Location")


def _html(status: int, body: bytes, *headers: tuple[str, str]) -> SimResponse:
    return SimResponse(status, [("Content-Type", "text/html; charset=utf-8"), *headers], body)


def _error(status: int, message: str) -> SimResponse:
    return _html(status, render_message(status, message))


@dataclass
class _CompiledSite:
    site: Site
    host: str
    by_target: dict[tuple[str | None, Target], Resource] = field(default_factory=dict)
    by_folded_path: dict[str, str] = field(default_factory=dict)

    def lookup(self, scheme: str, target: Target) -> Resource | None:
        found = self.by_target.get((scheme, target)) or self.by_target.get((None, target))
        if found is None and target.query is not None and self.site.ignore_query:
            return self.lookup(scheme, Target(target.path))
        return found

    def policies(self, stage: str) -> list[Policy]:
        return [p for p in self.site.policies if p.stage == stage]


class Router:
    """All sites compiled into host and target tables."""

    def __init__(self, sites: Iterable[Site]) -> None:
        self.sites = list(sites)
        check_unique_ids(self.sites)
        self._hosts: dict[str, _CompiledSite] = {}
        self.resources: dict[str, Resource] = {}
        self.resource_hosts: dict[str, str] = {}
        self.resource_sites: dict[str, Site] = {}
        for site in self.sites:
            self._compile(site)

    def _compile(self, site: Site) -> None:
        host = a_label_host(site.host)
        compiled = _CompiledSite(site, host)
        for resource in site.resources:
            key = (resource.scheme, normalize_target(resource.path))
            if key in compiled.by_target:
                raise ValueError(f"{site.host}: two resources at {resource.path!r}")
            compiled.by_target[key] = resource
            compiled.by_folded_path.setdefault(key[1].path.casefold(), key[1].path)
            self.resources[resource.id] = resource
            self.resource_hosts[resource.id] = host
            self.resource_sites[resource.id] = site
        names = [host, *(alias for p in site.policies for alias in p.alias_hosts(host))]
        for name in names:
            if name in self._hosts:
                raise ValueError(f"host {name!r} declared twice")
            self._hosts[name] = compiled

    @property
    def hosts(self) -> list[str]:
        """Every host name (A-label) the web answers, aliases included."""
        return sorted(self._hosts)

    def serves(self, host: str, scheme: str, port: int | None = None) -> bool:
        """Would a connection to host:port for this scheme be accepted?"""
        key = wire_host(host)
        compiled = self._hosts.get(key) if key else None
        if compiled is None or port not in (None, DEFAULT_PORTS.get(scheme)):
            return False
        return scheme in compiled.site.schemes or any(p.kind == "https" for p in compiled.site.policies)

    def route(self, request: SimRequest) -> SimResponse:
        """The simulated server's answer to one request."""
        if not self.serves(request.host, request.scheme, request.port):
            return _error(502, f"simweb: no server for {request.host!r} on {request.scheme}")
        host = wire_host(request.host)
        assert host is not None
        compiled = self._hosts[host]
        try:
            target = normalize_target(request.target)
        except BadTarget as exc:
            return _error(400, f"bad request target: {exc}")
        ctx = Context(
            scheme=request.scheme,
            host=host,
            site_host=compiled.host,
            target=target,
            headers=request.headers,
            exists=lambda t: compiled.lookup(request.scheme, t) is not None,
            find_casefold=lambda p: compiled.by_folded_path.get(p.casefold()),
        )
        answer = self._apply(compiled.policies("before"), ctx)
        if answer is not None:
            return answer
        if host == compiled.host:
            resource = compiled.lookup(request.scheme, target)
            if resource is not None:
                return self._serve(resource)
        answer = self._apply(compiled.policies("after"), ctx)
        return answer or _error(404, f"not found: {target}")

    def _serve(self, resource: Resource) -> SimResponse:
        body = render_resource(resource)
        response = _html(200, body, *resource.headers.items())
        response.resource_id = resource.id
        return response

    def _apply(self, policies: list[Policy], ctx: Context) -> SimResponse | None:
        for policy in policies:
            redirect = policy.redirect(ctx)
            if redirect is None:
                continue
            location = redirect.location
            response = _html(
                redirect.status,
                render_message(redirect.status, "redirect", location),
                ("Location", location),
                *redirect.headers,
            )
            response.policy = policy.name
            return response
        return None

    # -- the reference crawler -------------------------------------------------

    def start_urls(self, names: Iterable[str] = ()) -> list[str]:
        """Start URLs (ASCII URIs) of the named sites (all when empty)."""
        wanted = set(names)
        urls: list[str] = []
        for site in self.sites:
            host = a_label_host(site.host)
            if wanted and not wanted & {site.name, site.host, host}:
                continue
            for start in site.start:
                url = resolve_href(f"http://{host}/", start)
                if url is not None:
                    urls.append(url)
        return urls

    def fetch(self, url: str) -> tuple[str, SimResponse]:
        """Follow redirects from url (at most MAX_REDIRECTS); final URL, answer."""
        response = self.route(SimRequest.from_url(url))
        for _ in range(MAX_REDIRECTS):
            location = response.location
            if response.status not in REDIRECT_STATUSES or location is None:
                break
            following = resolve_href(url, location)
            if following is None:
                break
            url = following
            response = self.route(SimRequest.from_url(url))
        return url, response

    def reachable(self, start_urls: Iterable[str] | None = None) -> dict[str, str]:
        """Resource id -> first URL it was reached at, following all links."""
        queue = deque(self.start_urls() if start_urls is None else start_urls)
        seen = set(queue)
        found: dict[str, str] = {}
        while queue:
            final, response = self.fetch(queue.popleft())
            if response.status != 200 or response.resource_id is None:
                continue
            resource = self.resources[response.resource_id]
            found.setdefault(resource.id, final)
            base = resolve_reference(final, resource.base) if resource.base else final
            for href in resource.links:
                url = resolve_href(base, href)
                if url is not None and url not in seen:
                    seen.add(url)
                    queue.append(url)
        return found
