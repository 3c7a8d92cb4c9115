"""The graph command's exceptions."""

from __future__ import annotations


class GraphError(Exception):
    """A fatal problem: unreadable input, a header without the columns, a failing store, --fail-fast."""


class BadEdge(ValueError):
    """An edge with an end that is not a valid absolute IRI (the message names which end)."""
