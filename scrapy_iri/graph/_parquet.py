"""Parquet in and out: a file, or a directory of part files (pyarrow, ``scrapy-iri[arrow]``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

from ..errors import GraphError
from ._readers import Row, _columns

PART_ROWS = 1_000_000  # rows per part file of a Parquet directory OUT
_BATCH = 65_536


def _pyarrow(what: str = "Parquet", extra: str = "arrow") -> tuple[Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise GraphError(f"{what} needs pyarrow: pip install 'scrapy-iri[{extra}]'") from None
    return pa, pq


def is_parquet_name(name: str) -> bool:
    """Whether ``name`` names Parquet: ``*.parquet``, an existing directory, or a name ending in ``/``."""
    return name != "-" and (name.lower().endswith((".parquet", "/")) or os.path.isdir(name))


def part_files(name: str) -> list[str]:
    """The Parquet files of ``name``: itself, or a directory's ``*.parquet`` in name order."""
    if not os.path.isdir(name):
        return [name]
    files = sorted(
        entry.path
        for entry in os.scandir(name)
        if entry.is_file() and entry.name.lower().endswith(".parquet") and not entry.name.startswith(("_", "."))
    )
    if not files:
        raise GraphError(f"{name}: a directory without .parquet files")
    return files


def _csv_text(value: str | None) -> str:
    if value is None:
        return ""
    return '"' + value.replace('"', '""') + '"' if any(c in value for c in ',"\r\n') else value


def parquet_rows(name: str) -> tuple[str, Iterator[Row]]:
    """Rows of a Parquet file or directory: (row number from 1, source, target, CSV text, problem).

    The ``source`` and ``target`` columns are found as in a CSV header;
    they must hold strings. A null is a bad row. The header and the text of
    a row (for ``--bad-rows``) are CSV.
    """
    _, pq = _pyarrow()
    files = part_files(name)
    try:
        schema = pq.read_schema(files[0])
    except (OSError, ValueError) as exc:
        raise GraphError(f"{files[0]}: not a readable Parquet file: {exc}") from None
    si, ti = _columns(list(schema.names), name)
    columns = [schema.names[si], schema.names[ti]]
    for column in columns:
        kind = str(schema.field(column).type)
        if kind not in ("string", "large_string"):
            raise GraphError(f"{name}: column {column!r} holds {kind}, not strings")

    def rows() -> Iterator[Row]:
        number = 0
        for path in files:
            try:
                parquet = pq.ParquetFile(path)
                batches = parquet.iter_batches(batch_size=_BATCH, columns=columns)
                for batch in batches:
                    for source, target in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
                        number += 1
                        if source is not None and target is not None:
                            yield number, source, target, "", None
                            continue
                        raw = f"{_csv_text(source)},{_csv_text(target)}\n"
                        problems = [f"{end}: missing (null)" for end, v in (("source", source), ("target", target))
                                    if v is None]
                        yield number, source or "", target or "", raw, "; ".join(problems)
            except (OSError, ValueError, KeyError) as exc:  # ArrowInvalid is a ValueError
                raise GraphError(f"{path}: {exc}") from None

    return "source,target\n", rows()


def row_text(source: str, target: str) -> str:
    """A row of Parquet input as CSV text (for ``--bad-rows``)."""
    return f"{_csv_text(source)},{_csv_text(target)}\n"


class ParquetEdges:
    """Edges written as Parquet (``source``, ``target`` and any other columns): one file, or a directory of part files.

    Written under a temporary name next to OUT and renamed onto it by
    :meth:`commit`; :meth:`abort` removes it. An existing directory OUT must
    be empty (it is replaced); an existing file is replaced.
    """

    def __init__(self, name: str, columns: tuple[str, ...] = ("source", "target")) -> None:
        self.pa, self.pq = _pyarrow()
        self.name = name.rstrip("/") or name
        self.directory = name.endswith("/") or os.path.isdir(name)
        if self.directory and os.path.isdir(self.name) and os.listdir(self.name):
            raise GraphError(f"OUT {name} is a directory that is not empty: name a new or empty one")
        if not self.directory and os.path.isdir(self.name):
            raise GraphError(f"OUT {name} is a directory")
        parent = os.path.dirname(os.path.abspath(self.name))
        if not os.path.isdir(parent):
            raise FileNotFoundError(2, "No such file or directory", name)
        self.tmp = os.path.join(parent, f".{os.path.basename(self.name)}.{os.getpid()}.part")
        if self.directory:
            os.mkdir(self.tmp)
        self.schema = self.pa.schema([(column, self.pa.string()) for column in columns])
        self.writer: Any = None
        self.parts = 0
        self.in_part = 0
        self.rows: list[tuple[str, ...]] = []

    def write(self, *values: str) -> None:
        """One row: a value for each column."""
        self.rows.append(values)
        if len(self.rows) >= _BATCH:
            self._flush()

    def _flush(self) -> None:
        if not self.rows and self.writer is not None:
            return
        if self.writer is None:
            path = os.path.join(self.tmp, f"part-{self.parts:05d}.parquet") if self.directory else self.tmp
            self.writer = self.pq.ParquetWriter(path, self.schema, compression="zstd")
        names = self.schema.names
        columns = list(zip(*self.rows)) if self.rows else [() for _ in names]
        table = self.pa.table(dict(zip(names, columns)), schema=self.schema)
        self.writer.write_table(table)
        self.in_part += len(self.rows)
        self.rows = []
        if self.directory and self.in_part >= PART_ROWS:
            self.writer.close()
            self.writer = None
            self.parts += 1
            self.in_part = 0

    def commit(self) -> None:
        if self.rows or (self.writer is None and self.parts == 0):
            self._flush()
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        if self.directory and os.path.isdir(self.name):
            os.rmdir(self.name)  # empty, checked at the start
        os.replace(self.tmp, self.name)

    def abort(self) -> None:
        with suppress(Exception):
            if self.writer is not None:
                self.writer.close()
        if self.directory:
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            with suppress(OSError):
                os.unlink(self.tmp)
