"""The duplicate filter: one fetch per resource, at the configured rung of the ladder.

:class:`IRIDupeFilter` is a drop-in for Scrapy's ``RFPDupeFilter`` and for
scrapy-redis's ``RFPDupeFilter``: their constructors, class methods,
attributes, log records and JOBDIR file, with the request identity of the
ladder (see ``docs/scrapy-plugin.md`` for what differs on purpose).
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
import warnings
from inspect import Signature, signature
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from scrapy.dupefilters import BaseDupeFilter
from scrapy.exceptions import ScrapyDeprecationWarning
from scrapy.utils.job import job_dir
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.request import referer_str

from scrapy_iri import Rung

from ._fingerprint import IRIRequestFingerprinter
from ._identity import RequestIdentities, RequestIdentity, merging_rung
from ._seen import KEY_SIZE, RECORD_SIZE, SEEN_ELSEWHERE, SeenSet
from ._settings import SCRAPY_DUPEFILTER_CLASS, IRISettings, IRISettingsError, fallback_class

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from ._crawl import IRICrawl

SEEN_FILE = "requests.seen"
"""The JOBDIR file of the seen set: Scrapy's (each record a 2-byte big-endian length, then the record)."""
_SIZE_BYTES = 2
_MAGIC = b"scrapy-iri seen v2"
#: what the log and the ``iri/filtered/...`` stats call a merge by the user's fingerprinter
BY_FINGERPRINTER = "fingerprinter"
#: scrapy-redis's default key for a filter built from settings
REDIS_DUPEFILTER_KEY = "dupefilter:%(timestamp)s"

#: the log records, as Scrapy and scrapy-redis write them (logger, first duplicate, each under DUPEFILTER_DEBUG)
_SCRAPY_LOG = (
    "scrapy.dupefilters",
    "Filtered duplicate request: %(request)s - no more duplicates will be shown (see DUPEFILTER_DEBUG to show all duplicates)",
    "Filtered duplicate request: %(request)s (referer: %(referer)s)",
)
_REDIS_LOG = (
    "scrapy_redis.dupefilter",
    "Filtered duplicate request %(request)s - no more duplicates will be shown (see DUPEFILTER_DEBUG to show all duplicates)",
    "Filtered duplicate request: %(request)s",
)


def _scrapy_call(path: str | None = None, debug: bool = False, *, fingerprinter: Any = None, crawl: Any = None) -> None:
    """Scrapy's ``RFPDupeFilter(path, debug, *, fingerprinter)`` (plus the crawl object)."""


def _redis_call(server: Any, key: str, debug: bool = False, *, fingerprinter: Any = None, crawl: Any = None) -> None:
    """scrapy-redis's ``RFPDupeFilter(server, key, debug)`` (plus a fingerprinter and the crawl object)."""


_SCRAPY_SIGNATURE: Signature = signature(_scrapy_call)
_REDIS_SIGNATURE: Signature = signature(_redis_call)


def _is_redis_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether a constructor call is scrapy-redis's: a server first (not a JOBDIR path), or ``server=``/``key=``."""
    from scrapy.crawler import Crawler

    if args and isinstance(args[0], Crawler):
        raise TypeError("IRIDupeFilter(crawler): use IRIDupeFilter.from_crawler(crawler), as Scrapy does")
    if "server" in kwargs or "key" in kwargs:
        return True
    return bool(args) and not (args[0] is None or isinstance(args[0], (str, os.PathLike)))


def foreign_key(fingerprint: bytes | str) -> bytes:
    """A seen-set key for a fingerprint from elsewhere (a user's fingerprinter or override): uniform, 96 bits."""
    data = fingerprint.encode("utf-8", "surrogatepass") if isinstance(fingerprint, str) else bytes(fingerprint)
    return hashlib.blake2b(data, digest_size=KEY_SIZE, person=b"scrapy-iri/user").digest()


