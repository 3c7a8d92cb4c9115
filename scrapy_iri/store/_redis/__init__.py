"""The Redis backend (``IRI_STORE = "redis://host:port/db"``): one store shared by many processes.

Every process keeps a full image of the store in memory (the in-memory
backend's dictionaries), so a lookup (:meth:`~.EquivalenceStore.representative`)
never waits for Redis. The image and Redis meet in two directions, at most
once per ``sync_interval`` (0.5 s by default):

* **flush** (write-behind): the writes made since the last flush go to Redis
  in one Lua script call, atomically and at most once (a batch id guards
  against a retried call being applied twice). Rule records are *merged*,
  never overwritten: the batch carries how many supports and counterexamples
  this process added, and the script adds them to what other processes
  stored (after the same expiry :meth:`.RuleRecord.expire` applies), so a
  counterexample learned anywhere is never lost to a concurrent writer.
  Aliases and declared cases are last-writer-wins *by observation time*,
  not by flush order: a drop is a tombstone, a URL that answered for itself
  refuses older alias writes (``answered``), and a write older than what
  Redis holds is refused (the writer reads the entry back).
* **sync** (invalidation): every batch increments a version counter and
  appends what it touched (an alias source, a rule origin, a fan-in target)
  to a change log; a process asks for the changes since the version it knows
  and re-reads only those entries, in one pipelined round trip. When it fell
  too far behind (the log keeps the last ``changes_max`` entries) it reloads
  everything.

So something learned by one process serves the others within about two
sync intervals (its flush, then their sync), as long as they use the store
(each lookup checks whether a sync is due; the Scrapy integration also runs
one on a timer).

Faults: a Redis error during a flush or a sync keeps the writes pending (none
is dropped) and lookups go on from the image; attempts are retried with
exponential backoff (:class:`Outage`). When Redis comes back empty (it was
restarted without persistence: the ``epoch`` key is gone), every process
publishes its image again with set-if-absent semantics, so what was learned
is not forgotten and nothing is counted twice.

Key layout, under a namespace ``NS`` (``scrapy-iri:<spider>`` in a crawl):

=================================  ======  ==========================================
key                                type    content
=================================  ======  ==========================================
``NS:store:epoch``                 string  random id of this store's life (gone = data lost)
``NS:store:version``               string  batches' change counter
``NS:store:changes``               list    ``a<source>``, ``c<case key>``, ``r<origin>``, ``f<target>``: what
                                           each version touched
``NS:store:aliases``               hash    source -> JSON ``[target, status, time]`` (target ``""``: a tombstone)
``NS:store:answered``              zset    URLs that answered for themselves, scored with the time
``NS:store:cases``                 hash    case key -> JSON ``[url, time]`` (url ``""``: a tombstone)
``NS:store:policy``                string  JSON learning policy a crawl recorded (``open_store`` judges with it)
``NS:store:origins``               set     origins that have rule records
``NS:store:rules:<origin>``        hash    ``"kind scope"`` -> JSON ``[support, against, first_seen,
                                           last_support, last_against, example, counterexample]``
``NS:store:fanins``                set     targets with fan-in records
``NS:store:fanin:<target>``        set     sources redirected to target (at most the sink cap)
``NS:store:evidence``              list    JSON ``[time, url, status, target, [context], note, location]``,
                                           newest last
``NS:store:deferreds``             set     rules with deferred URLs
``NS:store:deferred:<rule>``       set     URLs merged away by the rule
``NS:store:batch:<id>``            string  marks a batch as applied (expires after 10 minutes)
``NS:store:taken:<id>``            string  the answer of one take of deferred URLs (10 minutes)
=================================  ======  ==========================================

The seen set of the dupefilter (``NS:seen``, see
:mod:`scrapy_iri.scrapy._redis_seen`) shares the namespace. Only a standalone
Redis (or a primary) is supported: the scripts address keys they build from
the namespace, which Redis Cluster does not allow.

Modules: :mod:`.connection` (client, outages, key names), :mod:`.scripts`
(the Lua scripts), :mod:`.codec` (JSON encodings), :mod:`.journal` (the
pending batch), :mod:`.sync` (load, refresh, republish) and :mod:`.store`
(:class:`RedisStore`). This package does not import Scrapy.
"""

from __future__ import annotations

from .connection import (
    DEFAULT_NAMESPACE,
    DEFAULT_PARAMS,
    IGNORED_PARAMS,
    REDIS_SCHEMES,
    STORE_OPTIONS,
    UNAVAILABLE,
    Outage,
    RedisKeys,
    RedisUnavailable,
    check_reachable,
    client_from_url,
    redact,
    split_uri,
)
from .store import RedisStore

__all__ = [
    "DEFAULT_NAMESPACE",
    "DEFAULT_PARAMS",
    "IGNORED_PARAMS",
    "REDIS_SCHEMES",
    "STORE_OPTIONS",
    "UNAVAILABLE",
    "Outage",
    "RedisKeys",
    "RedisStore",
    "RedisUnavailable",
    "check_reachable",
    "client_from_url",
    "redact",
    "split_uri",
]
