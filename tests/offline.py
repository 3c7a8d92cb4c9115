"""Telling a build that could not reach PyPI from a build that is broken."""

from __future__ import annotations

import pytest

#: what pip prints when it cannot download the build backend: the only reason a wheel test skips
OFFLINE_SIGNS = (
    "No matching distribution found",
    "Could not find a version that satisfies",
    "NewConnectionError",
    "Temporary failure in name resolution",
    "Network is unreachable",
)


def build_failed(what: str, stderr: str) -> None:
    """Skip when pip could not reach PyPI; fail for any other reason (a broken build is a failure)."""
    message = f"{what}: {stderr[-500:]}"
    if any(sign in stderr for sign in OFFLINE_SIGNS):
        pytest.skip(f"no access to PyPI: {message}")
    pytest.fail(message)
