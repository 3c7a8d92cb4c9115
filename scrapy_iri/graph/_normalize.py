"""Canonicalizing edges: GraphNormalizer, its node cache and compact edge de-duplication, the summary."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from hashlib import blake2b
from typing import Any

from .._ladder import Representatives, Rung
from ..errors import BadEdge, GraphError
from ._nodes import canonical_or_error, iri_form

DEFAULT_CACHE_SIZE = 250_000  # about 60 MB with URLs of typical length: see docs/graph.md


@dataclass
class GraphSummary:
    """What a run read and wrote. Nodes are counted over valid edges only."""

    edges_in: int = 0  # valid edges read
    edges_out: int = 0  # distinct canonical edges written
    nodes_in: int = 0  # distinct original node strings
    nodes_out: int = 0  # distinct canonical nodes
    aliases: int = 0  # distinct originals that differ from their canonical form
    bad_rows: int = 0
    seconds: float = 0.0
    skipped: Counter[str] = field(default_factory=Counter)  # archive records without links, by why

    @property
    def duplicate_edges(self) -> int:
        """Edges merged into an earlier one (after canonicalization)."""
        return self.edges_in - self.edges_out

    @property
    def nodes_merged(self) -> int:
        """Distinct originals that collapsed into another one's canonical form."""
        return self.nodes_in - self.nodes_out

    @property
    def rows(self) -> int:
        return self.edges_in + self.bad_rows


FORMS = ("uri", "iri")


class _Node:
    """A cached canonical form (and its CSV field), or why there is none; ``number`` once counted."""

    __slots__ = ("canon", "error", "field", "number", "shown")

    def __init__(self, canon: str | None, error: str | None = None, shown: str | None = None) -> None:
        self.canon = canon
        self.error = error
        self.shown = shown or canon  # as written out: the canonical URI, or its IRI form
        self.field = canon if canon is None else _csv_field(self.shown)  # type: ignore[arg-type]
        self.number: int | None = None


_NEEDS_QUOTES = re.compile(r'[,"\r\n]')


def _csv_field(text: str) -> str:
    """``text`` as a CSV field: quoted when it holds a comma, a quote or a line break
    (``csv.writer`` would leave a lone CR unquoted with a ``\\n`` line terminator)."""
    return '"' + text.replace('"', '""') + '"' if _NEEDS_QUOTES.search(text) else text


def _digest(text: str) -> bytes:
    return blake2b(text.encode("utf-8"), digest_size=16).digest()


