"""Link graphs on Dask: :func:`normalize_graph` over a Dask DataFrame of edges.

Each partition goes through the batch kernel (:mod:`scrapy_iri.arrow`) in a
worker; the worker imports ``scrapy_iri``, so every worker's environment
needs the package (``pip install scrapy-iri[dask]``). Needs ``dask``,
``distributed`` (for a cluster), ``pandas`` and ``pyarrow``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from .._ladder import Rung
from ._arrow import _arrow_rows, _rows, kernel_of

__all__ = ["normalize_graph"]


def _values(values: pd.Series) -> list[Any]:
    """A pandas column as Python values, every missing value (None, NaN, NA) as None."""
    return [None if v is None or v is pd.NA or (type(v) is float and v != v) else v for v in values.tolist()]


def _partition(
    frame: pd.DataFrame, source: str, target: str, keep: Sequence[str], options: dict[str, Any]
) -> pd.DataFrame:
    one = kernel_of(options)
    keep_columns = {name: pa.Array.from_pandas(frame[name]) for name in keep}
    sources, targets = _values(frame[source]), _values(frame[target])
    try:  # strings and missing values only: the vectorized kernel
        rows = _arrow_rows(one, pa.array(sources, pa.string()), pa.array(targets, pa.string()), source, target,
                           keep_columns)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # other values too: each is judged (and reported) on its own
        rows = _rows(one, sources, targets, source, target, keep_columns)
    return rows.to_pandas(types_mapper={pa.string(): pd.StringDtype("pyarrow")}.get)


_OPTIONS = ("rung", "keep_fragment", "lenient", "store", "aliases", "cache_size")


def normalize_graph(ddf: Any, source: str = "source", target: str = "target", **options: Any) -> tuple[Any, Any]:
    """(edges, bad_rows), two lazy Dask DataFrames; ``options`` are those of
    :func:`scrapy_iri.arrow.normalize_batch` (``rung``, ``keep_fragment``, ``lenient``, ``store``,
    ``aliases``, ``keep``, ``cache_size``), with its defaults.

    ``edges`` holds each distinct canonical edge once (columns ``source``
    and ``target``, named as in ``ddf``); ``bad_rows`` every row with an end
    that is not a valid IRI: its original ends, the ``keep`` columns and
    ``reason``. Nothing is dropped silently. The protocol rung takes
    ``store``, a store URI each worker opens once, or ``aliases``, an
    alias table (the path of a Parquet file, read once per worker; a
    :class:`pyarrow.Table` is shipped with every task). Compute both in
    one ``dask.compute(edges, bad_rows)`` so the kernel runs once.
    """
    keep = options.pop("keep", ())
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise TypeError(f"normalize_graph() got unexpected keyword arguments: {', '.join(unknown)}")
    options["rung"] = Rung.parse(options.get("rung", Rung.SCHEME))
    keep = tuple(keep)
    empty = ddf._meta if hasattr(ddf, "_meta") else ddf.head(0)
    meta = _partition(empty.iloc[:0], source, target, keep, options)
    rows = ddf.map_partitions(_partition, source, target, keep, options, meta=meta)
    valid = rows["reason"].isna()
    edges = rows[valid][[source, target]].drop_duplicates()
    bad = rows[~valid][[f"{source}_original", f"{target}_original", *keep, "reason"]]
    bad = bad.rename(columns={f"{source}_original": source, f"{target}_original": target})
    return edges, bad
