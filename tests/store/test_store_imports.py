"""The store's modules import each other without a cycle, imports made only for type checking included."""

from __future__ import annotations

import ast
from pathlib import Path

STORE = Path(__file__).resolve().parents[2] / "scrapy_iri" / "store"


def store_graph() -> dict[str, set[str]]:
    """Module -> the store modules it imports, every import statement counted (``TYPE_CHECKING`` ones too)."""
    names = {path.stem: path for path in STORE.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    deps.add(node.module.split(".")[0])
                else:
                    deps.update(alias.name for alias in node.names)
        graph[name] = {dep for dep in deps if dep in names and dep != name}
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    pending = list(graph[start])
    while pending:
        node = pending.pop()
        if node not in seen:
            seen.add(node)
            pending.extend(graph.get(node, ()))
    return seen


def test_no_module_of_the_store_reaches_itself() -> None:
    graph = store_graph()
    assert {"_learner", "_report", "_storage", "_sqlite"} <= set(graph)
    assert [name for name in sorted(graph) if name in reachable(graph, name)] == []


def test_the_checker_sees_a_type_only_cycle() -> None:
    assert "a" in reachable({"a": {"b"}, "b": {"a"}}, "a")
