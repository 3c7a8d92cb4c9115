"""The Redis store: the learner over a :class:`.storage.RedisStorage`."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from .._learner import EquivalenceStore
from .._rules import LearningPolicy
from .connection import DEFAULT_NAMESPACE, Outage, RedisKeys, client_from_url, split_uri
from .storage import RedisStorage


class RedisStore(EquivalenceStore):
    """A store in Redis, shared by every process that opens the same namespace.

    ``client`` is a ``redis.Redis`` (see :func:`.connection.client_from_url`)
    or a URL; ``options`` are :class:`.storage.RedisStorage`'s.
    """

    storage: RedisStorage

    def __init__(
        self,
        client: Any,
        namespace: str = DEFAULT_NAMESPACE,
        policy: LearningPolicy | None = None,
        *,
        clock: Callable[[], float] = time.time,
        **options: Any,
    ) -> None:
        if isinstance(client, str):
            client = client_from_url(client)
        storage = RedisStorage(client, namespace, clock=clock, **options)
        super().__init__(storage, policy, clock=clock)

    @classmethod
    def from_uri(cls, uri: str, *, params: Mapping[str, Any] | None = None, **kwargs: Any) -> RedisStore:
        """Open ``redis://host:port/db?namespace=NS&sync_interval=S`` (other query options go to the client)."""
        url, options = split_uri(uri)
        if "namespace" in options:
            kwargs.setdefault("namespace", options["namespace"])
        if "sync_interval" in options:
            kwargs.setdefault("sync_interval", float(options["sync_interval"]))
        if "accept_rollback_risk" in options:
            kwargs.setdefault("accept_rollback_risk", options["accept_rollback_risk"].lower() in ("1", "true", "yes"))
        return cls(client_from_url(url, params), **kwargs)

    @property
    def client(self) -> Any:
        return self.storage.client

    @property
    def keys(self) -> RedisKeys:
        return self.storage.keys

    @property
    def outage(self) -> Outage:
        return self.storage.outage

    @property
    def counters(self) -> dict[str, int]:
        """The store's traffic: batches, reads, syncs, reloads, rollbacks..."""
        return self.storage.counters

    @property
    def sync_interval(self) -> float:
        return self.storage.sync_interval

    def maintain(self, *, force: bool = False) -> bool:
        """Flush and sync if an interval has passed (or ``force``); False when Redis could not be reached."""
        return self.storage.maintain(force=force)

    def clear(self) -> None:
        """Delete the whole store from Redis and from this process."""
        self.storage.clear()