class _RedisKeySet:
    """scrapy-redis's seen set: one Redis set of hex keys (``SADD`` answers whether it was new)."""

    def __init__(self, server: Any, key: str) -> None:
        self.server = server
        self.key = key

    def add(self, key: bytes, tag: int = 0) -> int | None:
        return None if self.server.sadd(self.key, key.hex()) else SEEN_ELSEWHERE

    def clear(self) -> None:
        self.server.delete(self.key)

    def __iter__(self) -> Any:
        for member in self.server.smembers(self.key):
            text = member.decode() if isinstance(member, bytes) else str(member)
            yield bytes.fromhex(text), 0


class IRIDupeFilter(BaseDupeFilter):
    """Duplicate request filter (:setting:`DUPEFILTER_CLASS`) at the ``IRI_RUNG`` rung.

    Enabled by the :class:`~scrapy_iri.Addon`. Two requests are duplicates
    when their methods, bodies and the canonical forms of their URLs at the
    configured rung are equal (see :mod:`scrapy_iri.scrapy._identity`),
    or when the crawl's own ``REQUEST_FINGERPRINTER_CLASS`` (one that is not
    scrapy-iri's) gives their canonical requests one fingerprint, as under
    Scrapy. Requests with ``dont_filter`` are never recorded (the scheduler
    does not ask). Each filtered duplicate counts in ``dupefilter/filtered``
    and in ``iri/filtered/<rung>``, the lowest rung that merged it with the
    request that was kept (``string`` when the URLs are the same,
    ``fingerprinter`` when only the user's fingerprinter did). A URL that
    cannot be canonicalized counts in ``iri/invalid_url`` and is compared as given.

    Built the ways its peers are: ``from_crawler`` and
    ``IRIDupeFilter(path, debug, fingerprinter=...)`` as Scrapy's
    ``RFPDupeFilter``; ``IRIDupeFilter(server, key, debug)``,
    ``from_settings`` and ``from_spider`` as scrapy-redis's (a Redis set of
    hex fingerprints, or the crawl's shared seen set for ``from_spider``).
    A subclass's (or instance's) ``request_fingerprint`` is honoured.

    With :setting:`JOBDIR` the seen set is kept in ``requests.seen`` in
    Scrapy's framing, after a header naming the settings; a job Scrapy's
    filter started is resumed from the fingerprints it wrote.

    With ``IRI_COMPAT = "w3lib"`` every call goes to the filter the add-on
    replaced (``IRI_FALLBACK_DUPEFILTER_CLASS``, Scrapy's ``RFPDupeFilter``
    by default), so identity is Scrapy's exactly.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        redis_mode = _is_redis_call(args, kwargs)
        bound = (_REDIS_SIGNATURE if redis_mode else _SCRAPY_SIGNATURE).bind(*args, **kwargs)
        bound.apply_defaults()
        given = bound.arguments
        crawl: IRICrawl | None = given["crawl"]
        self.crawl = crawl
        self.crawler: Crawler | None = crawl.crawler if crawl is not None else None
        self.stats = self.crawler.stats if self.crawler is not None else None
        self.debug = bool(given["debug"])
        self.logdupes = True
        self.redis_mode = redis_mode
        self._log = _REDIS_LOG if redis_mode else _SCRAPY_LOG
        self.logger = logging.getLogger(self._log[0])
        self.fallback: Any = None
        self.file: IO[bytes] | None = None
        self.server: Any = None
        self.key: str | None = None
        self.legacy: set[bytes] = set()
        self._merged: WeakKeyDictionary[Request, str] = WeakKeyDictionary()
        self._warned_invalid = False
        fingerprinter = given["fingerprinter"]
        if isinstance(fingerprinter, IRIRequestFingerprinter):
            self.identities = fingerprinter.identities
            self.user_fingerprinter = None
        else:
            self.identities = crawl.identities if crawl is not None else RequestIdentities(IRISettings())
            self.user_fingerprinter = fingerprinter  # the crawl's own REQUEST_FINGERPRINTER_CLASS: it merges too
        self.config = self.identities.config
        #: the crawl's fingerprinter (Scrapy's ``RFPDupeFilter.fingerprinter``)
        self.fingerprinter = IRIRequestFingerprinter(identities=self.identities) if fingerprinter is None else fingerprinter
        #: what fingerprinted the requests Scrapy's filter recorded in JOBDIR: the project's own, or (found
        #: when needed) the one the add-on replaced
        self.legacy_fingerprinter = self.user_fingerprinter
        self._hooked = type(self).request_fingerprint is not IRIDupeFilter.request_fingerprint
        if self._hooked and not redis_mode:
            warnings.warn(
                "Overriding RFPDupeFilter.request_fingerprint() is deprecated, set the"
                f" REQUEST_FINGERPRINTER_CLASS setting instead ({type(self).__qualname__} overrides it).",
                ScrapyDeprecationWarning,
                stacklevel=2,
            )
        self.seen: Any = SeenSet()
        if redis_mode:
            self.server = given["server"]
            self.key = given["key"]
            self.seen = _RedisKeySet(self.server, self.key)
        elif given["path"]:
            self.file = self._open_seen_file(Path(given["path"], SEEN_FILE))

    # constructors

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        """Scrapy's constructor: the crawl's fingerprinter, JOBDIR and DUPEFILTER_DEBUG."""
        return cls._build(crawler, shared=None)

    @classmethod
    def from_spider(cls, spider: Spider) -> Self:
        """scrapy-redis's scheduler's constructor: the seen set is the crawl's, in Redis, shared by every process."""
        return cls._build(spider.crawler, shared=True)

    @classmethod
    def from_settings(cls, settings: Any) -> Self:
        """scrapy-redis's constructor from settings: a Redis set ``dupefilter:<timestamp>`` on its server.

        Without a crawler there is no equivalence store: the protocol rung
        is compared at the scheme rung.
        """
        from dataclasses import replace

        config = IRISettings.from_settings(settings)
        if config.rung is Rung.PROTOCOL:
            config = replace(config, rung=Rung.SCHEME)
        key = REDIS_DUPEFILTER_KEY % {"timestamp": int(time.time())}
        fingerprinter = IRIRequestFingerprinter(identities=RequestIdentities(config))
        return cls(_redis_server(settings), key=key, debug=settings.getbool("DUPEFILTER_DEBUG"), fingerprinter=fingerprinter)

    @classmethod
    def _build(cls, crawler: Crawler, *, shared: bool | None) -> Self:
        from ._crawl import IRICrawl

        crawl = IRICrawl.of(crawler)
        debug = crawler.settings.getbool("DUPEFILTER_DEBUG")
        if crawl.settings.compat:
            return cls._compat(crawler, crawl, debug)
        df = cls(job_dir(crawler.settings), debug, fingerprinter=crawler.request_fingerprinter, crawl=crawl)
        local = df.seen
        df.seen = crawl.seen_set(local, shared=shared, managed=shared is None)
        if df.seen is not local:  # shared through Redis
            df.server = crawl.redis.client
            df.key = crawl.redis.keys.seen
        return df

    @classmethod
    def _compat(cls, crawler: Crawler, crawl: IRICrawl, debug: bool) -> Self:
        df = cls(None, debug, crawl=crawl)
        fallback = fallback_class(crawler.settings, "IRI_FALLBACK_DUPEFILTER_CLASS", SCRAPY_DUPEFILTER_CLASS, IRIDupeFilter)
        df.fallback = build_from_crawler(fallback, crawler)
        return df

    # the dupefilter interface

    def request_fingerprint(self, request: Request) -> str:
        """The hex key the filter files ``request`` under (Scrapy's and scrapy-redis's override hook)."""
        return self.identities.of(request).fingerprint[:KEY_SIZE].hex()

    def request_seen(self, request: Request) -> bool:
        """Whether an equivalent request was seen; records the request if not."""
        if self.fallback is not None:
            return bool(self.fallback.request_seen(request))
        if self._hooked or "request_fingerprint" in self.__dict__:
            return self._seen_by_hook(request)
        identity = self.identities.of(request)
        if identity.error is not None:
            self._count_invalid(request, identity)
        if identity.fingerprint in identity.chain:
            # a hop of the request's own redirect chain, landing where the request was filed
            self._inc("iri/own_chain")
            return False
        key = identity.fingerprint[:KEY_SIZE]
        found = self.seen.add(key, identity.tag)
        if found is None:
            if self.file is not None:
                self.file.write(_frame(SeenSet.record(key, identity.tag)))
            if self.user_fingerprinter is None and not self.legacy:
                return False
        return self._judge(request, identity, found)

    def _judge(self, request: Request, identity: RequestIdentity, found: int | None) -> bool:
        """The rest of :meth:`request_seen`: the crawl's own fingerprinter, Scrapy's JOBDIR file, the rung."""
        merged: str | None = None
        if found is not None and found != SEEN_ELSEWHERE:  # another process's tag is unknown
            merged = merging_rung(found, identity.tag, identity.rung).name.lower()
        if self.user_fingerprinter is not None:
            # the crawl's own fingerprinter decides, on the canonical request: the ladder's merges
            # reach it through the URL, and its own (case, tracking parameters...) count too
            canonical = request.replace(url=identity.canonical) if identity.canonical != request.url else request
            by_user = self._add(foreign_key(self.user_fingerprinter.fingerprint(canonical)), identity.tag)
            if by_user is None:
                found = merged = None
            elif found is None:
                found, merged = by_user, BY_FINGERPRINTER
        if found is None and self.legacy and self._seen_by_scrapy(request):
            found = SEEN_ELSEWHERE
        if found is None:
            return False
        if merged is not None:
            self._merged[request] = merged
        return True

    def open(self) -> None:
        if self.fallback is not None:
            return self.fallback.open()
        return None

    def close(self, reason: str = "") -> None:
        """Close the JOBDIR file; scrapy-redis's Redis set is deleted, as its filter does."""
        if self.fallback is not None:
            return self.fallback.close(reason)
        if self.file is not None:
            self.file.close()
            self.file = None
        if isinstance(self.seen, _RedisKeySet):
            self.clear()
        return None

    def clear(self) -> None:
        """Forget every seen request (scrapy-redis's scheduler flush)."""
        if isinstance(self.seen, SeenSet):
            self.seen = SeenSet()
            self.legacy.clear()
        else:  # in Redis
            self.seen.clear()

    def log(self, request: Request, spider: Spider | None = None) -> None:
        """Log a filtered duplicate as Scrapy (or scrapy-redis) does, and count it with the rung that merged it.

        The scheduler calls this for each request it drops as a duplicate:
        the crawl's receiver of dropped requests (:attr:`~._crawl.IRICrawl.dropped`) gets it first.
        """
        if self.fallback is not None:
            self.fallback.log(request, spider)
            return
        if self.crawl is not None and self.crawl.dropped is not None:
            self.crawl.dropped(request)
        _, first, each = self._log
        if self.debug:
            self.logger.debug(each, {"request": request, "referer": referer_str(request)}, extra={"spider": spider})
        elif self.logdupes:
            self.logger.debug(first, {"request": request}, extra={"spider": spider})
            self.logdupes = False
        stats = self.stats if self.stats is not None else getattr(getattr(spider, "crawler", None), "stats", None)
        if stats is None:
            return
        stats.inc_value("dupefilter/filtered")
        merged = self._merged.pop(request, None)  # None: not filtered by request_seen() just now
        if merged is not None:
            stats.inc_value(f"iri/filtered/{merged}")

    @property
    def fingerprints(self) -> frozenset[str]:
        """The hex keys of the seen requests (deprecated in Scrapy, as there)."""
        warnings.warn("RFPDupeFilter.fingerprints is deprecated.", ScrapyDeprecationWarning, stacklevel=2)
        return frozenset(key.hex() for key, _ in self.seen)

    # internals

    def _add(self, key: bytes, tag: int) -> int | None:
        found = self.seen.add(key, tag)
        if found is None and self.file is not None:
            self.file.write(_frame(SeenSet.record(key, tag)))
        return found

    def _seen_by_hook(self, request: Request) -> bool:
        """A ``request_fingerprint`` of a subclass or instance decides, as in Scrapy and scrapy-redis."""
        return self._add(foreign_key(self.request_fingerprint(request)), 0) is not None

    def _seen_by_scrapy(self, request: Request) -> bool:
        """Whether Scrapy's filter recorded the request in the JOBDIR file this job was started with."""
        fingerprinter = self.legacy_fingerprinter
        if fingerprinter is None:
            if self.crawler is None:
                return False
            fingerprinter = self.legacy_fingerprinter = _scrapy_fingerprinter(self.crawler)
        return fingerprinter.fingerprint(request) in self.legacy

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)

    def _count_invalid(self, request: Request, identity: RequestIdentity) -> None:
        self._inc("iri/invalid_url")
        if self._warned_invalid and not self.debug:
            return
        level = logging.DEBUG if self._warned_invalid else logging.WARNING
        more = "" if self._warned_invalid or self.debug else " (further ones are counted in iri/invalid_url)"
        logging.getLogger(__name__).log(
            level,
            "Request URL is not a valid IRI, compared as given: %(request)s (%(error)s)%(more)s",
            {"request": request, "error": identity.error, "more": more},
        )
        self._warned_invalid = True

    def _header(self) -> bytes:
        outer = self.user_fingerprinter
        fields = [
            _MAGIC.decode(),
            f"rung={self.config.rung.name.lower()}",
            f"keep_fragments={int(self.config.keep_fragments)}",
            f"lenient={int(self.config.lenient)}",
        ]
        if outer is not None:
            fields.append(f"with={type(outer).__module__}.{type(outer).__qualname__}")
        return " ".join(fields).encode()

    def _open_seen_file(self, path: Path) -> IO[bytes]:
        """Open the seen file for appending, after loading what earlier runs of the job saw (ours or Scrapy's)."""
        header = self._header()
        file = path.open("a+b")
        file.seek(0)
        data = file.read()
        ours: list[bytes] = []
        headed = False
        end = 0
        for record, end in _records(data):
            if record.startswith(_MAGIC):
                if record != header:
                    file.close()
                    raise IRISettingsError(
                        f"{path} was written with other settings ({record.decode('utf-8', 'replace')!r}, now"
                        f" {header.decode()!r}): resume the job with the same IRI_* settings, or start a new JOBDIR"
                    )
                headed = True
            elif headed and len(record) == RECORD_SIZE:
                ours.append(record)
            else:  # a fingerprint Scrapy's filter wrote
                self.legacy.add(record)
        if end != len(data):  # a record cut short by an unclean shutdown
            file.truncate(end)
        file.seek(0, 2)
        if not headed:
            file.write(_frame(header))
        count = self.seen.load(b"".join(ours))
        if count or self.legacy:
            logging.getLogger(__name__).info(
                "Resuming with %(count)d seen requests (%(legacy)d recorded by Scrapy's filter) from %(path)s",
                {"count": count + len(self.legacy), "legacy": len(self.legacy), "path": str(path)},
            )
        return file


