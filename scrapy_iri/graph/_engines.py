"""``scrapy-iri graph --engine dask|spark``: the engines behind one :class:`Runner`, merging here.

A :class:`Runner` (Dask's cluster, Spark's session) runs a function of
this package on a worker (:meth:`Runner.run`, :meth:`Runner.wait`;
:func:`in_order` keeps a few on the engine at a time and gives the
results in order): web archives are read that way, a piece per task (see
``_split``). For edge files, this project's reader reads IN (so bad
rows are found, with their line numbers, the same way on every engine)
and the rows are merged here, exactly as the local engine merges them:
same edges, same order, same summary. The engine canonicalizes: the rows come in chunks, each chunk's
distinct values that this process holds no node for go to the engine as
one Arrow array, their canonical forms and errors come back, and the
chunk is merged once they are in (a few chunks are on the engine at a
time). The nodes held here are bounded by ``cache_size``, as the local
engine's cache is (see :class:`_Chunk`).
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import tempfile
import threading
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from operator import itemgetter
from typing import Any, Protocol

from ..errors import GraphError
from ._readers import Row

_SOURCE, _TARGET, _PROBLEM = itemgetter(1), itemgetter(2), itemgetter(4)
_ABSENT = object()

ENGINES = ("local", "dask", "spark")
CHUNK_ROWS = 100_000  # rows read before their new values go to the engine
PART_ROWS = 10_000  # rows looked at together, while fresh in the processor's cache


@contextmanager
def _deaf_to_ctrl_c() -> Iterator[None]:
    """Processes started inside ignore SIGINT: Ctrl-C on a terminal reaches the whole process group, and
    this process alone answers it (stops its workers, says it was interrupted), where each worker would
    print a traceback of its own."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def _ctrl_c_held() -> Iterator[list[bool]]:
    """A Ctrl-C inside is held until the block ends (the list it yields says whether one came): Spark's
    JVM ignores SIGINT, and a start broken off before PySpark holds its process would leave it running."""
    heard: list[bool] = []
    if threading.current_thread() is not threading.main_thread():
        yield heard
        return
    previous = signal.signal(signal.SIGINT, lambda *_: heard.append(True))
    try:
        yield heard
    finally:
        signal.signal(signal.SIGINT, previous)


class _Dask:
    def __init__(self, workers: int) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise GraphError("--engine dask needs dask and distributed: pip install 'scrapy-iri[dask]'") from None
        self.workers = workers
        self.depth, self.scale = 2 * workers, 1  # chunks on the engine at a time; CHUNK_ROWS times this a chunk
        self.owned = True
        try:  # a client this process already has (a test, a notebook) is used, and left open
            from distributed import default_client

            self.client = default_client()
            self.cluster = None
            self.owned = False
            return
        except ValueError:
            pass
        import dask

        settings = {
            "distributed.worker.multiprocessing-method": "fork",  # workers start with this process's modules
            "distributed.scheduler.work-stealing": False,  # the tasks are even: nothing to steal
            "distributed.worker.profile.enabled": False,  # no sampling of the tasks' stacks every 10 ms
            "distributed.admin.tick.interval": "500ms",  # blocked event loops are looked for twice a second
        }
        with dask.config.set(settings), _deaf_to_ctrl_c():
            self.cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
                silence_logs=logging.ERROR,
            )
            self.client = Client(self.cluster)

    def run(self, function: Callable[..., Any], *args: Any) -> Any:
        """``function(*args)`` on a worker: a job for :meth:`wait`."""
        return self.client.submit(function, *args, pure=False)

    def wait(self, job: Any) -> Any:
        try:
            return job.result()
        finally:
            job.release()

    def submit(self, values: Any, options: dict[str, Any]) -> Any:
        from ._arrow import _value_forms

        return self.client.submit(_value_forms, values, options, pure=False), values

    def result(self, job: Any) -> tuple[list[Any], list[Any], list[Any]]:
        future, values = job
        canon, errors = future.result()
        future.release()
        return values.to_pylist(), canon.to_pylist(), errors.to_pylist()

    def close(self) -> None:
        if not self.owned:
            return
        with suppress(Exception):
            self.client.close()
        with suppress(Exception):
            self.cluster.close()


