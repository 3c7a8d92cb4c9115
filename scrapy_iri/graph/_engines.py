"""``scrapy-iri graph --engine dask|spark``: canonicalization on an engine, merging here.

This project's reader reads IN (so bad rows are found, with their line
numbers, the same way on every engine) and stages the rows it could parse
as Parquet part files with their line numbers. The engine runs the batch
kernel (:func:`scrapy_iri.arrow.canonicalize_edges`) over the parts; the
results come back part by part, in input order, and are merged here
exactly as the local engine merges: same edges, same order, same summary.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import suppress
from typing import Any

from ..errors import GraphError
from ._readers import Row

ENGINES = ("local", "dask", "spark")
STAGE_ROWS = 250_000  # rows per staged part

# (line, source, target, raw, problem, canonical source, canonical target)
Item = tuple[int, str, str, str, "str | None", "str | None", "str | None"]


def _stage(rows: Iterator[Row], directory: str, with_raw: bool, early: list[Row]) -> list[str]:
    """Write the rows the reader parsed as Parquet parts; keep the others in ``early``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths: list[str] = []
    lines: list[int] = []
    sources: list[str] = []
    targets: list[str] = []
    raws: list[str] = []

    def flush() -> None:
        columns: dict[str, Any] = {
            "line": pa.array(lines, pa.int64()),
            "source": pa.array(sources, pa.string()),
            "target": pa.array(targets, pa.string()),
        }
        if with_raw:
            columns["raw"] = pa.array(raws, pa.string())
        path = os.path.join(directory, f"part-{len(paths):05d}.parquet")
        pq.write_table(pa.table(columns), path, compression="none")
        paths.append(path)
        for column in (lines, sources, targets, raws):
            column.clear()

    for row in rows:
        line, source, target, raw, problem = row
        if problem is not None:
            early.append(row)
            continue
        lines.append(line)
        sources.append(source)
        targets.append(target)
        if with_raw:
            raws.append(raw)
        if len(lines) >= STAGE_ROWS:
            flush()
    if lines or not paths:
        flush()
    return paths


def _results(table: Any, with_raw: bool) -> Iterator[Item]:
    columns = [table.column(name).to_pylist() for name in ("line", "source_original", "target_original")]
    raws = table.column("raw").to_pylist() if with_raw else [""] * table.num_rows
    reasons = table.column("reason").to_pylist()
    import pyarrow.compute as pc

    # a null canonical end of a valid row is its original (changed_only)
    canon_s = pc.coalesce(table.column("source"), table.column("source_original")).to_pylist()
    canon_t = pc.coalesce(table.column("target"), table.column("target_original")).to_pylist()
    yield from zip(columns[0], columns[1], columns[2], raws, reasons, canon_s, canon_t)


class _Dask:
    def __init__(self, workers: int) -> None:
        try:
            import pandas  # noqa: F401 - the tasks need it
            from distributed import Client, LocalCluster
        except ImportError:
            raise GraphError("--engine dask needs dask and distributed: pip install 'scrapy-iri[dask]'") from None
        self.workers = workers
        self.owned = True
        try:  # a client this process already has (a test, a notebook) is used, and left open
            from distributed import default_client

            self.client = default_client()
            self.cluster = None
            self.owned = False
            return
        except ValueError:
            pass
        self.cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        )
        self.client = Client(self.cluster)

    def run(self, paths: list[str], keep: tuple[str, ...], options: dict[str, Any]) -> Iterator[Any]:
        from ..dask import _stage_part

        window: deque[Any] = deque()
        pending = iter(paths)
        for path in pending:
            window.append(self.client.submit(_stage_part, path, keep, options, pure=False))
            if len(window) >= 2 * self.workers:
                break
        while window:
            future = window.popleft()
            table = future.result()
            future.release()
            nxt = next(pending, None)
            if nxt is not None:
                window.append(self.client.submit(_stage_part, nxt, keep, options, pure=False))
            yield table

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


