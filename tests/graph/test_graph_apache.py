"""Link graphs from archives wget wrote of Debian's Apache serving git-doc: checked against the served files.

Apache (started by the test, its own configuration; see ``_apache_web``)
makes the aliases with its stock modules: mod_rewrite ``[R=301]`` http ->
https, ``RedirectMatch permanent`` www -> apex, ``Redirect temp`` for a 302
host, mod_dir's ``DirectorySlash``, ``index.html`` -> directory, mod_speling's
case fixes. wget crawls it twice: once with ``--warc-max-size`` (one crawl
in several WARC files, read as a directory beside wget's CDX), once with
``--no-warc-compression``.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from _apache_web import HOST, PAGE, TEMPORARY, WWW, ApacheSite, aliases_page, available, document
from _archive_checks import Hrefs, cdx_lines, documents_of_nodes, graphs_at_every_rung, read_csv, redirects_as_learned
from fixtures.stores import Clock, store_state

from scrapy_iri.graph import normalize_graph_file
from scrapy_iri.graph._learn import LearnedStore, Reading, learn_files, ordered_captures
from scrapy_iri.store import open_store

PAGES = "git-c[lo]*.html"


@pytest.fixture(scope="module")
def crawls(tmp_path_factory) -> dict[str, list[Path]]:
    why = available()
    if why is not None:
        pytest.skip(why)
    directory = tmp_path_factory.mktemp("apache")
    with ApacheSite(directory, PAGES) as site:
        split, raw = directory / "split", directory / "raw"
        split.mkdir()
        raw.mkdir()
        return {"split": site.crawl(split, "git", "--warc-max-size=60k"), "raw": site.crawl(raw, "git", "--no-warc-compression")}


@pytest.fixture(scope="module")
def split(crawls) -> Path:
    """The directory of the split crawl: its WARC files and wget's CDX of them all."""
    return crawls["split"][0].parent


@pytest.fixture(scope="module")
def learned(split) -> LearnedStore:
    return LearnedStore([str(split)])


@pytest.fixture(scope="module")
def outputs(split, tmp_path_factory):
    return graphs_at_every_rung(split, tmp_path_factory.mktemp("apache-graphs"))


def index(split: Path) -> list[dict[str, str]]:
    return cdx_lines(split / "git.warc.gz")  # wget's CDX of every file of the crawl: git.cdx


def test_wget_recorded_the_conventions_apache_made(crawls, split):
    assert len([p for p in crawls["split"] if p.name != "git-meta.warc.gz"]) > 3
    rows = index(split)
    seen = {(urlsplit(r["url"]).hostname, r["url"].partition(":")[0], r["status"]) for r in rows}
    assert {(WWW, "http", "301"), (WWW, "https", "301"), (TEMPORARY, "http", "302"), (HOST, "http", "301"),
            (HOST, "https", "200")} <= seen
    moves = {(r["url"], r["redirect"]) for r in rows if r["status"] == "301"}
    assert (f"https://{HOST}/howto", f"https://{HOST}/howto/") in moves  # DirectorySlash
    assert (f"https://{HOST}/index.html", f"https://{HOST}/") in moves  # mod_rewrite
    assert (f"https://{HOST}/GIT-CLONE.HTML", f"https://{HOST}/git-clone.html") in moves  # mod_speling
    assert (f"https://{HOST}/HOWTO", f"https://{HOST}/howto") in moves  # mod_speling on a directory


@pytest.mark.parametrize("rung", ("string", "syntax", "scheme", "protocol"))
def test_no_node_denotes_two_documents(outputs, learned, rung):
    rows, summary = outputs[rung]
    assert summary.bad_rows == 0 and summary.edges_out == len(rows) > 100
    documents = documents_of_nodes(rows, rung, learned if rung == "protocol" else None, document)
    assert documents and all(len(found) == 1 for found in documents.values())


def test_every_clean_301_is_merged_and_no_302_at_the_protocol_rung(split, learned):
    permanent, temporary = redirects_as_learned(split / "git.warc.gz", learned)
    assert permanent >= 30 and temporary >= 5


def test_no_edge_of_the_true_graph_is_missing(split, outputs):
    truth = set()
    for row in index(split):
        page = document(row["url"]) if row["status"] == "200" else None
        if page is None or (page != PAGE and page.suffix != ".html"):
            continue
        parser = Hrefs(row["url"])
        parser.feed(aliases_page(PAGES) if page == PAGE else page.read_text(encoding="utf-8"))
        truth.update((page, document(link)) for link in parser.links if document(link) is not None)
    assert len(truth) > 100
    for rung in ("scheme", "protocol"):
        rows, _ = outputs[rung]
        found = {(document(row["source_original"]), document(row["target_original"])) for row in rows}
        assert truth <= found, sorted(truth - found, key=str)[:5]


def test_the_protocol_rung_folds_every_permanent_alias(outputs):
    rows, _ = outputs["protocol"]
    nodes = {row[end]: document(row[f"{end}_original"]) for row in rows for end in ("source", "target")}
    kept = [page for node, page in nodes.items() if page is not None and urlsplit(node).hostname != TEMPORARY]
    assert len(kept) == len(set(kept))  # one node per document: https, apex, slash, case, no index.html
    assert any(urlsplit(node).hostname == TEMPORARY for node in nodes)  # the 302 host stays apart


def test_an_uncompressed_crawl_gives_the_same_graph(crawls, outputs, tmp_path):
    (raw,) = crawls["raw"]
    assert raw.name == "git.warc" and raw.read_bytes().startswith(b"WARC/1.")
    for rung in ("scheme", "protocol"):
        normalize_graph_file(raw, tmp_path / f"{rung}.csv", rung)
        got = {(r["source"], r["target"], r["path"]) for r in read_csv(tmp_path / f"{rung}.csv")}
        assert got == {(r["source"], r["target"], r["path"]) for r in outputs[rung][0]}


def test_store_learn_of_the_directory_is_the_warcs_own(crawls, split):
    """wget's CDX lies beside the WARC files: each capture is learned once."""
    rows = index(split)
    end = max(c.time for c in ordered_captures([str(p) for p in crawls["split"]], Reading())) + 1.0
    urls = sorted({u for r in rows for u in (r["url"], r["redirect"]) if u})
    states = []
    for names in ([str(p) for p in crawls["split"]], [str(split)]):
        store = open_store("memory:", clock=Clock(end))
        _, reading = learn_files(store, names)
        assert reading.bad == []
        states.append(store_state(store, end, urls))
    assert states[0]["aliases"] and states[0]["rules"] and states[0] == states[1]


def test_dask_reads_the_split_crawl_as_the_local_engine_does(split, capsys, tmp_path):
    pytest.importorskip("distributed")
    from _messy import run_archive_cli

    local = run_archive_cli(capsys, tmp_path, "local", split, "--rung", "protocol")
    on_dask = run_archive_cli(capsys, tmp_path, "dask", split, "--rung", "protocol", "--engine", "dask",
                              "--workers", "2")
    assert local["code"] == on_dask["code"] == 0
    assert on_dask == local