_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = scrapy-iri: spark: %p %c{1}: %m%n
"""


# A local run is short and the JVM mostly moves data: with the C1 compiler alone and one garbage
# collector thread it takes about half the CPU seconds it takes with its defaults.
_LOCAL_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def _quiet_spark() -> dict[str, str]:
    """Settings for the command's own session: a 2 GB driver, a light JVM, only Spark's errors on stderr."""
    path = os.path.join(tempfile.gettempdir(), f"scrapy-iri-log4j2-{os.getuid()}.properties")
    with suppress(OSError):
        with open(path, "w", encoding="utf-8") as f:
            f.write(_LOG4J2)
    return {
        "spark.driver.memory": "2g",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{path} {_LOCAL_JVM}",
    }


class _Spark:
    def __init__(self, workers: int) -> None:
        try:
            from pyspark.sql import SparkSession

            from ._spark import session
        except ImportError:
            raise GraphError("--engine spark needs pyspark: pip install 'scrapy-iri[spark]'") from None
        self.workers = workers
        self.depth, self.scale = 2, 3  # one job at a time, in larger chunks: each job costs the JVM planning
        self.jobs = ThreadPoolExecutor(1, thread_name_prefix="scrapy-iri-spark")  # jobs run while chunks merge
        self.tasks = ThreadPoolExecutor(workers, thread_name_prefix="scrapy-iri-spark-task")  # one job a task

        active = SparkSession.getActiveSession()
        self.owned = active is None  # a session this process already has is used, and left running
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                with _ctrl_c_held() as interrupted:
                    self.spark = active if active is not None else session(workers, **_quiet_spark())
            except Exception as exc:  # no Java, a JVM that did not start
                raise GraphError(f"--engine spark: Spark did not start (is a Java runtime installed?): {exc}") from None
        if interrupted:
            self.close()
            raise KeyboardInterrupt

    def run(self, function: Callable[..., Any], *args: Any) -> Any:
        """``function(*args)`` in a Python worker, as a Spark job of one task: a job for :meth:`wait`."""
        from ._spark import _task

        return self.tasks.submit(_task, self.spark, function, args)

    def wait(self, job: Any) -> Any:
        return job.result()

    def submit(self, values: Any, options: dict[str, Any]) -> Any:
        from ._spark import _value_job

        return self.jobs.submit(_value_job, self.spark, values, options)

    def result(self, job: Any) -> tuple[list[Any], list[Any], list[Any]]:
        table = job.result()
        return tuple(table.column(name).to_pylist() for name in ("value", "canonical", "error"))  # type: ignore[return-value]

    def close(self) -> None:
        self.jobs.shutdown(wait=True, cancel_futures=True)
        self.tasks.shutdown(wait=True, cancel_futures=True)
        if self.owned:
            with suppress(Exception):
                self.spark.stop()


class Runner(Protocol):
    """An engine: Dask's cluster or Spark's session, running functions of this package on workers."""

    workers: int

    def run(self, function: Callable[..., Any], *args: Any) -> Any: ...

    def wait(self, job: Any) -> Any: ...

    def submit(self, values: Any, options: dict[str, Any]) -> Any: ...

    def result(self, job: Any) -> tuple[list[Any], list[Any], list[Any]]: ...

    def close(self) -> None: ...


def start(engine: str, workers: int | None, on_stage: Callable[[str], Any] | None = None) -> Runner:
    """The engine ``engine`` with ``workers`` workers (the CPUs by default), started or found running."""
    workers = workers or os.cpu_count() or 1
    if on_stage is not None:
        on_stage(f"starting {engine} with {workers} worker{'s' if workers != 1 else ''}")
    return _Dask(workers) if engine == "dask" else _Spark(workers)


def in_order(
    runner: Runner, engine: str, function: Callable[..., Any], items: list[Any], *args: Any
) -> Iterator[tuple[Any, Any]]:
    """(item, ``function(item, *args)``) for every item, in order, ``2 * workers`` on the engine at a time."""
    window: deque[tuple[Any, Any]] = deque()
    depth = 2 * runner.workers
    pending = iter(items)
    while True:
        try:
            while len(window) < depth:
                item = next(pending, _ABSENT)
                if item is _ABSENT:
                    break
                window.append((item, runner.run(function, item, *args)))
            if not window:
                return
            item, job = window.popleft()
            result = runner.wait(job)
        except GraphError:
            raise
        except Exception as exc:
            raise _failed(engine, exc) from exc
        yield item, result


def _failed(engine: str, exc: Exception) -> GraphError:
    """A failure of the engine (a worker lost, a store a worker cannot open): fatal, in one line."""
    if isinstance(exc, GraphError):
        return exc
    first = str(exc).strip().splitlines()
    return GraphError(f"--engine {engine} failed: {type(exc).__name__}: {first[-1] if first else ''}")


class _Chunk:
    """Rows read (in parts), the nodes their values are looked up in, and the values the engine is asked for.

    The nodes (value -> node; None while the engine works on it) are shared
    by the chunks that follow until they hold ``cache_size`` values; the
    next chunk then starts anew, taking from them the nodes of its own
    values only, and lets the others go.
    """

    __slots__ = ("parts", "rows", "nodes", "older", "asked", "waiting", "job")

    def __init__(self, nodes: dict[str, Any], cache_size: int) -> None:
        self.older: dict[str, Any] | None = None
        if nodes and len(nodes) >= cache_size:
            self.older, nodes = nodes, {}
        self.nodes = nodes
        self.parts: list[list[Row]] = []
        self.rows = 0
        self.asked: list[str] = []
        self.waiting: list[str] = []  # asked by an earlier chunk, whose answer comes first
        self.job: Any = None

    def add(self, part: list[Row]) -> None:
        """Take a part of the rows, while they are fresh in the processor's cache."""
        self.parts.append(part)
        self.rows += len(part)
        read = part if not any(map(_PROBLEM, part)) else [row for row in part if row[4] is None]
        values = set(map(_SOURCE, read))
        values.update(map(_TARGET, read))
        nodes, older = self.nodes, self.older
        missing = values.difference(nodes)  # a dict, not its keys: then only the values are walked
        if older is None:
            self.asked.extend(missing)
            nodes.update(dict.fromkeys(missing))
            return
        asked, waiting = self.asked.append, self.waiting.append
        for value in missing:
            node = older.get(value, _ABSENT)
            if node is _ABSENT:
                asked(value)
                node = None
            elif node is None:
                waiting(value)
            nodes[value] = node

    def answered(self, make: Callable[[str | None, str | None], Any], values: list[str], forms: list[Any],
                 errors: list[Any]) -> None:
        """Nodes for the values asked (``forms`` null where a value is its own form) and those waited for."""
        nodes = self.nodes
        for value, form, error in zip(values, forms, errors):
            nodes[value] = make(value if form is None and error is None else form, error)
        if self.waiting:
            older = self.older
            assert older is not None
            for value in self.waiting:
                node = older.get(value)
                if node is None:
                    raise GraphError(f"no canonical form came back for {value!r}")
                nodes[value] = node


