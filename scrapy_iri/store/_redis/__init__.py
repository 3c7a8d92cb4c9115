"""The Redis backend (``IRI_STORE = "redis://host:port/db"``): one store shared by many processes.

A process reads the store on demand: an origin's rules when it is first
used (those of the origins used last are kept, ``rule_cache`` records),
the sinks of its cap once (a sorted set scored by number of sources), an
alias and its target's in one script call, the case known for a path in
one pipelined pair of ``HGET``, a fan-in record in one ``SMEMBERS``, each
behind a bounded LRU cache that remembers misses too (``cache_size``
aliases, 65,536 by default). Opening reads three keys, whatever the size of
the store; per-process memory is bounded by the caches. While Redis is
unreachable a read answers "unknown", which merges nothing.

The cache and Redis meet in two directions, at most once per
``sync_interval`` (0.5 s by default):

* **flush** (write-behind): the writes made since the last flush go to Redis
  in one Lua script call, atomically and at most once (a batch id guards
  against a retried call being applied twice). Rule records are *merged*,
  never overwritten blindly: the batch carries how many supports and counterexamples
  this process added, and the script adds them to what other processes
  stored (after the same expiry :meth:`.RuleRecord.expire` applies), so a
  counterexample learned anywhere is never lost to a concurrent writer.
  Only when the store is as the process's own last batch left it (nobody
  wrote since, Redis did not go back) are its records stored as it holds
  them: they are the merge.
  Aliases and declared cases are last-writer-wins *by observation time*,
  not by flush order: a drop is a tombstone, a URL that answered for itself
  refuses older alias writes (``answered``), and a write older than what
  Redis holds is refused (the writer reads the entry back).
* **sync** (invalidation): every batch increments a version counter and
  appends what it touched (an alias source, a case key, a rule origin, a
  fan-in target) to a change log; a process asks for the changes since the
  version it knows, forgets those cache entries and reads again the changed
  rules and sinks it holds, in one pipelined round trip. When it fell too
  far behind (the log keeps the last ``changes_max`` entries) it empties its
  caches (what it needs is read again).

Faults: a Redis error during a flush or a sync keeps the writes pending (none
is dropped) and lookups go on from the caches; attempts are retried with
exponential backoff (:class:`Outage`). When Redis comes back empty (the
``epoch`` key is gone), every process writes back what it holds (rules,
sinks, its last ``rollback_memory`` alias writes and its cached aliases),
set-if-absent, so nothing is counted twice. When Redis comes back *older*
(a restart from an earlier RDB snapshot, a restored backup: the marker of
the process's last batch is gone, the version went down, or the newest
mark of the machine's ledger is gone), the process says so in an error and
writes back its rules (counts merged by maximum), its last alias writes and
ends, the URLs it deferred, and what the ledger kept of every process of the
machine, those that exited included (see :mod:`.ledger`); then it changes
the history mark (``NS:store:history``), so every other process, even one
that wrote nothing lately, repairs and empties its caches at its next sync.
A process opening the store checks the ledger's newest mark the same way.
A Redis that persists by RDB snapshots only is refused at open unless
``accept_rollback_risk``.

Key layout (version 2, in ``NS:store:layout``), under a namespace ``NS``
(``scrapy-iri:<spider>`` in a crawl):

=================================  ======  ==========================================
key                                type    content
=================================  ======  ==========================================
``NS:store:layout``                string  the layout version (a store of layout 1 is indexed once at open)
``NS:store:history``               string  changed when a process finds Redis went back in time
``NS:store:epoch``                 string  random id of this store's life (gone = data lost)
``NS:store:version``               string  batches' change counter
``NS:store:changes``               list    ``a<source>``, ``c<case key>``, ``r<origin>``, ``f<target>``: what
                                           each version touched
``NS:store:aliases``               hash    source -> JSON ``[target, status, time]`` (target ``""``: a tombstone)
``NS:store:casealiases``           hash    case key -> JSON ``{source: [target, time]}``: the case-only aliases
``NS:store:aliascase``             hash    source -> case key, for each case-only alias
``NS:store:answered``              zset    URLs that answered for themselves, scored with the time
``NS:store:cases``                 hash    case key -> JSON ``[url, time]`` (url ``""``: a tombstone)
``NS:store:policy``                string  JSON learning policy a crawl recorded (``open_store`` judges with it)
``NS:store:origins``               set     origins that have rule records
``NS:store:rules:<origin>``        hash    ``"kind scope"`` -> JSON array of the rule record's fields
``NS:store:fanins``                set     targets with fan-in records
``NS:store:fanin:<target>``        set     sources redirected to target (at most the sink cap)
``NS:store:sinks``                 zset    targets with two sources or more, scored with their number
``NS:store:evidence``              list    JSON ``[time, url, status, target, [context], note, location]``,
                                           newest last (at most ``evidence_max``, none more than
                                           ``evidence_max_age`` older than the newest ever held)
``NS:store:evidence_newest``       string  the time of the newest evidence entry the store ever held
``NS:store:deferreds``             set     rules with deferred URLs
``NS:store:deferred:<rule>``       set     URLs merged away by the rule
``NS:store:batch:<id>``            string  marks a batch as applied (expires after 10 minutes)
``NS:store:taken:<id>``            string  the answer of one take of deferred URLs (10 minutes)
``NS:store:marks``                 zset    the last 10,000 batch ids, scored with the version each left
``NS:store:ledgers``               hash    ledger id -> the version its newest batch left
``NS:store:filter``                string  the filter of alias sources (Bloom filter bits, OR-ed at close)
``NS:store:filterstate``           string  JSON ``[capacity, keys, version]`` of the filter
=================================  ======  ==========================================

The seen set of the dupefilter (``NS:seen``, see :mod:`.seen`) shares the
namespace. Only a standalone Redis (or a primary) is supported: the scripts
address keys they build from the namespace, which Redis Cluster cannot
route; a cluster is refused at open.

Modules: :mod:`.connection` (client, outages, key names), :mod:`.scripts`
(the Lua scripts), :mod:`.codec` (JSON encodings), :mod:`.journal` (a
flush's changeset as batches, what a rollback would lose), :mod:`.ledger` (what was ended, kept beside the crawl's
state), :mod:`.sync` (the resident image and following Redis),
:mod:`.storage` (:class:`RedisStorage`) and :mod:`.store` (:class:`RedisStore`,
the learner over it). This package does not import Scrapy.
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
from .storage import RedisStorage
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
    "RedisStorage",
    "RedisStore",
    "RedisUnavailable",
    "check_reachable",
    "client_from_url",
    "redact",
    "split_uri",
]
