"""Every exception scrapy-iri raises on purpose, under one root: :class:`ScrapyIRIError`.

The core raises only :class:`IRIError`; the store, the Scrapy settings and
the graph command have their own subclasses of the root.
"""

from __future__ import annotations


class ScrapyIRIError(Exception):
    """The root of scrapy-iri's exceptions: ``except ScrapyIRIError`` catches any of them."""


class IRIError(ScrapyIRIError, ValueError):
    """An IRI or IRI reference that cannot be parsed, mapped or normalized.

    ``component`` names the part of the IRI at fault (``"scheme"``, ``"host"``,
    ``"path"``, ...); ``position`` is the 0-based index in the input string
    of the offending character, or where no single character is at fault
    (an invalid IDN label, a port out of range, a name too long for DNS),
    of the first character of the offending label or component. The public
    functions always give one; ``None`` only comes from the internal steps
    that do not see the input string. ``reason`` is the message without the
    component and position.
    """

    def __init__(self, message: str, component: str, position: int | None = None) -> None:
        where = f" at position {position}" if position is not None else ""
        super().__init__(f"{component}: {message}{where}")
        self.reason = message
        self.component = component
        self.position = position

    def at(self, position: int) -> IRIError:
        """The same error at ``position`` of the input string."""
        return IRIError(self.reason, self.component, position)

    def within(self, what: str) -> IRIError:
        """The same error said of ``what`` (``"in the base: ..."``), for a call given several strings."""
        return IRIError(f"in {what}: {self.reason}", self.component, self.position)

    def __reduce__(self) -> tuple[type[IRIError], tuple[str, str, int | None]]:
        """Pickled (and copied) with its three arguments, as Dask, Spark and multiprocessing ship it."""
        return (type(self), (self.reason, self.component, self.position))


class IRISettingsError(ScrapyIRIError, ValueError):
    """An ``IRI_*`` setting has a value the components cannot use."""


class StoreError(ScrapyIRIError, ValueError):
    """A store URI, file or schema the store cannot use."""


class GraphError(ScrapyIRIError):
    """A fatal problem of a graph run: unreadable input, a header without the columns, a failing store."""


class BadEdge(ScrapyIRIError, ValueError):
    """An edge with an end that is not a valid absolute IRI (the message names which end)."""


def describe(char: str) -> str:
    """``'x' (U+0078)``: a character as error messages show it."""
    shown = char if char.isprintable() and not char.isspace() else ""
    return f"{shown!r} (U+{ord(char):04X})" if shown else f"U+{ord(char):04X}"
