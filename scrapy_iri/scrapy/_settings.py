"""The ``IRI_*`` settings: their defaults, and reading them once, validated.

Every component reads its settings through :class:`IRISettings`, so a bad
value fails the crawl at start with a message that names the setting,
never halfway through.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy_iri import Rung
from scrapy_iri.errors import IRISettingsError

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from scrapy_iri.store import LearningPolicy

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


def _optional_bool(fallback: str) -> Callable[[BaseSettings, str], bool]:
    """A flag that, when unset, takes its value from another setting (scrapy-redis's)."""

    def parse(settings: BaseSettings, name: str) -> bool:
        if settings.get(name) is None:
            return settings.getbool(fallback, False)
        return _bool(settings, name)

    return parse


def _raw(settings: BaseSettings, name: str) -> Any:
    return settings.get(name)


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


def _rung_value(name: str, value: Any) -> Rung:
    try:
        return Rung.parse(value)
    except ValueError as exc:
        raise IRISettingsError(f"{name}: {exc}") from None


def _rung(settings: BaseSettings, name: str) -> Rung:
    return _rung_value(name, _get(settings, name))


def _url_rung(settings: BaseSettings, name: str) -> Rung | None:
    value = settings.get(name)
    return None if value in (None, "") else _rung_value(name, value)


def _order(settings: BaseSettings, name: str) -> int:
    try:
        return settings.getint(name, DEFAULTS[name])
    except ValueError as exc:
        raise IRISettingsError(f"{name}: {exc}") from None


def _compat(settings: BaseSettings, name: str) -> str | None:
    value = settings.get(name)
    if value in (None, "", False):
        return None
    if isinstance(value, str) and value.strip().lower() in COMPAT_MODES:
        return value.strip().lower()
    raise IRISettingsError(
        f"IRI_COMPAT: unknown mode {value!r}: use None (the default) or one of {COMPAT_MODES}"
    )


def _fields(settings: BaseSettings, name: str) -> tuple[str, ...]:
    value = settings.get(name)
    if value is None:
        return ()
    if isinstance(value, str):
        value = value.split(",")
    try:
        fields = tuple(str(field).strip() for field in value)
    except TypeError:
        raise IRISettingsError(f"IRI_URL_FIELDS: expected a list of field names, got {value!r}") from None
    return tuple(field for field in fields if field)


def _store(settings: BaseSettings, name: str) -> str | None:
    return _store_value(settings.get(name))


def _namespace(settings: BaseSettings, name: str) -> str:
    """A namespace template: ``%(spider)s`` is the only key it may use."""
    template = str(_get(settings, name) or DEFAULTS[name])
    try:
        template % {"spider": "x"}
    except (KeyError, ValueError, TypeError) as exc:
        raise IRISettingsError(f"{name}: {template!r}: {exc} (use %(spider)s)") from None
    return template


def _store_value(value: Any) -> str | None:
    """A store URI in the one syntax of ``scrapy_iri.store.parse_store_uri`` (the CLI's ``--store`` too)."""
    if value in (None, ""):
        return None
    from scrapy_iri.store import StoreError, parse_store_uri

    try:
        parse_store_uri(value)
    except StoreError as exc:
        raise IRISettingsError(f"IRI_STORE: {exc}") from None
    return value


def _at_least(minimum: int) -> Callable[[BaseSettings, str], int]:
    return lambda settings, name: _int(settings, name, minimum)


def _seconds(*, positive: bool = False, at_least: float = 0.0) -> Callable[[BaseSettings, str], float]:
    def parse(settings: BaseSettings, name: str) -> float:
        number = _number(settings, name, positive=positive)
        if number < at_least:
            raise IRISettingsError(f"{name} must be at least {at_least:g}, got {_get(settings, name)!r}")
        return number

    return parse


def _share(settings: BaseSettings, name: str) -> float:
    return _number(settings, name, at_most=1.0)


#: Every ``IRI_*`` setting: its default and how it is read (the one table of defaults).
#: The field of :class:`IRISettings` is the name without ``IRI_``, in lower case.
TABLE: dict[str, tuple[Any, Callable[[BaseSettings, str], Any]]] = {
    # identity of requests (dupefilter and fingerprinter)
    "IRI_RUNG": ("scheme", _rung),
    "IRI_KEEP_FRAGMENTS": (False, _bool),
    "IRI_LENIENT": (True, _bool),
    "IRI_COMPAT": (None, _compat),
    # where learned URL identity persists (protocol rung)
    "IRI_STORE": (None, _store),
    "IRI_STORE_CACHE_SIZE": (65536, _at_least(0)),
    "IRI_STORE_RULE_CACHE": (50000, _at_least(1)),
    # learning from redirects (protocol rung, RedirectLearningMiddleware)
    "IRI_RULE_MIN_OBSERVATIONS": (3, _at_least(1)),
    "IRI_RULE_TTL": (30 * 86400, _seconds(positive=True)),
    "IRI_ALIAS_TTL": (7 * 86400, _seconds(positive=True)),
    "IRI_VERIFY_SHARE": (0.01, _share),
    "IRI_VERIFY_ADAPTIVE": (True, _bool),
    "IRI_SINK_FANIN": (5, _at_least(2)),
    "IRI_MAX_ALIAS_CHAIN": (20, _at_least(1)),
    "IRI_CROSS_SITE_ALIASES": (True, _bool),
    "IRI_REWRITE": (True, _bool),
    # CanonicalizeURLsPipeline
    "IRI_URL_FIELDS": ([], _fields),
    "IRI_URL_RUNG": (None, _url_rung),
    "IRI_URL_KEEP_ORIGINAL": (False, _bool),
    "IRI_URL_KEEP_FRAGMENTS": (True, _bool),
    "IRI_URL_PIPELINE_ORDER": (300, _order),
    # crawls shared through Redis (IRI_STORE = "redis://...", or scrapy-redis's scheduler)
    "IRI_REDIS_NAMESPACE": ("scrapy-iri:%(spider)s", _namespace),
    "IRI_REDIS_PERSIST": (None, _optional_bool("SCHEDULER_PERSIST")),
    "IRI_REDIS_FLUSH_ON_START": (None, _optional_bool("SCHEDULER_FLUSH_ON_START")),
    "IRI_REDIS_RETRY_TIMEOUT": (60.0, _seconds()),
    "IRI_REDIS_SYNC_INTERVAL": (0.5, _seconds(positive=True, at_least=0.01)),
    "IRI_REDIS_LOCAL_MAX": (10_000_000, _at_least(0)),
    "IRI_REDIS_ACCEPT_ROLLBACK_RISK": (False, _bool),
    # filled in by the add-on with what it replaced (Scrapy's add-on fallbacks)
    "IRI_FALLBACK_DUPEFILTER_CLASS": (None, _raw),
    "IRI_FALLBACK_REQUEST_FINGERPRINTER_CLASS": (None, _raw),
}

#: The default of each setting, from :data:`TABLE`.
DEFAULTS: dict[str, Any] = {name: default for name, (default, _) in TABLE.items()}


def _field(name: str) -> str:
    return name.removeprefix("IRI_").lower()


def _default(name: str) -> Any:
    """A field's default: the table's default, read as a setting would be."""
    from scrapy.settings import BaseSettings

    return TABLE[name][1](BaseSettings(), name)


@dataclass(frozen=True)
class IRISettings:
    """The ``IRI_*`` settings of one crawler, parsed and checked (defaults from :data:`TABLE`)."""

    rung: Rung = _default("IRI_RUNG")
    keep_fragments: bool = _default("IRI_KEEP_FRAGMENTS")
    lenient: bool = _default("IRI_LENIENT")
    compat: str | None = _default("IRI_COMPAT")
    store: str | None = _default("IRI_STORE")
    store_cache_size: int = _default("IRI_STORE_CACHE_SIZE")
    store_rule_cache: int = _default("IRI_STORE_RULE_CACHE")
    rule_min_observations: int = _default("IRI_RULE_MIN_OBSERVATIONS")
    rule_ttl: float = _default("IRI_RULE_TTL")
    alias_ttl: float = _default("IRI_ALIAS_TTL")
    verify_share: float = _default("IRI_VERIFY_SHARE")
    verify_adaptive: bool = _default("IRI_VERIFY_ADAPTIVE")
    sink_fanin: int = _default("IRI_SINK_FANIN")
    max_alias_chain: int = _default("IRI_MAX_ALIAS_CHAIN")
    cross_site_aliases: bool = _default("IRI_CROSS_SITE_ALIASES")
    rewrite: bool = _default("IRI_REWRITE")
    url_fields: tuple[str, ...] = _default("IRI_URL_FIELDS")
    url_rung: Rung | None = None  #: ``IRI_URL_RUNG``, else ``rung``
    url_keep_original: bool = _default("IRI_URL_KEEP_ORIGINAL")
    url_keep_fragments: bool = _default("IRI_URL_KEEP_FRAGMENTS")
    url_pipeline_order: int = _default("IRI_URL_PIPELINE_ORDER")
    redis_namespace: str = _default("IRI_REDIS_NAMESPACE")
    redis_persist: bool = _default("IRI_REDIS_PERSIST")
    redis_flush_on_start: bool = _default("IRI_REDIS_FLUSH_ON_START")
    redis_retry_timeout: float = _default("IRI_REDIS_RETRY_TIMEOUT")
    redis_sync_interval: float = _default("IRI_REDIS_SYNC_INTERVAL")
    redis_local_max: int = _default("IRI_REDIS_LOCAL_MAX")
    redis_accept_rollback_risk: bool = _default("IRI_REDIS_ACCEPT_ROLLBACK_RISK")
    fallback_dupefilter_class: Any = None
    fallback_request_fingerprinter_class: Any = None

    def __post_init__(self) -> None:
        if self.url_rung is None:
            object.__setattr__(self, "url_rung", self.rung)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> IRISettings:
        """Read and validate every setting of :data:`TABLE`; raises :class:`IRISettingsError` naming the bad one."""
        return cls(**{_field(name): parse(settings, name) for name, (_, parse) in TABLE.items()})

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
    cls = load_object(path)  # a class, or the path of one
    if isinstance(cls, type) and issubclass(cls, own):
        cls = load_object(default)
    return cls


def store_uri(settings: BaseSettings, spider_name: str | None, *, createdir: bool = False) -> str:
    """``IRI_STORE``, or the default: a SQLite file in JOBDIR, else in ``.scrapy/iri/``, per spider."""
    explicit = _store_value(settings.get("IRI_STORE"))
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
