"""What the protocol rung does with a request before it is downloaded (no Scrapy here).

The request was filed by the dupefilter under the representative its
identity carries. Just before download the store may know more (a rule
became active) or less (a rule fell), so :func:`plan` compares the carried
identity with the store's resolution now and decides:

* ``send``: fetch the URL as it is (nothing merges it, or the rule that
  merged it fell: the representative it was filed under is fetched at the
  end of its chain if nothing else fetched it);
* ``verify``: fetch the URL as it is to check a rule's prediction; every hop
  of its chain that lands on its own identity passes the dupefilter;
* ``rewrite``: fetch the representative instead, saving the round trip.
  ``filed`` says whether the dupefilter filed the request there already (it
  must let the rewritten request pass) or elsewhere (it judges the target,
  so a page fetched meanwhile is not fetched again); ``orphan`` is an older
  filing nobody may fetch now.

An exact alias stated in an earlier crawl is evidence about that day:
:func:`alias_checked` picks the aliases whose source is fetched as it is in
this crawl (the store then merges nothing through them, for the dupefilter
and the rewriting alike): every alias of an origin until later crawls have
confirmed its aliases more than three times, then a share decaying as a
rule's does, and every one again once one of them ended.

Invariants this keeps (tests in ``tests/scrapy/test_request_path.py`` and the crawl
tests): nothing filed is left unfetched, nothing fetched twice because a
rule changed while the request was in flight.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

from scrapy_iri.store import Alias, Resolution, RuleKey

SEND = "send"
VERIFY = "verify"
REWRITE = "rewrite"


@dataclass(frozen=True)
class Plan:
    """The decision for one request (see the module docstring)."""

    action: str
    target: str | None = None
    filed: bool = False
    rules: tuple[RuleKey, ...] = ()
    orphan: str | None = None


@dataclass(frozen=True)
class Flight:
    """What the middleware did with a request in flight, kept in its meta (picklable).

    ``dont_filter`` is the request's own flag, restored when its answer
    arrives, so a redirect of a request the middleware let through is
    filtered as usual. ``claim`` marks a request planned before the URL it
    is sent as was noted as on its way (a rewrite sent back through the
    dupefilter, a check the middleware scheduled): it notes that URL when it
    reaches the downloader, and is dropped there if another request for the
    same URL got there first.
    """

    dont_filter: bool
    action: str = ""
    rules: tuple[str, ...] = ()
    rewritten_from: str | None = None
    claim: bool = False


#: confirmations a rule needs per unit of verified share: with n confirmations and no
#: failure, the 95% upper bound on the rule's error rate is about 3/n (the rule of three)
RULE_OF_THREE = 3.0


def verification_share(confirmations: int, floor: float) -> float:
    """The share of a rule's predictions checked by fetching the original.

    Every prediction of a rule is verified until it has earned trust, then
    the share decays as ``3/n`` with its ``n`` confirmations (each verified
    prediction that was right adds one): a rule with 30 confirmations and
    no failure has a 95% upper bound of about 10% on its error rate, and is
    verified for 10% of its predictions; with 300, 1%. It never drops below
    ``floor`` (``IRI_VERIFY_SHARE``). One counterexample suspends the rule.
    """
    if confirmations <= RULE_OF_THREE:
        return 1.0
    return max(floor, min(1.0, RULE_OF_THREE / confirmations))


def alias_checked(alias: Alias, trust: int, floor: float) -> bool:
    """Whether an alias stated in an earlier crawl is checked in this one, by fetching its source.

    The aliases of one origin are judged together, as a rule's predictions
    are: ``trust`` is the number of times a later crawl found one of them
    stated again (-1: one of them ended lately). Every alias is checked
    until the origin's aliases have ``n`` > 3 such confirmations (or the
    alias itself was stated in more than three crawls), then a stable share
    ``3/n`` of them, never below ``floor`` (``IRI_VERIFY_SHARE``); after an
    alias of the origin ended, every one is checked. A check that finds
    anything but the same permanent redirect ends the alias, and what the
    origin's aliases merged in this crawl is fetched again.

    Trust is what earlier crawls found: confirmations counted in this crawl
    lower the share of the next one, not of this one, so a crawl after a
    change checks every alias of an origin that had not earned trust before
    it (a share decaying within the crawl would leave a changed alias among
    many unchanged ones unchecked).
    """
    if trust < 0:
        return True
    return verifies_by_hash(alias.source, verification_share(max(trust, alias.confirmations + 1), floor))


def verifies_by_hash(form: str, share: float) -> bool:
    """A stable ``share`` of URLs, chosen by a hash of the scheme form."""
    return zlib.crc32(form.encode("utf-8")) % 10000 < round(share * 10000)


def plan(
    form: str,
    filed_as: str,
    now: Resolution,
    verify: Callable[[str, RuleKey], bool],
) -> Plan:
    """The plan for a request whose scheme form is ``form``, filed under ``filed_as``.

    ``now`` is the store's resolution of ``form`` at download time;
    ``verify(form, rule)`` says whether a rule's prediction is checked.
    """
    if not now.merged:
        return Plan(SEND)
    first = now.steps[0]
    if first.rule is not None and verify(form, first.rule):
        return Plan(VERIFY, rules=(first.rule,))
    target = now.representative
    if filed_as == target:
        return Plan(REWRITE, target, filed=True, rules=now.rules)
    orphan = filed_as if filed_as != form else None
    return Plan(REWRITE, target, filed=False, rules=now.rules, orphan=orphan)
