"""Archives written once per session by Debian's wget crawling a documentation site on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest
from _archive_web import DocsSite, available, crawl


@pytest.fixture(scope="session")
def docs_site() -> DocsSite:
    why = available()
    if why is not None:
        pytest.skip(why)
    return DocsSite()


@pytest.fixture(scope="session")
def wget_archive(docs_site: DocsSite, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``docs.warc.gz`` (one gzip member per record) and ``docs.cdx``, as wget wrote them."""
    return crawl(docs_site, tmp_path_factory.mktemp("wget"), "docs")
