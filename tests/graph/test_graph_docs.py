"""Every example in docs/graph.md runs (the Spark one runs in test_graph_spark.py, with its session)."""

from __future__ import annotations

import re
import shlex

import pytest
from _docs import blocks, console_steps, python_blocks, run_python

from scrapy_iri._cli import main


def timing_free(line: str) -> str:
    return re.sub(r"rows in [\d.]+ s \([\d,]+ rows/s\)", "rows in T s (R rows/s)", line)


def run_console(block: str, directory, capsys) -> None:
    for command, expected in console_steps(block):
        words = shlex.split(command)
        if words[0] == "cat":
            path = directory / words[1]
            if not path.exists():  # the session shows the input: make it
                path.write_text("\n".join(expected) + "\n", encoding="utf-8")
            assert path.read_text(encoding="utf-8").splitlines() == expected, command
            continue
        assert words[0] == "scrapy-iri", command
        import os

        cwd = os.getcwd()
        os.chdir(directory)
        try:
            main(words[1:])
        finally:
            os.chdir(cwd)
        err = capsys.readouterr().err.splitlines()
        assert [timing_free(line) for line in err] == [timing_free(line) for line in expected], command


def test_the_console_session(tmp_path, capsys):
    sessions = blocks("console")
    assert sessions
    for block in sessions:
        run_console(block, tmp_path, capsys)


@pytest.mark.parametrize("index", range(len(python_blocks(with_spark=False))))
def test_the_python_examples(tmp_path, capsys, index):
    run_console(blocks("console")[0], tmp_path, capsys)  # links.csv
    run_python(python_blocks(with_spark=False)[index], tmp_path)


def test_there_are_examples_for_every_engine():
    text = "".join(blocks("python"))
    for module in ("scrapy_iri.graph", "scrapy_iri.arrow", "scrapy_iri.dask", "scrapy_iri.spark"):
        assert f"from {module} import" in text
