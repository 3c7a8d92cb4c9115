"""Helpers that declare series of linked pages on a site."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..model import Site

LinkForm = Callable[[str], str]


def same(target: str) -> str:
    """A link written exactly as the canonical target."""
    return target


def series(
    site: Site,
    key: str,
    targets: Sequence[str],
    alias: LinkForm,
    *,
    canonical: LinkForm = same,
    home: str = "/",
    extra: Callable[[int], Sequence[str]] = lambda i: (),
    title: str = "",
) -> list[str]:
    """Declare one page per target, ids ``{key}:1``, ``{key}:2``, ...

    Page i links page i+1 in its alias form, i+2 in canonical form and
    i+3 in alias form again, then ``home`` and ``extra(i)``: a crawler meets
    alias links both before and after it has seen the redirects they cause.
    Returns the links a home page should carry to enter the series.
    """
    forms: tuple[tuple[int, LinkForm], ...] = ((1, alias), (2, canonical), (3, alias))
    for index, target in enumerate(targets):
        links = [form(targets[index + step]) for step, form in forms if index + step < len(targets)]
        links += [home, *extra(index)]
        site.page(f"{key}:{index + 1}", target, *links, title=f"{title or key} {index + 1}")
    return [form(targets[step - 1]) for step, form in forms if step - 1 < len(targets)]


def numbered(pattern: str, count: int) -> list[str]:
    """``numbered("/doc-{}", 3)`` -> ``["/doc-1", "/doc-2", "/doc-3"]``."""
    return [pattern.format(i) for i in range(1, count + 1)]
