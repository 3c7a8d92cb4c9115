"""The backend port: what a backend translates into its own commands, per record kind, many keys at once.

A :class:`StoragePort` reads what is stored (committed) now, nothing a
process still holds; it keeps no cache. Every read takes many keys and
answers for each of them, or answers ``None`` as a whole when the backend
cannot be read now (a locked file, an unreachable server): the caller then
answers "unknown", which merges nothing. :meth:`StoragePort.read` makes
the reads of several kinds at once (one round trip where the backend has
round trips); the single-kind reads are its parts.

The layers above it are written once (see :mod:`._cached`): the bounded
caches of what was read, with the writes not yet committed over them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ._evidence import Alias, Evidence
from ._filter import KeyFilter
from ._rules import BLOCK, RuleKey, RuleRecord

#: the case-only aliases of a case key: source -> (time, target)
CaseAliases = dict[str, tuple[float, str]]


@dataclass
class Reads:
    """What to read at once: aliases (with their targets' aliases when ``follow``), cases, fan-in
    (up to ``cap`` sources of each target), single rule records, the records in force of origins
    (support ``floor`` or more, or the origin's block), every record of origins, and which of
    ``sinks`` have ``cap`` sources or more."""

    aliases: Sequence[str] = ()
    follow: bool = False
    cases: Sequence[str] = ()
    fanins: Sequence[str] = ()
    cap: int = 0
    rules: Sequence[RuleKey] = ()
    in_force: Sequence[str] = ()
    floor: int = 0
    origins: Sequence[str] = ()
    sinks: Sequence[str] = ()


@dataclass
class Found:
    """What :meth:`StoragePort.read` found: every key asked for has an entry (``None``: nothing stored)."""

    aliases: dict[str, Alias | None] = field(default_factory=dict)
    #: case key -> (its case-only aliases, its declared case)
    cases: dict[str, tuple[CaseAliases, str | None]] = field(default_factory=dict)
    fanins: dict[str, list[str]] = field(default_factory=dict)
    rules: dict[RuleKey, RuleRecord | None] = field(default_factory=dict)
    in_force: dict[str, dict[RuleKey, RuleRecord]] = field(default_factory=dict)
    origins: dict[str, dict[RuleKey, RuleRecord]] = field(default_factory=dict)
    sinks: set[str] = field(default_factory=set)


@dataclass
class RuleWrite:
    """A rule's change: the record held here (``None``: dropped), what it counted since the last commit,
    and whether the record was dropped since (the stored one goes first)."""

    record: RuleRecord | None
    support: int = 0
    against: int = 0
    dropped: bool = False


@dataclass
class Changeset:
    """The changes of one commit, per record kind, the latest of each entry; applied whole or not at all."""

    #: source -> (its alias, ``None``: dropped; whether the answered-for-itself horizon applies; when written)
    aliases: dict[str, tuple[Alias | None, bool, float]] = field(default_factory=dict)
    #: URLs that answered for themselves, and when
    answered: dict[str, float] = field(default_factory=dict)
    #: case key -> (declared case URL, ``None``: forgotten; when; the URL a forgetting expects stored)
    cases: dict[str, tuple[str | None, float, str]] = field(default_factory=dict)
    rules: dict[RuleKey, RuleWrite] = field(default_factory=dict)
    #: target -> sources added (after the drop, when the target's fan-in was dropped) -> the sink cap then
    fanins: dict[str, dict[str, int]] = field(default_factory=dict)
    dropped_fanins: set[str] = field(default_factory=set)
    #: target -> its number of sources (``None``: no longer a sink)
    sinks: dict[str, int | None] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)
    #: (rule, URL) -> deferred (``True``) or taken (``False``)
    deferred: dict[tuple[str, str], bool] = field(default_factory=dict)
    #: what the change log tells other processes: (kind, name), kinds as :meth:`._cached.CachedReads.follow`'s
    changes: dict[tuple[str, str], None] = field(default_factory=dict)
    #: rules another process wrote were not read here since: the backend merges with what it holds
    merge: bool = False

    def __len__(self) -> int:
        return (
            len(self.aliases) + len(self.answered) + len(self.cases) + len(self.rules) + len(self.dropped_fanins)
            + sum(len(s) for s in self.fanins.values()) + len(self.sinks) + len(self.evidence) + len(self.deferred)
        )  # fmt: skip


class StoragePort(ABC):
    """The reads a backend translates (SQL queries, Redis commands, dictionary look-ups).

    Each answers ``None`` when the backend cannot be read now.
    """

    @abstractmethod
    def read_aliases(self, sources: Sequence[str], follow: bool = False) -> dict[str, Alias | None] | None:
        """The alias of each source (``None``: none, or ended); with ``follow``, also those of their targets."""

    @abstractmethod
    def read_cases(self, keys: Sequence[str]) -> dict[str, tuple[CaseAliases, str | None]] | None:
        """For each case key: its case-only aliases (source -> (time, target)) and its declared case."""

    @abstractmethod
    def read_fanins(self, targets: Sequence[str], cap: int) -> dict[str, list[str]] | None:
        """Up to ``cap`` of the sources known to redirect to each target."""

    @abstractmethod
    def read_sinks(self, cap: int, targets: Sequence[str] | None = None) -> set[str] | None:
        """The targets with ``cap`` sources or more (those of ``targets``, when given)."""

    @abstractmethod
    def read_rules(self, keys: Sequence[RuleKey]) -> dict[RuleKey, RuleRecord | None] | None:
        """The record of each rule key (``None``: none)."""

    @abstractmethod
    def read_origin(self, origin: str) -> dict[RuleKey, RuleRecord] | None:
        """Every record of one origin."""

    def apply(self, changes: Changeset) -> dict[str, dict[RuleKey, RuleRecord]]:
        """Apply ``changes`` whole (one transaction, one atomic batch) or not at all; raises the backend's
        error when it cannot now (the caller keeps them for the next attempt). Returns the records of
        the origins it read back (a rule merged with what other processes stored)."""
        raise NotImplementedError(f"{type(self).__name__} applies no changesets")

    def read_in_force(self, origins: Sequence[str], floor: int) -> dict[str, dict[RuleKey, RuleRecord]] | None:
        """For each origin: the records a lookup may need (support ``floor`` or more, or the block)."""
        found: dict[str, dict[RuleKey, RuleRecord]] = {}
        for origin in origins:
            records = self.read_origin(origin)
            if records is None:
                return None
            found[origin] = {k: r for k, r in records.items() if k.kind == BLOCK or r.support >= floor}
        return found

    def read(self, reads: Reads) -> Found | None:
        """Every read of ``reads`` (one round trip where the backend can); ``None`` if any could not be made."""
        found = Found()
        asked = (
            ("aliases", reads.aliases, lambda: self.read_aliases(reads.aliases, reads.follow)),
            ("cases", reads.cases, lambda: self.read_cases(reads.cases)),
            ("fanins", reads.fanins, lambda: self.read_fanins(reads.fanins, reads.cap)),
            ("rules", reads.rules, lambda: self.read_rules(reads.rules)),
            ("in_force", reads.in_force, lambda: self.read_in_force(reads.in_force, reads.floor)),
            ("origins", reads.origins, lambda: self.read_origins(reads.origins)),
            ("sinks", reads.sinks, lambda: self.read_sinks(reads.cap, reads.sinks)),
        )
        for name, keys, read in asked:
            if keys:
                answer = read()
                if answer is None:
                    return None
                setattr(found, name, answer)
        return found

    def read_origins(self, origins: Sequence[str]) -> dict[str, dict[RuleKey, RuleRecord]] | None:
        """Every record of each of ``origins``."""
        found = {}
        for origin in origins:
            records = self.read_origin(origin)
            if records is None:
                return None
            found[origin] = records
        return found

    def with_targets(self, found: dict[str, Alias | None]) -> dict[str, Alias | None] | None:
        """``found`` and the aliases of its aliases' targets (``None`` if they could not be read)."""
        targets = [a.target for a in found.values() if a is not None and a.target not in found]
        more = self.read_aliases(targets) if targets else {}
        if more is None:
            return None
        found.update(more)
        return found

    # -- listings and the store's own records (reports, exports, forgetting; raise the backend's error) --

    def scan_aliases(self) -> Iterator[Alias]:
        """Every alias stored (none ended)."""
        raise NotImplementedError(f"{type(self).__name__} lists nothing")

    def scan_rules(self) -> Iterator[RuleRecord]:
        """Every rule record stored."""
        raise NotImplementedError(f"{type(self).__name__} lists nothing")

    def scan_fanins(self) -> Iterator[tuple[str, int]]:
        """``(target, number of sources)`` of every fan-in stored."""
        raise NotImplementedError(f"{type(self).__name__} lists nothing")

    def scan_declared(self) -> Iterator[tuple[str, str]]:
        """``(case key, URL)`` of every declared case stored."""
        raise NotImplementedError(f"{type(self).__name__} lists nothing")

    def read_evidence(self, url: str | None = None) -> Iterator[Evidence]:
        """The evidence stored about ``url`` (as source or target), or all of it, oldest first."""
        raise NotImplementedError(f"{type(self).__name__} lists nothing")

    def delete_evidence(self, url: str) -> int:
        """Delete the evidence about ``url``; how many entries."""
        raise NotImplementedError(f"{type(self).__name__} deletes nothing")

    def counts(self) -> tuple[int, int]:
        """The number of evidence entries and of deferred URLs stored."""
        raise NotImplementedError(f"{type(self).__name__} counts nothing")

    def read_meta(self, name: str) -> str | bytes | None:
        """A value the store keeps for itself (``policy``: the crawl's learning policy)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no values")

    def write_meta(self, name: str, value: str) -> None:
        raise NotImplementedError(f"{type(self).__name__} keeps no values")

    def count_aliases(self) -> int:
        """How many alias sources are stored (ended ones too, where they are kept)."""
        raise NotImplementedError(f"{type(self).__name__} counts nothing")

    def alias_sources(self) -> Iterator[str]:
        """Every alias source stored (ended ones too, where they are kept)."""
        raise NotImplementedError(f"{type(self).__name__} lists nothing")

    def saved_filter(self) -> tuple[KeyFilter, int] | None:
        """The filter of alias sources saved in the store, and the change it is up to date with (``None``: none, or unreadable)."""
        return None
