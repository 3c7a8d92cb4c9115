"""The demo's report says why each resource it fetched more than once could not be merged."""

from __future__ import annotations

import re
import runpy
import subprocess
import sys
from pathlib import Path

RUNNER = Path(__file__).resolve().parents[2] / "example_project" / "run_demo.py"
why_not_merged = runpy.run_path(str(RUNNER), run_name="demo_report")["why_not_merged"]


def test_each_reason_names_what_kept_the_requests_apart():
    start = ["http://xn--bcher-kva.example/"]
    assert why_not_merged(["http://xn--bcher-kva.example/"] * 2, start).startswith("the start URL")
    assert why_not_merged(["http://a.example/p", "https://a.example/p"], start).startswith("served on http and https")
    assert why_not_merged(["http://a.example/p?ref=x", "http://A.example:80/p"], start).startswith("the query differs (?ref=x, no query)")
    assert why_not_merged(["http://a.example/p", "http://a.example/q"], start).startswith("different URLs that no redirect joined")


def test_the_demo_explains_every_resource_it_fetched_twice():
    process = subprocess.run([sys.executable, str(RUNNER), "--only", "iri"], capture_output=True, text=True, timeout=300)
    assert process.returncode == 0, process.stderr[-3000:]
    report = process.stdout
    twice = int(re.search(r"resources fetched more than once\s+(\d+)", report).group(1))
    section = report.partition("and why they could not be merged:")[2].splitlines()
    entries = [line for line in section if re.match(r"  \S", line)]
    reasons = [line.strip() for line in section if line.startswith("    ")]
    assert twice > 0 and len(entries) == len(reasons) == twice
    assert not [r for r in reasons if r.startswith(("different URLs", "the same URL requested"))], reasons
