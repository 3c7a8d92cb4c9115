"""What the tests of wget-made archives read: wget's CDX, CSV outputs, the links of a served page."""

from __future__ import annotations

import csv
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin

LINKS = {"a": "href", "link": "href", "img": "src", "script": "src", "iframe": "src", "form": "action"}


class Hrefs(HTMLParser):
    """The reference reading of a served page: Python's own HTML parser, urljoin."""

    def __init__(self, url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.url, self.links = url, []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        wanted = LINKS.get(tag)
        for name, value in attrs:
            if name == wanted and value is not None:
                self.links.append(urljoin(self.url, value.strip()))


def cdx_lines(archive: Path) -> list[dict[str, str]]:
    """wget's CDX (columns ``a b a m s k r M V g u``): url, timestamp, status, redirect."""
    rows = []
    for line in archive.with_suffix("").with_suffix(".cdx").read_text().splitlines()[1:]:
        f = line.split(" ")
        redirect = f[6].replace("%3A//", "://", 1) if f[6] != "-" else None
        rows.append({"url": f[0], "time": f[1], "status": f[4], "redirect": redirect})
    return rows


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def documents_of_nodes(rows: list[dict[str, str]], rung: str, store: object, document) -> dict[str, set]:
    """The documents (``document(url)``: ground truth) each node of a graph's rows stands for, every end
    checked to be its original's canonical form at ``rung``."""
    from scrapy_iri import canonicalize

    documents: dict[str, set] = {}
    for row in rows:
        for end in ("source", "target"):
            original = row[f"{end}_original"]
            assert canonicalize(original, rung, keep_fragment=False, lenient=True, store=store) == row[end]
            found = document(original)
            if found is not None:
                documents.setdefault(row[end], set()).add(found)
    return documents


def redirects_as_learned(archive: Path, store: object) -> tuple[int, int]:
    """Checks every redirect wget's CDX records against the protocol rung of ``store``: a 301 or 308
    that no later 200 of its URL contradicts is merged, a 302, 303 or 307 is not; (permanent, temporary)."""
    from scrapy_iri import canonicalize

    lines = cdx_lines(archive)
    answered = {(row["url"], row["time"]) for row in lines if row["status"] == "200"}
    permanent = temporary = 0
    for row in lines:
        if not row["redirect"]:
            continue
        contradicted = any(url == row["url"] and time > row["time"] for url, time in answered)
        source = canonicalize(row["url"], "protocol", store=store)
        target = canonicalize(row["redirect"], "protocol", store=store)
        if row["status"] in ("301", "308") and not contradicted:
            permanent += 1
            assert source == target, row
        elif row["status"] in ("302", "303", "307"):
            temporary += 1
            assert source != target, row
    return permanent, temporary


def graphs_at_every_rung(archive: Path, directory: Path) -> dict[str, tuple[list[dict[str, str]], object]]:
    """The graph of ``archive`` at every rung (protocol: learned from the archive itself): rows, summary."""
    from scrapy_iri.graph import normalize_graph_file

    found = {}
    for rung in ("string", "syntax", "scheme", "protocol"):
        summary = normalize_graph_file(archive, directory / f"{rung}.csv", rung, bad_rows=directory / f"{rung}-bad.csv")
        found[rung] = (read_csv(directory / f"{rung}.csv"), summary)
    return found
