"""Revisit records: the earlier capture a ``revisit`` refers to, found among the input's archives.

A deduplicating crawler (Heritrix, wget ``--warc-dedup``, warcprox) that
fetches a payload it has archived already writes a ``revisit`` record: the
new capture's URI, date and (usually) HTTP head, and a reference to the
record that holds the payload: ``WARC-Refers-To`` (its record ID),
``WARC-Refers-To-Target-URI`` and ``WARC-Refers-To-Date`` (WARC/1.1), and
``WARC-Payload-Digest`` (the payload's digest, the same as the original's).
The original is looked up in that order, among the records of type
``response`` and ``resource`` of every file of the input; with the same
payload digest, the first one in file order.

The records that revisits need are found by two passes over the heads of
the records (:mod:`._heads`), made once per process and only when a
revisit is met: the first collects what the revisits refer to, the second
where those records are. Memory holds one entry per revisit.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from ._heads import heads
from ._inside import record_inside
from ._links import shown
from ._pieces import span_records
from ._warc import BadRecord, Record

_ORIGINALS = ("response", "resource")


def _bare(value: str) -> str:
    """A WARC header's URI without the angle brackets WARC/1.0 writers put around it."""
    value = value.strip()
    return value[1:-1] if value[:1] == "<" and value[-1:] == ">" else value


def references(headers: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """What a revisit's WARC headers (names lowercased) refer to, in the order they are looked up:
    (``id``, record ID), (``at``, URI and date), (``digest``, payload digest)."""
    found = []
    refers = _bare(headers.get("warc-refers-to", ""))
    if refers:
        found.append(("id", refers))
    uri, date = _bare(headers.get("warc-refers-to-target-uri", "")), headers.get("warc-refers-to-date", "").strip()
    if uri and date:
        found.append(("at", f"{uri} {date}"))
    digest = headers.get("warc-payload-digest", "").strip()
    if digest:
        found.append(("digest", digest))
    return tuple(found)


def _keys(headers: dict[str, str]) -> Iterator[tuple[str, str]]:
    """The references by which an original record can be found (:func:`references`' kinds)."""
    record_id = _bare(headers.get("warc-record-id", ""))
    if record_id:
        yield "id", record_id
    uri, date = _bare(headers.get("warc-target-uri", "")), headers.get("warc-date", "").strip()
    if uri and date:
        yield "at", f"{uri} {date}"
    digest = headers.get("warc-payload-digest", "").strip()
    if digest:
        yield "digest", digest


_FOUND: dict[tuple[Any, ...], dict[tuple[str, str], tuple[str, str]]] = {}


class Originals:
    """Where the records that the revisits of ``files`` (absolute paths, the whole input in order)
    refer to are. It travels to Dask and Spark workers as the names of its files; each process
    finds the records once, and every process finds the same."""

    def __init__(self, files: list[str] | tuple[str, ...]) -> None:
        self.files = tuple(os.path.abspath(path) for path in files)
        self._key: tuple[Any, ...] | None = None

    def _where(self) -> dict[tuple[str, str], tuple[str, str]]:
        if self._key is None:
            stamps = tuple((os.path.getsize(path), os.stat(path).st_mtime_ns) for path in self.files)
            self._key = ("originals", self.files, stamps)
        found = _FOUND.get(self._key)
        if found is None:
            found = self._find()
            _FOUND.clear()  # one input's at a time per process
            _FOUND[self._key] = found
        return found

    def _find(self) -> dict[tuple[str, str], tuple[str, str]]:
        wanted: set[tuple[str, str]] = set()
        for _, headers in self._heads():
            if headers.get("warc-type", "").lower() == "revisit":
                wanted.update(references(headers))
        where: dict[tuple[str, str], tuple[str, str]] = {}
        if wanted:
            for place, headers in self._heads():
                if headers.get("warc-type", "").lower() in _ORIGINALS:
                    for key in _keys(headers):
                        if key in wanted and key not in where:
                            where[key] = place
        return where

    def _heads(self) -> Iterator[tuple[tuple[str, str], dict[str, str]]]:
        for path in self.files:
            with open(path, "rb") as file:
                for item in heads(file):
                    if not isinstance(item, BadRecord):
                        yield (path, str(item[0])), item[1]

    def find(self, headers: dict[str, str]) -> Record | str:
        """The record a revisit (its WARC headers) refers to, or why there is none."""
        refs = references(headers)
        if not refs:
            return ("a revisit that names no record (no WARC-Refers-To, WARC-Refers-To-Target-URI or"
                    " WARC-Payload-Digest)")
        where = self._where()
        for ref in refs:
            place = where.get(ref)
            if place is not None:
                record = _record_at(*place)
                if record is not None:
                    return record
        named = ", ".join(shown(value) if len(value) > 200 else value for _, value in refs)
        return f"a revisit of a record that is not in the input ({named}): its links are not known"


def _record_at(path: str, offset: str) -> Record | None:
    """The record at ``offset`` (as the record reader names it) of the archive ``path``: inside a gzip
    member of many records (``member+inside``), from the member's checkpoints (:mod:`._inside`)."""
    member_text, plus, inside = offset.partition("+")
    member = int(member_text)
    if plus:
        return record_inside(path, member, int(inside))
    with open(path, "rb") as file:
        for record in span_records(file, member, os.fstat(file.fileno()).st_size):
            return record if isinstance(record, Record) and record.offset == offset else None
    return None
