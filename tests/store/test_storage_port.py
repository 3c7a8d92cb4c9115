"""The backend port (``StoragePort``): every backend answers the same reads the same way.

What is written goes through a store (the learner and its storage), is
flushed, then read back through ``storage.port``, which reads what the
backend holds and nothing a process caches. The expected answers are what
was written, by hand: a 301 makes an alias of its source, a declared case
is the URL given, fan-in is the sources given, a rule taught by three
clean redirects has support 3.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.stores import Clock

from scrapy_iri.store import EquivalenceStore, LearningPolicy, MemoryStore, RuleKey
from scrapy_iri.store._port import Found, Reads, StoragePort
from scrapy_iri.store._rules import case_key

H = "https://h.example"
SLASH = RuleKey(H, "add-slash", "/topic-#")


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EquivalenceStore]:
    policy = LearningPolicy(min_observations=3, sink_fanin=5)
    opened: EquivalenceStore
    if request.param == "memory":
        opened = MemoryStore(policy, clock=Clock())
    elif request.param == "sqlite":
        from scrapy_iri.store._sqlite import SQLiteStore

        opened = SQLiteStore(tmp_path / "port.db", policy, clock=Clock())
    else:
        from scrapy_iri.store._redis import RedisStore

        url = request.getfixturevalue("redis_url")
        opened = RedisStore(url, f"port-{uuid.uuid4().hex[:12]}", policy, clock=Clock())
    yield opened
    opened.close()


def port_of(store: EquivalenceStore) -> StoragePort:
    port = store.storage.port  # type: ignore[attr-defined]
    assert isinstance(port, StoragePort)
    return port


def written(store: EquivalenceStore) -> StoragePort:
    """The store's port once what the store holds is written."""
    store.flush()
    return port_of(store)


def test_aliases_are_read_many_at_once_with_their_targets(store: EquivalenceStore) -> None:
    store.record_redirect(f"{H}/a", 301, f"{H}/b")
    store.record_redirect(f"{H}/b", 301, f"{H}/c")
    store.record_redirect(f"{H}/x", 302, f"{H}/y")  # temporary: no alias
    port = written(store)
    found = port.read_aliases([f"{H}/a", f"{H}/x", f"{H}/nowhere"])
    assert found is not None
    assert set(found) == {f"{H}/a", f"{H}/x", f"{H}/nowhere"}
    assert found[f"{H}/a"] is not None and found[f"{H}/a"].target == f"{H}/b"
    assert found[f"{H}/x"] is None and found[f"{H}/nowhere"] is None
    for sources in ([f"{H}/a"], [f"{H}/a", f"{H}/nowhere"]):  # one key (one round trip) and many
        followed = port.read_aliases(sources, follow=True)
        assert followed is not None
        assert followed[f"{H}/a"].target == f"{H}/b"  # type: ignore[union-attr]
        assert followed[f"{H}/b"] is not None and followed[f"{H}/b"].target == f"{H}/c"
        assert f"{H}/c" not in followed  # one step: the target's alias, not the whole chain


def test_an_ended_alias_reads_as_none(store: EquivalenceStore) -> None:
    store.record_redirect(f"{H}/a", 301, f"{H}/b")
    store.flush()
    store.record_response(f"{H}/a", 200)
    found = written(store).read_aliases([f"{H}/a"], follow=True)
    assert found is not None and found[f"{H}/a"] is None


def test_cases_are_their_case_only_aliases_and_their_declared_case(store: EquivalenceStore) -> None:
    store.record_redirect(f"{H}/Docs/Intro", 301, f"{H}/docs/intro")  # case only
    store.record_redirect(f"{H}/Old", 301, f"{H}/new")  # not case only
    declared = f"{H}/Guide/Start"
    store.storage.set_declared_case(case_key(declared), declared)
    port = written(store)
    keys = [case_key(f"{H}/docs/intro"), case_key(declared), case_key(f"{H}/new"), case_key(f"{H}/none")]
    found = port.read_cases(keys)
    assert found is not None and set(found) == set(keys)
    rows, url = found[keys[0]]
    assert url is None and list(rows) == [f"{H}/Docs/Intro"] and rows[f"{H}/Docs/Intro"][1] == f"{H}/docs/intro"
    assert found[keys[1]] == ({}, declared)
    assert found[keys[2]] == ({}, None) and found[keys[3]] == ({}, None)


