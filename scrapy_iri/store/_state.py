"""Where scrapy-iri keeps state of its own on this machine (the stores' ledgers and marks)."""

from __future__ import annotations

import os
from pathlib import Path


def state_dir() -> Path:
    """``$SCRAPY_IRI_STATE_DIR``, else ``$XDG_STATE_HOME/scrapy-iri``, else ``~/.local/state/scrapy-iri``."""
    given = os.environ.get("SCRAPY_IRI_STATE_DIR")
    if given:
        return Path(given)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "scrapy-iri"


__all__ = ["state_dir"]
