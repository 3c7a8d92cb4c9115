"""The ``IRI_*`` settings: their defaults, and reading them once, validated.

Every component reads its settings through :class:`IRISettings`, so a bad
value fails the crawl at start with a message that names the setting,
never halfway through.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from scrapy_iri import Rung

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    from scrapy_iri.ladder import EquivalenceStore

#: The settings of the Scrapy components and their defaults.
DEFAULTS: dict[str, Any] = {
    # identity of requests (dupefilter and fingerprinter)
    "IRI_RUNG": "scheme",
    "IRI_KEEP_FRAGMENTS": False,
    "IRI_LENIENT": True,
    "IRI_COMPAT": None,
    # where learned URL identity persists (protocol rung)
    "IRI_STORE": None,
    # CanonicalizeURLsPipeline
    "IRI_URL_FIELDS": [],
    "IRI_URL_RUNG": None,
    "IRI_URL_KEEP_ORIGINAL": False,
    "IRI_URL_KEEP_FRAGMENTS": True,
    "IRI_URL_PIPELINE_ORDER": 300,
    # filled in by the add-on with what it replaced (Scrapy's add-on fallbacks)
    "IRI_FALLBACK_DUPEFILTER_CLASS": None,
    "IRI_FALLBACK_REQUEST_FINGERPRINTER_CLASS": None,
}

#: The values ``IRI_COMPAT`` accepts besides ``None``.
COMPAT_MODES = ("w3lib",)

#: What the fallbacks are when no add-on recorded one.
SCRAPY_DUPEFILTER_CLASS = "scrapy.dupefilters.RFPDupeFilter"
SCRAPY_REQUEST_FINGERPRINTER_CLASS = "scrapy.utils.request.RequestFingerprinter"


class IRISettingsError(ValueError):
    """An ``IRI_*`` setting has a value the components cannot use."""


def _get(settings: BaseSettings, name: str) -> Any:
    value = settings.get(name)
    return DEFAULTS[name] if value is None else value


def _bool(settings: BaseSettings, name: str) -> bool:
    try:
        return settings.getbool(name, DEFAULTS[name])
    except ValueError as exc:
        raise IRISettingsError(f"{name}: {exc}") from None


def _rung(name: str, value: Any) -> Rung:
    try:
        return Rung.parse(value)
    except ValueError as exc:
        raise IRISettingsError(f"{name}: {exc}") from None


def _compat(value: Any) -> str | None:
    if value in (None, "", False):
        return None
    if isinstance(value, str) and value.strip().lower() in COMPAT_MODES:
        return value.strip().lower()
    raise IRISettingsError(
        f"IRI_COMPAT: unknown mode {value!r}: use None (the default) or one of {COMPAT_MODES}"
    )


def _fields(settings: BaseSettings) -> tuple[str, ...]:
    value = settings.get("IRI_URL_FIELDS")
    if value is None:
        return ()
    if isinstance(value, str):
        value = value.split(",")
    try:
        fields = tuple(str(field).strip() for field in value)
    except TypeError:
        raise IRISettingsError(f"IRI_URL_FIELDS: expected a list of field names, got {value!r}") from None
    return tuple(field for field in fields if field)


def _store(value: Any) -> str | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str) or ":" not in value:
        raise IRISettingsError(
            f"IRI_STORE: expected a store URI such as 'sqlite:///path/store.db' or 'memory:', got {value!r}"
        )
    return value


@dataclass(frozen=True)
class IRISettings:
    """The ``IRI_*`` settings of one crawler, parsed and checked."""

    rung: Rung = Rung.SCHEME
    keep_fragments: bool = False
    lenient: bool = True
    compat: str | None = None
    store: str | None = None
    url_fields: tuple[str, ...] = ()
    url_rung: Rung = Rung.SCHEME
    url_keep_original: bool = False
    url_keep_fragments: bool = True
    url_pipeline_order: int = 300

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> IRISettings:
        """Read and validate; raises :class:`IRISettingsError` naming the bad setting."""
        rung = _rung("IRI_RUNG", _get(settings, "IRI_RUNG"))
        url_rung_value = settings.get("IRI_URL_RUNG")
        url_rung = rung if url_rung_value in (None, "") else _rung("IRI_URL_RUNG", url_rung_value)
        try:
            order = settings.getint("IRI_URL_PIPELINE_ORDER", DEFAULTS["IRI_URL_PIPELINE_ORDER"])
        except ValueError as exc:
            raise IRISettingsError(f"IRI_URL_PIPELINE_ORDER: {exc}") from None
        return cls(
            rung=rung,
            keep_fragments=_bool(settings, "IRI_KEEP_FRAGMENTS"),
            lenient=_bool(settings, "IRI_LENIENT"),
            compat=_compat(settings.get("IRI_COMPAT")),
            store=_store(settings.get("IRI_STORE")),
            url_fields=_fields(settings),
            url_rung=url_rung,
            url_keep_original=_bool(settings, "IRI_URL_KEEP_ORIGINAL"),
            url_keep_fragments=_bool(settings, "IRI_URL_KEEP_FRAGMENTS"),
            url_pipeline_order=order,
        )

    @property
    def needs_store(self) -> bool:
        """Whether some component works at the protocol rung."""
        return not self.compat and Rung.PROTOCOL in (self.rung, self.url_rung)


def fallback_class(settings: BaseSettings, name: str, default: str, own: type) -> Any:
    """The class a fallback setting names, never ``own`` (that would recurse)."""
    from scrapy.utils.misc import load_object

    path = settings.get(name) or default
    cls = load_object(path)
    if isinstance(cls, type) and issubclass(cls, own):
        cls = load_object(default)
    return cls


def store_uri(settings: BaseSettings, spider_name: str | None, *, createdir: bool = False) -> str:
    """``IRI_STORE``, or the default: a SQLite file in JOBDIR, else in ``.scrapy/iri/``, per spider."""
    explicit = _store(settings.get("IRI_STORE"))
    if explicit is not None:
        return explicit
    jobdir = settings.get("JOBDIR")
    if jobdir:
        directory = Path(jobdir)
        name = "iri-store.sqlite"
    else:
        from scrapy.utils.project import data_path

        directory = Path(data_path("iri"))
        name = f"{spider_name or 'default'}.sqlite"
    if createdir:
        directory.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(directory / name).resolve()}"


def crawler_store(crawler: Crawler) -> EquivalenceStore:
    """The crawler's equivalence store (``IRI_STORE``), opened on first use and shared.

    Every component of a crawl uses this one store. Components find it
    lazily: the request fingerprinter is built before the engine and the
    spider exist. It is closed when the engine stops.
    """
    store = _stores.get(crawler)
    if store is None:
        from scrapy import signals

        from scrapy_iri.store import open_store

        uri = store_uri(crawler.settings, getattr(crawler.spidercls, "name", None), createdir=True)
        if uri.partition(":")[0].lower() in ("redis", "rediss", "unix"):  # Redis hook (issue 6): per-crawl namespace
            from .redis_seen import open_crawler_store

            store = open_crawler_store(crawler)
        else:
            store = open_store(uri)
        _stores[crawler] = store
        # last of all: pipelines, the dupefilter and middlewares may use it until then
        crawler.signals.connect(store.close, signal=signals.engine_stopped)
    return store


_stores: WeakKeyDictionary[Crawler, EquivalenceStore] = WeakKeyDictionary()
