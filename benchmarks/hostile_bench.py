"""Every public core operation on hostile input: linear growth or not.

    nice .venv/bin/python benchmarks/hostile_bench.py            # 100 kB, 1 MB, 2 MB
    nice .venv/bin/python benchmarks/hostile_bench.py --quick    # 10 kB, 100 kB, 200 kB

For each input family (dot segments, escapes, long hosts, many labels, IDN
labels, non-ASCII hosts, '@', bidi text, long queries) builds a string of
each size (UTF-8 octets), times each operation on it (best of a few runs;
an ``IRIError`` is an answer and is timed too) and prints a Markdown table
with the time at each size and the ratio of the two largest: 2 means linear,
4 quadratic (from 100 kB to 1 MB the ratio is above 10 even for linear
code: 1 MB strings no longer fit in the CPU caches). Nothing here asserts
a timing.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import idna  # noqa: E402

from scrapy_iri import IRIError, canonicalize, equivalent, parse, resolve, to_display, to_iri, to_uri  # noqa: E402
from scrapy_iri._lenient import preprocess  # noqa: E402

# family -> (prefix, repeated unit, suffix)
FAMILIES: dict[str, tuple[str, str, str]] = {
    "dot segments": ("http://a.example", "/a/b/../.", "/x"),
    "escapes": ("http://a.example/", "%C3%A9%41%2f%e2%80%ae", ""),
    "long host": ("http://", "a", ".example/"),
    "many labels": ("http://", "a.", "example/"),
    "IDN labels": ("http://", "xn--bcher-kva.", "example/"),
    "non-ASCII host": ("http://", "ü", ".example/"),
    "escaped host": ("http://", "%C3%BC", ".example/"),
    "'@' in authority": ("http://", "u@", "a.example/"),
    "bidi text": ("http://a.example/", "שלום/abc/", ""),
    "long query": ("http://a.example/?", "k=v&", ""),
    "'../' segments": ("http://a.example/", "../", "x"),
    "encoded dot segments": ("http://a.example/", "%2e%2E/", "x"),
    "bare '%'": ("http://a.example/", "%", ""),
    "nested brackets": ("http://", "[", "]/"),
    "long port": ("http://a.example:", "9", "/"),
    "controls": ("http://a.example/", "\t\x00", ""),
    "full-width dots": ("http://", "a\u3002", "jp/"),
}


def build(family: str, size: int) -> str:
    prefix, unit, suffix = FAMILIES[family]
    count = max(1, (size - len(prefix.encode()) - len(suffix.encode())) // len(unit.encode()))
    return prefix + unit * count + suffix


def _answer(op: Callable[[str], object]) -> Callable[[str], object]:
    def run(text: str) -> object:
        try:
            return op(text)
        except IRIError:
            return None

    return run


OPERATIONS: dict[str, Callable[[str], object]] = {
    "parse": _answer(parse),
    "parse lenient": _answer(lambda s: parse(s, lenient=True)),
    "preprocess": _answer(preprocess),
    "canonicalize string": _answer(lambda s: canonicalize(s, "string")),
    "canonicalize syntax": _answer(lambda s: canonicalize(s, "syntax")),
    "canonicalize scheme": _answer(canonicalize),
    "canonicalize lenient": _answer(lambda s: canonicalize(s, lenient=True)),
    "equivalent": _answer(lambda s: equivalent(s, s + "x")),
    "to_uri": _answer(to_uri),
    "to_iri": _answer(to_iri),
    "to_display": _answer(to_display),
    "resolve": _answer(lambda s: resolve("http://base.example/a/b", s)),
    "resolve lenient": _answer(lambda s: resolve("http://base.example/a/b", s, lenient=True)),
}


def best_time(op: Callable[[str], object], text: str, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        op(text)
        best = min(best, time.process_time() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 kB, 100 kB and 200 kB instead of 100 kB, 1 MB and 2 MB")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs=3, metavar="OCTETS", help="three sizes instead of the default ones")
    parser.add_argument("--family", action="append", choices=FAMILIES, help="only this family (repeatable)")
    args = parser.parse_args(argv)
    sizes = (10_000, 100_000, 200_000) if args.quick else (100_000, 1_000_000, 2_000_000)
    sizes = tuple(args.sizes) if args.sizes else sizes
    label = lambda n: f"{n / 1000:g} kB" if n < 1_000_000 else f"{n / 1_000_000:g} MB"  # noqa: E731
    print(f"CPython {platform.python_version()}, idna {idna.__version__}, {platform.machine()}; "
          f"best of {args.repeats}, CPU seconds per call\n")
    print(f"| family | operation | {' | '.join(map(label, sizes))} | x{sizes[2] // sizes[1]} size: time ratio |")
    print("|---|---|---:|---:|---:|---:|")
    worst = 0.0
    for family in args.family or FAMILIES:
        texts = [build(family, size) for size in sizes]
        for name, op in OPERATIONS.items():
            times = [best_time(op, text, args.repeats) for text in texts]
            ratio = times[2] / max(times[1], 1e-6)
            if times[2] > 0.01:
                worst = max(worst, ratio)
            shown = " | ".join(f"{t:.4f}" for t in times)
            print(f"| {family} | {name} | {shown} | {ratio:.1f} |", flush=True)
    print(f"\nlargest time ratio between {label(sizes[2])} and {label(sizes[1])} among calls over 10 ms: "
          f"{worst:.1f} (linear: {sizes[2] / sizes[1]:g}, quadratic: {(sizes[2] / sizes[1]) ** 2:g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
