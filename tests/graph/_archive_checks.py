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
