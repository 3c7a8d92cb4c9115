"""Link graphs on Spark: :func:`normalize_graph` over a DataFrame of edges, through ``mapInArrow``.

Each partition goes through the batch kernel (:mod:`scrapy_iri.arrow`) in
a Python worker, which imports ``scrapy_iri``: every executor's Python
needs the package (``pip install scrapy-iri[spark]``) and a Java runtime
runs Spark itself. :func:`session` starts a local session whose workers
run the current interpreter when ``PYSPARK_PYTHON`` is unset.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import pyarrow as pa

from .._ladder import Rung
from ._arrow import CACHE_SIZE, _value_forms, canonicalize_edges

__all__ = ["archive_rows", "normalize_graph", "session"]


def session(workers: int | None = None, *, app_name: str = "scrapy-iri", **conf: str) -> Any:
    """A local Spark session (``local[workers]``, all cores by default); ``conf`` goes to the builder.

    When ``PYSPARK_PYTHON`` is unset, it is set to this interpreter, so the
    workers find the package this process imported.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(f"local[{workers or '*'}]").appName(app_name)
    settings = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": str(max(2, 2 * (workers or os.cpu_count() or 2))),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.ui.showConsoleProgress": "false",
        **conf,
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _batches(
    batches: Iterator[pa.RecordBatch], source: str, target: str, keep: Sequence[str], options: dict[str, Any]
) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        if batch.num_rows:
            yield from canonicalize_edges(batch, source, target, keep=keep, **options).to_batches()


def _value_batches(batches: Iterator[pa.RecordBatch], options: dict[str, Any]) -> Iterator[pa.RecordBatch]:
    """Batches of distinct values (column ``value``) with their ``canonical`` form and ``error``."""
    for batch in batches:
        if batch.num_rows:
            values = batch.column(0)
            canon, error = _value_forms(values, options)
            yield pa.RecordBatch.from_arrays([values, canon, error], ["value", "canonical", "error"])


