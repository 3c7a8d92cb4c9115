"""scrapy-iri: correct, fast URL and IRI identity for Scrapy crawlers.

The core (this package's top level) never imports Scrapy: it parses IRIs,
maps IRIs to URIs and back (draft-ietf-iri-3987bis sec. 3), shows them to
people (sec. 4 and 8.6), resolves references (RFC 3986 sec. 5.2) and
implements the string, syntax and scheme rungs of the comparison ladder
(3987bis sec. 5.3). The Scrapy components (``Addon``, ``IRIDupeFilter``,
...) are loaded on first use.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing

__all__ = [
    "IRIError",
    "IRIReference",
    "Rung",
    "ScrapyIRIError",
    "canonicalize",
    "equivalent",
    "parse",
    "resolve",
    "to_display",
    "to_iri",
    "to_uri",
]

# Names -> their module, imported on first attribute access (PEP 562): ``import scrapy_iri``
# costs next to nothing (the CLI's entry point can be interrupted cleanly from its first
# instant), and ``import scrapy_iri`` and ``from scrapy_iri import *`` never import Scrapy.
_LAZY = {
    "IRIError": "scrapy_iri.errors",
    "ScrapyIRIError": "scrapy_iri.errors",
    "IRIReference": "scrapy_iri._parse",
    "Rung": "scrapy_iri._ladder",
    "canonicalize": "scrapy_iri._ladder",
    "equivalent": "scrapy_iri._ladder",
    "parse": "scrapy_iri._parse",
    "resolve": "scrapy_iri._resolve",
    "to_display": "scrapy_iri._display",
    "to_iri": "scrapy_iri._mapping",
    "to_uri": "scrapy_iri._mapping",
    "Addon": "scrapy_iri.scrapy",
    "IRIDupeFilter": "scrapy_iri.scrapy",
    "IRIRequestFingerprinter": "scrapy_iri.scrapy",
    "IRILinkExtractor": "scrapy_iri.scrapy",
    "iri_request": "scrapy_iri.scrapy",
    "CanonicalizeURLsPipeline": "scrapy_iri.scrapy",
    "RedirectLearningMiddleware": "scrapy_iri.scrapy",
    "open_store": "scrapy_iri.store",
}

if TYPE_CHECKING:  # what the lazy names are, for type checkers and IDEs
    from typing import Any

    from .errors import IRIError, ScrapyIRIError
    from ._display import to_display
    from ._ladder import Rung, canonicalize, equivalent
    from ._mapping import to_iri, to_uri
    from ._parse import IRIReference, parse
    from ._resolve import resolve
    from .scrapy import (
        Addon,
        CanonicalizeURLsPipeline,
        IRIDupeFilter,
        IRILinkExtractor,
        IRIRequestFingerprinter,
        RedirectLearningMiddleware,
        iri_request,
    )
    from .store import open_store


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'scrapy_iri' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
