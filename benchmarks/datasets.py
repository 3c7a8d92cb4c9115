"""Inputs of the benchmarks, all read from ../shared/corpora or derived from them deterministically.

Nothing here is random at run time: every generated list comes from a seeded
``random.Random``, so two runs (and two machines) measure the same strings.
"""

from __future__ import annotations

import os
import random
from bisect import bisect
from itertools import accumulate
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = Path(os.environ.get("SCRAPY_IRI_CORPORA", ROOT.parent / "shared" / "corpora"))
SEED = 20240607


class MissingCorpus(Exception):
    """A corpus file is not there (the section using it is skipped)."""


def _lines(relative: str) -> list[str]:
    path = CORPORA / relative
    if not path.exists():
        raise MissingCorpus(f"{relative} not found under {CORPORA} (set SCRAPY_IRI_CORPORA)")
    # utf-8-sig: the first line of ada_kasztp.txt starts with a BOM, which is not part of the URL.
    return path.read_text(encoding="utf-8-sig").splitlines()


def kasztp() -> list[str]:
    """48,010 unique https URLs (ada-url's ``kasztp.txt``): the clean common case."""
    return [line for line in _lines("realworld/ada_kasztp.txt") if line]


def userbait() -> list[str]:
    """11,430 phishing and benign URLs, messy: the robustness set."""
    return [line for line in _lines("realworld/ada_userbait.txt") if line]


def citizenlab() -> list[str]:
    """39,206 URLs of the citizenlab test lists (column 2 of the TSV)."""
    rows = _lines("realworld/citizenlab_test_lists_urls.tsv")[1:]
    return [row.split("\t")[1] for row in rows if row.count("\t") >= 2]


def crawl_stream(urls: list[str], size: int = 200_000, exponent: float = 1.1, seed: int = SEED) -> list[str]:
    """A crawl-like stream: ``size`` draws from ``urls`` with Zipf-distributed popularity.

    Rank ``r`` (in a seeded shuffle of ``urls``) is drawn with probability
    proportional to ``1 / r**exponent``: a few URLs (home pages, navigation)
    come back very often, most appear once or not at all, as in the links a
    crawler extracts page after page.
    """
    rng = random.Random(seed)
    ranked = list(urls)
    rng.shuffle(ranked)
    cumulative = list(accumulate(1.0 / (rank**exponent) for rank in range(1, len(ranked) + 1)))
    total = cumulative[-1]
    return [ranked[min(bisect(cumulative, rng.random() * total), len(ranked) - 1)] for _ in range(size)]


# Words for the IRI-heavy set: common scripts of the web (Latin with
# diacritics, Cyrillic, Greek, Arabic, Hebrew, CJK, kana, Hangul, Devanagari,
# Thai), a few with characters that need care (combining marks, final
# sigma, ß).
_PATH_WORDS = [
    "café", "München", "Straße", "naïve", "façade", "ĉu", "smörgåsbord", "Ελληνικά", "σελίδα",
    "русский", "новости", "українська", "日本語", "東京", "ニュース", "中文", "新闻", "한국어",
    "العربية", "أخبار", "עברית", "חדשות", "हिन्दी", "ไทย", "Tiếng_Việt", "e\u0301te\u0301", "ümlaut-ö",
    "뉴스", "поиск", "Αθήνα", "Zürich", "שלום",
]
_IDN_LABELS = [
    "bücher", "müller", "straße", "café", "ñandú", "пример", "испытание", "例え", "テスト",
    "例子", "실례", "مثال", "δοκιμή", "परीक्षा", "ทดสอบ", "faß", "ǆemal", "zürich", "דוגמה",
]
_IDN_TLDS = ["de", "com", "org", "рф", "中国", "net", "ch", "jp", "한국"]
_QUERY_KEYS = ["q", "s", "search", "lang", "tag", "page"]


def _mixed_case(rng: random.Random, text: str) -> str:
    """``text`` with each letter uppercased at random, at least one of them."""
    while True:
        out = "".join(c.upper() if rng.random() < 0.5 else c for c in text)
        if out != text:
            return out


def iri_heavy(urls: list[str], size: int = 20_000, seed: int = SEED) -> list[str]:
    """IRIs generated on top of real URLs: Unicode path words, IDN hosts, Unicode queries.

    Each item takes a real URL and, with a seeded draw, replaces one or two
    path segments by Unicode words (raw, or percent-encoded UTF-8 as some
    sites write them, half of those with lowercase hex digits), its host
    by an IDN name (``例え.jp``, ``пример.рф``, ``faß.de``, ...), or both. A
    third of the items also get a query with Unicode values (raw or
    encoded), one in five a scheme in mixed case (``HTTPS``, ``hTtPs``),
    one in ten an uppercase host.
    """
    from urllib.parse import quote, urlsplit, urlunsplit

    rng = random.Random(seed)

    def word() -> str:
        text = rng.choice(_PATH_WORDS)
        if rng.random() < 0.25:
            text = quote(text, safe="")
            if rng.random() < 0.5:
                text = text.lower()  # '%c3%a9': lowercase hex, seen on real sites
        return text

    out = []
    for url in rng.sample(urls, min(size, len(urls))) if size <= len(urls) else (rng.choice(urls) for _ in range(size)):
        parts = urlsplit(url)
        scheme, netloc, path, query = parts.scheme, parts.netloc, parts.path or "/", parts.query
        kind = rng.random()
        if kind < 0.67:  # Unicode path
            segments = path.split("/")
            for _ in range(rng.choice((1, 2))):
                index = rng.randrange(1, len(segments)) if len(segments) > 1 else 1
                if index < len(segments):
                    segments[index] = word()
                else:
                    segments.append(word())
            path = "/".join(segments)
        if kind >= 0.33:  # IDN host
            labels = [rng.choice(_IDN_LABELS)]
            if rng.random() < 0.5:
                labels.insert(0, "www")
            netloc = ".".join(labels + [rng.choice(_IDN_TLDS)])
        if rng.random() < 1 / 3:
            params = [f"{rng.choice(_QUERY_KEYS)}={word()}" for _ in range(rng.choice((1, 1, 2)))]
            query = "&".join(([query] if query else []) + params)
        if rng.random() < 0.2:
            scheme = _mixed_case(rng, scheme)
        if rng.random() < 0.1:
            netloc = netloc.upper()
        out.append(urlunsplit((scheme, netloc, path, query, "")))
    return out


def distinct_requests(urls: list[str], count: int) -> list[str]:
    """``count`` URLs that every canonicalizer keeps apart: ``urls`` in turn, each with a unique ``n=i``.

    Fragments are dropped (they never make two requests different), and the
    query parameter is unique per URL, so no dupefilter may merge two of them.
    """
    out = []
    for i in range(count):
        url = urls[i % len(urls)].partition("#")[0]
        out.append(f"{url}{'&' if '?' in url else '?'}n={i}")
    return out
