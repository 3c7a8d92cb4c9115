"""Link graphs from archives wget wrote of a real documentation site: checked against the served files."""

from __future__ import annotations

import gzip
from urllib.parse import urlsplit

import pytest
from _archive_checks import (Hrefs, cdx_lines, documents_of_nodes, graphs_at_every_rung, read_csv,
                             redirects_as_learned)
from _archive_web import HOST, TEMPORARY, WWW

from scrapy_iri import canonicalize
from scrapy_iri._cli import main
from scrapy_iri.graph import normalize_graph_file
from scrapy_iri.graph._learn import LearnedStore
from scrapy_iri.store import open_store


@pytest.fixture(scope="module")
def learned(wget_archive):
    return LearnedStore([str(wget_archive)])


@pytest.fixture(scope="module")
def outputs(wget_archive, tmp_path_factory):
    """The graph of the archive at every rung (protocol: learned from the archive itself)."""
    return graphs_at_every_rung(wget_archive, tmp_path_factory.mktemp("graphs"))


def test_wget_recorded_every_alias_convention(wget_archive):
    statuses = {(urlsplit(row["url"]).hostname, row["status"]) for row in cdx_lines(wget_archive)}
    assert {(WWW, "301"), (TEMPORARY, "302"), (HOST, "301"), (HOST, "200")} <= statuses
    redirects = [row for row in cdx_lines(wget_archive) if row["redirect"]]
    assert any(r["url"].endswith("/index.html") for r in redirects)  # index.html -> directory
    assert any("/TUTORIAL/" in r["url"] for r in redirects)  # a case fix
    assert any(r["redirect"] == r["url"] + "/" for r in redirects)  # a directory's slash


@pytest.mark.parametrize("rung", ["string", "syntax", "scheme", "protocol"])
def test_no_node_denotes_two_documents(outputs, docs_site, learned, rung):
    rows, summary = outputs[rung]
    assert summary.bad_rows == 0 and summary.edges_out == len(rows)
    store = learned if rung == "protocol" else None
    documents = documents_of_nodes(rows, rung, store, docs_site.document)
    assert documents and all(len(found) == 1 for found in documents.values())


def test_every_clean_301_is_merged_and_no_302_at_the_protocol_rung(wget_archive, learned):
    permanent, temporary = redirects_as_learned(wget_archive, learned)
    assert permanent >= 10 and temporary >= 5


def test_no_edge_of_the_true_graph_is_missing(wget_archive, outputs, docs_site):
    served = {}
    for row in cdx_lines(wget_archive):
        if row["status"] == "200" and urlsplit(row["url"]).hostname == HOST:
            document = docs_site.document(row["url"])
            if document is not None and document.suffix == ".html":
                served[row["url"]] = document
    truth = set()
    for url, document in served.items():
        page = document.read_bytes().replace(b"</body>", docs_site.footer(urlsplit(url).path) + b"</body>", 1)
        parser = Hrefs(url)
        parser.feed(page.decode("utf-8"))
        for link in parser.links:
            target = docs_site.document(link)
            if target is not None:
                truth.add((document, target))
    assert len(truth) > 50  # the tutorial's pages link to each other
    for rung in ("scheme", "protocol"):
        rows, _ = outputs[rung]
        found = {
            (docs_site.document(row["source_original"]), docs_site.document(row["target_original"])) for row in rows
        }
        assert truth <= found, sorted(truth - found)[:5]


def nodes_per_document(outputs, docs_site, rung, hosts=None):
    rows, _ = outputs[rung]
    nodes = {row[end]: docs_site.document(row[f"{end}_original"]) for row in rows for end in ("source", "target")}
    kept = [doc for node, doc in nodes.items() if doc is not None and (hosts is None or urlsplit(node).hostname in hosts)]
    return len(kept) / len(set(kept))


def test_the_protocol_rung_has_fewer_nodes_per_document(outputs, docs_site):
    scheme, protocol = (nodes_per_document(outputs, docs_site, rung) for rung in ("scheme", "protocol"))
    assert protocol < scheme
    # www, index.html, slashes and case folded: one node per document, but for the 302 host's
    assert nodes_per_document(outputs, docs_site, "protocol", {HOST, WWW}) == 1.0
    assert nodes_per_document(outputs, docs_site, "scheme", {HOST, WWW}) > 2


def test_the_cli_protocol_rung_learns_from_the_archive_itself(wget_archive, tmp_path, capsys):
    code = main(["graph", str(wget_archive), str(tmp_path / "out.csv"), "--rung", "protocol"])
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err
    assert "redirects (not links)" in err and "request records" in err  # what was skipped, counted


