"""One node of a link graph: its canonical form or the reason it has none, on every engine."""

from __future__ import annotations

from .._ladder import Representatives, Rung, canonicalize
from .._mapping import to_iri
from ..errors import GraphError, IRIError


def canonical_or_error(
    raw: str | None, level: Rung, keep_fragment: bool, lenient: bool, store: Representatives | None
) -> tuple[str | None, str | None]:
    """One end of an edge: (its canonical form, None) or (None, why it has none).

    The reasons are the ones bad rows are reported with, on every engine.
    """
    if raw is None:
        return None, "missing (null)"
    if type(raw) is not str:
        return None, f"not a string ({type(raw).__name__})"
    if not raw or raw.isspace():
        return None, "empty"
    if not raw.isascii():
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError:
            return None, "invalid UTF-8 in the input"
    try:
        return canonicalize(raw, level, keep_fragment=keep_fragment, lenient=lenient, store=store), None
    except IRIError as exc:
        return None, str(exc)
    except Exception as exc:  # the store failed (only the protocol rung calls out)
        if store is None:
            raise
        raise GraphError(f"the equivalence store failed: {exc}") from exc


def iri_form(uri: str) -> str:
    """A canonical URI as the IRI it stands for (3987bis 3.7, via :func:`to_iri`); the URI when that fails."""
    try:
        return to_iri(uri)
    except IRIError:
        return uri