class GraphNormalizer:
    """Canonicalizes edges one at a time and remembers which it has seen.

    ``add(source, target)`` returns the canonical edge the first time it is
    seen and ``None`` for a duplicate; it raises :class:`BadEdge` when an end
    is not a valid absolute IRI. Defaults suit collected link graphs: the
    scheme rung, fragments dropped (they name no separate resource), lenient
    input (3987bis sec. 7, which never changes a valid IRI). ``on_alias`` is
    called once per distinct original that differs from its canonical form.
    ``form="iri"`` writes the nodes of file outputs in IRI form (3987bis 3.7);
    edges are merged on the canonical URI either way.
    """

    def __init__(
        self,
        rung: Rung | str = Rung.SCHEME,
        *,
        keep_fragment: bool = False,
        lenient: bool = True,
        store: Representatives | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        on_alias: Callable[[str, str], Any] | None = None,
        form: str = "uri",
        lookup: Callable[[str], tuple[str | None, str | None]] | None = None,
    ) -> None:
        self.rung = level = Rung.parse(rung)
        if form not in FORMS:
            raise ValueError(f"form must be one of {', '.join(FORMS)}, not {form!r}")
        show = iri_form if form == "iri" else None
        if level is Rung.PROTOCOL and store is None and lookup is None:
            raise ValueError("the protocol rung needs an equivalence store: pass store=")
        self.on_alias = on_alias
        self.edges_in = 0
        self.bad_rows = 0
        self.aliases = 0
        self._edges: set[int] = set()  # node number pairs: source << 32 | target
        self._nodes_in: set[bytes] = set()  # digests of the originals
        self._numbers: dict[bytes, int] = {}  # digest of a canonical form -> its node number
        self._show = show

        if lookup is None:

            def lookup(raw: str) -> tuple[str | None, str | None]:
                return canonical_or_error(raw, level, keep_fragment, lenient, store)

        def compute(raw: str) -> _Node:
            return self.node(*lookup(raw))

        self._lookup = lru_cache(maxsize=cache_size)(compute) if cache_size > 0 else compute

    def node(self, canon: str | None, error: str | None = None) -> _Node:
        """A node: its canonical form ``canon`` (as it is written out), or ``error`` when it has none."""
        show = self._show
        return _Node(canon, error, show(canon) if show is not None and canon is not None else None)

    def node_of(self, raw: str) -> _Node:
        """The node of an original, as :meth:`add_edge` looks it up (through the cache)."""
        return self._lookup(raw)

    def add(self, source: str, target: str) -> tuple[str, str] | None:
        pair = self.add_edge(source, target)
        return None if pair is None else (pair[0].canon, pair[1].canon)  # type: ignore[return-value]

    def add_edge(self, source: str, target: str) -> tuple[_Node, _Node] | None:
        """:meth:`add`, giving the nodes (the canonical forms as written out)."""
        return self.add_nodes(source, target, self._lookup(source), self._lookup(target))

    def add_nodes(self, source: str, target: str, s: _Node, t: _Node) -> tuple[_Node, _Node] | None:
        """:meth:`add_edge` for ends whose nodes were made elsewhere (an engine), with :meth:`node`."""
        first, second = s.number, t.number
        if first is None or second is None:  # a bad node, or a cache entry not counted yet
            if s.canon is None or t.canon is None:
                self.bad_rows += 1
                problems = [f"{end}: {node.error}" for end, node in (("source", s), ("target", t)) if node.error]
                raise BadEdge("; ".join(problems))
            if first is None:
                first = self._count(source, s)
            if second is None:
                second = self._count(target, t)
        self.edges_in += 1
        edges = self._edges
        size = len(edges)
        edges.add(first << 32 | second)
        return None if len(edges) == size else (s, t)

    def _count(self, raw: str, node: _Node) -> int:
        """The node number of a cache entry's canonical form, at its first use in a
        valid edge (again after an eviction); counts the original and its alias."""
        canon = node.canon
        assert canon is not None
        key = _digest(canon)
        numbers = self._numbers
        number = numbers.get(key)
        if number is None:
            number = len(numbers)
            if number >> 32:
                raise GraphError("more than 2**32 distinct nodes")
            numbers[key] = number
        node.number = number
        if canon != raw:
            key = _digest(raw)
        if key not in self._nodes_in:
            self._nodes_in.add(key)
            if canon != raw:
                self.aliases += 1
                if self.on_alias is not None:
                    self.on_alias(raw, canon)
        return number

    def normalize(
        self, edges: Iterable[tuple[str, str]], on_bad: Callable[[int, str, str, str], Any] | None = None
    ) -> Iterator[tuple[str, str]]:
        """The distinct canonical edges, first-seen order. A bad edge goes to
        ``on_bad(index, source, target, reason)`` (0-based index) or raises :class:`BadEdge`."""
        for index, (source, target) in enumerate(edges):
            try:
                edge = self.add(source, target)
            except BadEdge as exc:
                if on_bad is None:
                    raise
                on_bad(index, source, target, str(exc))
                continue
            if edge is not None:
                yield edge

    def summary(self, seconds: float = 0.0) -> GraphSummary:
        return GraphSummary(
            self.edges_in,
            len(self._edges),
            len(self._nodes_in),
            len(self._numbers),
            self.aliases,
            self.bad_rows,
            seconds,
        )


def normalize_graph(
    edges: Iterable[tuple[str, str]],
    rung: Rung | str = Rung.SCHEME,
    *,
    keep_fragment: bool = False,
    lenient: bool = True,
    store: Representatives | None = None,
    cache_size: int = DEFAULT_CACHE_SIZE,
    on_bad: Callable[[int, str, str, str], Any] | None = None,
    on_alias: Callable[[str, str], Any] | None = None,
) -> Iterator[tuple[str, str]]:
    """Stream the distinct canonical edges of ``edges`` (see :class:`GraphNormalizer`)."""
    normalizer = GraphNormalizer(
        rung, keep_fragment=keep_fragment, lenient=lenient, store=store, cache_size=cache_size, on_alias=on_alias
    )
    return normalizer.normalize(edges, on_bad)


