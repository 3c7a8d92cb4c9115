"""Every example in README.md and docs/*.md runs.

``>>>`` examples run as doctests (README's in tests/core/test_readme.py).
Other ```python blocks are executed, each in a fresh namespace, from the
page's directory's parent (the checkout). A block that cannot run here is
marked in the page by an HTML comment on the line before it:
``<!-- example: not run (reason) -->``; the reason is reported as a skip.
Console blocks (```console) run in tests/core/test_readme_console.py when
they are commands of scrapy-iri.
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"(?:<!-- example: not run \((?P<reason>[^)]*)\) -->\n)?```python\n(?P<code>.*?)```", re.S)


#: pages whose examples another part of the project answers for (xfail until they run: XPASS shows it)
ELSEWHERE = {"graph.md": "docs/graph.md is the graph engines' page; its examples are fixed with them"}
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
                marks.append(pytest.mark.xfail(reason=ELSEWHERE[page.name], strict=False))
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
