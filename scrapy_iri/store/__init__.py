"""The protocol rung's equivalence store: evidence, exact aliases and learned rules.

``open_store(uri)`` opens a backend by URI, the one syntax of ``IRI_STORE``,
``scrapy-iri store --store`` and ``scrapy-iri graph --store``
(:func:`parse_store_uri` reads it; the scheme is case-insensitive):

* ``memory:`` -- in memory, gone at exit;
* ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db`` -- a
  SQLite file (the SQLAlchemy convention: the path follows the third slash;
  ``sqlite:relative.db`` too). No query string: ``sqlite:///x.db?mode=ro``
  is refused rather than read as a file name;
* ``redis://host:port/db?namespace=NS`` -- Redis, shared by many processes
  (``rediss://``, ``unix://`` too; see :mod:`.redis`).

A plain file path is not a store URI: it is refused everywhere with the
same error, which shows the ``sqlite:///`` URI to write instead.

The core's ``canonicalize(url, "protocol", store=s)`` and
``equivalent(a, b, "protocol", store=s)`` use :meth:`EquivalenceStore.representative`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._learner import EquivalenceStore, Outcome, Resolution, Step, StoreError
from ._report import Explanation
from ._evidence import Alias, Evidence, context_flags, stated_lifetime
from ._memory import MemoryStore
from ._observation import LearnSummary, Observation
from ._rules import KINDS, LearningPolicy, RuleKey, RuleRecord, RuleStatus

__all__ = [
    "KINDS",
    "Alias",
    "EquivalenceStore",
    "Evidence",
    "Explanation",
    "LearnSummary",
    "LearningPolicy",
    "MemoryStore",
    "Observation",
    "Outcome",
    "Resolution",
    "RuleKey",
    "RuleRecord",
    "RuleStatus",
    "Step",
    "StoreError",
    "context_flags",
    "stated_lifetime",
    "StoreURI",
    "open_store",
    "parse_store_uri",
    "spider_store_name",
    "sqlite_path",
]

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
REDIS_SCHEMES = frozenset({"redis", "rediss", "unix"})
EXAMPLES = "sqlite:///relative/path.db, sqlite:////absolute/path.db, memory: or redis://host:port/db"


@dataclass(frozen=True)
class StoreURI:
    """A parsed store URI: ``scheme`` lowercased; ``path`` for SQLite; ``uri`` as the backend takes it."""

    scheme: str
    uri: str
    path: Path | None = None


def parse_store_uri(uri: str) -> StoreURI:
    """Read a store URI; :class:`StoreError` names what is wrong and what to write instead."""
    if not isinstance(uri, str) or not uri.strip():
        raise StoreError(f"{uri!r} is not a store URI: use {EXAMPLES}")
    match = _SCHEME.match(uri)
    scheme = match.group(0)[:-1].lower() if match else ""
    if not match or len(scheme) == 1:  # a plain path (C:\\ included)
        hint = f"sqlite:///{uri}"  # sqlite:///rel.db, or sqlite:////abs.db for /abs.db
        raise StoreError(f"{uri!r} is not a store URI: for a SQLite file write {hint!r} (or use {EXAMPLES})")
    rest = uri[match.end() :]
    if scheme == "memory":
        if rest not in ("", "//"):
            raise StoreError(f"{uri!r}: a memory store takes nothing after 'memory:'")
        return StoreURI("memory", "memory:")
    if scheme == "sqlite":
        if "?" in rest or "#" in rest:
            raise StoreError(f"{uri!r}: sqlite store URIs take no query string or fragment (a file name cannot hold them)")
        if rest.startswith("///"):
            name = rest[3:]
        elif rest.startswith("//"):
            raise StoreError(f"{uri!r}: a sqlite URI has no host: write sqlite:///relative or sqlite:////absolute")
        else:
            name = rest
        if not name:
            raise StoreError(f"{uri!r}: no file name")
        return StoreURI("sqlite", f"sqlite:///{name}", Path(os.path.expanduser(name)))
    if scheme in REDIS_SCHEMES:
        return StoreURI(scheme, scheme + uri[len(scheme) :])
    raise StoreError(f"{uri!r}: unknown store URI scheme {scheme!r}: use {EXAMPLES}")


def spider_store_name(spider: str | None) -> str:
    """The file name of a spider's default store: never a path out of the store directory.

    Characters other than letters, digits, ``_``, ``-`` and inner dots are
    percent-encoded (``../x`` -> ``%2E%2E%2Fx.sqlite``).
    """
    name = spider or "default"
    safe = re.sub(r"[^A-Za-z0-9_.-]", lambda m: "".join(f"%{b:02X}" for b in m.group(0).encode()), name)
    if safe.startswith("."):
        safe = "%2E" + safe[1:]
    return f"{safe}.sqlite"


def sqlite_path(uri: str) -> Path:
    """The file a ``sqlite:`` URI names (``sqlite:///rel.db``, ``sqlite:////abs.db``, ``sqlite:rel.db``)."""
    parsed = parse_store_uri(uri)
    if parsed.path is None:
        raise StoreError(f"{uri!r} is not a sqlite store URI")
    return parsed.path


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
        store.adopt_recorded_policy()
    elif create:
        store.record_policy()
    return store


def _open(
    uri: str, *, policy: LearningPolicy | None, clock: Callable[[], float] | None, create: bool, **options: Any
) -> EquivalenceStore:
    kwargs: dict[str, Any] = {"policy": policy}
    if clock is not None:
        kwargs["clock"] = clock
    parsed = parse_store_uri(uri)
    if parsed.scheme == "memory":
        return MemoryStore(**kwargs)
    if parsed.scheme == "sqlite":
        from ._sqlite import SQLiteStore

        return SQLiteStore(parsed.path, create=create, **kwargs, **options)
    try:
        from ._redis import RedisStore
    except ImportError as exc:
        raise StoreError(f"{uri!r}: a Redis store needs the redis package: pip install 'scrapy-iri[redis]'") from exc
    return RedisStore.from_uri(parsed.uri, **kwargs, **options)
