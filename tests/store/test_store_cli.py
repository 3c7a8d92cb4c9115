"""``scrapy-iri store stats|explain|export|forget``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scrapy_iri._cli import main
from scrapy_iri.store import open_store


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    with open_store(f"sqlite:///{path}") as store:
        for i in range(1, 4):
            store.record_redirect(f"http://a.example/topic-{i}", 301, f"http://a.example/topic-{i}/")
        store.record_redirect("http://b.example/old", 301, "http://b.example/new")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_stats(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "store", "--store", f"sqlite:///{store_path}", "stats")
    assert code == 0
    stats = dict(line.split("\t") for line in out.splitlines())
    assert stats["aliases"] == "4" and stats["rules/active"] == "1"


def test_explain(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    uri = f"sqlite:///{store_path}"
    code, out, _ = run(capsys, "store", "--store", uri, "explain", "http://a.example/topic-7", "http://a.example/topic-7/")
    assert code == 0
    assert "rule http://a.example add-slash /topic-#" in out and "merged" in out
    code, out, _ = run(capsys, "store", "--store", uri, "explain", "http://b.example/old", "http://a.example/topic-7/")
    assert code == 1 and "not merged" in out
    code, out, _ = run(capsys, "store", "--store", uri, "explain", "http://b.example/old")
    assert code == 0 and "exact alias (301" in out


def test_export(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "store", "--store", f"sqlite:///{store_path}", "export", "--evidence")
    entries = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert {e["type"] for e in entries} == {"alias", "rule", "evidence"}


def test_forget(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "store", "--store", f"sqlite:///{store_path}", "forget", "http://b.example/old", "--host", "a.example")
    assert code == 0 and out.startswith("forgot ")
    with open_store(f"sqlite:///{store_path}") as store:
        assert store.stats()["aliases"] == 0
        assert store.representative("http://a.example/topic-9") == "http://a.example/topic-9"
    code, _, err = run(capsys, "store", "--store", f"sqlite:///{store_path}", "forget")
    assert code == 2 and "give URLs" in err


def test_missing_store(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = run(capsys, "store", "--store", f"sqlite:///{tmp_path / 'none.db'}", "stats")
    assert code == 2 and "no store" in err
    assert not (tmp_path / "none.db").exists()
    monkeypatch.delenv("IRI_STORE", raising=False)
    monkeypatch.chdir(tmp_path)  # not in a Scrapy project
    code, _, err = run(capsys, "store", "stats")
    assert code == 2 and "--store" in err and "scrapy.cfg" in err


def test_store_from_the_environment(store_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRI_STORE", f"sqlite:///{store_path}")
    code, out, _ = run(capsys, "store", "stats")
    assert code == 0 and "aliases\t4" in out


def test_rules_are_judged_with_the_crawl_settings(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "store", "--store", f"sqlite:///{store_path}", "--min-observations", "5", "stats")
    assert code == 0 and "rules/active\t0" in out and "rules/candidate\t1" in out


def test_rules_are_judged_with_the_policy_the_crawl_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from scrapy_iri.store import LearningPolicy, open_store

    path = tmp_path / "crawl.db"
    with open_store(f"sqlite:///{path}", policy=LearningPolicy(min_observations=5)) as store:
        for i in range(1, 4):
            store.record_redirect(f"http://a.example/topic-{i}", 301, f"http://a.example/topic-{i}/")
    code, out, _ = run(capsys, "store", "--store", f"sqlite:///{path}", "stats")
    assert code == 0 and "rules/active\t0" in out and "rules/candidate\t1" in out
    code, out, _ = run(capsys, "store", "--store", f"sqlite:///{path}", "--min-observations", "3", "stats")
    assert code == 0 and "rules/active\t1" in out


# -- one store-URI syntax


@pytest.mark.parametrize("value", ["store.db", "/abs/store.db", "C:\\x\\store.db"])
def test_a_plain_path_is_refused_with_the_uri_to_write(value: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scrapy_iri.store import StoreError, open_store

    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "store", "--store", value, "stats")
    assert code == 2 and f"'sqlite:///{value}'" in err.replace("\\\\", "\\") and "Traceback" not in err
    with pytest.raises(StoreError) as info:
        open_store(value)
    assert str(info.value) in err  # the same error as IRI_STORE and graph --store
    assert list(tmp_path.iterdir()) == []


def test_scheme_is_case_insensitive_and_relative_stays_relative(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scrapy_iri.store import open_store, parse_store_uri

    monkeypatch.chdir(tmp_path)
    assert parse_store_uri("SQLITE:///rel.db").path == Path("rel.db")
    assert parse_store_uri("SQLite:////abs/x.db").path == Path("/abs/x.db")
    assert parse_store_uri("MEMORY:").scheme == "memory"
    assert parse_store_uri("REDIS://h:1/0?namespace=x").uri == "redis://h:1/0?namespace=x"
    with open_store("SQLITE:///rel.db") as store:
        store.record_redirect("http://a.example/x", 301, "http://a.example/y")
    assert (tmp_path / "rel.db").exists()


@pytest.mark.parametrize("uri", ["sqlite:///x.db?mode=ro", "sqlite:///x.db#f", "sqlite://host/x.db", "sqlite:", "mem:", "memory:x", "ftp://x"])
def test_bad_store_uris_are_refused_before_any_file_is_made(uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from scrapy_iri.store import StoreError, open_store

    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError):
        open_store(uri)
    code, _, err = run(capsys, "store", "--store", uri, "stats")
    assert code == 2 and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_spider_names_never_escape_the_store_directory() -> None:
    from scrapy_iri.store import spider_store_name

    for name in ("../../x", "/etc/passwd", "..", ".hidden", "a/b", "a\\b", "ünï"):
        stored = spider_store_name(name)
        assert "/" not in stored and "\\" not in stored and not stored.startswith(".")
    assert spider_store_name("books") == "books.sqlite"
    assert spider_store_name("../../x") != spider_store_name("x")


@pytest.mark.parametrize(
    "option, value",
    [("--rule-ttl", "-1"), ("--rule-ttl", "0"), ("--rule-ttl", "nan"), ("--rule-ttl", "inf"), ("--rule-ttl", "-inf"),
     ("--rule-ttl", "x"), ("--min-observations", "0"), ("--min-observations", "-3"), ("--min-observations", "1.5")],
)
def test_bad_numbers_are_usage_errors(option: str, value: str, store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:  # argparse's usage error
        main(["store", "--store", f"sqlite:///{store_path}", f"{option}={value}", "stats"])
    captured = capsys.readouterr()
    assert (info.value.code, captured.out) == (2, "")
    assert option in captured.err and "Traceback" not in captured.err


def test_the_current_projects_store_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = p.settings\n")
    (tmp_path / "p" / "spiders").mkdir(parents=True)
    monkeypatch.delenv("IRI_STORE", raising=False)
    monkeypatch.chdir(tmp_path / "p" / "spiders")
    code, _, err = run(capsys, "store", "stats")
    assert code == 2 and str(tmp_path / ".scrapy" / "iri") in err
    directory = tmp_path / ".scrapy" / "iri"
    directory.mkdir(parents=True)
    with open_store(f"sqlite:///{directory / 'books.sqlite'}") as store:
        store.record_redirect("http://a.example/x", 301, "http://a.example/y")
    code, out, err = run(capsys, "store", "stats")
    assert code == 0 and "aliases\t1" in out and str(directory / "books.sqlite") in err
    with open_store(f"sqlite:///{directory / 'news.sqlite'}"):
        pass
    code, _, err = run(capsys, "store", "stats")
    assert code == 2 and "books" in err and "news" in err and "--spider" in err
    code, out, _ = run(capsys, "store", "--spider", "books", "stats")
    assert code == 0 and "aliases\t1" in out
    code, _, err = run(capsys, "store", "--spider", "nope", "stats")
    assert code == 2 and "nope" in err


def test_forget_host_understands_ports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    uri = f"sqlite:///{tmp_path / 'ports.db'}"
    pairs = [
        ("http://h.example/a", "http://h.example/b"),
        ("https://h.example/a", "https://h.example/b"),
        ("http://h.example:8080/a", "http://h.example:8080/b"),
        ("http://h.example:9090/a", "http://h.example:9090/b"),
        ("http://other.example/a", "http://other.example/b"),
    ]

    def sources() -> set[str]:
        with open_store(uri) as store:
            return {entry["source"] for entry in store.export() if entry["type"] == "alias"}

    with open_store(uri) as store:
        for source, target in pairs:
            store.record_redirect(source, 301, target)
    assert run(capsys, "store", "--store", uri, "forget", "--host", "h.example:8080")[0] == 0
    assert sources() == {"http://h.example/a", "https://h.example/a", "http://h.example:9090/a", "http://other.example/a"}
    run(capsys, "store", "--store", uri, "forget", "--host", "H.EXAMPLE:443")
    assert sources() == {"http://h.example/a", "http://h.example:9090/a", "http://other.example/a"}
    run(capsys, "store", "--store", uri, "forget", "--host", "h.example")  # default ports only
    assert sources() == {"http://h.example:9090/a", "http://other.example/a"}
    run(capsys, "store", "--store", uri, "forget", "--host", "h.example:*")
    assert sources() == {"http://other.example/a"}
    code, _, err = run(capsys, "store", "--store", uri, "forget", "--host", "h example:x")
    assert code == 2 and "h example:x" in err and "Traceback" not in err


def test_stats_and_export_use_one_vocabulary_for_rule_statuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    uri = f"sqlite:///{tmp_path / 'words.db'}"
    with open_store(uri) as store:
        for i in range(1, 4):  # an active rule
            store.record_redirect(f"http://a.example/t-{i}", 301, f"http://a.example/t-{i}/")
        store.record_redirect("http://c.example/one", 301, "http://c.example/one/")  # a candidate
    _, out, _ = run(capsys, "store", "--store", uri, "stats")
    stats = {k: int(v) for k, v in (line.split("\t") for line in out.splitlines())}
    _, out, _ = run(capsys, "store", "--store", uri, "export")
    labels = [json.loads(line)["status"] for line in out.splitlines() if json.loads(line)["type"] == "rule"]
    for label in set(labels):
        key = "blocked_origins" if label == "blocked" else f"rules/{label}"
        assert stats[key] == labels.count(label), (label, stats)
    assert "active" in labels
    assert set(labels) <= {"candidate", "active", "suspended", "refuted", "blocked", "unblocked"}


def test_a_redis_uri_without_namespace_lists_the_stores(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "store", "--store", redis_url, "stats")
    assert code == 2 and "no scrapy-iri store" in err and "namespace" in err
    for namespace in ("scrapy-iri:books", "scrapy-iri:news"):
        with open_store(f"{redis_url}?namespace={namespace}") as store:
            store.record_redirect("http://a.example/x", 301, "http://a.example/y")
    code, out, err = run(capsys, "store", "--store", redis_url, "stats")
    assert (code, out) == (2, "")
    assert "'scrapy-iri:books'" in err and "'scrapy-iri:news'" in err and "?namespace=" in err
    code, out, _ = run(capsys, "store", "--store", f"{redis_url}?namespace=scrapy-iri:books", "stats")
    assert code == 0 and "aliases\t1" in out


def test_an_unreachable_redis_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "store", "--store", "redis://127.0.0.1:9/0", "stats")
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("value", ["store.db", "sqlite:///x.db?mode=ro", "SQLITE://host/x.db"])
def test_one_error_for_a_bad_store_uri_in_store_graph_and_settings(value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from scrapy.settings import Settings

    from scrapy_iri.scrapy._settings import IRISettings, IRISettingsError
    from scrapy_iri.store import StoreError, parse_store_uri

    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError) as info:
        parse_store_uri(value)
    message = str(info.value)
    (tmp_path / "in.csv").write_text("source,target\nhttp://a/,http://b/\n", encoding="utf-8")
    code, _, err = run(capsys, "store", "--store", value, "stats")
    assert code == 2 and message in err
    code, _, err = run(capsys, "graph", "in.csv", "out.csv", "--store", value)
    assert code == 2 and message in err
    with pytest.raises(IRISettingsError) as settings_error:
        IRISettings.from_settings(Settings({"IRI_STORE": value}))
    assert message in str(settings_error.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_export_parquet_writes_the_resolved_alias_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed (pip install 'scrapy-iri[arrow]')")
    path = tmp_path / "store.db"
    with open_store(f"sqlite:///{path}") as store:
        store.record_redirect("http://c.example/a", 301, "http://c.example/b")
        store.record_redirect("http://c.example/b", 308, "http://c.example/c")  # a chain: a -> c
        store.record_redirect("http://c.example/x", 301, "http://c.example/y")
        store.record_redirect("http://c.example/y", 301, "http://c.example/x")  # a loop: no merge
        store.record_redirect("http://c.example/t", 302, "http://c.example/u")  # temporary: no alias
    out = tmp_path / "aliases.parquet"
    code, stdout, err = run(capsys, "store", "--store", f"sqlite:///{path}", "export", "--format", "parquet", "--output", str(out))
    assert code == 0 and err == "" and "wrote 2 aliases" in stdout
    table = pq.read_table(out)
    assert table.column_names == ["alias", "representative"]
    assert sorted(zip(*table.to_pydict().values())) == [
        ("http://c.example/a", "http://c.example/c"),
        ("http://c.example/b", "http://c.example/c"),
    ]
    code, _, _ = run(capsys, "store", "--store", f"sqlite:///{path}", "export")  # JSON Lines stays the default
    assert code == 0


def test_export_parquet_faults(store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    code, _, err = run(capsys, "store", "--store", f"sqlite:///{store_path}", "export", "--format", "parquet")
    assert code == 2 and "--output FILE" in err
    code, _, err = run(
        capsys, "store", "--store", f"sqlite:///{store_path}", "export", "--format", "parquet", "--output", str(store_path)
    )
    assert code == 2 and "is the store itself" in err and "Traceback" not in err
    monkeypatch.setitem(__import__("sys").modules, "pyarrow", None)  # as if the extra were not installed
    code, _, err = run(
        capsys, "store", "--store", f"sqlite:///{store_path}", "export", "--format", "parquet", "--output", str(tmp_path / "a.pq")
    )
    assert code == 2 and "scrapy-iri[arrow]" in err and not (tmp_path / "a.pq").exists()
