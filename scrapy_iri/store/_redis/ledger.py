"""The ledger: what a machine's processes ended or suspended in a Redis store, kept where the crawl keeps its state.

A Redis restarted from an older RDB snapshot or AOF file (or a restored
backup) forgets what was learned since, and the dangerous part of it is
what was *ended*: an alias whose source answered for itself, a rule a
counterexample suspended, a sink, the requests a rule merged away. Served
again, they merge pages that differ. Redis itself cannot tell it went back,
and the process that wrote those changes may be gone; so every process
that writes appends them to a local file, the ledger, with the mark of each
batch it applied:

* ``{"i": id}``: the ledger's own id, its first line (Redis keeps, per
  ledger id, the version its newest batch left, in ``NS:store:ledgers``);
* ``{"m": [epoch, version, batch id]}``: a batch applied (Redis keeps the
  last marks, scored with their version, in ``NS:store:marks``);
* ``{"a": [source, time]}``: an alias the batch ended;
* ``{"r": [origin, "kind scope", counts...]}``: a rule record with
  counterexamples, or an origin's block;
* ``{"s": [target, sources]}``: a sink (a target with that many sources);
* ``{"d": [rule, url]}`` / ``{"t": [rule]}``: a request deferred under a
  rule / the rule's requests taken.

A process that opens the store, and every sync after, checks that the
newest mark of the ledger is still in Redis. When it is not (or the
version went down, or the store's epoch changed under the ledger), Redis
went back in time, unless the mark only aged out of the marks Redis keeps
while Redis still holds, for this ledger's id, a version as new as the
mark's (after a rollback, however many batches others wrote since, it
holds an older one): the process says so in an error and writes the
ledger's ends, suspensions, sinks and untaken deferred requests back
(each by the rules that make a write-back idempotent: a newer write wins,
counts merge by maximum). Anything positive that was lost (an alias, a
rule's support) is learned again: a missed merge costs one fetch.

The default place is the per-user state directory
(``$SCRAPY_IRI_STATE_DIR``, else ``$XDG_STATE_HOME/scrapy-iri``, else
``~/.local/state/scrapy-iri``), one file per Redis server, database and
namespace: every process of the machine shares it. A crawl with a
``JOBDIR`` keeps it there, and appends every line to the machine's ledger
too (its mirror), so processes of other jobs know what it ended.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no compaction, appends without a lock
    fcntl = None  # type: ignore[assignment]

from .._rules import BLOCK
from .._state import state_dir
from .codec import EMPTY_BATCH, chunks, tombstone
from .journal import DROP

logger = logging.getLogger("scrapy_iri.store._redis")

#: bytes read from the end of the ledger to find its newest mark
TAIL = 64 * 1024
#: rules and sinks a process remembers having written
REMEMBERED = 100_000
#: bytes past which a ledger is compacted when a store opens
COMPACT_AT = 32 << 20


def default_ledger_path(where: str, namespace: str) -> Path:
    """The ledger of one namespace on one Redis (``where``: its address and database)."""
    digest = hashlib.sha256(f"{where}\n{namespace}".encode("utf-8", "surrogatepass")).hexdigest()[:16]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in namespace)[:64]
    return state_dir() / "redis" / f"{safe}-{digest}.ledger"


class Ledger:
    """One append-only file of JSON lines (see the module docstring)."""

    def __init__(self, path: str | Path, mirror: str | Path | None = None) -> None:
        self.path = Path(path)
        #: a second ledger every line is appended to as well (a crawl's ``JOBDIR`` ledger mirrored in the
        #: machine's, so that processes of other jobs know what this one ended)
        self.mirror = Ledger(mirror) if mirror is not None and Path(mirror) != self.path else None
        #: the last counterexample time written per rule, and the sinks written, by this process (the
        #: latest :data:`REMEMBERED` of each: one forgotten is written again when next counted)
        self._rules_written: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._sinks_written: OrderedDict[str, None] = OrderedDict()
        #: lines appended and not made durable yet (see :meth:`sync`)
        self._unsynced = False
        #: the ledger's id (its first line), read or given when first needed
        self._id = ""

    @property
    def id(self) -> str:
        """The ledger's id: its first line, written when the file is made (or rewritten, for a file without one)."""
        if not self._id:
            self._id = self._read_id() or self._give_id()
        return self._id

    def _read_id(self) -> str:
        try:
            with open(self.path, "rb") as f:
                first = f.readline(4096)
        except OSError:
            return ""
        try:
            line = json.loads(first)
        except ValueError:
            return ""
        return str(line["i"]) if isinstance(line, dict) and "i" in line else ""

    def _give_id(self) -> str:
        """Make the file with a new id as its first line (another process may do so at once: its id wins),
        or rewrite a file without one with a new id first."""
        new = uuid.uuid4().hex
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                self.compact(limit=-1)  # a file without an id: rewritten with one first
                return self._read_id() or new
            try:
                os.write(fd, _line("i", new).encode())
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            self._unwritable(exc)
        return self._read_id() or new

    def record(
        self,
        batch: dict[str, list[Any]],
        answer: list[Any],
        batch_id: str,
        epoch: str,
        sinks: set[str],
        ttl: float,
        durable: bool = True,
    ) -> None:
        """Append what an applied batch ended or suspended, and its mark (one write, made durable now,
        or not ``durable`` until :meth:`sync`: the batches of one flush are made durable together).

        A rule record the batch wrote (its entry carries the whole record) is written when it first has
        a counterexample here, and again when its last counterexample is newer by a hundredth of the
        TTL (an hour at most): the file grows with what changes, not with every count. ``sinks`` are
        the targets known to be sinks.
        """
        lines: list[str] = []
        step = min(ttl / 100, 3600.0)
        ended = answer[4] if len(answer) > 4 else []
        if ended:
            times = {op[0]: op[2] for op in batch.get("a", ())}
            for source in ended:
                name = source.decode("utf-8", "surrogatepass") if isinstance(source, bytes) else source
                lines.append(_line("a", [name, times.get(name, 0.0)]))
        written_rules = self._rules_written
        for op in batch.get("r", ()):
            values = _record_of(op)
            if values is not None and (values[1] or op[1].startswith(_BLOCK_FIELD)):
                name = (op[0], op[1])
                written = written_rules.get(name)
                if written is None or values[4] - written >= step:
                    _remember(written_rules, name, values[4])
                    lines.append(_line("r", [op[0], op[1], *values]))
        for target, _, cap in batch.get("f", ()):
            if target in sinks and target not in self._sinks_written:
                _remember(self._sinks_written, target, None)
                lines.append(_line("s", [target, cap]))
        lines += [_line("d", list(op)) for op in batch.get("d", ())]
        lines.append(_line("m", [epoch, int(answer[1]), batch_id]))
        self._write("".join(lines).encode("utf-8", "surrogatepass"), durable)

    def taken(self, rule: str) -> None:
        self._append([{"t": [rule]}])

    def mark(self, epoch: str, version: int, batch_id: str) -> None:
        self._append([{"m": [epoch, version, batch_id]}])

    def _append(self, lines: list[Any]) -> None:
        self._write(_encode(lines))

    @property
    def ids(self) -> str:
        """The ids of this ledger and its mirror, as the batch script takes them (space-separated)."""
        return self.id if self.mirror is None else f"{self.id} {self.mirror.id}"

    def ledgers(self) -> list[Ledger]:
        return [self] if self.mirror is None else [self, self.mirror]

    def sync(self) -> None:
        """Make what was appended without being made durable so (one ``fsync``)."""
        if self.mirror is not None:
            self.mirror.sync()
        if not self._unsynced:
            return
        self._unsynced = False
        try:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            self._unwritable(exc)

    def _write(self, data: bytes, durable: bool = True) -> None:
        if self.mirror is not None:
            self.mirror._write(data, durable)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            while True:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX)  # a compaction holds it while it rewrites the file
                try:
                    if os.fstat(fd).st_ino == os.stat(self.path).st_ino:
                        os.write(fd, data)  # one write, under the lock: lines never interleave
                        if durable:
                            os.fsync(fd)
                        else:
                            self._unsynced = True
                        return
                finally:
                    os.close(fd)  # the lock goes with it; a file compacted meanwhile is opened again
        except OSError as exc:
            self._unwritable(exc)

    def _unwritable(self, exc: OSError) -> None:
        logger.error("cannot write the store's ledger %(path)s (%(error)s): a Redis rollback may go unseen",
                     {"path": self.path, "error": exc})

    def _lines(self, data: bytes) -> Iterator[dict[str, Any]]:
        for raw in data.splitlines():
            try:
                line = json.loads(raw)
            except ValueError:  # a line cut short by a crash, or the tail read from its middle
                continue
            if isinstance(line, dict):
                yield line

    def newest_mark(self) -> tuple[str, int, str] | None:
        """``(epoch, version, batch id)`` of the newest batch any process of this ledger applied."""
        try:
            with open(self.path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - TAIL))
                data = f.read()
        except OSError:
            return None
        found = None
        for line in self._lines(data):
            if "m" in line:
                found = line["m"]
        return None if found is None else (str(found[0]), int(found[1]), str(found[2]))

    def write_back(self) -> list[dict[str, list[Any]]]:
        """The batches that write the ledger's ends, suspensions, sinks and untaken deferred requests back
        (its mirror's too: what other jobs of the machine ended)."""
        mirrored = self.mirror.write_back() if self.mirror is not None else []
        try:
            data = self.path.read_bytes()
        except OSError:
            return mirrored
        ends, rules, sinks, deferred, _ = self._facts(data)
        batches = []
        groups = (
            ("a", [[source, tombstone(t), t, DROP, ""] for source, t in ends.items()]),
            ("r", [[origin, field, "max", *values] for (origin, field), values in rules.items()]),
            ("f", [[target, "", -cap] for target, cap in sinks.items()]),
            ("d", [[rule, url] for rule, urls in deferred.items() for url in urls]),
        )
        for name, ops in groups:
            for part in chunks(ops, 1000):
                batches.append({**EMPTY_BATCH, name: part})
        return batches + mirrored

    def compact(self, limit: int = COMPACT_AT) -> None:
        """Rewrite a ledger larger than ``limit`` bytes as its id, its facts, one line each, and its newest mark.

        Under an exclusive lock that every append takes too; an append that opened the file before
        the rewrite sees it was replaced and writes to the new one."""
        if self.mirror is not None:
            self.mirror.compact(limit)
        try:
            if fcntl is None or self.path.stat().st_size <= limit:
                return
            fd = os.open(self.path, os.O_RDWR)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with open(self.path, "rb") as f:
                data = f.read()
            ends, rules, sinks, deferred, mark = self._facts(data)
            lines: list[Any] = [{"i": self._read_id() or uuid.uuid4().hex}]
            lines += [{"a": [source, t]} for source, t in ends.items()]
            lines += [{"r": [origin, field, *values]} for (origin, field), values in rules.items()]
            lines += [{"s": [target, cap]} for target, cap in sinks.items()]
            lines += [{"d": [rule, url]} for rule, urls in deferred.items() for url in urls]
            if mark is not None:
                lines.append({"m": mark})
            tmp = self.path.with_suffix(".compact")
            tmp.write_bytes(_encode(lines))
            os.replace(tmp, self.path)
        except OSError as exc:
            logger.warning("could not compact the store's ledger %(path)s: %(error)s", {"path": self.path, "error": exc})
        finally:
            os.close(fd)

    def _facts(self, data: bytes) -> tuple[Any, ...]:
        """What a ledger holds: ends, rule records, sinks, untaken deferred requests, the newest mark."""
        ends: dict[str, float] = {}
        rules: dict[tuple[str, str], list[Any]] = {}
        sinks: dict[str, int] = {}
        deferred: dict[str, dict[str, None]] = {}
        mark = None
        for line in self._lines(data):
            if "a" in line:
                source, time_ = line["a"]
                ends[source] = max(time_, ends.get(source, time_))
            elif "r" in line:
                origin, field, *values = line["r"]
                rules[(origin, field)] = _max_record(rules.get((origin, field)), values)
            elif "s" in line:
                target, cap = line["s"]
                sinks[target] = max(cap, sinks.get(target, 0))
            elif "d" in line:
                deferred.setdefault(line["d"][0], {})[line["d"][1]] = None
            elif "t" in line:
                deferred.pop(line["t"][0], None)
            elif "m" in line:
                mark = line["m"]
        return ends, rules, sinks, deferred, mark

    def reset(self) -> None:
        """Forget everything (the store was cleared on purpose)."""
        if self.mirror is not None:
            self.mirror.reset()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        self._id = ""
        self._rules_written.clear()
        self._sinks_written.clear()