def test_fanin_is_read_up_to_a_cap_and_sinks_by_their_number_of_sources(store: EquivalenceStore) -> None:
    storage = store.storage
    sources = [f"{H}/s{i}" for i in range(4)]
    for source in sources:
        storage.add_fanin(f"{H}/landing", source, 10)
    storage.add_fanin(f"{H}/pair", f"{H}/p1", 10)
    storage.add_fanin(f"{H}/pair", f"{H}/p2", 10)
    port = written(store)
    found = port.read_fanins([f"{H}/landing", f"{H}/pair", f"{H}/alone"], 10)
    assert found is not None
    assert sorted(found[f"{H}/landing"]) == sources
    assert sorted(found[f"{H}/pair"]) == [f"{H}/p1", f"{H}/p2"] and found[f"{H}/alone"] == []
    capped = port.read_fanins([f"{H}/landing"], 2)
    assert capped is not None and len(capped[f"{H}/landing"]) == 2 and set(capped[f"{H}/landing"]) <= set(sources)
    assert port.read_sinks(4) == {f"{H}/landing"}
    assert port.read_sinks(2) == {f"{H}/landing", f"{H}/pair"}
    assert port.read_sinks(5) == set()
    among = [f"{H}/pair", f"{H}/landing", f"{H}/alone"]  # only those asked about
    assert port.read_sinks(2, among) == {f"{H}/landing", f"{H}/pair"}
    assert port.read_sinks(3, among) == {f"{H}/landing"} and port.read_sinks(2, [f"{H}/pair"]) == {f"{H}/pair"}


def teach_slash(store: EquivalenceStore) -> None:
    for i in range(1, 4):
        store.record_redirect(f"{H}/topic-{i}", 301, f"{H}/topic-{i}/")


def test_rules_are_read_by_key_by_origin_and_in_force(store: EquivalenceStore) -> None:
    teach_slash(store)
    port = written(store)
    absent = RuleKey(H, "add-slash", "/nothing-#")
    other = RuleKey("https://other.example", "add-slash", "/topic-#")
    for keys in ([SLASH], [SLASH, absent, other]):  # one key and many (several origins)
        found = port.read_rules(keys)
        assert found is not None and set(found) == set(keys)
        record = found[SLASH]
        assert record is not None and record.support == 3 and record.against == 0
        assert all(found[key] is None for key in keys[1:])
    whole = port.read_origin(H)
    assert whole is not None and whole[SLASH].support == 3
    assert all(key.origin == H for key in whole)
    assert port.read_origin("https://other.example") == {}
    in_force = port.read_in_force([H, "https://other.example"], 3)
    assert in_force is not None and SLASH in in_force[H] and in_force["https://other.example"] == {}
    assert all(r.support >= 3 or key.kind == "block" for key, r in in_force[H].items())
    higher = port.read_in_force([H], 4)
    assert higher is not None and SLASH not in higher[H]


