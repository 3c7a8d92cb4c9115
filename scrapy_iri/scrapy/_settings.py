"""The ``IRI_*`` settings: their defaults, and reading them once, validated.

Every component reads its settings through :class:`IRISettings`, so a bad
value fails the crawl at start with a message that names the setting,
never halfway through.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy_iri import Rung
from scrapy_iri.errors import IRISettingsError

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from scrapy_iri.store import LearningPolicy

#: The settings of the Scrapy components and their defaults.
DEFAULTS: dict[str, Any] = {
    # identity of requests (dupefilter and fingerprinter)
    "IRI_RUNG": "scheme",
    "IRI_KEEP_FRAGMENTS": False,
    "IRI_LENIENT": True,
    "IRI_COMPAT": None,
    # where learned URL identity persists (protocol rung)
    "IRI_STORE": None,
    "IRI_STORE_CACHE_SIZE": 65536,
    "IRI_STORE_RULE_CACHE": 50000,
    # learning from redirects (protocol rung, RedirectLearningMiddleware)
    "IRI_RULE_MIN_OBSERVATIONS": 3,
    "IRI_RULE_TTL": 30 * 86400,
    "IRI_ALIAS_TTL": 7 * 86400,
    "IRI_VERIFY_SHARE": 0.01,
    "IRI_VERIFY_ADAPTIVE": True,
    "IRI_SINK_FANIN": 5,
    "IRI_MAX_ALIAS_CHAIN": 20,
    "IRI_CROSS_SITE_ALIASES": True,
    "IRI_REWRITE": True,
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


def _get(settings: BaseSettings, name: str) -> Any:
    value = settings.get(name)
    return DEFAULTS[name] if value is None else value


def _bool(settings: BaseSettings, name: str) -> bool:
    try:
        return settings.getbool(name, DEFAULTS[name])
    except ValueError as exc:
        raise IRISettingsError(f"{name}: {exc}") from None


def _int(settings: BaseSettings, name: str, minimum: int) -> int:
    value = _get(settings, name)
    try:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise TypeError
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise IRISettingsError(f"{name}: expected a whole number, got {value!r}") from None
    if number < minimum:
        raise IRISettingsError(f"{name} must be at least {minimum}, got {value!r}")
    return number


def _number(settings: BaseSettings, name: str, *, positive: bool = False, at_most: float | None = None) -> float:
    """A number that is at least 0 (above 0 when ``positive``) and at most ``at_most``."""
    value = _get(settings, name)
    try:
        if isinstance(value, bool):
            raise TypeError
        number = float(value)
    except (TypeError, ValueError):
        raise IRISettingsError(f"{name}: expected a number, got {value!r}") from None
    if at_most is not None and not 0 <= number <= at_most:
        raise IRISettingsError(f"{name} must be between 0 and {at_most:g}, got {value!r}")
    if not (number > 0 if positive else number >= 0):  # NaN fails both
        raise IRISettingsError(f"{name} must be {'positive' if positive else 'at least 0'}, got {value!r}")
    return number


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
    """A store URI in the one syntax of ``scrapy_iri.store.parse_store_uri`` (the CLI's ``--store`` too)."""
    if value in (None, ""):
        return None
    from scrapy_iri.store import StoreError, parse_store_uri

    try:
        parse_store_uri(value)
    except StoreError as exc:
        raise IRISettingsError(f"IRI_STORE: {exc}") from None
    return value


@dataclass(frozen=True)
class IRISettings:
    """The ``IRI_*`` settings of one crawler, parsed and checked."""

    rung: Rung = Rung.SCHEME
    keep_fragments: bool = False
    lenient: bool = True
    compat: str | None = None
    store: str | None = None
    store_cache_size: int = 65536
    store_rule_cache: int = 50000
    url_fields: tuple[str, ...] = ()
    url_rung: Rung = Rung.SCHEME
    url_keep_original: bool = False
    url_keep_fragments: bool = True
    url_pipeline_order: int = 300
    rule_min_observations: int = 3
    rule_ttl: float = 30 * 86400.0
    alias_ttl: float = 7 * 86400.0
    verify_share: float = 0.01
    verify_adaptive: bool = True
    sink_fanin: int = 5
    max_alias_chain: int = 20
    cross_site_aliases: bool = True
    rewrite: bool = True

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
            store_cache_size=_int(settings, "IRI_STORE_CACHE_SIZE", 0),
            store_rule_cache=_int(settings, "IRI_STORE_RULE_CACHE", 1),
            url_fields=_fields(settings),
            url_rung=url_rung,
            url_keep_original=_bool(settings, "IRI_URL_KEEP_ORIGINAL"),
            url_keep_fragments=_bool(settings, "IRI_URL_KEEP_FRAGMENTS"),
            url_pipeline_order=order,
            rule_min_observations=_int(settings, "IRI_RULE_MIN_OBSERVATIONS", 1),
            rule_ttl=_number(settings, "IRI_RULE_TTL", positive=True),
            alias_ttl=_number(settings, "IRI_ALIAS_TTL", positive=True),
            verify_share=_number(settings, "IRI_VERIFY_SHARE", at_most=1.0),
            verify_adaptive=_bool(settings, "IRI_VERIFY_ADAPTIVE"),
            sink_fanin=_int(settings, "IRI_SINK_FANIN", 2),
            max_alias_chain=_int(settings, "IRI_MAX_ALIAS_CHAIN", 1),
            cross_site_aliases=_bool(settings, "IRI_CROSS_SITE_ALIASES"),
            rewrite=_bool(settings, "IRI_REWRITE"),
        )

    def learning_policy(self) -> LearningPolicy:
        """The equivalence store's :class:`~scrapy_iri.store.LearningPolicy` from these settings."""
        from scrapy_iri.store import LearningPolicy

        return LearningPolicy(
            min_observations=self.rule_min_observations,
            rule_ttl=self.rule_ttl,
            alias_ttl=self.alias_ttl,
            sink_fanin=self.sink_fanin,
            max_chain=self.max_alias_chain,
            cross_site_aliases=self.cross_site_aliases,
        )

    @property
    def needs_store(self) -> bool:
        """Whether some component works at the protocol rung."""
        return not self.compat and Rung.PROTOCOL in (self.rung, self.url_rung)


def learning_policy(settings: BaseSettings) -> LearningPolicy:
    """The equivalence store's learning policy from the ``IRI_*`` settings (validated)."""
    return IRISettings.from_settings(settings).learning_policy()


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
        from scrapy_iri.store import spider_store_name

        name = spider_store_name(spider_name)  # never a path out of .scrapy/iri/
    if createdir:
        directory.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(directory / name).resolve()}"
