"""How a URL reaches its representative: the hops of a resolution."""

from __future__ import annotations

from typing import NamedTuple

from ._rules import RuleKey


class Step(NamedTuple):
    """One hop of a resolution: an exact alias (``rule is None``) or a rule's prediction."""

    source: str
    target: str
    rule: RuleKey | None = None


class Resolution(NamedTuple):
    """How a URL reaches its representative.

    ``steps`` are the hops followed; when they end in a loop or exceed the
    policy's ``max_chain`` the representative is the URL itself and
    ``note`` says why.
    """

    url: str
    representative: str
    steps: tuple[Step, ...] = ()
    note: str = ""

    @property
    def merged(self) -> bool:
        """Whether the URL has another representative (a loop or an over-long chain has not)."""
        return self.representative != self.url

    @property
    def rules(self) -> tuple[RuleKey, ...]:
        """The rules a merge relies on (a merge they make may be wrong)."""
        if not self.merged:
            return ()
        return tuple(step.rule for step in self.steps if step.rule is not None)