def test_store_learn_from_warc_and_from_cdx_agree(wget_archive, tmp_path, capsys):
    cdx = wget_archive.with_suffix("").with_suffix(".cdx")
    for name, source in (("warc", wget_archive), ("cdx", cdx)):
        uri = f"sqlite:///{tmp_path / name}.db"
        assert main(["store", "--store", uri, "learn", str(source)]) == 0
        out = capsys.readouterr().out
        assert "aliases_learned" in out
    memory = {}
    for name, source in (("warc", wget_archive), ("cdx", cdx)):
        store = open_store("memory:")
        from scrapy_iri.graph._learn import learn_files

        summary, reading = learn_files(store, [str(source)])
        assert reading.bad == [] and summary.aliases_learned >= 10
        memory[name] = sorted((a.source, store.representative(a.source)) for a in store.aliases())
    assert memory["warc"] == memory["cdx"]


def test_redirects_as_edges_on_request(wget_archive, tmp_path):
    out = tmp_path / "out.csv"
    normalize_graph_file(wget_archive, out, "scheme", redirects="edges")
    kinds = {row["path"] for row in read_csv(out)}
    assert {"REDIRECT@/301", "REDIRECT@/302", "A@/href", "LINK@/href"} <= kinds


def test_whole_file_gzip_and_plain_warc_give_the_same_graph(wget_archive, tmp_path):
    raw = gzip.decompress(wget_archive.read_bytes())
    (tmp_path / "plain.warc").write_bytes(raw)
    (tmp_path / "whole.warc.gz").write_bytes(gzip.compress(raw))
    (tmp_path / "noname").write_bytes(raw)  # detected by content
    outputs = []
    for name in ("plain.warc", "whole.warc.gz", "noname"):
        normalize_graph_file(tmp_path / name, tmp_path / f"{name}.csv")
        outputs.append([(r["source"], r["target"], r["path"]) for r in read_csv(tmp_path / f"{name}.csv")])
    normalize_graph_file(wget_archive, tmp_path / "members.csv")
    reference = [(r["source"], r["target"], r["path"]) for r in read_csv(tmp_path / "members.csv")]
    assert outputs == [reference] * 3


def test_a_directory_and_a_glob_of_archives(wget_archive, tmp_path):
    directory = tmp_path / "archives"
    directory.mkdir()
    (directory / "a.warc.gz").write_bytes(wget_archive.read_bytes())
    (directory / "notes.txt").write_text("not an archive\n")
    for name in (directory, f"{directory}/*.warc.gz"):
        summary = normalize_graph_file(str(name), tmp_path / "out.parquet")
        assert summary.edges_out > 100 and summary.bad_rows == 0
        (tmp_path / "out.parquet").unlink()


def test_archive_links_and_learn_files_from_python(wget_archive):
    from scrapy_iri.graph import GraphNormalizer, archive_links, learn_files

    links = list(archive_links(str(wget_archive)))
    assert links and all(problem is None for *_, problem in links)
    assert {path for _, _, path, *_ in links} >= {"A@/href", "LINK@/href"}
    store = open_store("memory:")
    summary, reading = learn_files(store, [str(wget_archive)])
    assert summary.aliases_learned >= 10 and reading.bad == []
    normalizer = GraphNormalizer("protocol", store=store)
    edges = list(normalizer.normalize((source, target) for source, target, *_ in links))
    assert not any(urlsplit(node).hostname == WWW for edge in edges for node in edge)  # www folded into the apex


def test_a_recrawl_that_answers_200_ends_the_aliases_of_the_first(wget_archive, recrawled_archive):
    from scrapy_iri.graph import learn_files

    www, apex = f"http://{WWW}/tutorial/appendix.html", f"http://{HOST}/tutorial/appendix.html"

    def merged(names, a=www, b=apex):
        store = open_store("memory:")
        summary, reading = learn_files(store, [str(name) for name in names])
        assert reading.bad == []
        return canonicalize(a, "protocol", store=store) == canonicalize(b, "protocol", store=store)

    assert merged([wget_archive])
    assert not merged([wget_archive, recrawled_archive])
    assert not merged([recrawled_archive, wget_archive])  # captures in date order, whatever the files' order
    index, directory = f"http://{HOST}/tutorial/index.html", f"http://{HOST}/tutorial/"
    assert merged([wget_archive, recrawled_archive], index, directory)  # what did not change stays learned
