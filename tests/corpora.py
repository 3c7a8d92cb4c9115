"""The public corpora in ../shared/corpora, read in place (never copied into the repo)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

CORPORA = Path(os.environ.get("SCRAPY_IRI_CORPORA", Path(__file__).resolve().parents[2] / "shared" / "corpora"))


def corpus_path(relative: str) -> Path:
    """Path of a corpus file; skips the test with the reason when it is absent."""
    path = CORPORA / relative
    if not path.exists():
        pytest.skip(f"corpus {relative} not found under {CORPORA} (set SCRAPY_IRI_CORPORA)")
    return path


def load_json(relative: str) -> Any:
    return json.loads(corpus_path(relative).read_text(encoding="utf-8"))


def corpus_params(relative: str, extract: Any, ids: Any = None) -> list[Any]:
    """Parameters for ``pytest.mark.parametrize`` read from a corpus at collection time.

    ``extract(data)`` returns the list of cases. When the corpus is absent the
    list holds one parameter marked skip, so the reason shows in the report.
    """
    path = CORPORA / relative
    if not path.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"corpus {relative} not found under {CORPORA}"))]
    cases = extract(json.loads(path.read_text(encoding="utf-8")))
    return [pytest.param(case, id=ids(case) if ids else None) for case in cases]
