"""The prior across sites read by verification: ``prior_support`` kept as a running maximum per site.

``EquivalenceStore.prior_support(key)`` is, by its definition in the
learner's docstring, the sum over the other sites (registrable domains)
where ``key``'s convention held in this session of the most confirmations
one rule of it has there, plus the most one partner origin of ``key``'s own
host (its other scheme, its ``www.`` or apex partner) has; 0 when the prior
is 0. The oracle below computes that from the held rules directly, after
seeded sequences of rules becoming active, confirmed and falling.
"""

from __future__ import annotations

import random

import pytest

from scrapy_iri.store import MemoryStore, RuleKey
from scrapy_iri.store._outcome import site_and_family as _site_and_family
from scrapy_iri.store._rules import PRIOR_KINDS

HOSTS = ["a.example", "www.a.example", "b.example", "www.b.example", "x.b.example", "shop.co.uk", "www.shop.co.uk", "c.example"]
KINDS = sorted(PRIOR_KINDS)


def origins() -> list[str]:
    return [f"{scheme}://{host}" for scheme in ("http", "https") for host in HOSTS]


def oracle(store: MemoryStore, key: RuleKey) -> int:
    """prior_support by its definition, from the rules held in the session."""
    if not store.prior(key):
        return 0
    site, family = _site_and_family(key.origin)
    best: dict[str, int] = {}
    for origin, (s, f, support) in store._held.get(key.kind, {}).items():
        if origin == key.origin or (s == site and f != family):
            continue
        place = s if s != site else ""
        best[place] = max(best.get(place, 0), support)
    return sum(best.values())


@pytest.mark.parametrize("seed", range(20))
def test_prior_support_is_the_most_per_site_summed(seed: int) -> None:
    rng = random.Random(seed)
    store = MemoryStore()
    keys = [RuleKey(o, k, "*") for o in origins() for k in KINDS]
    compared = 0
    for _ in range(300):
        key = rng.choice(keys)
        if rng.random() < 0.03:
            store._note_prior(key, held=False)
        else:
            store._note_prior(key, held=True, support=rng.randrange(1, 30))
        for probe in rng.sample(keys, 10):
            assert store.prior_support(probe) == oracle(store, probe), probe
            compared += store.prior_support(probe) > 0
    assert compared  # the prior formed and was lent


def test_a_partner_origin_lends_its_support_and_another_host_of_the_site_does_not() -> None:
    store = MemoryStore()
    kind = "http-to-https"
    store._note_prior(RuleKey("http://www.a.example", kind, "*"), held=True, support=7)  # the partner of a.example
    store._note_prior(RuleKey("http://x.a.example", kind, "*"), held=True, support=50)  # same site, another host
    store._note_prior(RuleKey("http://b.example", kind, "*"), held=True, support=4)  # another site
    store._note_prior(RuleKey("http://www.b.example", kind, "*"), held=True, support=9)  # the same other site
    # a.example: its partner's 7, and the most on b.example (9); x.a.example's 50 is not its family's
    assert store.prior_support(RuleKey("http://a.example", kind, "*")) == 7 + 9
    store._note_prior(RuleKey("http://b.example", kind, "*"), held=True, support=12)  # confirmed again
    assert store.prior_support(RuleKey("http://a.example", kind, "*")) == 7 + 12


def prior_oracle(store: MemoryStore, key: RuleKey) -> int:
    """prior by its definition: the other sites where the kind held, plus one for a partner origin of the host."""
    if key.kind not in PRIOR_KINDS or store._failed.get(key.kind):
        return 0
    held = store._held.get(key.kind, {})
    site, family = _site_and_family(key.origin)
    others = len({s for s, _, _ in held.values() if s != site})
    return others + any(f == family and o != key.origin for o, (_, f, _) in held.items())


@pytest.mark.parametrize("seed", range(20))
def test_prior_counts_the_other_sites_and_a_partner_as_rules_are_added(seed: int) -> None:
    rng = random.Random(seed)
    store = MemoryStore()
    keys = [RuleKey(o, k, "*") for o in origins() for k in KINDS]
    for _ in range(200):
        store._note_prior(rng.choice(keys), held=rng.random() >= 0.02, support=rng.randrange(1, 30))
        for probe in rng.sample(keys, 12):
            assert store.prior(probe) == prior_oracle(store, probe), probe