#: ``json.dumps(value, ensure_ascii=False)``, without making an encoder at every call
_json = json.JSONEncoder(ensure_ascii=False).encode


#: the field of an origin's block (``"<kind> <scope>"``)
_BLOCK_FIELD = BLOCK + " "


def _record_of(op: list[Any]) -> list[Any] | None:
    """The whole record a batch's rule entry wrote (:data:`.._codec.RULE_FIELDS`), if it carries one."""
    if len(op) >= 12:  # counts added, then the record as the writer held it
        return [op[10], op[11], *op[5:10]]
    if op[2] in ("max", "setnx"):  # a record written back
        return list(op[3:10])
    return None


def _line(kind: str, values: Any) -> str:
    """The line ``{kind: values}`` as :func:`_encode` writes it."""
    return f'{{"{kind}": {_json(values)}}}\n'


def _encode(lines: list[Any]) -> bytes:
    return "".join(_json(line) + "\n" for line in lines).encode("utf-8", "surrogatepass")


def _remember(memory: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    memory[key] = value
    memory.move_to_end(key)
    if len(memory) > REMEMBERED:
        memory.popitem(last=False)


def _max_record(known: list[Any] | None, values: list[Any]) -> list[Any]:
    """Two images of one rule record merged as a write-back after a rollback merges them (by maximum)."""
    if known is None:
        return list(values)
    support, against, first, last_support, last_against, example, counterexample = known
    s2, a2, f2, ls2, la2, ex2, cx2 = values
    firsts = [t for t in (first, f2) if t]
    return [
        max(support, s2),
        max(against, a2),
        min(firsts) if firsts else 0.0,
        max(last_support, ls2),
        max(last_against, la2),
        example if last_support >= ls2 else ex2,
        counterexample if last_against >= la2 else cx2,
    ]


__all__ = ["Ledger", "default_ledger_path", "state_dir"]
