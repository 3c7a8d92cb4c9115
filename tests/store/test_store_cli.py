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
    code, out, _ = run(capsys, "store", "--store", str(store_path), "stats")
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
    code, out, _ = run(capsys, "store", "--store", str(store_path), "export", "--evidence")
    entries = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert {e["type"] for e in entries} == {"alias", "rule", "evidence"}


def test_forget(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "store", "--store", str(store_path), "forget", "http://b.example/old", "--host", "a.example")
    assert code == 0 and out.startswith("forgot ")
    with open_store(f"sqlite:///{store_path}") as store:
        assert store.stats()["aliases"] == 0
        assert store.representative("http://a.example/topic-9") == "http://a.example/topic-9"
    code, _, err = run(capsys, "store", "--store", str(store_path), "forget")
    assert code == 2 and "give URLs" in err


def test_missing_store(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = run(capsys, "store", "--store", str(tmp_path / "none.db"), "stats")
    assert code == 2 and "no store" in err
    assert not (tmp_path / "none.db").exists()
    monkeypatch.delenv("IRI_STORE", raising=False)
    code, _, err = run(capsys, "store", "stats")
    assert code == 2 and "--store" in err


def test_store_from_the_environment(store_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRI_STORE", f"sqlite:///{store_path}")
    code, out, _ = run(capsys, "store", "stats")
    assert code == 0 and "aliases\t4" in out


def test_rules_are_judged_with_the_crawl_settings(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "store", "--store", str(store_path), "--min-observations", "5", "stats")
    assert code == 0 and "rules/active\t0" in out and "rules/candidate\t1" in out


def test_rules_are_judged_with_the_policy_the_crawl_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from scrapy_iri.store import LearningPolicy, open_store

    path = tmp_path / "crawl.db"
    with open_store(f"sqlite:///{path}", policy=LearningPolicy(min_observations=5)) as store:
        for i in range(1, 4):
            store.record_redirect(f"http://a.example/topic-{i}", 301, f"http://a.example/topic-{i}/")
    code, out, _ = run(capsys, "store", "--store", str(path), "stats")
    assert code == 0 and "rules/active\t0" in out and "rules/candidate\t1" in out
    code, out, _ = run(capsys, "store", "--store", str(path), "--min-observations", "3", "stats")
    assert code == 0 and "rules/active\t1" in out


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
    code, stdout, err = run(capsys, "store", "--store", str(path), "export", "--format", "parquet", "--output", str(out))
    assert code == 0 and err == "" and "wrote 2 aliases" in stdout
    table = pq.read_table(out)
    assert table.column_names == ["alias", "representative"]
    assert sorted(zip(*table.to_pydict().values())) == [
        ("http://c.example/a", "http://c.example/c"),
        ("http://c.example/b", "http://c.example/c"),
    ]
    code, _, _ = run(capsys, "store", "--store", str(path), "export")  # JSON Lines stays the default
    assert code == 0


def test_export_parquet_faults(store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    code, _, err = run(capsys, "store", "--store", str(store_path), "export", "--format", "parquet")
    assert code == 2 and "--output FILE" in err
    code, _, err = run(
        capsys, "store", "--store", str(store_path), "export", "--format", "parquet", "--output", str(store_path)
    )
    assert code == 2 and "is the store itself" in err and "Traceback" not in err
    monkeypatch.setitem(__import__("sys").modules, "pyarrow", None)  # as if the extra were not installed
    code, _, err = run(
        capsys, "store", "--store", str(store_path), "export", "--format", "parquet", "--output", str(tmp_path / "a.pq")
    )
    assert code == 2 and "scrapy-iri[arrow]" in err and not (tmp_path / "a.pq").exists()
