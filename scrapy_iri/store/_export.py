"""The resolved alias table, for joins in graph pipelines: ``(alias, representative)`` rows in Parquet."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._learner import EquivalenceStore, StoreError

#: rows per Parquet row group
BATCH = 100_000


def resolved_aliases(store: EquivalenceStore) -> Iterator[tuple[str, str]]:
    """``(alias, representative)`` for every exact alias that merges (a loop or an over-long chain does not)."""
    for alias in store.aliases():
        representative = store.representative(alias.source)
        if representative != alias.source:
            yield alias.source, representative


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise StoreError("Parquet output needs pyarrow: pip install 'scrapy-iri[arrow]'") from None
    return pyarrow, pyarrow.parquet


def write_parquet(store: EquivalenceStore, path: str | Path) -> int:
    """Write the resolved alias table to a Parquet file at ``path`` (two string columns); returns the rows."""
    pa, pq = _pyarrow()
    schema = pa.schema([("alias", pa.string()), ("representative", pa.string())])
    tmp = Path(f"{path}.tmp")
    rows = 0
    try:
        with pq.ParquetWriter(str(tmp), schema) as writer:
            aliases: list[str] = []
            representatives: list[str] = []
            for alias, representative in resolved_aliases(store):
                aliases.append(alias)
                representatives.append(representative)
                if len(aliases) >= BATCH:
                    writer.write_batch(pa.record_batch([aliases, representatives], schema=schema))
                    rows += len(aliases)
                    aliases, representatives = [], []
            if aliases or not rows:
                writer.write_batch(pa.record_batch([aliases, representatives], schema=schema))
                rows += len(aliases)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    return rows
