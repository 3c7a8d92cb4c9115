"""The layout of the shared seen set in Redis: small hashes that split as they fill.

A request's key (12 bytes of its fingerprint, uniformly distributed) lives
as a field of one small hash, a *bucket*: ``HSETNX NS:seen:t:<d>:<id> <key
without its first byte> ""``, where ``id`` is the key's first ``d`` bits.
Buckets start at ``d = 8`` (256 of them). When a bucket reaches
:data:`SPLIT_AT` fields it splits in two by the key's next bit and leaves a
marker (its only field becomes ``"" -> "s"``); a lookup walks from depth 8 to
the first bucket that is not a marker. One Lua script does the walk, the
``HSETNX`` and any split, so an answer is exact and atomic, in one round trip.

Every bucket stays under Redis's ``hash-max-listpack-entries`` (128 by
default; the server must not be configured lower than :data:`SPLIT_AT`), so
Redis keeps it as a listpack: about 15 bytes a key plus about 100 bytes a
bucket (the key name, the keyspace entry), shared by 60 to 120 keys, at any
crawl size up to 1.5 x 10^9 requests (depth 24; beyond, the deepest buckets
grow into hash tables: still exact, larger). Measured figures are in
``docs/redis.md``.

The script builds the names of the keys it touches, so it needs a standalone
Redis (or a primary); Redis Cluster is refused at start
(:func:`.connection.refuse_cluster`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

#: what ``NS:seen:layout`` holds for this layout (and its parameters)
LAYOUT = "hsetnx-tree"
#: the depth (bits of the key) of the first buckets
ROOT_BITS = 8
#: fields at which a bucket splits (below ``hash-max-listpack-entries``, 128 by default)
SPLIT_AT = 120
#: the deepest buckets (bits of the key a bucket id can hold)
MAX_BITS = 24

#: ARGV: bucket prefix, key, root depth, split size. Returns 1 if the key is new, 0 if seen.
_ADD = """
local prefix, key = ARGV[1], ARGV[2]
local depth, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local b1, b2, b3 = string.byte(key, 1, 3)
local top = b1 * 65536 + b2 * 256 + b3
local name, id
while true do
  id = math.floor(top / 2 ^ (24 - depth))
  name = prefix .. depth .. ':' .. string.format('%x', id)
  if depth >= 24 or not redis.call('HGET', name, '') then break end
  depth = depth + 1
end
local added = redis.call('HSETNX', name, string.sub(key, 2), '')
if added == 1 and depth < 24 and redis.call('HLEN', name) >= limit then
  local fields = redis.call('HKEYS', name)
  local at, shift = math.floor(depth / 8), 7 - depth % 8
  local halves = {{}, {}}
  for _, field in ipairs(fields) do
    local half = halves[math.floor(string.byte(field, at) / 2 ^ shift) % 2 + 1]
    half[#half + 1] = field
    half[#half + 1] = ''
  end
  redis.call('DEL', name)
  redis.call('HSET', name, '', 's')
  for bit = 0, 1 do
    local half = halves[bit + 1]
    if #half > 0 then
      redis.call('HSET', prefix .. (depth + 1) .. ':' .. string.format('%x', id * 2 + bit), unpack(half))
    end
  end
end
return added
"""


class SeenTree:
    """The bucketed seen set of one namespace: ``add`` (one round trip), bulk writes, listing, deleting."""

    def __init__(self, client: Any, seen_key: str) -> None:
        self.client = client
        self.prefix = seen_key + ":t:"
        self.layout_key = seen_key + ":layout"
        self.layout = f"{LAYOUT} {ROOT_BITS} {SPLIT_AT}"
        self.script = client.register_script(_ADD)

    def args(self, key: bytes) -> list[Any]:
        return [self.prefix, key, ROOT_BITS, SPLIT_AT]

    def add_on(self, conn: Any, key: bytes) -> int:
        """Add ``key`` on a raw connection (``EVALSHA``; ``EVAL`` when the server lost its script cache)."""
        import redis

        try:
            conn.send_command("EVALSHA", self.script.sha, 0, *self.args(key))
            return int(conn.read_response())
        except redis.exceptions.NoScriptError:  # the script did not run: sending it is no retry
            conn.send_command("EVAL", _ADD, 0, *self.args(key))
            return int(conn.read_response())

    def add_many(self, keys: Iterable[bytes], chunk: int = 2000) -> list[int]:
        """Add keys in pipelined batches; each answer says whether its key was new."""
        answers: list[int] = []
        batch: list[bytes] = []
        for key in keys:
            batch.append(key)
            if len(batch) >= chunk:
                answers += self._add_batch(batch)
                batch = []
        if batch:
            answers += self._add_batch(batch)
        return answers

    def _add_batch(self, keys: list[bytes]) -> list[int]:
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            self.script(keys=[], args=self.args(key), client=pipe)
        return [int(a) for a in pipe.execute()]

    def buckets(self) -> Iterator[bytes]:
        """The names of every bucket and marker."""
        return self.client.scan_iter(match=_glob_escape(self.prefix) + "*", count=1000)

    def keys(self) -> Iterator[bytes]:
        """Every key in the set (for tests and tools: reads the whole set)."""
        for name in self.buckets():
            head, _, bucket = name.rpartition(b":")
            depth = int(head.rpartition(b":")[2])
            first = (int(bucket, 16) >> (depth - ROOT_BITS)).to_bytes(1, "big")
            for field in self.client.hkeys(name):
                if field:
                    yield first + field

    def delete(self) -> None:
        names: list[bytes] = []
        for name in self.buckets():
            names.append(name)
            if len(names) >= 1000:
                self.client.unlink(*names)
                names = []
        if names:
            self.client.unlink(*names)


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
