"""The high-water mark of a SQLite store, kept beside its file: a store file that went back in time is refused.

A store file replaced by an older copy (a backup restored, a ``cp`` of an
older ``.sqlite`` over it, a file-system snapshot rolled back) has lost what
was ended or suspended since: served again, it would merge pages that differ.
The file cannot tell, so every commit also writes, to a mark outside the
store's directory (in the per-user state directory, ``sqlite/``, one per
store path: a restored copy of the whole crawl directory is caught too),
the store's id (``meta`` key ``store_id``) and the newest entry of its
change log. A store opened with the same id and an older change log went
back: it is refused with an error naming the risk (removing the mark
accepts the older file). A different store at that path (another id) is
no rollback.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

from ..errors import StoreError
from ._state import state_dir

logger = logging.getLogger("scrapy_iri.store")

#: the mark's one line: the store id and the change id, fixed width (rewritten in place)
WIDTH = 64


def mark_path(path: Path) -> Path:
    """The mark of the store at ``path`` (by its absolute path)."""
    where = os.path.abspath(path)
    digest = hashlib.sha256(where.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in path.name)[:64]
    return state_dir() / "sqlite" / f"{safe}-{digest}.mark"


def read_mark(path: Path) -> tuple[str, int] | None:
    """``(store id, change id)`` of the newest commit a process saw in the store at ``path``."""
    try:
        words = mark_path(path).read_text("ascii").split()
        return words[0], int(words[1])
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return None


def write_mark(path: Path, store_id: str, change_id: int) -> None:
    """Record the newest commit, unless the mark already names a newer one of the same store."""
    known = read_mark(path)
    if known is not None and known[0] == store_id and known[1] >= change_id:
        return
    line = f"{store_id} {change_id}".ljust(WIDTH - 1)[: WIDTH - 1] + "\n"
    try:
        mark = mark_path(path)
        mark.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(mark, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.pwrite(fd, line.encode("ascii"), 0)
        finally:
            os.close(fd)
    except OSError as exc:  # a directory this process may not write: the mark cannot be kept
        logger.debug("cannot write %(mark)s: %(error)s", {"mark": mark_path(path), "error": exc})


def check_mark(path: Path, store_id: str, change_id: int) -> None:
    """Refuse a store whose change log ends before the newest commit a process saw in it."""
    known = read_mark(path)
    if known is None or known[0] != store_id or known[1] <= change_id:
        return
    raise StoreError(
        f"{path} went back to an older state (its change log ends at {change_id}; a process saw {known[1]}:"
        " a backup or an older copy restored?): aliases ended and rules suspended since would merge pages"
        f" that differ. Restore the newer file, or remove {mark_path(path)} to use this one"
    )


__all__ = ["check_mark", "mark_path", "read_mark", "write_mark"]