def _frame(record: bytes) -> bytes:
    return len(record).to_bytes(_SIZE_BYTES, "big") + record


def _records(data: bytes) -> Any:
    """``(record, end offset)`` of each whole record in Scrapy's framing."""
    pos = 0
    while pos + _SIZE_BYTES <= len(data):
        size = int.from_bytes(data[pos : pos + _SIZE_BYTES], "big")
        start = pos + _SIZE_BYTES
        if start + size > len(data):
            return
        pos = start + size
        yield data[start:pos], pos


def _scrapy_fingerprinter(crawler: Crawler) -> Any:
    """The fingerprinter Scrapy's filter used: the crawl's, or the one scrapy-iri's replaced."""
    fingerprinter = crawler.request_fingerprinter
    if isinstance(fingerprinter, IRIRequestFingerprinter):
        return fingerprinter.fallback
    return fingerprinter


def _redis_server(settings: Any) -> Any:
    """The Redis client scrapy-redis's filter would use (its own helper when installed)."""
    try:
        from scrapy_redis import dupefilter as redis_dupefilter
    except ImportError:
        from scrapy_iri.store._redis import client_from_url

        from ._redis_config import RedisConfig

        config = RedisConfig.from_settings(settings, None)
        return client_from_url(config.url, config.params)
    return redis_dupefilter.get_redis_from_settings(settings)
