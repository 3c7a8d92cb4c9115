"""The one exception of the core."""

from __future__ import annotations


class IRIError(ValueError):
    """An IRI or IRI reference that cannot be parsed, mapped or normalized.

    ``component`` names the part of the IRI at fault (``"scheme"``, ``"host"``,
    ``"path"``, ...); ``position`` is the 0-based index of the offending
    character in the input string, or ``None`` when the fault is not at a
    single character (an invalid IDN label, a port out of range).
    """

    def __init__(self, message: str, component: str, position: int | None = None) -> None:
        where = f" at position {position}" if position is not None else ""
        super().__init__(f"{component}: {message}{where}")
        self.component = component
        self.position = position


def describe(char: str) -> str:
    """``'x' (U+0078)``: a character as error messages show it."""
    shown = char if char.isprintable() and not char.isspace() else ""
    return f"{shown!r} (U+{ord(char):04X})" if shown else f"U+{ord(char):04X}"
