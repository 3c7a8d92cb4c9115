"""The import graph: no cycles (imports inside functions count), and a core without Scrapy."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "scrapy_iri"


def runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node that may run, at import or in a call: ``if TYPE_CHECKING:`` blocks left out."""
    nodes: list[ast.AST] = []
    pending = [tree]
    while pending:
        node = pending.pop()
        nodes.append(node)
        for child in ast.iter_child_nodes(node):
            test = getattr(child, "test", None) if isinstance(child, ast.If) else None
            if test is not None and "TYPE_CHECKING" in ast.unparse(test):
                pending.extend(child.orelse)
                continue
            pending.append(child)
    return nodes


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports, read from the source (every import statement)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    graph = {}
    for name, path in modules.items():
        deps = set()
        for node in runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    base = base[: len(base) - node.level + 1]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                for alias in node.names:
                    sub = f"{prefix}.{alias.name}"
                    deps.add(sub if sub in modules else prefix)
        graph[name] = {dep for dep in deps if dep in modules and dep != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for dep in graph[node]:
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def core(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The core: the package's top-level modules, without the subpackages."""
    keep = {name for name in graph if name.count(".") <= 1 and name.split(".")[-1] not in ("scrapy", "store", "graph")}
    return {name: graph[name] & keep for name in keep}


def test_core_has_no_import_cycle():
    assert cycles(core(import_graph())) == []


def test_the_checker_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_package_has_no_import_cycle():
    assert cycles(import_graph()) == []


def test_core_never_imports_scrapy_or_the_subpackages():
    for path in PACKAGE.glob("*.py"):
        if path.name in ("__init__.py", "_cli.py"):
            continue  # lazy Scrapy names (PEP 562) and the CLI's plugins, loaded on use
        if path.name in ("arrow.py", "dask.py", "spark.py"):
            continue  # the graph engines' modules (extras), built on scrapy_iri.graph
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                target = ("." * node.level) + (node.module or "")
            elif isinstance(node, ast.Import):
                target = ",".join(alias.name for alias in node.names)
            else:
                continue
            assert "scrapy." not in target.replace("scrapy_iri", "") and target != "scrapy", (path.name, target)
            assert not target.startswith((".scrapy", ".store", ".graph")), (path.name, target)
