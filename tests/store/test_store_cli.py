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
