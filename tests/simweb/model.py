"""Declarative sites: hosts, resources and their links, redirect policies."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .policies import Policy


@dataclass
class Resource:
    """One document, served with status 200 at one canonical target.

    ``path`` is the target as declared (``/dir/``, ``/a?x=1``, ``/café``;
    non-ASCII is served at its UTF-8 escapes); the server also answers the
    equivalent forms real servers accept (``%7E`` for ``~``, dot segments).
    ``links`` are hrefs exactly as written in the HTML. ``scheme`` limits the
    resource to ``"http"`` or ``"https"``; ``trap`` names the trap pair a
    resource belongs to (resources a false merge would lose).
    """

    id: str
    path: str
    links: Sequence[str] = ()
    title: str = ""
    text: str = ""
    scheme: str | None = None
    trap: str | None = None
    base: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.scheme not in (None, "http", "https"):
            raise ValueError(f"{self.id}: scheme must be 'http', 'https' or None")
        if not self.title:
            self.title = self.id


@dataclass
class Site:
    """One host: its resources, redirect policies and start targets.

    ``host`` may be Unicode (``bücher.example``); the server answers its
    IDNA2008 A-label. ``start`` holds targets (``/``) or absolute URLs.
    With ``ignore_query`` (the default, like a static file server) a query
    that no resource declares is ignored when the bare path is a resource.
    """

    host: str
    resources: list[Resource] = field(default_factory=list)
    policies: list[Policy] = field(default_factory=list)
    schemes: tuple[str, ...] = ("http", "https")
    start: tuple[str, ...] = ("/",)
    name: str = ""
    ignore_query: bool = True

    def __post_init__(self) -> None:
        if not self.name:
            self.name = self.host

    def page(self, id: str, path: str, *links: str, **options: object) -> Resource:
        """Declare a resource on this site and return it."""
        resource = Resource(id, path, links, **options)  # type: ignore[arg-type]
        self.resources.append(resource)
        return resource

    def add(self, *resources: Resource) -> Site:
        """Append resources; returns the site for chaining."""
        self.resources.extend(resources)
        return self

    def with_policies(self, *policies: Policy) -> Site:
        """Append policies; returns the site for chaining."""
        self.policies.extend(policies)
        return self


def check_unique_ids(sites: Iterable[Site]) -> None:
    """Raise ValueError when two resources share an id."""
    seen: dict[str, str] = {}
    for site in sites:
        for resource in site.resources:
            if resource.id in seen:
                raise ValueError(
                    f"duplicate resource id {resource.id!r} on {site.host} and {seen[resource.id]}"
                )
            seen[resource.id] = site.host
