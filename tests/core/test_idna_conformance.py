"""Host names against Unicode's IdnaTestV2 (UTS #46 non-transitional, as browsers use it).

scrapy-iri applies UTS #46 mapping and then IDNA2008 (the ``idna`` package),
which is stricter than UTS #46 alone: some names browsers accept (symbols,
emoji, long labels) are IRIErrors here. What must never happen is a name
mapped to a different A-label than UTS #46 gives, or a name UTS #46 rejects
being accepted: either could merge two hosts.
"""

from __future__ import annotations

import pytest
from corpora import corpus_params

from scrapy_iri import IRIError, canonicalize
from scrapy_iri._host import normalize_dns_host

CASES = corpus_params(
    "conformance/IdnaTestV2.json",
    lambda data: [c for c in data if isinstance(c, dict)],
    ids=lambda c: repr(c["input"]),
)


@pytest.mark.parametrize("case", CASES)
def test_never_a_different_a_label_nor_accepting_what_uts46_rejects(case):
    try:
        ours = normalize_dns_host(case["input"])
    except IRIError:
        return  # stricter than UTS #46: a missed fetch at worst, never a false merge
    assert case["output"] is not None, f"UTS #46 rejects {case['input']!r}, we gave {ours!r}"
    assert ours == case["output"]


def test_the_sharp_s_rows_agree():
    assert normalize_dns_host("faß.de") == "xn--fa-hia.de"
    assert normalize_dns_host("Faß.de") == "xn--fa-hia.de"
    assert normalize_dns_host("fass.de") == "fass.de"


WHATWG = corpus_params(
    "conformance/toascii.json", lambda data: [c for c in data if isinstance(c, dict)], ids=lambda c: repr(c["input"])
)


@pytest.mark.parametrize("case", WHATWG)
def test_whatwg_domain_to_ascii_never_disagrees_on_an_accepted_host(case):
    try:
        ours = canonicalize(f"http://{case['input']}/")
    except IRIError:
        return  # IDNA2008 rejects symbols (U+2665), invalid Punycode, long labels: stricter, never a merge
    assert case["output"] is not None, f"WHATWG rejects {case['input']!r}, we gave {ours!r}"
    assert ours == f"http://{case['output']}/"
