"""Redis for crawls shared by many Scrapy processes: the seen set, the store's connection, faults.

Enabled by ``IRI_STORE = "redis://host:port/db"`` (``rediss://`` and
``unix://`` too; ``"redis:"`` alone takes the server from scrapy-redis's
``REDIS_URL`` / ``REDIS_HOST`` / ``REDIS_PORT`` / ``REDIS_DB``), and always when
scrapy-redis's scheduler builds the dupefilter (``from_spider``). Then:

* :class:`RedisSeenSet` is the dupefilter's seen set, exact and compact:
  the 12-byte key of a request is a field of a small hash picked by its first
  bits (``HSETNX NS:seen:t:<depth>:<bucket> <rest of the key> ""``, in a Lua
  script that splits a bucket in two when it fills), which answers whether a
  request was seen by *any* process, atomically, in one round trip. Buckets
  stay small enough for Redis to keep them as listpacks: under 20 bytes of
  Redis memory a request at any crawl size (see
  :mod:`scrapy_iri.store._redis.seen`). It is the only
  round trip of a request, and only for keys this process does not know yet (a
  local :class:`~.seen.SeenSet` answers the others, up to
  ``IRI_REDIS_LOCAL_MAX`` keys: the Redis set only grows, so a key known here
  is seen everywhere). The answer cannot be batched: the scheduler needs it
  synchronously to enqueue or drop the request. A seen set written as one
  Redis set (``NS:seen``, the earlier layout) is moved into buckets at open.
* the equivalence store is a :class:`~scrapy_iri.store._redis.RedisStore` on
  the same connection and namespace.

Faults. Redis unreachable when the crawl opens: :class:`RedisUnavailable`
is raised from the component's ``from_crawler`` (the crawl does not start;
the message names the server and the setting it came from). Redis lost
mid-crawl: requests that cannot be checked are let through (fetched rather
than lost: at worst fetched twice, by two processes), remembered locally and
counted in ``iri/redis/unchecked``; Redis is tried again with exponential
backoff, and when it answers their keys are written to it (``replayed``).
If it stays unreachable for ``IRI_REDIS_RETRY_TIMEOUT`` seconds the spider
is closed with the reason ``iri_redis_unavailable`` and an error that says
what is left and how to resume it.

Modules: :mod:`.redis_config` (the settings, :class:`RedisConfig`),
:mod:`.redis_crawl` (the crawl's connection, timers and outages,
:class:`CrawlRedis`) and this one (:class:`RedisSeenSet`).

Settings (defaults in :data:`SETTINGS`): ``IRI_REDIS_NAMESPACE``
(``"scrapy-iri:%(spider)s"``), ``IRI_REDIS_PERSIST`` and
``IRI_REDIS_FLUSH_ON_START`` (default: scrapy-redis's ``SCHEDULER_PERSIST``
and ``SCHEDULER_FLUSH_ON_START``, both False), ``IRI_REDIS_RETRY_TIMEOUT``
(60 s), ``IRI_REDIS_SYNC_INTERVAL`` (0.5 s), ``IRI_REDIS_LOCAL_MAX``
(:data:`DEFAULT_LOCAL_MAX`), and scrapy-redis's ``REDIS_PARAMS``
(client options: password, timeouts, TLS...). See ``docs/redis.md``.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.utils.job import job_dir

from scrapy_iri.store._redis import RedisUnavailable
from scrapy_iri.store._redis.connection import refuse_cluster
from scrapy_iri.store._redis.seen import SeenTree

from ._redis_config import SETTINGS, RedisConfig, is_redis_uri
from ._redis_crawl import (
    CLOSE_REASON,
    HEARTBEAT,
    PROBE_TTL_MS,
    STORE_PENDING_FILE,
    CrawlRedis,
)
from ._seen import KEY_SIZE, SEEN_ELSEWHERE, SeenSet
from scrapy_iri.errors import IRISettingsError

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

__all__ = [
    "CLOSE_REASON",
    "SEEN_ELSEWHERE",
    "SETTINGS",
    "RedisConfig",
    "RedisSeenSet",
    "RedisUnavailable",
    "CrawlRedis",
    "HEARTBEAT",
    "PROBE_TTL_MS",
    "STORE_PENDING_FILE",
    "is_redis_uri",
]

logger = logging.getLogger(__name__)


#: JOBDIR file of keys let through during an outage and not yet written to Redis
UNCHECKED_FILE = "iri-redis-unchecked.bin"
LIVE_TTL = 30.0
#: keys written per pipelined round trip when replaying
REPLAY_CHUNK = 2000

# -- the seen set ------------------------------------------------------------------------

#: keys a process remembers itself (25-32 bytes each); beyond, Redis answers (one round trip each)
DEFAULT_LOCAL_MAX = SETTINGS["IRI_REDIS_LOCAL_MAX"]


#: open: prune dead processes, flush if asked and alone, register. KEYS: live, seen, seen epoch.
#: ARGV: token, now, expiry, flush (0/1), new epoch. Returns {other live processes, flushed}.
_OPEN = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
local others = redis.call('ZCARD', KEYS[1])
local flushed = 0
if ARGV[4] == '1' and others == 0 then
  redis.call('DEL', KEYS[2]); redis.call('SET', KEYS[3], ARGV[5]); flushed = 1
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('SET', KEYS[3], ARGV[5], 'NX')
return {others, flushed}
"""