def test_one_read_of_every_kind_answers_as_its_parts(store: EquivalenceStore) -> None:
    teach_slash(store)
    store.record_redirect(f"{H}/Docs/Intro", 301, f"{H}/docs/intro")
    store.storage.add_fanin(f"{H}/landing", f"{H}/s1", 10)
    store.storage.add_fanin(f"{H}/landing", f"{H}/s2", 10)
    port = written(store)
    reads = Reads(
        aliases=[f"{H}/topic-1", f"{H}/nowhere"],
        cases=[case_key(f"{H}/docs/intro"), case_key(f"{H}/none")],
        fanins=[f"{H}/landing", f"{H}/alone"],
        cap=10,
        rules=[SLASH, RuleKey(H, "add-slash", "/nothing-#")],
        in_force=[H],
        floor=3,
        origins=[H, "https://other.example"],
        sinks=[f"{H}/landing", f"{H}/alone"],
    )
    found = port.read(reads)
    assert isinstance(found, Found)
    expected: dict[str, Any] = {
        "aliases": port.read_aliases(reads.aliases),
        "cases": port.read_cases(reads.cases),
        "fanins": port.read_fanins(reads.fanins, 10),
        "rules": port.read_rules(reads.rules),
        "in_force": port.read_in_force(reads.in_force, 3),
        "origins": {origin: port.read_origin(origin) for origin in reads.origins},
        "sinks": port.read_sinks(10, reads.sinks),
    }
    assert expected["aliases"][f"{H}/topic-1"].target == f"{H}/topic-1/"
    for name, value in expected.items():
        assert getattr(found, name) == value, name
    assert found.origins[H][SLASH].support == 3 and found.origins["https://other.example"] == {}
    assert found.sinks == set()  # two sources: a sink of cap 2, not 10
    assert port.read(Reads(cap=2, sinks=[f"{H}/landing", f"{H}/alone"])).sinks == {f"{H}/landing"}  # type: ignore[union-attr]
    assert port.read(Reads()) == Found()  # nothing asked, nothing read


def test_the_port_reads_what_is_written_not_what_a_process_holds(store: EquivalenceStore) -> None:
    """Only a flush makes a write readable through a persistent backend's port."""
    if isinstance(store, MemoryStore):
        pytest.skip("the memory storage writes at once")
    store.record_redirect(f"{H}/a", 301, f"{H}/b")
    assert store.representative(f"{H}/a") == f"{H}/b"  # the process reads its pending write
    assert port_of(store).read_aliases([f"{H}/a"]) == {f"{H}/a": None}
    store.flush()
    found = port_of(store).read_aliases([f"{H}/a"])
    assert found is not None and found[f"{H}/a"] is not None


def test_an_unreachable_redis_is_read_as_unknown(redis_url: str, redis_server: Any) -> None:
    """Every read answers ``None`` as a whole (unknown: no merge), not "nothing stored"."""
    from scrapy_iri.store._redis import RedisStore

    store = RedisStore(redis_url, f"port-{uuid.uuid4().hex[:12]}", clock=Clock())
    teach_slash(store)
    port = written(store)
    assert port.read_rules([SLASH])[SLASH] is not None  # type: ignore[index]
    redis_server.kill()
    try:
        assert port.read_aliases([f"{H}/topic-1"], follow=True) is None
        assert port.read_aliases([f"{H}/topic-1", f"{H}/topic-2"]) is None
        assert port.read_rules([SLASH]) is None and port.read_origin(H) is None
        assert port.read_cases(["k"]) is None and port.read_fanins(["t"], 3) is None and port.read_sinks(3) is None
        assert port.read(Reads(aliases=[f"{H}/topic-1"], rules=[SLASH])) is None
    finally:
        redis_server.start()
        store.close()


