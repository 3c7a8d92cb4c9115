"""How a URL reaches its representative: the hops of a resolution."""

from __future__ import annotations

from typing import NamedTuple

from ._evidence import Alias
from ._rules import RuleKey, alias_key


class Step(NamedTuple):
    """One hop of a resolution: an exact alias (``rule is None``) or a rule's prediction.

    ``aged`` marks an exact alias the server stated before this store was
    opened (an earlier crawl): a merge through it may have to be undone.
    """

    source: str
    target: str
    rule: RuleKey | None = None
    aged: bool = False


class Resolution(NamedTuple):
    """How a URL reaches its representative.

    ``steps`` are the hops followed; when they end in a loop or exceed the
    policy's ``max_chain`` the representative is the URL itself and
    ``note`` says why. ``held`` is the alias of the representative that
    merged nothing (past its lifetime, or picked for a check): fetching the
    representative asks its server again.
    """

    url: str
    representative: str
    steps: tuple[Step, ...] = ()
    note: str = ""
    held: Alias | None = None

    @property
    def merged(self) -> bool:
        """Whether the URL has another representative (a loop or an over-long chain has not)."""
        return self.representative != self.url

    @property
    def rules(self) -> tuple[RuleKey, ...]:
        """What a merge relies on that may turn out wrong: rules, and aliases stated in an earlier crawl (:func:`~._rules.alias_key`)."""
        if not self.merged:
            return ()
        return tuple(
            step.rule if step.rule is not None else alias_key(step.source)
            for step in self.steps
            if step.rule is not None or step.aged
        )
