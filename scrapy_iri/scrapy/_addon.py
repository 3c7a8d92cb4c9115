"""The add-on: ``ADDONS = {"scrapy_iri.Addon": 0}`` turns everything on."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.misc import load_object

from scrapy_iri import Rung

from ._settings import IRISettings, IRISettingsError

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import Settings
    from typing_extensions import Self

logger = logging.getLogger(__name__)

DUPEFILTER = "scrapy_iri.IRIDupeFilter"
FINGERPRINTER = "scrapy_iri.IRIRequestFingerprinter"
PIPELINE = "scrapy_iri.CanonicalizeURLsPipeline"


def _missing(module: str, distribution: str) -> list[tuple[str, str]]:
    """``[(module, what to pip install)]`` when ``module`` cannot be imported, else ``[]``."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    return [] if found else [(module, distribution)]


class Addon:
    """Scrapy add-on enabling IRI identity in a crawl.

    - :setting:`DUPEFILTER_CLASS` -> :class:`~scrapy_iri.IRIDupeFilter`;
    - :setting:`REQUEST_FINGERPRINTER_CLASS` ->
      :class:`~scrapy_iri.IRIRequestFingerprinter` (the HTTP cache and media
      pipelines then share the dupefilter's identity);
    - :class:`~scrapy_iri.scrapy._location.IRILocationMiddleware` in
      :setting:`DOWNLOADER_MIDDLEWARES`, so redirects to IRIs reach the right host;
    - :class:`~scrapy_iri.scrapy._verbatim.VerbatimLinkMiddleware` in
      :setting:`SPIDER_MIDDLEWARES`, so ``response.follow(link)`` and
      ``CrawlSpider`` rules request :class:`~scrapy_iri.IRILinkExtractor`
      links as extracted (``/e?`` stays ``/e?``), and start requests for
      URLs given on the command line as written;
    - :class:`~scrapy_iri.scrapy._command_line.CommandLineURLMiddleware` in
      :setting:`DOWNLOADER_MIDDLEWARES`, so ``scrapy shell URL`` fetches ``URL`` as written;
    - :class:`~scrapy_iri.scrapy._offsite.IRIOffsiteMiddleware` in Scrapy's
      ``OffsiteMiddleware``'s place, so ``allowed_domains`` may be written
      with Unicode labels and any letter case (unless the project set it);
    - :class:`~scrapy_iri.scrapy._download.IRIDownloadHandler` in
      :setting:`DOWNLOAD_HANDLERS` for ``http`` and ``https``, so ``/e?`` is
      sent as ``GET /e?`` (unless the project chose a handler: then one warning);
    - :class:`~scrapy_iri.CanonicalizeURLsPipeline` in
      :setting:`ITEM_PIPELINES` when ``IRI_URL_FIELDS`` is set.

    Both classes are set at the ``addon`` priority, so project and spider
    settings win. Following Scrapy's add-on guidance, the classes replaced
    are kept in ``IRI_FALLBACK_DUPEFILTER_CLASS`` and
    ``IRI_FALLBACK_REQUEST_FINGERPRINTER_CLASS`` (unless the user set those),
    and the components delegate to them under ``IRI_COMPAT``. ``IRI_*``
    settings are checked here: a bad value stops the crawl before it starts.
    """

    def __init__(self, crawler: Crawler | None = None) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def update_settings(self, settings: Settings) -> None:
        # the add-on's default rung is "protocol"
        settings.setdefault("IRI_RUNG", "protocol", "addon")
        config = IRISettings.from_settings(settings)
        self._check_store(config)
        self._replace(settings, "DUPEFILTER_CLASS", DUPEFILTER, "IRI_FALLBACK_DUPEFILTER_CLASS")
        self._replace(
            settings,
            "REQUEST_FINGERPRINTER_CLASS",
            FINGERPRINTER,
            "IRI_FALLBACK_REQUEST_FINGERPRINTER_CLASS",
        )
        self._add_location_middleware(settings, config)
        self._add_verbatim_middleware(settings)
        self._add_command_line_middleware(settings)
        self._use_offsite_middleware(settings)
        self._use_download_handler(settings)
        if config.url_fields:
            pipeline = load_object(PIPELINE)
            settings.setdefault_in_component_priority_dict("ITEM_PIPELINES", pipeline, config.url_pipeline_order)
        self._update_protocol_settings(settings, config)

    def _replace(self, settings: Settings, name: str, ours: str, fallback: str) -> None:
        """Set ``name`` to our class at the add-on priority, keeping what it replaces in ``fallback``."""
        current = settings.get(name)
        ours_cls = load_object(ours)
        current_cls = load_object(current) if current else None
        is_ours = isinstance(current_cls, type) and issubclass(current_cls, ours_cls)
        if not is_ours and current and not settings.get(fallback):
            settings.set(fallback, current, "addon")
        settings.set(name, ours, "addon")
        if not is_ours and (settings.getpriority(name) or 0) > SETTINGS_PRIORITIES["addon"]:
            logger.warning(
                "%(name)s is set to %(value)r above the add-on priority, so scrapy_iri's %(ours)s"
                " is not used. Remove it from the project or spider settings, or set"
                " %(fallback)s to it to keep it as the fallback.",
                {"name": name, "value": current, "ours": ours, "fallback": fallback},
                extra={"crawler": self.crawler},
            )

    @staticmethod
    def _check_store(config: IRISettings) -> None:
        """Stop before the crawl starts when a configured feature's package is missing."""
        from ._crawl import is_redis_store

        missing = []
        if config.needs_store:
            missing += _missing("publicsuffixlist", "scrapy-iri")
        if is_redis_store(config.store):
            missing += _missing("redis", "'scrapy-iri[redis]'")
        if missing:
            needs = "IRI_STORE = %r" % config.store if is_redis_store(config.store) else "IRI_RUNG = 'protocol'"
            raise IRISettingsError(
                f"{needs} needs the package(s) {', '.join(name for name, _ in missing)}:"
                f" install them with: pip install {' '.join(sorted({dist for _, dist in missing}))}"
            )

    @staticmethod
    def _add_location_middleware(settings: Settings, config: IRISettings) -> None:
        """Redirects to IRIs are followed to their URI, not IDNA2003's host (also under compat)."""
        from ._location import ORDER, IRILocationMiddleware

        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", IRILocationMiddleware, ORDER)

    @staticmethod
    def _add_verbatim_middleware(settings: Settings) -> None:
        """``response.follow(link)`` and ``CrawlSpider`` rules request ``IRILinkExtractor`` links as extracted."""
        from ._verbatim import ORDER, VerbatimLinkMiddleware

        settings.setdefault_in_component_priority_dict("SPIDER_MIDDLEWARES", VerbatimLinkMiddleware, ORDER)

    @staticmethod
    def _add_command_line_middleware(settings: Settings) -> None:
        """The shell's URL argument is requested as written (``fetch`` and ``parse``: the spider middleware)."""
        from ._command_line import ORDER, CommandLineURLMiddleware

        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", CommandLineURLMiddleware, ORDER)

    @staticmethod
    def _use_offsite_middleware(settings: Settings) -> None:
        """Scrapy's ``OffsiteMiddleware`` -> :class:`~scrapy_iri.scrapy._offsite.IRIOffsiteMiddleware`, unless the project set it."""
        from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware

        from ._offsite import SCRAPY, IRIOffsiteMiddleware

        base = settings.getdict("DOWNLOADER_MIDDLEWARES_BASE")
        own = settings["DOWNLOADER_MIDDLEWARES"]
        order = base.get(SCRAPY)
        mentioned = any(
            key in (SCRAPY, OffsiteMiddleware) or (isinstance(key, type) and issubclass(key, OffsiteMiddleware))
            for key in own
        )
        if order is None or mentioned:
            return
        own.set(SCRAPY, None, "addon")
        own.set(IRIOffsiteMiddleware, order, "addon")

    def _use_download_handler(self, settings: Settings) -> None:
        """``http``/``https`` get :class:`~scrapy_iri.scrapy._download.IRIDownloadHandler` unless the user chose a handler."""
        from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler

        from ._download import HANDLER, IRIDownloadHandler

        own = settings["DOWNLOAD_HANDLERS"]
        base = settings["DOWNLOAD_HANDLERS_BASE"]
        kept = {}
        for scheme in ("http", "https"):
            current = own.get(scheme) if scheme in own else base.get(scheme)
            if current is None:
                continue  # the scheme is switched off
            try:
                cls = load_object(current)
            except Exception:  # noqa: BLE001 -- Scrapy reports a handler it cannot load when it loads it
                cls = None
            if isinstance(cls, type) and issubclass(cls, IRIDownloadHandler):
                continue
            if scheme not in own and cls is HTTP11DownloadHandler:
                own.set(scheme, HANDLER, "addon")
            else:
                kept[scheme] = current if isinstance(current, str) else getattr(current, "__qualname__", current)
        if kept:
            logger.warning(
                "DOWNLOAD_HANDLERS keeps %(kept)s, so an empty query may not reach the server:"
                " Scrapy's own handlers send http://h/e? as http://h/e, another resource. scrapy_iri's"
                " %(ours)s (the add-on's choice when the project sets no handler) keeps it.",
                {"kept": kept, "ours": HANDLER},
                extra={"crawler": self.crawler},
            )

    def _update_protocol_settings(self, settings: Settings, config: IRISettings) -> Any:
        """At the protocol rung: the redirect-learning middleware (learning, rewriting before download)."""
        if config.needs_store and config.rung is Rung.PROTOCOL:
            from ._redirects import ORDER, RedirectLearningMiddleware

            settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", RedirectLearningMiddleware, ORDER)
        return None
