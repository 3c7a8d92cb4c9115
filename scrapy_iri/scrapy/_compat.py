"""Scrapy's present identity, for migrating users (``IRI_COMPAT = "w3lib"``).

Scrapy fingerprints ``canonicalize_url(safe_url_string(url))``. Next to the
merges the specs allow, that identity merges URLs the specs keep apart:

- query parameters sorted: ``?a=1&b=2`` = ``?b=2&a=1`` (order is
  significant to many applications);
- a valueless parameter given an ``=``: ``?a`` = ``?a=``;
- an empty query dropped: ``http://h/p?`` = ``http://h/p`` (3987bis 5.3.3:
  an empty delimiter is significant);
- IDNA2003 host mapping, already when the ``Request`` is made:
  ``faß.de`` = ``fass.de``, ``ς`` = ``σ``, joiners dropped (other names
  under IDNA2008, other sites).

With ``IRI_COMPAT = "w3lib"`` the dupefilter and the fingerprinter hand
every request to the components the add-on replaced (Scrapy's by default),
so fingerprints, HTTP cache keys and ``JOBDIR/requests.seen`` stay what they
were; the link extractor and :func:`~scrapy_iri.iri_request` still produce
correct URIs. :func:`identity_changes` shows, for URLs from an earlier
crawl, what switching the compat mode off changes.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from w3lib.url import canonicalize_url, safe_url_string

from scrapy_iri import IRIError, Rung, canonicalize

if TYPE_CHECKING:
    from collections.abc import Iterable


def scrapy_identity(url: str, *, keep_fragments: bool = False) -> str:
    """The URL form Scrapy's request fingerprint is computed from (the URL itself if w3lib rejects it)."""
    try:
        return canonicalize_url(safe_url_string(url), keep_fragments=keep_fragments)
    except ValueError:
        return url


@dataclass
class IdentityChanges:
    """How two identities group the same URLs."""

    false_merges: list[list[str]] = field(default_factory=list)
    """Groups Scrapy merges into one request that the ladder keeps apart (fetched once, should be more)."""
    new_merges: list[list[str]] = field(default_factory=list)
    """Groups the ladder merges that Scrapy fetches separately."""
    invalid: list[str] = field(default_factory=list)
    """URLs the ladder cannot canonicalize (compared as given)."""


def identity_changes(
    urls: Iterable[str],
    rung: Rung | str = Rung.SCHEME,
    *,
    keep_fragments: bool = False,
    lenient: bool = True,
) -> IdentityChanges:
    """Compare Scrapy's identity with the ladder's at ``rung`` on ``urls``."""
    pairs: list[tuple[str, str, str]] = []  # (url, Scrapy's form, the ladder's form)
    changes = IdentityChanges()
    for url in dict.fromkeys(urls):
        try:
            ladder = canonicalize(url, rung, keep_fragment=keep_fragments, lenient=lenient)
        except IRIError:
            changes.invalid.append(url)
            ladder = url if keep_fragments else url.partition("#")[0]
        pairs.append((url, scrapy_identity(url, keep_fragments=keep_fragments), ladder))
    changes.false_merges = _split_groups(pairs, by=1, apart=2)
    changes.new_merges = _split_groups(pairs, by=2, apart=1)
    return changes


def _split_groups(pairs: list[tuple[str, str, str]], by: int, apart: int) -> list[list[str]]:
    """Groups of URLs with one form ``by`` whose forms ``apart`` differ."""
    groups: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for pair in pairs:
        groups[pair[by]].append(pair)
    return [
        sorted(pair[0] for pair in group)
        for group in groups.values()
        if len({pair[apart] for pair in group}) > 1
    ]