def _quiet_spark() -> dict[str, str]:
    """Settings for the command's own session: a 2 GB driver, and only Spark's errors on stderr."""
    path = os.path.join(tempfile.gettempdir(), f"scrapy-iri-log4j2-{os.getuid()}.properties")
    with suppress(OSError):
        with open(path, "w", encoding="utf-8") as f:
            f.write(_LOG4J2)
    return {
        "spark.driver.memory": "2g",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{path}",
    }


class _Spark:
    def __init__(self, workers: int) -> None:
        try:
            from pyspark.sql import SparkSession

            from ..spark import session
        except ImportError:
            raise GraphError("--engine spark needs pyspark: pip install 'scrapy-iri[spark]'") from None
        self.workers = workers

        active = SparkSession.getActiveSession()
        self.owned = active is None  # a session this process already has is used, and left running
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                self.spark = active if active is not None else session(workers, **_quiet_spark())
            except Exception as exc:  # no Java, a JVM that did not start
                raise GraphError(f"--engine spark: Spark did not start (is a Java runtime installed?): {exc}") from None

    def run(self, paths: list[str], keep: tuple[str, ...], options: dict[str, Any]) -> Iterator[Any]:
        from ..spark import canonical_rows

        group = max(1, self.workers)  # parts per job: what the driver collects at a time
        for start in range(0, len(paths), group):
            df = self.spark.read.parquet(*paths[start : start + group])
            rows = canonical_rows(df, "source", "target", keep=keep, **options)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                table = rows.toArrow()
            yield table.sort_by("line")

    def close(self) -> None:
        if self.owned:
            with suppress(Exception):
                self.spark.stop()


def _merged(early: list[Row], tables: Iterator[Any], with_raw: bool) -> Iterator[Item]:
    """The engine's rows (tables in line order) with the reader's bad rows put back in their places."""
    pending = 0
    for table in tables:
        if not table.num_rows:
            continue
        last = table.column("line")[-1].as_py()
        if pending == len(early) or early[pending][0] > last:  # no bad row of the reader falls in this part
            yield from _results(table, with_raw)
            continue
        for item in _results(table, with_raw):
            while pending < len(early) and early[pending][0] < item[0]:
                yield (*early[pending], None, None)
                pending += 1
            yield item
    for row in early[pending:]:
        yield (*row, None, None)


def _guarded(engine: str, tables: Iterator[Any]) -> Iterator[Any]:
    """The engine's results; a failure of the engine (a worker lost, a store a worker cannot open) is fatal."""
    while True:
        try:
            table = next(tables)
        except StopIteration:
            return
        except GraphError:
            raise
        except Exception as exc:
            first = str(exc).strip().splitlines()
            raise GraphError(f"--engine {engine} failed: {type(exc).__name__}: {first[-1] if first else ''}") from exc
        yield table


def engine_items(
    engine: str,
    rows: Iterator[Row],
    *,
    workers: int | None,
    options: dict[str, Any],
    with_raw: bool,
    on_stage: Callable[[str], Any] | None = None,
) -> Iterator[Item]:
    """Every row of ``rows`` in input order, canonicalized on ``engine`` (bad rows with their reasons)."""
    from ._parquet import _pyarrow

    _pyarrow(f"--engine {engine}", engine)  # a clear error when pyarrow is missing
    workers = workers or os.cpu_count() or 1
    directory = tempfile.mkdtemp(prefix="scrapy-iri-graph-")
    runner: Any = None
    try:
        early: list[Row] = []
        paths = _stage(rows, directory, with_raw, early)
        if on_stage is not None:
            on_stage(f"read; canonicalizing on {engine} with {workers} worker{'s' if workers != 1 else ''}")
        runner = _Dask(workers) if engine == "dask" else _Spark(workers)
        keep = ("line", "raw") if with_raw else ("line",)
        options = {**options, "changed_only": True}
        yield from _merged(early, _guarded(engine, runner.run(paths, keep, options)), with_raw)
    finally:
        if runner is not None:
            runner.close()
        shutil.rmtree(directory, ignore_errors=True)
