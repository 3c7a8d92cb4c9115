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


@pytest.fixture(scope="session")
def recrawled_archive(wget_archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second crawl, a little later, of the same site after a change: www answers 200 for itself."""
    import time

    from _archive_web import DocsSite

    time.sleep(1.1)  # every capture of the recrawl is dated after the first crawl's
    return crawl(DocsSite(www_serves=True), tmp_path_factory.mktemp("recrawl"), "docs2")


@pytest.fixture(scope="session")
def dedup_archive(docs_site: DocsSite, wget_archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second crawl of the unchanged site by wget ``--warc-dedup`` on the first's CDX: every payload
    archived already is a ``revisit`` record referring to the first crawl's record."""
    import time

    time.sleep(1.1)  # every capture of the recrawl is dated after the first crawl's
    return crawl(docs_site, tmp_path_factory.mktemp("dedup"), "dedup", f"--warc-dedup={wget_archive.parent / 'docs.cdx'}")
