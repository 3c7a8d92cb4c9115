"""The examples of docs/graph.md: console sessions and Python blocks, as the tests run them."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "graph.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def console_steps(block: str) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) for each ``$ `` line of a console block."""
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    return steps


def python_blocks(with_spark: bool) -> list[str]:
    return [b for b in blocks("python") if ("scrapy_iri.spark" in b) == with_spark]


def run_python(block: str, directory: Path) -> None:
    import os

    cwd = os.getcwd()
    os.chdir(directory)
    try:
        exec(compile(block, str(DOC), "exec"), {"__name__": "docs_example"})
    finally:
        os.chdir(cwd)
