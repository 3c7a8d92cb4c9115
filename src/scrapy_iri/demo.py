"""A short tour of the comparison ladder: ``python -m scrapy_iri.demo``."""

from __future__ import annotations

from .errors import IRIError
from .ladder import Rung, canonicalize, lowest_common_rung

PAIRS = [
    ("aliases", "HTTP://Example.com:80/%7Efoo", "http://example.com/~foo"),
    ("aliases", "http://BÜCHER.example/", "http://xn--bcher-kva.example"),
    ("aliases", "http://example.com/a/./b/../c", "http://example.com/a/c"),
    ("traps", "http://faß.de/", "http://fass.de/"),
    ("traps", "http://example.com/a?x=1&y=2", "http://example.com/a?y=2&x=1"),
    ("traps", "http://example.com/?", "http://example.com/"),
    ("traps", "http://example.com/caf%C3%A9", "http://example.com/cafe%CC%81"),
]


def main() -> int:
    print("scrapy-iri: the comparison ladder (string < syntax < scheme)\n")
    for kind, a, b in PAIRS:
        level = lowest_common_rung(a, b, Rung.SCHEME)
        verdict = f"merged at {level.name.lower()}" if level is not None else "kept apart"
        print(f"[{kind}] {a}\n        {b}\n        -> {verdict}; scheme forms: {canonicalize(a)} | {canonicalize(b)}\n")
    try:
        canonicalize("http://exa mple.com/")
    except IRIError as exc:
        print(f"invalid input gets an IRIError: {exc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
