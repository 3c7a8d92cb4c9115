"""Link graphs from archives wget wrote of Debian's nginx serving python3-doc: checked against the served files.

nginx (started by the test, its own configuration; see ``_nginx_web``)
makes the aliases itself: http -> https, www -> apex, a 302 host,
directory slashes, ``index.html`` -> directory. wget crawls it through
its proxies, writing ``--warc-file`` and ``--warc-cdx``.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from _archive_checks import Hrefs, cdx_lines, documents_of_nodes, graphs_at_every_rung, redirects_as_learned
from _nginx_web import HOST, TEMPORARY, WWW, NginxSite, available, document, footer

from scrapy_iri.graph._learn import LearnedStore

RUNGS = ("string", "syntax", "scheme", "protocol")


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    why = available()
    if why is not None:
        pytest.skip(why)
    directory = tmp_path_factory.mktemp("nginx")
    with NginxSite(directory) as site:
        return site.crawl(directory, "nginx")


@pytest.fixture(scope="module")
def learned(archive):
    return LearnedStore([str(archive)])


@pytest.fixture(scope="module")
def outputs(archive, tmp_path_factory):
    """The graph of the archive at every rung (protocol: learned from the archive itself)."""
    return graphs_at_every_rung(archive, tmp_path_factory.mktemp("nginx-graphs"))


def scheme_of(url: str) -> str:
    return url.partition(":")[0]


def test_wget_recorded_the_conventions_nginx_made(archive):
    rows = cdx_lines(archive)
    seen = {(urlsplit(r["url"]).hostname, scheme_of(r["url"]), r["status"]) for r in rows}
    assert {(WWW, "http", "301"), (WWW, "https", "301"), (TEMPORARY, "http", "302"), (HOST, "http", "301"),
            (HOST, "https", "200")} <= seen
    redirects = [r for r in rows if r["redirect"]]
    assert all(scheme_of(r["redirect"]) == "https" for r in redirects)  # every alias ends on https
    assert any(r["url"].endswith("/index.html") and urlsplit(r["url"]).hostname == HOST for r in redirects)
    assert any(r["redirect"] == r["url"] + "/" for r in redirects)  # nginx's own directory slash


@pytest.mark.parametrize("rung", RUNGS)
def test_no_node_denotes_two_documents(outputs, learned, rung):
    rows, summary = outputs[rung]
    assert summary.bad_rows == 0 and summary.edges_out == len(rows) > 100
    store = learned if rung == "protocol" else None
    documents = documents_of_nodes(rows, rung, store, document)
    assert documents and all(len(found) == 1 for found in documents.values())


def test_every_clean_301_is_merged_and_no_302_at_the_protocol_rung(archive, learned):
    permanent, temporary = redirects_as_learned(archive, learned)
    assert permanent >= 30 and temporary >= 10


def test_no_edge_of_the_true_graph_is_missing(archive, outputs):
    served = {row["url"]: document(row["url"]) for row in cdx_lines(archive)
              if row["status"] == "200" and urlsplit(row["url"]).hostname == HOST}
    truth = set()
    for url, page in served.items():
        if page is None or page.suffix != ".html":
            continue
        parser = Hrefs(url)  # the page as nginx served it: the file, and the footer its sub_filter adds
        parser.feed(page.read_text(encoding="utf-8").replace("</body>", footer(url), 1))
        truth.update((page, document(link)) for link in parser.links if document(link) is not None)
    assert len(truth) > 100
    for rung in ("scheme", "protocol"):
        rows, _ = outputs[rung]
        found = {(document(row["source_original"]), document(row["target_original"])) for row in rows}
        assert truth <= found, sorted(truth - found)[:5]


def test_the_protocol_rung_folds_every_alias_but_the_temporary_host(outputs):
    rows, _ = outputs["protocol"]
    nodes = {row[end]: document(row[f"{end}_original"]) for row in rows for end in ("source", "target")}
    kept = [page for node, page in nodes.items() if page is not None and urlsplit(node).hostname != TEMPORARY]
    assert len(kept) == len(set(kept))  # one node per document: https, apex, slash, no index.html
    assert any(urlsplit(node).hostname == TEMPORARY for node in nodes)  # the 302 host stays apart
    scheme_rows, _ = outputs["scheme"]
    scheme_nodes = {row[end] for row in scheme_rows for end in ("source", "target")}
    assert len(scheme_nodes) > len(nodes)


def test_dask_reads_the_nginx_archive_in_pieces_as_the_local_engine_does(archive, capsys, tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    from _messy import run_archive_cli

    from scrapy_iri.graph import _split

    monkeypatch.setattr(_split, "PIECE_BYTES", 50_000)
    assert len(_split.pieces([str(archive)], 50_000)) > 5
    local = run_archive_cli(capsys, tmp_path, "local", archive, "--rung", "protocol")
    on_dask = run_archive_cli(capsys, tmp_path, "dask", archive, "--rung", "protocol", "--engine", "dask",
                              "--workers", "2")
    assert local["code"] == on_dask["code"] == 0
    assert on_dask == local
