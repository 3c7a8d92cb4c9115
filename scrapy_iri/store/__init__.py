"""The protocol rung's equivalence store: evidence, exact aliases and learned rules.

``open_store(uri)`` opens a backend by URI:

* ``memory:`` -- in memory, gone at exit;
* ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db`` -- a
  SQLite file (the SQLAlchemy convention: the path follows the third slash);
* ``redis://host:port/db?namespace=NS`` -- Redis, shared by many processes
  (``rediss://``, ``unix://`` too; see :mod:`.redis`).

The core's ``canonicalize(url, "protocol", store=s)`` and
``equivalent(a, b, "protocol", store=s)`` use :meth:`EquivalenceStore.representative`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._base import EquivalenceStore, Explanation, Outcome, Resolution, Step, StoreError
from ._evidence import Alias, Evidence, context_flags
from ._memory import MemoryStore
from ._rules import KINDS, LearningPolicy, RuleKey, RuleRecord, RuleStatus

__all__ = [
    "KINDS",
    "Alias",
    "EquivalenceStore",
    "Evidence",
    "Explanation",
    "LearningPolicy",
    "MemoryStore",
    "Outcome",
    "Resolution",
    "RuleKey",
    "RuleRecord",
    "RuleStatus",
    "Step",
    "StoreError",
    "context_flags",
    "open_store",
    "sqlite_path",
]


def sqlite_path(uri: str) -> Path:
    """The file a ``sqlite:`` URI names (``sqlite:///rel.db``, ``sqlite:////abs.db``, ``sqlite:rel.db``)."""
    if uri.startswith("sqlite:///"):
        rest = uri[len("sqlite:///") :]
    elif uri.startswith("sqlite://"):
        raise StoreError(f"{uri!r}: a sqlite URI has no host: write sqlite:///relative or sqlite:////absolute")
    else:
        rest = uri[len("sqlite:") :]
    if not rest:
        raise StoreError(f"{uri!r}: no file name")
    return Path(os.path.expanduser(rest))


def open_store(
    uri: str,
    *,
    policy: LearningPolicy | None = None,
    clock: Callable[[], float] | None = None,
    create: bool = True,
    **options: Any,
) -> EquivalenceStore:
    """Open the store at ``uri``; ``options`` go to the backend (SQLite: ``batch_size``, ``flush_interval``).

    ``create=False`` raises :class:`StoreError` instead of creating a missing file.
    With a ``policy`` and ``create=True`` (a crawl's store), the policy is
    recorded in the store; without one, the store is judged with the policy
    recorded there (the crawl's K, TTL, sink fan-in, chain limit), else the defaults.
    """
    store = _open(uri, policy=policy, clock=clock, create=create, **options)
    if policy is None:
        recorded = store._load_policy()
        if recorded is not None:
            store.policy = recorded
    elif create:
        store._save_policy(policy)
    return store


def _open(
    uri: str, *, policy: LearningPolicy | None, clock: Callable[[], float] | None, create: bool, **options: Any
) -> EquivalenceStore:
    kwargs: dict[str, Any] = {"policy": policy}
    if clock is not None:
        kwargs["clock"] = clock
    scheme = uri.partition(":")[0].lower()
    if scheme == "memory":
        return MemoryStore(**kwargs)
    if scheme == "sqlite":
        from ._sqlite import SQLiteStore

        return SQLiteStore(sqlite_path(uri), create=create, **kwargs, **options)
    if scheme in ("redis", "rediss", "unix"):  # Redis hook (issue 6)
        from ._redis import RedisStore

        return RedisStore.from_uri(uri, **kwargs, **options)
    raise StoreError(f"{uri!r}: unknown store URI: use 'sqlite:///path' or 'memory:'")