def _encodable(chunk: _Chunk, make: Callable[[str | None, str | None], Any]) -> list[str]:
    """The asked values that are valid UTF-8; the others get their bad node here."""
    from ._nodes import canonical_or_error

    kept = []
    for value in chunk.asked:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            chunk.nodes[value] = make(*canonical_or_error(value, None, False, True, None))  # type: ignore[arg-type]
        else:
            kept.append(value)
    chunk.asked = kept
    return kept


def engine_rows(
    engine: str,
    rows: Iterator[Row],
    make: Callable[[str | None, str | None], Any],
    *,
    workers: int | None,
    options: dict[str, Any],
    cache_size: int,
    on_stage: Callable[[str], Any] | None = None,
) -> Iterator[Row]:
    """Every row of ``rows`` in input order, as (row, source node, target node):
    nodes made by ``make(canonical, error)`` from the engine's forms (None for a row the reader found bad)."""
    from ._parquet import _pyarrow

    _pyarrow(f"--engine {engine}", engine)  # a clear error when pyarrow is missing
    import pyarrow as pa

    runner: Any = None
    collecting = gc.isenabled()
    nodes: dict[str, Any] = {}
    window: deque[_Chunk] = deque()

    def send(chunk: _Chunk) -> None:
        if chunk.asked:
            try:
                values = pa.array(chunk.asked, pa.string())
            except UnicodeEncodeError:  # invalid UTF-8 in the input: a bad value before any canonicalization
                values = pa.array(_encodable(chunk, make), pa.string())
            try:
                chunk.job = runner.submit(values, options)
            except Exception as exc:
                raise _failed(engine, exc) from exc
        window.append(chunk)

    def finish() -> Iterator[tuple[Row, Any, Any]]:
        chunk = window.popleft()
        if chunk.job is not None:
            try:
                values, forms, errors = runner.result(chunk.job)
            except Exception as exc:
                raise _failed(engine, exc) from exc
            if len(values) != len(chunk.asked):
                raise GraphError(f"--engine {engine} failed: {len(chunk.asked)} values sent, {len(values)} back")
        else:
            values = forms = errors = []
        chunk.answered(make, values, forms, errors)
        node = chunk.nodes.__getitem__
        for part in chunk.parts:
            for row in part:
                if row[4] is None:
                    yield row, node(row[1]), node(row[2])
                else:
                    yield row, None, None

    try:
        runner = start(engine, workers)
        if on_stage is not None:
            on_stage(f"canonicalizing on {engine} with {runner.workers} worker{'s' if runner.workers != 1 else ''}")
        gc.freeze()  # the engine's modules and client live as long as the run: no collection need walk them
        chunk_rows = CHUNK_ROWS * runner.scale
        part_rows = min(PART_ROWS, chunk_rows)
        chunk = _Chunk(nodes, cache_size)
        part: list[Row] = []
        append = part.append
        collecting = gc.isenabled()
        gc.disable()  # rows are read into a chunk (tuples of strings, no cycles): one collection per chunk, not hundreds
        for row in rows:
            append(row)
            if len(part) < part_rows:
                continue
            chunk.add(part)
            part = []
            append = part.append
            if chunk.rows >= chunk_rows:
                if collecting:
                    gc.enable()
                send(chunk)
                nodes = chunk.nodes
                chunk = _Chunk(nodes, cache_size)
                if len(window) >= runner.depth:
                    yield from finish()
                gc.disable()
        if collecting:
            gc.enable()
        if part:
            chunk.add(part)
        if chunk.rows:
            send(chunk)
        while window:
            yield from finish()
    finally:
        if collecting:
            gc.enable()
        if runner is not None:
            runner.close()
