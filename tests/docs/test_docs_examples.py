"""Every example in README.md and docs/*.md runs.

``>>>`` examples run as doctests (README's in tests/core/test_readme.py).
Other ```python blocks are executed, each in a fresh namespace, from the
page's directory's parent (the checkout). A block that cannot run here is
marked in the page by an HTML comment on the line before it:
``<!-- example: not run (reason) -->``; the reason is reported as a skip.
```console blocks run too: each ``$ scrapy-iri ...`` line, with its
expected output, up to the next ``$`` (lines with pipes or files other than
the page's own are left to the doctests and the CLI tests).
"""

from __future__ import annotations

import doctest
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"(?:<!-- example: not run \((?P<reason>[^)]*)\) -->\n)?```python\n(?P<code>.*?)```", re.S)


#: pages whose examples run elsewhere, with the fixtures they need (a Dask cluster, a Spark session)
ELSEWHERE = {"graph.md": "run by tests/graph/test_graph_docs.py and test_graph_spark.py"}
#: Redis URLs the pages use, replaced by the test redis-server's
REDIS_URLS = re.compile(r"redis://(?:127\.0\.0\.1|localhost)(?::6379)?/0")


def _blocks() -> list:
    params = []
    for page in [ROOT / "README.md", *PAGES]:
        text = page.read_text(encoding="utf-8")
        for number, match in enumerate(FENCE.finditer(text), 1):
            code = match.group("code")
            if code.lstrip().startswith(">>>"):
                continue  # a doctest
            line = text[: match.start("code")].count("\n") + 1
            marks = [pytest.mark.skip(reason=match.group("reason"))] if match.group("reason") else []
            if page.name in ELSEWHERE:
                marks.append(pytest.mark.skip(reason=ELSEWHERE[page.name]))
            params.append(pytest.param(page, line, code, id=f"{page.name}:{line}", marks=marks))
    return params


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_doctests(page: Path) -> None:
    result = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


@pytest.mark.parametrize("page, line, code", _blocks())
def test_code_blocks(
    page: Path, line: int, code: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    monkeypatch.chdir(tmp_path)
    if REDIS_URLS.search(code):  # run against the test redis-server, not a server the reader has
        code = REDIS_URLS.sub(request.getfixturevalue("redis_url"), code)  # redis://127.0.0.1:PORT/0
    exec(compile(code, f"{page.name}:{line}", "exec"), {"__name__": f"example_{page.stem}"})


CONSOLE = re.compile(r"```console\n(.*?)```", re.S)
SCRIPT = Path(sys.executable).parent / "scrapy-iri"


def _commands() -> list:
    params = []
    for page in [ROOT / "README.md", *PAGES]:
        text = page.read_text(encoding="utf-8")
        for block in CONSOLE.finditer(text):
            lines = block.group(1).splitlines()
            for index, line in enumerate(lines):
                if not line.startswith("$ scrapy-iri ") or any(c in line for c in "|<>"):
                    continue
                expected = []
                for following in lines[index + 1 :]:
                    if following.startswith("$"):
                        break
                    expected.append(following)
                number = text[: block.start(1)].count("\n") + index + 1
                params.append(pytest.param(page, line[2:], expected, id=f"{page.name}:{number}"))
    return params


@pytest.mark.parametrize("page, command, expected", _commands())
def test_console_examples(page: Path, command: str, expected: list[str], tmp_path: Path) -> None:
    args = shlex.split(command)[1:]
    if args[:1] == ["graph"]:
        pytest.skip("needs the page's links.csv: docs/graph.md's examples are the graph engines' (tests/graph)")
    if args[:1] == ["store"]:  # the store a crawl learning /topic-N -> /topic-N/ would have left
        from scrapy_iri.store import open_store

        (tmp_path / ".scrapy" / "iri").mkdir(parents=True)
        with open_store(f"sqlite:///{tmp_path / '.scrapy' / 'iri' / 'myspider.sqlite'}") as store:
            for i in range(1, 4):
                store.record_redirect(f"http://a.example/topic-{i}", 301, f"http://a.example/topic-{i}/")
    result = subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.stdout.splitlines() == expected, result.stderr
