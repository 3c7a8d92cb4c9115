"""Shared test configuration: Hypothesis profiles and the fixture modules; corpus helpers live in corpora.py."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("default", max_examples=400, deadline=None)
settings.register_profile("fuzz", max_examples=30000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# Fixtures shared across the test packages (tests/fixtures/).
pytest_plugins = ["fixtures.stores", "fixtures.crawlers", "fixtures.redis_servers", "fixtures.webs"]
