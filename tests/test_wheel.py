"""The wheel holds the product only: the package, none of the tests or the simulated web."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from offline import build_failed

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "scrapy_iri"
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis")


def test_wheel_holds_the_product_only(tmp_path: Path) -> None:
    source = tmp_path / "checkout"  # building writes build/ and *.egg-info beside the sources
    shutil.copytree(ROOT, source, ignore=NOT_SOURCES)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path), str(source)],
        capture_output=True, text=True, timeout=300,
    )
    if built.returncode != 0:
        build_failed("cannot build the wheel", built.stderr)
    (wheel,) = tmp_path.glob("scrapy_iri-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    product = [n for n in names if not n.startswith("scrapy_iri-")]  # the .dist-info aside
    assert product and all(n.startswith("scrapy_iri/") for n in product), product
    shipped = {n for n in product if n.endswith(".py")}
    assert shipped == {p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py")}
