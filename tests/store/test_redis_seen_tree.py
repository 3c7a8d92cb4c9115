"""The seen set's layout in a real redis-server: exact answers through splits, compact buckets."""

from __future__ import annotations

import random

import pytest

from scrapy_iri.store._redis.seen import MAX_BITS, ROOT_BITS, SPLIT_AT, SeenTree


@pytest.fixture
def tree(redis_server):
    return SeenTree(redis_server.client(), "t:seen")


@pytest.mark.parametrize("seed", [1, 2])
def test_answers_are_exact_through_splits(tree, redis_server, seed):
    """Random keys, with repeats and keys sharing long prefixes: every answer matches a Python set."""
    rng = random.Random(seed)
    keys = [rng.randbytes(12) for _ in range(40_000)]
    crowded = rng.randbytes(2)  # keys that share 16 bits: buckets split deep
    keys += [crowded + rng.randbytes(10) for _ in range(3_000)]
    stream = keys + rng.sample(keys, 5_000)
    rng.shuffle(stream)
    expected, answers = set(), []
    for key in stream:
        answers.append(0 if key in expected else 1)
        expected.add(key)
    assert tree.add_many(stream, chunk=997) == answers
    client = redis_server.client()
    conn = client.connection_pool.get_connection()
    try:
        assert [tree.add_on(conn, key) for key in keys[:500]] == [0] * 500
        fresh = rng.randbytes(12)
        assert tree.add_on(conn, fresh) == 1 and tree.add_on(conn, fresh) == 0
        expected.add(fresh)
    finally:
        client.connection_pool.release(conn)
    assert set(tree.keys()) == expected
    names = list(tree.buckets())
    sizes = [client.hlen(name) for name in names]
    assert max(sizes) < SPLIT_AT
    assert {client.object("encoding", name) for name in names} == {b"listpack"}
    depths = {int(name.split(b":")[-2]) for name in names}
    assert min(depths) == ROOT_BITS and ROOT_BITS + 8 <= max(depths) <= MAX_BITS  # the crowded prefix went deep


def test_a_server_that_lost_its_scripts_still_answers(tree, redis_server):
    client = redis_server.client()
    conn = client.connection_pool.get_connection()
    try:
        assert tree.add_on(conn, b"k" * 12) == 1
        client.script_flush()
        assert tree.add_on(conn, b"k" * 12) == 0
        assert tree.add_on(conn, b"j" * 12) == 1
    finally:
        client.connection_pool.release(conn)


def test_delete_removes_every_bucket_and_nothing_else(tree, redis_server):
    client = redis_server.client()
    client.set("t:seen:layout", tree.layout)
    client.set("other", "x")
    tree.add_many(random.Random(3).randbytes(12) for _ in range(30_000))
    tree.delete()
    assert list(tree.buckets()) == [] and sorted(client.keys()) == [b"other", b"t:seen:layout"]
