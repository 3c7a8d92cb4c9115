"""Shared test configuration: Hypothesis profiles and the fixture modules; corpus helpers live in corpora.py."""

from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import settings

settings.register_profile("default", max_examples=400, deadline=None)
settings.register_profile("fuzz", max_examples=30000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# scrapy-iri's per-user state (the Redis store's ledgers) of this run, never the user's own; each test
# gets a directory of its own below (fixtures of a wider scope, and the crawls they start, share this one)
os.environ["SCRAPY_IRI_STATE_DIR"] = tempfile.mkdtemp(prefix="scrapy-iri-state-")

# Fixtures shared across the test packages (tests/fixtures/).
pytest_plugins = ["fixtures.stores", "fixtures.crawlers", "fixtures.redis_servers", "fixtures.webs"]


@pytest.fixture(autouse=True)
def _state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test keeps scrapy-iri's per-user state (the Redis store's ledgers) in a directory of its own."""
    monkeypatch.setenv("SCRAPY_IRI_STATE_DIR", str(tmp_path_factory.mktemp("state")))