def _value_job(spark: Any, values: pa.Array, options: dict[str, Any]) -> pa.Table:
    """The ``graph --engine spark`` job: distinct values, canonicalized on ``spark`` (columns of :func:`_value_batches`)."""
    df = spark.createDataFrame(pa.table({"value": values}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return df.mapInArrow(
            partial(_value_batches, options=options), "value string, canonical string, error string"
        ).toArrow()


def _task(spark: Any, function: Any, args: tuple[Any, ...]) -> Any:
    """``function(*args)`` in a Python worker of ``spark``: a job of one task."""
    return spark.sparkContext.parallelize([args], 1).map(lambda given: function(*given)).collect()[0]


def archive_rows(
    spark: Any,
    *names: str,
    rung: Rung | str = Rung.SCHEME,
    store: Any = None,
    learned: str | None = None,
    redirects: str = "skip",
    keep_fragment: bool = False,
    lenient: bool = True,
    piece_bytes: int | None = None,
) -> Any:
    """Every link row of the web archives ``names`` (files, directories, globs), read, parsed and
    canonicalized by Spark's Python workers, one task per piece: a DataFrame of
    :data:`scrapy_iri.graph.ROW_COLUMNS`, nothing de-duplicated (``reason`` null in a good row).

    The protocol rung takes ``store`` (a URI every worker can open); without
    one, a first job collects the archives' captures and this process learns
    them, in date order, into the SQLite file ``learned`` (a ``sqlite:`` URI
    of a new file every worker can read; a temporary file by default, which
    suits a local session), as ``scrapy-iri graph --rung protocol`` does; the bad records and captures it
    cannot learn come first, as bad rows (a record the link pass finds bad too may be there twice).
    """
    from pyspark.sql.types import StringType, StructField, StructType

    from ._revisits import Originals
    from ._split import ROW_COLUMNS, archive_pieces, learn_captures, piece_learning, piece_rows

    found = archive_pieces(*names, piece_bytes=piece_bytes)
    context = spark.sparkContext
    rejected: list[tuple[str | None, ...]] = []  # what the first pass cannot learn: bad rows of their own
    if Rung.parse(rung) is Rung.PROTOCOL and store is None:
        learned_pieces = context.parallelize(found, len(found)).map(piece_learning).collect()
        captures = [capture for got, _ in learned_pieces for capture in got]
        rejected = [(None, None, "", "", "", "", where, why) for _, bad in learned_pieces for where, why in bad]
        if learned is None:
            import tempfile

            learned = "sqlite:///" + os.path.join(tempfile.mkdtemp(prefix="scrapy-iri-learned-"), "learned.sqlite")
        store = learn_captures(captures, learned)
    originals = Originals(list(dict.fromkeys(piece.location for piece in found)))
    rows = context.parallelize(found, len(found)).flatMap(
        partial(piece_rows, rung=rung, store=store, redirects=redirects, keep_fragment=keep_fragment, lenient=lenient,
                originals=originals)
    )
    if rejected:
        rows = context.parallelize(rejected, 1).union(rows)
    return spark.createDataFrame(rows, StructType([StructField(name, StringType(), True) for name in ROW_COLUMNS]))


def rows_schema(df: Any, source: str, target: str, keep: Sequence[str]) -> Any:
    """The schema of :func:`scrapy_iri.arrow.canonicalize_edges`'s rows for ``df``."""
    from pyspark.sql.types import StringType, StructField, StructType

    fields = [df.schema[name] for name in keep]
    for name in (source, target, f"{source}_original", f"{target}_original", "reason"):
        fields.append(StructField(name, StringType(), True))
    return StructType(fields)


def canonical_rows(
    df: Any,
    source: str = "source",
    target: str = "target",
    *,
    rung: Rung | str = Rung.SCHEME,
    keep_fragment: bool = False,
    lenient: bool = True,
    store: str | None = None,
    aliases: Any = None,
    keep: Sequence[str] = (),
    cache_size: int = CACHE_SIZE,
    identity: bool = False,
    changed_only: bool = False,
) -> Any:
    """Every row of ``df`` canonicalized (the columns of :func:`scrapy_iri.arrow.canonicalize_edges`)."""
    options = dict(
        rung=Rung.parse(rung), keep_fragment=keep_fragment, lenient=lenient, store=store, aliases=aliases,
        cache_size=cache_size, identity=identity, changed_only=changed_only,
    )
    keep = tuple(keep)
    from pyspark.sql import functions as F

    selected = df.select(*keep, F.col(source).cast("string"), F.col(target).cast("string"))
    with warnings.catch_warnings():  # PySpark's note on the pandas version: mapInArrow uses no pandas
        warnings.simplefilter("ignore", FutureWarning)
        return selected.mapInArrow(
            partial(_batches, source=source, target=target, keep=keep, options=options),
            rows_schema(df, source, target, keep),
        )


def normalize_graph(df: Any, source: str = "source", target: str = "target", **options: Any) -> tuple[Any, Any]:
    """(edges, bad_rows), two lazy Spark DataFrames; ``options`` are :func:`canonical_rows`'s
    (``rung``, ``keep_fragment``, ``lenient``, ``store``, ``aliases``, ``keep``, ``cache_size``).

    ``edges`` holds each distinct canonical edge once (``source`` and
    ``target``, named as in ``df``); ``bad_rows`` every row with an end that
    is not a valid IRI: its original ends, the ``keep`` columns and
    ``reason``. The protocol rung takes ``store``, a store URI each Python
    worker opens once, or ``aliases``, the path of an alias table in
    Parquet that every worker can read. Cache ``df`` (or the rows) when you
    use both results, or the kernel runs twice.
    """
    from pyspark.sql import functions as F

    rows = canonical_rows(df, source, target, **options)
    keep = tuple(options.get("keep", ()))
    edges = rows.where(F.col("reason").isNull()).select(source, target).dropDuplicates()
    bad = rows.where(F.col("reason").isNotNull()).select(
        F.col(f"{source}_original").alias(source), F.col(f"{target}_original").alias(target), *keep, "reason"
    )
    return edges, bad