@pytest.mark.parametrize("merge", [False, True])
def test_a_changeset_is_applied_whole_and_counts_add_to_what_is_stored(store: EquivalenceStore, merge: bool) -> None:
    """A changeset written by hand, applied by the port of the file or server backends (the memory
    storage writes its dictionaries directly), reads back as written; a rule's record is the one held
    (3 supports read, 2 counted since), and the 2 are added to the stored record, whether the backend
    merges (``merge``: another process may have written) or takes the record held as the merge."""
    if isinstance(store, MemoryStore):
        pytest.skip("the memory storage applies no changesets")
    from scrapy_iri.store._evidence import Alias, Evidence
    from scrapy_iri.store._port import Changeset, RuleWrite
    from scrapy_iri.store._rules import RuleRecord

    for i in range(3):
        store.record_redirect(f"{H}/topic-{i}", 301, f"{H}/topic-{i}/")
    port = written(store)
    before = port.read_rules([SLASH])
    assert before is not None and before[SLASH] is not None and before[SLASH].support == 3
    stored = before[SLASH]
    t = stored.last_support + 10  # later than what is stored (Redis keeps the newest alias write)
    image = RuleRecord(SLASH, 5, 0, stored.first_seen, stored.last_support + 1, 0.0, f"{H}/topic-9")
    changes = Changeset(
        aliases={f"{H}/p": (Alias(f"{H}/p", f"{H}/q", 301, t), False, t), f"{H}/topic-0": (None, True, t)},
        cases={case_key(f"{H}/Doc"): (f"{H}/Doc", t, "")},
        rules={SLASH: RuleWrite(image, 2, 0)},
        fanins={f"{H}/hub": {f"{H}/s{i}": 5 for i in range(5)}},
        sinks={f"{H}/hub": 5},
        evidence=[Evidence(t, f"{H}/p", 301, f"{H}/q")],
        changes={("a", f"{H}/p"): None},
        merge=merge,
    )
    assert port.apply(changes) is not None
    aliases = port.read_aliases([f"{H}/p", f"{H}/topic-0", f"{H}/topic-1"])
    assert aliases is not None
    assert aliases[f"{H}/p"] is not None and aliases[f"{H}/p"].target == f"{H}/q"
    assert aliases[f"{H}/topic-0"] is None  # ended
    assert aliases[f"{H}/topic-1"] is not None
    cases = port.read_cases([case_key(f"{H}/Doc")])
    assert cases is not None and cases[case_key(f"{H}/Doc")][1] == f"{H}/Doc"
    fanin = port.read_fanins([f"{H}/hub"], 10)
    assert fanin is not None and sorted(fanin[f"{H}/hub"]) == sorted(f"{H}/s{i}" for i in range(5))
    assert port.read_sinks(5) == {f"{H}/hub"}
    after = port.read_rules([SLASH])
    assert after is not None and after[SLASH] is not None
    assert after[SLASH].support == 5 and after[SLASH].last_support == stored.last_support + 1
    evidence = list(store.evidence(f"{H}/q"))
    assert [(e.url, e.status) for e in evidence] == [(f"{H}/p", 301)]


def test_the_port_lists_every_record_kind_and_keeps_the_policy(store: EquivalenceStore) -> None:
    """What the shared layers list, count and forget: the aliases, rule records, fan-in, declared
    cases and evidence the backend holds, and the policy it recorded."""
    teach_slash(store)  # three aliases /topic-N -> /topic-N/, the rule with support 3, three entries of evidence
    store.record_redirect(f"{H}/x", 301, f"{H}/landing")
    store.record_redirect(f"{H}/y", 302, f"{H}/landing")  # two sources of one target (no alias: a 302)
    port = written(store)
    sources = [f"{H}/topic-{i}" for i in range(1, 4)] + [f"{H}/x"]
    assert sorted(a.source for a in port.scan_aliases()) == sources
    assert port.count_aliases() == 4 and sorted(port.alias_sources()) == sources
    rules = {r.key: r for r in port.scan_rules()}
    assert rules[SLASH].support == 3 and rules[SLASH].against == 0
    assert dict(port.scan_fanins())[f"{H}/landing"] == 2
    assert list(port.scan_declared()) == []
    assert [(e.url, e.status) for e in port.read_evidence()] == [
        *((f"{H}/topic-{i}", 301) for i in range(1, 4)), (f"{H}/x", 301), (f"{H}/y", 302)
    ]
    assert [e.url for e in port.read_evidence(f"{H}/landing")] == [f"{H}/x", f"{H}/y"]  # by target too
    assert port.counts() == (5, 0)
    assert port.delete_evidence(f"{H}/landing") == 2 and port.counts() == (3, 0)
    from scrapy_iri.store._codec import policy_from_text

    assert port.read_meta("policy") is None  # none recorded yet
    store.record_policy()
    recorded = port.read_meta("policy")
    assert recorded is not None and policy_from_text(recorded) == LearningPolicy(min_observations=3, sink_fanin=5)
    port.write_meta("policy", '{"min_observations": 7}')
    assert store.storage.load_policy() == LearningPolicy(min_observations=7)
