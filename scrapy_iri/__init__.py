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
from typing import TYPE_CHECKING, Any

from .errors import IRIError, ScrapyIRIError
from ._display import to_display
from ._ladder import Rung, canonicalize, equivalent
from ._mapping import to_iri, to_uri
from ._parse import IRIReference, parse
from ._resolve import resolve

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

# Scrapy-side names -> their module, imported on first attribute access (PEP 562),
# so that ``import scrapy_iri`` and ``from scrapy_iri import *`` never import Scrapy.
_LAZY = {
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
