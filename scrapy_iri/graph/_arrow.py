"""The batch kernel: canonicalize Arrow string columns and normalize batches of edges.

Everything here is a module-level function, so that Spark, Dask and Ray
ship it to their workers by reference (the worker imports ``scrapy_iri``).
Each worker process keeps its own bounded cache of canonical forms, and
opens a store named by URI once (read only: the kernel never records) for
the protocol rung. An exported alias table (columns ``alias`` and
``representative``, a :class:`pyarrow.Table` or the path of a Parquet or
CSV file) can stand in for a store: it is joined on the scheme-rung
canonical form, read once per worker.

Needs ``pyarrow`` (``pip install scrapy-iri[arrow]``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import pyarrow as pa

from .._ladder import Representatives, Rung
from ..errors import GraphError
from ._nodes import canonical_or_error, iri_form

__all__ = [
    "CACHE_SIZE",
    "alias_table",
    "canonicalize_array",
    "canonicalize_edges",
    "normalize_batch",
    "split_rows",
    "worker_store",
]

CACHE_SIZE = 250_000
"""Canonical forms cached per worker process and configuration (an LRU)."""

_STORES: dict[str, Representatives] = {}
_TABLES: dict[tuple[str, int, int], _AliasTable] = {}
_KERNELS: dict[tuple[Any, ...], Callable[[str | None], tuple[str | None, str | None]]] = {}
_HELD: dict[int, Any] = {}  # the objects whose id() is in a kernel's key: held, so no other takes that id
_MAX_KERNELS = 16


class _AliasTable:
    """An alias table as a store: the representative of a scheme form, or the form itself."""

    def __init__(self, table: pa.Table) -> None:
        names = table.column_names
        if "alias" not in names or "representative" not in names:
            raise GraphError(f"an alias table needs 'alias' and 'representative' columns, not {names}")
        aliases = table.column("alias").to_pylist()
        representatives = table.column("representative").to_pylist()
        self.map = {a: r for a, r in zip(aliases, representatives) if a is not None and r is not None}

    def representative(self, url: str) -> str:
        base, sep, fragment = url.partition("#")
        found = self.map.get(base)
        return url if found is None else found + sep + fragment


def worker_store(uri: str) -> Representatives:
    """The store at ``uri``, opened once per process and never created (a mistyped path is an error)."""
    store = _STORES.get(uri)
    if store is None:
        from ..store import open_store

        try:
            store = open_store(uri, create=False)
        except (ValueError, OSError) as exc:
            raise GraphError(f"store {uri}: {exc}") from None
        _STORES[uri] = store
    return store


def _read_table(path: str) -> pa.Table:
    if path.lower().endswith((".csv", ".csv.gz")):
        from pyarrow import csv

        options = csv.ConvertOptions(column_types={"alias": pa.string(), "representative": pa.string()})
        return csv.read_csv(path, convert_options=options)
    import pyarrow.parquet as pq

    return pq.read_table(path, columns=["alias", "representative"])


def _alias_lookup(aliases: Any) -> tuple[Any, _AliasTable]:
    """A cache key and the lookup for an alias table given as a table or a path."""
    if isinstance(aliases, pa.Table):
        _HELD[id(aliases)] = aliases
        return ("table", id(aliases)), _AliasTable(aliases)
    path = os.fspath(aliases)
    info = os.stat(path)
    key = (path, info.st_mtime_ns, info.st_size)
    table = _TABLES.get(key)
    if table is None:
        table = _TABLES[key] = _AliasTable(_read_table(path))
    return key, table


def alias_table(store: Representatives | str) -> pa.Table:
    """Every exact alias of ``store`` (an open store or a URI) with its representative, as a table.

    Rules the store has learned are not in it: a table covers the aliases
    seen; a store covers those and what its rules predict.
    """
    opened = worker_store(store) if isinstance(store, str) else store
    aliases = sorted({alias.source for alias in opened.aliases()})
    return pa.table(
        {
            "alias": pa.array(aliases, pa.string()),
            "representative": pa.array([opened.representative(a) for a in aliases], pa.string()),
        }
    )


def _identity(raw: Any) -> tuple[str | None, str | None]:
    return (raw, None) if type(raw) is str else (None, "not a string")


def _kernel(
    rung: Rung,
    keep_fragment: bool,
    lenient: bool,
    store: Any,
    aliases: Any,
    cache_size: int,
    identity: bool = False,
) -> Callable[[str | None], tuple[str | None, str | None]]:
    """A cached function from one string to (canonical form, error), per configuration."""
    if identity:
        return _identity
    opened: Representatives | None = None
    store_key: Any = None
    if aliases is not None:
        store_key, opened = _alias_lookup(aliases)
    elif isinstance(store, str):
        store_key, opened = store, worker_store(store)
    elif store is not None:
        store_key = getattr(store, "cache_key", None)
        if store_key is None:
            _HELD[id(store)] = store
            store_key = ("object", id(store))
        opened = store
    if rung is Rung.PROTOCOL and opened is None:
        raise ValueError("the protocol rung needs a store URI (store=) or an alias table (aliases=)")
    if rung is not Rung.PROTOCOL:
        opened, store_key = None, None
    key = (rung, keep_fragment, lenient, store_key, cache_size)
    found = _KERNELS.get(key)
    if found is None:
        if len(_KERNELS) >= _MAX_KERNELS:
            _KERNELS.clear()
            _HELD.clear()
            if store_key is not None and not isinstance(store_key, str) and store_key[0] in ("table", "object"):
                _HELD[store_key[1]] = aliases if store_key[0] == "table" else store

        def one(raw: Any) -> tuple[str | None, str | None]:
            return canonical_or_error(raw, rung, keep_fragment, lenient, opened)

        if cache_size > 0:
            cached = lru_cache(maxsize=cache_size)(one)

            def found(raw: Any) -> tuple[str | None, str | None]:
                return cached(raw) if type(raw) is str else one(raw)

        else:
            found = one
        _KERNELS[key] = found
    return found


def kernel_of(options: dict[str, Any], cache_size: int | None = None) -> Callable[[Any], tuple[str | None, str | None]]:
    """:func:`_kernel` for the keyword options of :func:`canonicalize_edges` (``cache_size`` overrides theirs)."""
    return _kernel(
        Rung.parse(options.get("rung", Rung.SCHEME)), bool(options.get("keep_fragment", False)),
        bool(options.get("lenient", True)), options.get("store"), options.get("aliases"),
        int(options.get("cache_size", CACHE_SIZE) if cache_size is None else cache_size),
        bool(options.get("identity", False)),
    )


def canonicalize_array(
    array: pa.Array | pa.ChunkedArray | Sequence[str | None],
    rung: Rung | str = Rung.SCHEME,
    *,
    keep_fragment: bool = True,
    lenient: bool = False,
    store: Any = None,
    aliases: Any = None,
    form: str = "uri",
    cache_size: int = CACHE_SIZE,
) -> tuple[pa.StringArray, pa.StringArray]:
    """(canonical, error): ``canonicalize`` over a string array.

    ``canonical`` holds each value's canonical form at ``rung`` (null when it
    has none); ``error`` the reason it has none (the :class:`IRIError`
    message, ``empty`` or ``missing (null)``), null when it is valid. The
    options and their defaults are :func:`scrapy_iri.canonicalize`'s; the
    protocol rung takes a store URI (``store=``, opened once per process)
    or an alias table (``aliases=``). ``form="iri"`` gives the canonical
    column in IRI form (3987bis 3.7).
    """
    if form not in ("uri", "iri"):
        raise ValueError(f"form must be 'uri' or 'iri', not {form!r}")
    level = Rung.parse(rung)
    one = _kernel(level, bool(keep_fragment), bool(lenient), store, aliases, cache_size)
    if not isinstance(array, (pa.Array, pa.ChunkedArray)):
        array = pa.array(array, pa.string())
    if form == "iri":
        plain = one

        def one(raw: Any) -> tuple[str | None, str | None]:
            value, error = plain(raw)
            return (None if value is None else iri_form(value)), error

    return _forms(one, _string_array(array))


def canonicalize_edges(
    batch: pa.RecordBatch | pa.Table,
    source: str = "source",
    target: str = "target",
    *,
    rung: Rung | str = Rung.SCHEME,
    keep_fragment: bool = False,
    lenient: bool = True,
    store: Any = None,
    aliases: Any = None,
    keep: Sequence[str] = (),
    cache_size: int = CACHE_SIZE,
    identity: bool = False,
    changed_only: bool = False,
) -> pa.Table:
    """Every row of a batch of edges, canonicalized; nothing is dropped or de-duplicated.

    Columns: the ``keep`` columns (a row number, say), the canonical
    ``source`` and ``target`` (null in a bad row), the originals as
    ``source_original`` and ``target_original`` (named after the input
    columns), and ``reason``: null for a valid edge, else why it is bad
    (``source: ...; target: ...``, as :class:`scrapy_iri.graph.BadEdge`
    says it). Defaults are the graph command's: fragments dropped, lenient input.
    ``identity=True`` passes every string through unchanged: the same job
    without canonicalization, to measure what an engine itself costs.
    ``changed_only=True`` leaves a canonical end null where it equals the
    original, which makes the result smaller to move (a valid row is one
    whose ``reason`` is null).
    """
    table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    one = _kernel(Rung.parse(rung), bool(keep_fragment), bool(lenient), store, aliases, cache_size, identity)
    keep_columns = {name: table.column(name) for name in keep}
    return _arrow_rows(
        one, _string_array(table.column(source)), _string_array(table.column(target)), source, target, keep_columns,
        changed_only,
    )


def _value_forms(values: pa.Array, options: dict[str, Any]) -> tuple[pa.Array, pa.Array]:
    """(canonical, error) of distinct values, with ``canonicalize_edges``'s options.

    A canonical form equal to its value is null (``changed_only``): it
    travels back as nothing. The values are distinct already, so the
    worker keeps no cache of them.
    """
    import pyarrow.compute as pc

    one = kernel_of(options, cache_size=0)
    values = _string_array(values)
    canon, error = _forms(one, values)
    return pc.if_else(pc.equal(canon, values), pa.scalar(None, pa.string()), canon), error


def _string_array(array: Any) -> pa.Array:
    """One Arrow array of type string (chunks combined, large strings cast)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        raise TypeError(f"expected a string array, not {array.type}")
    return array.cast(pa.string()) if pa.types.is_large_string(array.type) else array