#: close: unregister; the last process out deletes the seen set unless persisting.
#: KEYS: live, seen, seen epoch. ARGV: token, now, persist (0/1). Returns {still live, deleted}.
_CLOSE = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
local left = redis.call('ZCARD', KEYS[1])
if left == 0 and ARGV[3] == '0' then
  redis.call('DEL', KEYS[2], KEYS[3]); return {0, 1}
end
return {left, 0}
"""


class RedisSeenSet:
    """The dupefilter's seen set in Redis, with a local cache; a drop-in for :class:`~.seen.SeenSet`.

    ``add(key, tag)`` returns ``None`` for a new key, the tag for a key this
    process recorded, and :data:`SEEN_ELSEWHERE` for one only another process
    recorded. Keys are the first 12 bytes of the request fingerprint.

    ``managed`` (Scrapy's scheduler): this set registers the process in
    ``NS:live`` and applies ``IRI_REDIS_FLUSH_ON_START`` (only when no other
    process of the namespace is running) and ``IRI_REDIS_PERSIST`` (the last
    process to close deletes the set unless persisting). Unmanaged
    (scrapy-redis's scheduler): the scheduler decides, through :meth:`clear`.
    """

    def __init__(
        self,
        state: CrawlRedis,
        local: SeenSet,
        *,
        managed: bool = True,
        local_max: int = DEFAULT_LOCAL_MAX,
    ) -> None:
        self.state = state
        self.client = state.client
        self.keys = state.keys
        self.local = local
        self.managed = managed
        self.local_max = local_max
        self._full_logged = False
        self.tree = SeenTree(self.client, self.keys.seen)
        self.stats = state.crawler.stats
        self.token = uuid.uuid4().hex
        self.unchecked: list[bytes] = []
        self.closed = False
        self._conn: Any = None
        self._jobdir = job_dir(state.crawler.settings)
        self._check_layout()
        if managed:
            self._register()
        self._replay_saved()

    # what the dupefilter uses

    def add(self, key: bytes, tag: int = 0) -> int | None:
        found = self.local.get(key)
        if found is not None:
            self.stats.inc_value("iri/redis/local_hits")
            return found
        key = key[:KEY_SIZE]
        if not self.state.outage.down:  # during an outage only the timer tries Redis (see CrawlRedis)
            try:
                added = self._check(key)
            except Exception as exc:
                self.state.failed(exc)
            else:
                self.stats.inc_value("iri/redis/sadd")
                self._remember(key, tag)
                if added:
                    return None
                self.stats.inc_value("iri/redis/seen_elsewhere")
                return SEEN_ELSEWHERE
        # Redis is unreachable: fetch rather than lose.
        self.stats.inc_value("iri/redis/unchecked")
        if not self.managed:
            # scrapy-redis's scheduler: its queue is in Redis too, so the request it is about to push
            # will most likely not get there. Recording the key (here or, later, in Redis) would then
            # mark as seen a request nobody has: the key is not kept, a later copy is let through again.
            return None
        # Scrapy's scheduler: the request is queued in this process; remember to tell Redis later.
        self.local.add(key, tag)  # beyond local_max too: Redis cannot answer for it now
        self.unchecked.append(key)
        return None

    def _remember(self, key: bytes, tag: int) -> None:
        """Keep ``key`` locally while the local set is under ``local_max`` (Redis answers for the rest)."""
        if len(self.local) < self.local_max:
            self.local.add(key, tag)
        elif not self._full_logged:
            self._full_logged = True
            logger.info(
                "The local seen set holds %(n)d requests (IRI_REDIS_LOCAL_MAX): Redis answers for new ones",
                {"n": len(self.local)},
            )

    def _check(self, key: bytes) -> int:
        """The seen set's ``HSETNX`` script on this set's own connection, never retried.

        Retrying could turn "added" into "seen": if the reply of a first check
        that did add the key were lost, the second would answer 0 and the
        request would be dropped while nobody fetches it. An error here lets
        the request through instead (see :meth:`add`). The connection is
        private (no pool bookkeeping per request: about half of redis-py's
        per-command cost).
        """
        conn = self._conn
        if conn is None:
            pool = self.client.connection_pool
            conn = self._conn = pool.connection_class(**pool.connection_kwargs)
        try:
            return self.tree.add_on(conn, key)
        except BaseException:
            conn.disconnect()
            raise

    def drop_connection(self) -> None:
        """Close the private connection (it opens again on its next use): after an outage it may be dead."""
        if self._conn is not None:
            self._conn.disconnect()

    def get(self, key: bytes) -> int | None:
        return self.local.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self.local

    def __len__(self) -> int:
        return len(self.local)

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        return iter(self.local)

    def load(self, data: bytes) -> int:
        return self.local.load(data)

    @property
    def nbytes(self) -> int:
        return self.local.nbytes

    def clear(self) -> None:
        """Delete the shared set and forget the local one (scrapy-redis's scheduler flush)."""
        self._delete_buckets()
        self.client.set(self.keys.seen_epoch, uuid.uuid4().hex)
        self.local = SeenSet()
        self.unchecked.clear()

    # life

    def _check_layout(self) -> None:
        """Check the layout the other processes use; move a seen set of the earlier layout into buckets."""
        refuse_cluster(self.client, self.state.config.describe())
        kind = self.client.type(self.keys.seen)
        kind = kind.decode() if isinstance(kind, bytes) else kind
        if kind not in ("none", "set"):
            raise IRISettingsError(
                f"Redis key {self.keys.seen!r} holds a {kind}, not a seen set: choose another IRI_REDIS_NAMESPACE"
            )
        layout_key = self.tree.layout_key
        self.client.set(layout_key, self.tree.layout, nx=True)
        stored = self.client.get(layout_key)
        stored = stored.decode() if isinstance(stored, bytes) else str(stored)
        if stored != self.tree.layout:
            raise IRISettingsError(
                f"Redis key {layout_key!r} says {stored!r}: a seen set this version of scrapy-iri cannot read"
                f" (it writes {self.tree.layout!r}); choose another IRI_REDIS_NAMESPACE"
            )
        if kind == "set":
            self._migrate()

    def _migrate(self) -> None:
        """Move the keys of a seen set kept as one Redis set (the earlier layout) into the buckets."""
        moved = 0
        batch: list[bytes] = []
        for member in self.client.sscan_iter(self.keys.seen, count=REPLAY_CHUNK):
            batch.append(member[:KEY_SIZE])
            if len(batch) >= REPLAY_CHUNK:
                moved += len(self.tree.add_many(batch))
                batch = []
        moved += len(self.tree.add_many(batch))
        self.client.delete(self.keys.seen)
        logger.warning(
            "Moved the seen set %(key)s (%(n)d requests in one Redis set, the earlier layout) into small hashes",
            {"key": self.keys.seen, "n": moved},
        )

    def _delete_buckets(self) -> None:
        self.tree.delete()
        self.client.delete(self.keys.seen)

    def _register(self) -> None:
        config = self.state.config
        now = time.time()
        others, flushed = self.client.eval(
            _OPEN,
            3,
            self.keys.live,
            self.keys.seen,
            self.keys.seen_epoch,
            self.token,
            now,
            now + LIVE_TTL,
            int(config.flush_on_start),
            uuid.uuid4().hex,
        )
        if flushed:
            self._delete_buckets()
            logger.info("Flushed the seen set %(key)s (IRI_REDIS_FLUSH_ON_START)", {"key": self.keys.seen})
        elif config.flush_on_start and others:
            logger.info(
                "Not flushing %(key)s: %(n)d other processes of this crawl are running",
                {"key": self.keys.seen, "n": others},
            )
        if others:
            logger.info(
                "Sharing the seen set %(key)s with %(n)d other processes", {"key": self.keys.seen, "n": others}
            )

    def heartbeat(self) -> None:
        try:
            self.client.zadd(self.keys.live, {self.token: time.time() + LIVE_TTL})
        except Exception as exc:
            self.state.failed(exc)

    def catch_up(self) -> bool:
        """After an outage: publish again what Redis lost, then the keys let through unchecked."""
        try:
            if self.managed and not self.client.exists(self.keys.seen_epoch):
                self._republish()
            self.replay()
        except Exception as exc:
            self.state.failed(exc)
            return False
        return True

    def _republish(self) -> None:
        """Redis came back without the set (no persistence): write back every key this process knows."""
        logger.warning(
            "Redis lost the seen set %(key)s (restarted without persistence?): writing back the %(n)d"
            " requests this process knows",
            {"key": self.keys.seen, "n": len(self.local)},
        )
        self.tree.add_many(key for key, _ in self.local)
        self.client.set(self.keys.seen_epoch, uuid.uuid4().hex, nx=True)
        self.stats.inc_value("iri/redis/republished", len(self.local))

    def replay(self) -> None:
        """Write the keys let through during an outage; count those another process had recorded meanwhile."""
        while self.unchecked:
            chunk = self.unchecked[:REPLAY_CHUNK]
            added = self.tree.add_many(chunk)
            del self.unchecked[: len(chunk)]
            duplicates = sum(1 for a in added if not a)
            self.stats.inc_value("iri/redis/replayed", len(chunk))
            if duplicates:
                self.stats.inc_value("iri/redis/unchecked_duplicates", duplicates)
                logger.warning(
                    "%(n)d requests let through during the Redis outage had been recorded by another"
                    " process too (each may have been fetched twice)",
                    {"n": duplicates},
                )

    def _replay_saved(self) -> None:
        """Keys a previous run of this job (JOBDIR) could not write to Redis."""
        if not self._jobdir:
            return
        path = Path(self._jobdir, UNCHECKED_FILE)
        if not path.exists():
            return
        data = path.read_bytes()
        self.unchecked.extend(data[i : i + KEY_SIZE] for i in range(0, len(data) - len(data) % KEY_SIZE, KEY_SIZE))
        self.replay()
        path.unlink()
        logger.info("Wrote %(n)d requests saved by the previous run to Redis", {"n": len(data) // KEY_SIZE})

    def close(self, reason: str = "") -> None:
        if self.closed:
            return
        self.closed = True
        if self._conn is not None:
            self._conn.disconnect()
        try:
            self.replay()
        except Exception as exc:
            self._save_unchecked(exc)
        if not self.managed:
            return
        try:
            left, deleted = self.client.eval(
                _CLOSE, 3, self.keys.live, self.keys.seen, self.keys.seen_epoch,
                self.token, time.time(), int(self.state.config.persist),
            )  # fmt: skip
        except Exception as exc:
            logger.warning("Could not unregister from %(key)s: %(error)s", {"key": self.keys.live, "error": exc})
            return
        if deleted:
            self._delete_buckets()
            logger.info("Deleted the seen set %(key)s (last process out; IRI_REDIS_PERSIST is off)", {"key": self.keys.seen})

    def _save_unchecked(self, exc: BaseException) -> None:
        n = len(self.unchecked)
        if self._jobdir:
            path = Path(self._jobdir, UNCHECKED_FILE)
            with path.open("ab") as file:
                file.write(b"".join(self.unchecked))
            where = f"saved in {path} and written to Redis when the job resumes"
        else:
            where = "lost: other processes may fetch these requests again (set JOBDIR to keep them)"
        logger.error(
            "Redis unreachable at close (%(error)s): %(n)d requests this process let through unchecked are"
            " not recorded in the shared seen set; %(where)s",
            {"error": exc, "n": n, "where": where},
        )
        self.stats.set_value("iri/redis/unrecorded", n)
        self.unchecked.clear()
