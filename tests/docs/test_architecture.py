"""docs/architecture.md names every module of the package."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def test_every_module_is_named_in_the_architecture_page():
    package = ROOT / "scrapy_iri"
    missing = []
    for path in sorted(package.rglob("*.py")):
        rows = [line for line in ARCHITECTURE.splitlines() if f"`{path.name}`" in line]
        owner = ".".join(("scrapy_iri", *path.parent.relative_to(package).parts))
        # named in its package's rows of the module table (the rows after the package's first row)
        table = ARCHITECTURE[ARCHITECTURE.index("## Every module, by package") :]
        section = table[table.index(f"| `{owner}` |") :]
        end = min((section.index(f"| `{other}` |", 1) for other in _packages(package) if other != owner and f"| `{other}` |" in section[1:]), default=len(section))
        if not rows or f"`{path.name}`" not in section[:end]:
            missing.append(str(path.relative_to(package)))
    assert missing == []


def _packages(package: Path) -> list[str]:
    return [".".join(("scrapy_iri", *p.parent.relative_to(package).parts)) for p in package.rglob("__init__.py")]
