"""Web archives as link graphs: WARC and WAT files (a directory or glob of them)."""

from __future__ import annotations

import glob
import gzip
import os
import zlib

from ..errors import GraphError

_SNIFF = 64


def _head(name: str) -> bytes:
    """The first bytes of a file, gunzipped when it is gzip (what is there of them)."""
    try:
        with open(name, "rb") as f:
            start = f.read(_SNIFF * 16)
    except OSError:
        return b""
    if start[:2] == b"\x1f\x8b":
        try:
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(start, _SNIFF)
        except zlib.error:
            return b""
    return start[:_SNIFF]


def is_archive(name: str) -> bool:
    """Whether ``name`` is a WARC (or WAT) file, by its content: it starts with ``WARC/1.``."""
    return os.path.isfile(name) and _head(name).startswith(b"WARC/1.")


def archive_files(name: str) -> list[str]:
    """The archives ``name`` names: a file, a directory's WARC files (name order), or a glob's."""
    if os.path.isdir(name):
        found = sorted(os.path.join(name, entry) for entry in os.listdir(name))
        files = [path for path in found if is_archive(path)]
        if not files:
            raise GraphError(f"{name}: a directory without WARC or WAT files")
        return files
    if os.path.exists(name):
        return [name]
    matched = sorted(path for path in glob.glob(name) if os.path.isfile(path))
    if not matched:
        raise GraphError(f"{name}: no such file, and no file matches it as a glob")
    return matched
