"""Writing outputs safely: a temporary file renamed onto a regular file, anything else directly."""

from __future__ import annotations

import errno
import bz2
import glob
import gzip
import lzma
import io
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, TextIO

from ..errors import GraphError
from ._readers import _BUFFER


def _rename_target(name: str) -> tuple[str, os.stat_result | None] | None:
    """Where a temporary file is renamed to for ``name``: the resolved path (so a
    symlink keeps pointing at the new content) and the existing file's status, or
    None when ``name`` exists but is no regular file (a device, a FIFO): that is
    written directly, never replaced."""
    try:
        info = os.stat(name)  # follows symlinks
    except FileNotFoundError:
        return os.path.realpath(name), None  # a new file, or what a dangling symlink names
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, name) from None
    if not stat.S_ISREG(info.st_mode):
        return None
    target = os.path.realpath(name)
    try:
        same = os.path.samestat(os.stat(target), info)
    except OSError:
        same = False
    return (target, info) if same else None  # e.g. /proc/self/fd/N of a deleted file: write through it


def _temporary(target: str, name: str) -> tuple[str, int]:
    directory, base = os.path.split(target)
    for attempt in range(100):
        tmp = os.path.join(directory, f".{base}.{os.getpid()}.{attempt}.part")
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
        except FileExistsError:
            continue
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, name) from None
    raise OSError(errno.EEXIST, "cannot create a temporary file next to it", name)


@contextmanager
def _output(
    name: str, stdout: TextIO | None, *, errors: str = "strict", keep_on_error: bool = False
) -> Iterator[TextIO]:
    """A text stream for ``name``: stdout for ``-``; for a regular file (or a new
    one), a temporary file in the resolved target's directory that replaces it
    only when the block ends without an exception (or, with ``keep_on_error``,
    in any case); anything else (``/dev/null``, a FIFO) is written directly.
    Compressed when the name ends in ``.gz``, ``.bz2`` or ``.xz``."""
    if name == "-":
        stream = stdout if stdout is not None else sys.stdout
        yield stream
        stream.flush()
        return
    found = _rename_target(name)
    tmp = target = None
    if found is None:
        try:
            file = open(name, "wb", buffering=_BUFFER)  # noqa: SIM115 - closed below
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, name) from None
    else:
        target, info = found
        tmp, fd = _temporary(target, name)
        if info is not None:  # keep the permissions of the file it replaces
            with suppress(OSError):
                os.fchmod(fd, stat.S_IMODE(info.st_mode) & 0o777)
        file = os.fdopen(fd, "wb", buffering=_BUFFER)
    stream = None

    def finish() -> None:
        assert stream is not None
        stream.close()  # a GzipFile writes its trailer but leaves ``file`` open
        file.close()
        if tmp is not None:
            os.replace(tmp, target)  # type: ignore[arg-type]

    try:
        binary: Any = file
        base = os.path.basename(name)
        lowered = base.lower()
        if lowered.endswith(".gz"):
            binary = gzip.GzipFile(filename=base[:-3], mode="wb", compresslevel=6, fileobj=file)
        elif lowered.endswith(".bz2"):
            binary = bz2.BZ2File(file, mode="wb")
        elif lowered.endswith(".xz"):
            binary = lzma.LZMAFile(file, mode="wb")
        stream = io.TextIOWrapper(binary, encoding="utf-8", errors=errors, newline="")
        try:
            yield stream
        except BaseException as exc:
            if keep_on_error and not isinstance(exc, KeyboardInterrupt):  # an interrupted file is no record
                finish()
            raise
        finish()
    except BaseException:
        with suppress(Exception):
            if stream is not None:
                stream.close()
        with suppress(Exception):
            file.close()
        if tmp is not None:
            with suppress(OSError):
                os.unlink(tmp)
        raise


def _input_files(src: str) -> list[str]:
    """The files ``src`` may read: itself, a directory's files, a glob's matches."""
    if os.path.isdir(src):
        return [entry.path for entry in os.scandir(src)]
    if not os.path.exists(src) and any(char in src for char in "*?["):
        return glob.glob(src)
    return [src]


def _not_the_input(src: str, outputs: list[tuple[str, str]]) -> None:
    """Refuse an output that is an input file (the same name, a symlink or a hard link to it), the file
    IN names or one in the directory or glob it names."""
    if src == "-":
        return
    inputs = []
    for path in _input_files(src):
        try:
            inputs.append((path, os.stat(path)))
        except OSError:
            continue  # reading it fails with its own message
    for label, name in outputs:
        if name == "-":
            continue
        try:
            info = os.stat(name)
        except OSError:
            continue  # a new file is no input
        for path, found in inputs:
            if os.path.samestat(info, found):
                shown = src if path == src else f"{path} (in {src})"
                raise GraphError(f"{label} {name} is the input file {shown}: it would be overwritten")


def _same_files(outputs: list[tuple[str, str]]) -> None:
    """Refuse two outputs (label, name) that are one regular (or new) file: they would overwrite each other."""
    seen: dict[str, tuple[str, str]] = {}
    for label, name in outputs:
        if name == "-":
            continue
        found = _rename_target(name)
        if found is None:  # /dev/null twice is fine
            continue
        other = seen.setdefault(found[0], (label, name))
        if other[0] != label:
            raise GraphError(f"{other[0]} {other[1]} and {label} {name} are the same file")
