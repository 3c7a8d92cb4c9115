"""The session's user environment (:mod:`userenv`), shared by the install tests."""

from __future__ import annotations

import pytest

from userenv import UserEnv, make_user_env


@pytest.fixture(scope="session")
def user_env(tmp_path_factory: pytest.TempPathFactory) -> UserEnv:
    return make_user_env(tmp_path_factory)
