"""``allowed_domains`` as people write them: Unicode labels and any letter case.

Scrapy's ``OffsiteMiddleware`` matches the request's host (lowercase ASCII,
A-labels) against ``allowed_domains`` as written, so ``"bücher.example"``
or ``"Example.ORG"`` filters every link of the site it names as offsite.
:class:`IRIOffsiteMiddleware`, which the add-on puts in Scrapy's place,
matches each domain's lowercase form and its A-label form (IDNA2008/UTS #46)
as well. An entry holding a port or a path is left as written, as Scrapy
takes it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware

from ._links import ascii_domains

if TYPE_CHECKING:
    import re

    from scrapy import Spider

SCRAPY = "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware"


def host_forms(domains: list[Any]) -> list[Any]:
    """``domains`` followed by the lowercase and A-label forms Scrapy's matching misses."""
    forms: list[Any] = list(domains)
    for domain in domains:
        if not isinstance(domain, str) or any(c in domain for c in ":/@"):
            continue
        for form in sorted(ascii_domains(domain.strip().lower())):
            if form not in forms:
                forms.append(form)
    return forms


class IRIOffsiteMiddleware(OffsiteMiddleware):
    """Scrapy's ``OffsiteMiddleware``, matching Unicode and upper-case ``allowed_domains`` too."""

    def get_host_regex(self, spider: Spider) -> re.Pattern[str]:
        allowed = getattr(spider, "allowed_domains", None)
        if not allowed:
            return super().get_host_regex(spider)
        return super().get_host_regex(SimpleNamespace(allowed_domains=host_forms(list(allowed))))  # type: ignore[arg-type]
