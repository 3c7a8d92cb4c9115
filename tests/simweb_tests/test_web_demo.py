"""The example project's runner: starts the demo web, crawls, prints the report."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

RUNNER = Path(__file__).resolve().parents[2] / "example_project" / "run_demo.py"


def run_demo(*args: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    out = tmp_path / "demo.json"
    process = subprocess.run(
        [sys.executable, str(RUNNER), "--json", str(out), *args],
        capture_output=True, text=True, timeout=240, env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    runs = json.loads(out.read_text(encoding="utf-8")) if out.exists() else []
    return process, runs


def test_baseline_half(tmp_path: Path) -> None:
    process, runs = run_demo("--only", "baseline", tmp_path=tmp_path)
    assert process.returncode == 0, process.stderr[-3000:]
    assert "Scrapy defaults" in process.stdout
    assert "distinct resources reached" in process.stdout
    [baseline] = runs
    assert baseline["report"]["distinct resources reached"].endswith("/ 47")
    assert int(baseline["report"]["resources fetched more than once"]) > 0
    assert "missed by Scrapy defaults: buecher:contact, fass-eszett:home" in process.stdout


@pytest.mark.skipif(
    importlib.util.find_spec("scrapy_iri.scrapy._addon") is None, reason="the scrapy-iri add-on is not there yet"
)
def test_both_crawls(tmp_path: Path) -> None:
    process, runs = run_demo(tmp_path=tmp_path)
    assert process.returncode == 0, process.stderr[-3000:]
    # the demo project relies on the add-on's default rung: protocol
    assert [run["label"] for run in runs] == ["Scrapy defaults", "scrapy-iri (protocol)"]
    assert runs[1]["report"]["  at the scheme rung"] != "-"
    assert runs[1]["report"]["distinct resources reached"] == "47 / 47"
    assert runs[1]["report"]["trap resources reached"] == "24 / 24"
