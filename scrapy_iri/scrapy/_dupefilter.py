"""The duplicate filter: one fetch per resource, at the configured rung of the ladder."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from scrapy.dupefilters import BaseDupeFilter
from scrapy.utils.job import job_dir
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.request import referer_str

from scrapy_iri import Rung

from ._fingerprint import IRIRequestFingerprinter, RequestIdentity, merging_rung
from ._resources import CrawlResources
from ._seen import KEY_SIZE, RECORD_SIZE, SEEN_ELSEWHERE, SeenSet
from ._settings import SCRAPY_DUPEFILTER_CLASS, IRISettingsError, fallback_class

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from typing_extensions import Self

logger = logging.getLogger(__name__)

SEEN_FILE = "iri-requests.seen"
"""The file in JOBDIR holding the seen set: a header line, then 16-byte records."""
_MAGIC = b"scrapy-iri seen v1"


class IRIDupeFilter(BaseDupeFilter):
    """Duplicate request filter (:setting:`DUPEFILTER_CLASS`) at the ``IRI_RUNG`` rung.

    Enabled by the :class:`~scrapy_iri.Addon`. Two requests are duplicates
    when their methods, bodies and the canonical forms of their URLs at the
    configured rung are equal (see :mod:`scrapy_iri.scrapy._fingerprint`).
    Requests with ``dont_filter`` are never recorded (the scheduler does not
    ask). Each filtered duplicate counts in ``dupefilter/filtered`` and in
    ``iri/filtered/<rung>``, the lowest rung that merges it with the request
    that was kept (``string`` when the URLs are the same). A URL that cannot
    be canonicalized counts in ``iri/invalid_url`` and is compared as given.

    The seen set costs about 25-32 bytes per request (see
    :mod:`~scrapy_iri.scrapy._seen`). With :setting:`JOBDIR` it is kept in
    ``iri-requests.seen`` and reloaded when the job resumes.

    With ``IRI_COMPAT = "w3lib"`` every call goes to the filter the add-on
    replaced (``IRI_FALLBACK_DUPEFILTER_CLASS``, Scrapy's ``RFPDupeFilter``
    by default), so identity is Scrapy's exactly.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        resources = CrawlResources.of(crawler)
        self.config = resources.config
        self.debug = crawler.settings.getbool("DUPEFILTER_DEBUG")
        self.logdupes = True
        self.logger = logger
        self.fallback: Any = None
        self.seen = SeenSet()
        self.file: IO[bytes] | None = None
        self._merged: WeakKeyDictionary[Request, Rung] = WeakKeyDictionary()
        self._warned_invalid = False
        if self.config.compat:
            cls = fallback_class(
                crawler.settings, "IRI_FALLBACK_DUPEFILTER_CLASS", SCRAPY_DUPEFILTER_CLASS, IRIDupeFilter
            )
            self.fallback = build_from_crawler(cls, crawler)
            return
        fingerprinter = crawler.request_fingerprinter
        if isinstance(fingerprinter, IRIRequestFingerprinter):
            self.fingerprinter = fingerprinter
            self.outer_fingerprinter = None
        else:
            # Another fingerprinter defines the crawl's identity (set above the
            # add-on's priority, or wrapping ours): merge only what both merge.
            self.fingerprinter = IRIRequestFingerprinter(crawler)
            self.outer_fingerprinter = fingerprinter
        path = job_dir(crawler.settings)
        if path:
            self.file = self._open_seen_file(Path(path, SEEN_FILE))
        # with IRI_STORE = "redis://..." the seen set is shared by every process
        self.seen = resources.seen_set(self.seen)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @classmethod
    def from_spider(cls, spider: Spider) -> Self:
        """The constructor scrapy-redis's scheduler calls: the seen set is in Redis."""
        from ._redis_seen import dupefilter_from_spider

        return dupefilter_from_spider(cls, spider)

    def clear(self) -> None:
        """Forget every seen request (scrapy-redis's scheduler flush)."""
        if isinstance(self.seen, SeenSet):
            self.seen = SeenSet()
        else:  # the set shared through Redis
            self.seen.clear()

    # the dupefilter interface

    def request_seen(self, request: Request) -> bool:
        """Whether an equivalent request was seen; records the request if not."""
        if self.fallback is not None:
            return bool(self.fallback.request_seen(request))
        identity = self.fingerprinter.identity(request)
        if identity.error is not None:
            self._count_invalid(request, identity)
        if identity.fingerprint in identity.chain:
            # a hop of the request's own redirect chain, landing where the request was filed
            self.crawler.stats.inc_value("iri/own_chain")
            return False
        key = self._key(request, identity)
        found = self.seen.add(key, identity.tag)
        if found is None:
            if self.file is not None:
                self.file.write(SeenSet.record(key, identity.tag))
            return False
        if found != SEEN_ELSEWHERE:  # another process's tag is unknown
            self._merged[request] = merging_rung(found, identity.tag, identity.rung)
        return True

    def open(self) -> None:
        if self.fallback is not None:
            return self.fallback.open()
        return None

    def close(self, reason: str) -> None:
        if self.fallback is not None:
            return self.fallback.close(reason)
        if self.file is not None:
            self.file.close()
            self.file = None
        return None

    def log(self, request: Request, spider: Spider | None = None) -> None:
        """Log a filtered duplicate with the rung that merged it, and count it."""
        if self.fallback is not None:
            self.fallback.log(request, spider)
            return
        rung = self._merged.pop(request, None)  # None: not filtered by request_seen() just now
        name = rung.name.lower() if rung is not None else "unknown"
        if self.debug:
            self.logger.debug(
                "Filtered duplicate request (%(rung)s rung): %(request)s (referer: %(referer)s)",
                {"rung": name, "request": request, "referer": referer_str(request)},
                extra={"spider": spider},
            )
        elif self.logdupes:
            self.logger.debug(
                "Filtered duplicate request (%(rung)s rung): %(request)s"
                " - no more duplicates will be shown"
                " (see DUPEFILTER_DEBUG to show all duplicates)",
                {"rung": name, "request": request},
                extra={"spider": spider},
            )
            self.logdupes = False
        stats = self.crawler.stats
        stats.inc_value("dupefilter/filtered")
        if rung is not None:
            stats.inc_value(f"iri/filtered/{name}")

    # internals

    def _key(self, request: Request, identity: RequestIdentity) -> bytes:
        if self.outer_fingerprinter is None:
            return identity.fingerprint[:KEY_SIZE]
        outer = self.outer_fingerprinter.fingerprint(request)
        return hashlib.blake2b(identity.fingerprint + outer, digest_size=KEY_SIZE).digest()

    def _count_invalid(self, request: Request, identity: RequestIdentity) -> None:
        self.crawler.stats.inc_value("iri/invalid_url")
        if self._warned_invalid and not self.debug:
            return
        level = logging.DEBUG if self._warned_invalid else logging.WARNING
        more = "" if self._warned_invalid or self.debug else " (further ones are counted in iri/invalid_url)"
        self.logger.log(
            level,
            "Request URL is not a valid IRI, compared as given: %(request)s (%(error)s)%(more)s",
            {"request": request, "error": identity.error, "more": more},
        )
        self._warned_invalid = True

    def _header(self) -> bytes:
        outer = self.outer_fingerprinter
        fields = [
            _MAGIC.decode(),
            f"rung={self.config.rung.name.lower()}",
            f"keep_fragments={int(self.config.keep_fragments)}",
            f"lenient={int(self.config.lenient)}",
        ]
        if outer is not None:
            fields.append(f"with={type(outer).__module__}.{type(outer).__qualname__}")
        return " ".join(fields).encode() + b"\n"

    def _open_seen_file(self, path: Path) -> IO[bytes]:
        """Open the seen file for appending, after loading what a previous run of the job saw."""
        header = self._header()
        file = path.open("a+b")
        file.seek(0)
        data = file.read()
        if not data:
            file.write(header)
            return file
        if not data.startswith(header):
            file.close()
            written = data.partition(b"\n")[0].decode("utf-8", "replace")
            raise IRISettingsError(
                f"{path} was written with other settings ({written!r}, now {header.strip().decode()!r}):"
                " resume the job with the same IRI_* settings, or start a new JOBDIR"
            )
        body = data[len(header) :]
        whole = len(body) - len(body) % RECORD_SIZE
        if whole != len(body):  # a record cut short by an unclean shutdown
            file.truncate(len(header) + whole)
            file.seek(0, 2)
        count = self.seen.load(body[:whole])
        logger.info("Resuming with %(count)d seen requests from %(path)s", {"count": count, "path": str(path)})
        return file
