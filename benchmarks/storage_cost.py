"""Where the storage's CPU goes when ``EquivalenceStore.learn`` builds a store: per observation, each
method the learner calls on its storage, and the commit (``observed``/``flush``).

    nice .venv/bin/python benchmarks/storage_cost.py --observations 20000

The web is ``store_bench``'s (``source(i) -> target(i)``, 1,000 hosts). Each storage method is timed
with ``time.process_time`` around the outermost call (calls it makes to others are its own cost);
the timer's own cost per call, measured around a function that does nothing, is subtracted. A
commit is the storage's ``observed`` (``learn`` commits once per chunk) and the final ``flush``.
With ``--statements`` (SQLite), each SQL statement of the commits is timed too (the rows made first).
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from store_bench import source, target  # noqa: E402

METHODS = (
    "set_rule", "set_alias", "add_fanin", "drop_fanin", "add_evidence", "answered", "set_declared_case",
    "alias", "rules_at", "rules_in_force", "case_target", "declared_case", "is_sink",
    "prefetch", "refresh", "observed", "flush", "contradicted_elsewhere",
)  # fmt: skip
WRITES = ("set_rule", "set_alias", "add_fanin", "drop_fanin", "add_evidence", "answered", "set_declared_case")
COMMIT = ("observed", "flush")


def timed(storage: Any, cost: collections.Counter[str], calls: collections.Counter[str]) -> None:
    clock = time.process_time
    depth = [0]

    def wrap(name: str) -> None:
        method = getattr(storage, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            if depth[0]:
                return method(*args, **kwargs)
            depth[0] = 1
            started = clock()
            try:
                return method(*args, **kwargs)
            finally:
                cost[name] += clock() - started
                calls[name] += 1
                depth[0] = 0

        setattr(storage, name, call)

    for name in METHODS:
        wrap(name)


def timer_cost(n: int = 200_000) -> float:
    """Seconds the wrapper adds to one call."""
    cost: collections.Counter[str] = collections.Counter()
    calls: collections.Counter[str] = collections.Counter()

    class Nothing:
        pass

    nothing = Nothing()
    for name in METHODS:
        setattr(nothing, name, lambda *a, **k: None)
    timed(nothing, cost, calls)
    for _ in range(n):
        nothing.set_rule()  # type: ignore[attr-defined]
    return cost["set_rule"] / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--observations", type=int, default=20_000)
    parser.add_argument("--uri", help="the store (default: a new SQLite file in a temporary directory)")
    parser.add_argument("--statements", action="store_true", help="time each SQL statement of the commits")
    args = parser.parse_args()
    from scrapy_iri.store import Observation, open_store

    n = args.observations
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(args.uri or f"sqlite:///{tmp}/cost.db")
        cost: collections.Counter[str] = collections.Counter()
        calls: collections.Counter[str] = collections.Counter()
        timed(store.storage, cost, calls)
        sql: collections.Counter[str] = collections.Counter()
        rows: collections.Counter[str] = collections.Counter()
        if args.statements:
            statements(store.storage.port, sql, rows)
        now = time.time()
        observations = [Observation(source(i), 301, target(i), time=now) for i in range(n)]
        started = time.process_time()
        store.learn(observations)
        store.flush()
        total = time.process_time() - started
        store.close()
    overhead = timer_cost()
    us = {name: max(0.0, (cost[name] - calls[name] * overhead) / n * 1e6) for name in cost}
    print(f"{n} observations: {total / n * 1e6:.1f} us of CPU each ({n / total:,.0f}/s); timer {overhead * 1e6:.2f} us/call subtracted")
    for name in sorted(us, key=lambda k: -us[k]):
        if calls[name]:
            print(f"  {name:24s} {us[name]:7.2f} us/observation  ({calls[name] / n:.2f} calls)")
    writes, commit = sum(us.get(k, 0.0) for k in WRITES), sum(us.get(k, 0.0) for k in COMMIT)
    print(f"  writes (bookkeeping)     {writes:7.2f} us/observation")
    print(f"  commit                   {commit:7.2f} us/observation")
    print(f"  writes + commit          {writes + commit:7.2f} us/observation")
    for statement, seconds in sql.most_common():
        print(f"  {seconds / n * 1e6:7.2f} us/observation {rows[statement] / n:6.2f} rows/observation  {statement}")


def statements(port: Any, sql: collections.Counter[str], rows: collections.Counter[str]) -> None:
    """Time the statements a SQLite port's commits run (through its ``connection``)."""
    connection = port.connection
    clock = time.process_time

    class Timed:
        def __init__(self, db: Any) -> None:
            self.db = db

        def execute(self, statement: str, *args: Any) -> Any:
            started = clock()
            found = self.db.execute(statement, *args)
            sql[statement[:60]] += clock() - started
            rows[statement[:60]] += 1 if statement.startswith(("INSERT", "DELETE")) else 0
            return found

        def executemany(self, statement: str, values: Any) -> Any:
            values = list(values)
            started = clock()
            found = self.db.executemany(statement, values)
            sql[statement[:60]] += clock() - started
            rows[statement[:60]] += len(values)
            return found

    port.connection = lambda: Timed(connection())


if __name__ == "__main__":
    main()