def _forms(one: Callable[[Any], tuple[str | None, str | None]], array: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(canonical, error) for a string array; the kernel runs once per distinct value of the array."""
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(array)
    forms = [one(value) for value in encoded.dictionary.to_pylist()]
    indices = encoded.indices
    canon = pa.array([form[0] for form in forms], pa.string()).take(indices)
    error = pa.array([form[1] for form in forms], pa.string()).take(indices)
    if array.null_count:
        error = pc.if_else(pc.is_null(array), pa.scalar("missing (null)", pa.string()), error)
    return canon, error


def _arrow_rows(
    one: Callable[[Any], tuple[str | None, str | None]],
    sources: pa.Array,
    targets: pa.Array,
    source: str,
    target: str,
    keep_columns: dict[str, Any],
    changed_only: bool = False,
) -> pa.Table:
    """:func:`_rows` on Arrow arrays, vectorized: Python runs once per distinct value, not per row."""
    import pyarrow.compute as pc

    s, s_error = _forms(one, sources)
    t, t_error = _forms(one, targets)
    valid = pc.and_(pc.is_null(s_error), pc.is_null(t_error))
    nothing = pa.scalar(None, pa.string())
    if changed_only:
        s = pc.if_else(pc.equal(s, sources), nothing, s)
        t = pc.if_else(pc.equal(t, targets), nothing, t)
    s = pc.if_else(valid, s, nothing)
    t = pc.if_else(valid, t, nothing)
    reasons: list[str | None] = [None] * len(sources)
    bad = pc.indices_nonzero(pc.invert(valid))
    if len(bad):
        whys = zip(bad.to_pylist(), s_error.take(bad).to_pylist(), t_error.take(bad).to_pylist())
        for index, s_why, t_why in whys:
            problems = [f"{end}: {why}" for end, why in (("source", s_why), ("target", t_why)) if why]
            reasons[index] = "; ".join(problems)
    columns: dict[str, Any] = dict(keep_columns)
    columns[source] = s
    columns[target] = t
    columns[f"{source}_original"] = sources
    columns[f"{target}_original"] = targets
    columns["reason"] = pa.array(reasons, pa.string())
    return pa.table(columns)


def _rows(
    one: Callable[[Any], tuple[str | None, str | None]],
    sources: list[Any],
    targets: list[Any],
    source: str,
    target: str,
    keep_columns: dict[str, Any],
    changed_only: bool = False,
) -> pa.Table:
    out_s: list[str | None] = []
    out_t: list[str | None] = []
    reasons: list[str | None] = []
    add_s, add_t, add_reason = out_s.append, out_t.append, reasons.append
    for raw_s, raw_t in zip(sources, targets):
        s, s_error = one(raw_s)
        t, t_error = one(raw_t)
        if s_error is None and t_error is None:
            if changed_only:
                add_s(None if s == raw_s else s)
                add_t(None if t == raw_t else t)
            else:
                add_s(s)
                add_t(t)
            add_reason(None)
        else:
            add_s(None)
            add_t(None)
            problems = [f"{end}: {why}" for end, why in (("source", s_error), ("target", t_error)) if why]
            add_reason("; ".join(problems))
    columns: dict[str, Any] = dict(keep_columns)
    columns[source] = pa.array(out_s, pa.string())
    columns[target] = pa.array(out_t, pa.string())
    columns[f"{source}_original"] = pa.array(_texts(sources), pa.string())
    columns[f"{target}_original"] = pa.array(_texts(targets), pa.string())
    columns["reason"] = pa.array(reasons, pa.string())
    return pa.table(columns)


def _texts(values: list[Any]) -> list[str | None]:
    """Originals as text for the output: a value that is not a string is shown as its ``str``."""
    return [v if v is None or type(v) is str else str(v) for v in values]


def normalize_batch(
    batch: pa.RecordBatch | pa.Table, source: str = "source", target: str = "target", **options: Any
) -> tuple[pa.Table, pa.Table]:
    """(edges, bad_rows) of one batch of edges; not de-duplicated. ``options`` are
    :func:`canonicalize_edges`'s (``rung``, ``keep_fragment``, ``lenient``, ``store``, ``aliases``,
    ``keep``, ``cache_size``).

    ``edges`` has the canonical ``source`` and ``target`` of every valid row
    and the ``keep`` columns; ``bad_rows`` the original ``source`` and
    ``target``, the ``keep`` columns and ``reason``.
    """
    rows = canonicalize_edges(batch, source, target, **options)
    keep = options.get("keep", ())
    return split_rows(rows, source, target, keep)


def split_rows(rows: pa.Table, source: str, target: str, keep: Sequence[str] = ()) -> tuple[pa.Table, pa.Table]:
    """(edges, bad_rows) from the rows :func:`canonicalize_edges` gives."""
    import pyarrow.compute as pc

    valid = pc.is_null(rows.column("reason"))
    edges = rows.filter(valid).select([source, target, *keep])
    bad = rows.filter(pc.invert(valid))
    bad = pa.table(
        {
            source: bad.column(f"{source}_original"),
            target: bad.column(f"{target}_original"),
            **{name: bad.column(name) for name in keep},
            "reason": bad.column("reason"),
        }
    )
    return edges, bad
