"""``scrapy-iri display``, run as a user runs it (the installed console script)."""

from __future__ import annotations

import os

from test_canon_cli import SCRIPT, run  # noqa: F401  (SCRIPT: the installed console script)

LRE, PDF = "\u202a", "\u202c"


def test_display_arguments():
    result = run("display", "http://www.example.org/D%C3%BCrst", "http://xn--4dbrk0ce.example/%D7%90")
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        "http://www.example.org/Dürst",
        f"{LRE}http://ישראל.example/א{PDF}",
    ]


def test_display_streams_stdin_and_reports_bad_lines_without_traceback():
    result = run("display", "-", stdin="http://xn--bcher-kva.example/\nhttp://a b/\nhttp://x/%E2%80%AE\n")
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["http://bücher.example/", "http://x/%E2%80%AE"]
    assert "line 2: host:" in result.stderr
    assert "Traceback" not in result.stderr


def test_display_lenient():
    result = run("display", "--lenient", " http://example.org/a b ")
    assert result.returncode == 0
    assert result.stdout == "http://example.org/a%20b\n"


def test_display_writes_utf8_whatever_the_locale():
    import subprocess

    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONIOENCODING": "ascii", "PYTHONUTF8": "0"}
    result = subprocess.run([SCRIPT, "display", "http://b%C3%BCcher.example/"], capture_output=True, env=env, timeout=60)
    assert result.returncode == 0
    assert result.stdout.decode("utf-8") == "http://bücher.example/\n"
