"""The scrapy-iri command line, run as a user runs it (the installed console script)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = shutil.which("scrapy-iri", path=str(Path(sys.executable).parent)) or shutil.which("scrapy-iri")


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    if SCRIPT is None:
        pytest.fail("the scrapy-iri console script is not installed (pip install -e .)")
    return subprocess.run([SCRIPT, *args], input=stdin, capture_output=True, text=True, timeout=60)


def test_canon_arguments():
    result = run("canon", "HTTP://Example.com:80/%7Efoo", "http://faß.de/")
    assert result.returncode == 0
    assert result.stdout.splitlines() == ["http://example.com/~foo", "http://xn--fa-hia.de/"]


def test_canon_rung_and_fragment_options():
    result = run("canon", "--rung", "syntax", "--drop-fragment", "HTTP://Example.com:80/%7Efoo#x")
    assert result.stdout == "http://example.com:80/~foo\n"


def test_canon_streams_stdin_and_reports_bad_lines_without_traceback():
    result = run("canon", "-", stdin="http://A/\nhttp://a b/\nhttp://B/\n")
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["http://a/", "http://b/"]
    assert "line 2: host:" in result.stderr
    assert "Traceback" not in result.stderr


def test_canon_lenient():
    result = run("canon", "--lenient", "-", stdin=" http://a/b c \n")
    assert (result.returncode, result.stdout) == (0, "http://a/b%20c\n")


@pytest.mark.parametrize(
    "a, b, rung, code, line",
    [
        ("http://a/%7e", "HTTP://a/~", "scheme", 0, "equivalent at syntax"),
        ("http://a:80", "http://a/", "scheme", 0, "equivalent at scheme"),
        ("http://a/", "http://a/", "scheme", 0, "equivalent at string"),
        ("http://a:80", "http://a/", "syntax", 1, "different at every rung up to syntax"),
        ("http://a/?x=1&y=2", "http://a/?y=2&x=1", "scheme", 1, "different at every rung up to scheme"),
    ],
)
def test_compare(a, b, rung, code, line):
    result = run("compare", a, b, "--rung", rung)
    assert result.returncode == code
    assert result.stdout.strip() == line


def test_compare_invalid_iri_and_usage_errors():
    result = run("compare", "http://a b/", "http://a/")
    assert result.returncode == 2 and "host:" in result.stderr and "Traceback" not in result.stderr
    result = run("canon", "--rung", "nonsense", "http://a/")
    assert result.returncode == 2 and "unknown rung" in result.stderr
    result = run("canon", "--rung", "protocol", "http://a/")
    assert result.returncode == 2 and "store" in result.stderr


def test_canon_stdin_with_bytes_that_are_not_utf8_reports_that_line_and_goes_on():
    if SCRIPT is None:
        pytest.fail("the scrapy-iri console script is not installed")
    result = subprocess.run(
        [SCRIPT, "canon", "-"],
        input=b"http://a/ok\nhttp://a/\xff\nhttp://a/after\n",
        capture_output=True,
        timeout=60,
        env={"PYTHONIOENCODING": "utf-8", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 1
    assert result.stdout.decode().splitlines() == ["http://a/ok", "http://a/after"]
    assert b"line 2: path:" in result.stderr and b"Traceback" not in result.stderr


def test_an_absurdly_long_port_is_an_ordinary_error():
    result = run("canon", "http://a:" + "1" * 5000 + "/")
    assert result.returncode == 1 and "port:" in result.stderr and "Traceback" not in result.stderr


# -- output that cannot be written, --version, a BOM


def _shell(command: str) -> subprocess.CompletedProcess[str]:
    if SCRIPT is None:
        pytest.fail("the scrapy-iri console script is not installed (pip install -e .)")
    return subprocess.run(["bash", "-c", command.replace("scrapy-iri", SCRIPT)], capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize(
    "args",
    ["canon http://a/", "canon -", "display -", "compare http://a/ http://b/", "--version", "--help", "canon --help",
     "store --store memory: stats"],
)
def test_a_full_disk_is_one_line_and_exit_2(args):
    result = _shell(f"yes http://a/ | head -n 20000 | scrapy-iri {args} > /dev/full; echo status=$? >&2")
    lines = result.stderr.splitlines()
    assert lines[-1] == "status=2", result.stderr
    assert lines[:-1] == ["scrapy-iri: cannot write the output: No space left on device"]


@pytest.mark.parametrize("args", ["canon http://a/", "--version", "store --store memory: stats"])
def test_a_closed_stdout_is_one_line_and_exit_2(args):
    result = _shell(f"scrapy-iri {args} >&-; echo status=$? >&2")
    assert result.stderr.splitlines() == ["scrapy-iri: cannot write the output: standard output is closed", "status=2"]


@pytest.mark.parametrize("command", ["canon", "display"])
def test_a_broken_pipe_is_one_line_and_exit_2(command):
    result = _shell(f"yes http://a/ | head -n 200000 | scrapy-iri {command} - | head -n 1; echo \"status=${{PIPESTATUS[2]}}\" >&2")
    assert result.stdout == "http://a/\n"
    assert result.stderr.splitlines() == ["scrapy-iri: cannot write the output: Broken pipe", "status=2"]


def test_version():
    from importlib.metadata import version

    result = run("--version")
    assert (result.returncode, result.stdout) == (0, f"scrapy-iri {version('scrapy-iri')}\n")


@pytest.mark.parametrize("lenient", [[], ["--lenient"]])
def test_canon_stdin_accepts_a_utf8_bom_on_line_1_only(lenient):
    if SCRIPT is None:
        pytest.fail("the scrapy-iri console script is not installed")
    data = "\ufeffhttp://A/\n\ufeffhttp://B/\n".encode()
    result = subprocess.run([SCRIPT, "canon", *lenient, "-"], input=data, capture_output=True, timeout=60)
    assert result.stdout.decode().splitlines() == ["http://a/"]
    assert result.returncode == 1  # U+FEFF inside the stream is a character, not a signature
    assert result.stderr.decode().startswith("scrapy-iri: line 2: ") and b"line 1" not in result.stderr
