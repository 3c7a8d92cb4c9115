"""Fixtures of the protocol-rung tests: stores of every backend, a clock the tests move."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from scrapy_iri.store import EquivalenceStore, LearningPolicy, open_store


class Clock:
    """A settable clock: ``clock()`` is now, ``clock.advance(seconds)`` moves it."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["memory", "sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(backend: str, tmp_path: Path, clock: Clock) -> Iterator[Callable[..., EquivalenceStore]]:
    """``make_store(**policy)``: a fresh store of the parametrized backend on the test clock."""
    opened: list[EquivalenceStore] = []

    def make(**policy: object) -> EquivalenceStore:
        uri = "memory:" if backend == "memory" else f"sqlite:///{tmp_path / f'store-{len(opened)}.db'}"
        store = open_store(uri, policy=LearningPolicy(**policy), clock=clock)  # type: ignore[arg-type]
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: Callable[..., EquivalenceStore]) -> EquivalenceStore:
    return make_store()
