"""An item pipeline that canonicalizes the URL fields of items."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter

from scrapy_iri import IRIError, Rung, canonicalize

from ._settings import IRISettings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from scrapy_iri._ladder import Representatives

logger = logging.getLogger(__name__)

INVALID_STAT = "iri/pipeline/invalid"
ORIGINAL_SUFFIX = "_original"


class CanonicalizeURLsPipeline:
    """Item pipeline (:setting:`ITEM_PIPELINES`) putting URL fields in canonical form.

    The fields named in ``IRI_URL_FIELDS`` (a string or a list of strings
    each) are replaced by their canonical form at ``IRI_URL_RUNG`` (default:
    ``IRI_RUNG``). With ``IRI_URL_KEEP_ORIGINAL`` the value as scraped is
    kept in ``<field>_original``, changed or not (the item must accept that
    field). A value
    that is not an IRI, even after lenient preprocessing when
    ``IRI_LENIENT`` is on, is left as it is, logged and counted in
    ``iri/pipeline/invalid``; the item is kept. The add-on enables this
    pipeline (at ``IRI_URL_PIPELINE_ORDER``) when ``IRI_URL_FIELDS`` is set.
    """

    def __init__(self, crawler: Crawler, config: IRISettings, store: Callable[[], Representatives]) -> None:
        self.crawler = crawler
        self.config = config
        self.fields = config.url_fields
        self.rung = config.url_rung
        self._store_getter = store
        self._store: Representatives | None = None
        self._warned_schema = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        from ._crawl import IRICrawl

        crawl = IRICrawl.of(crawler)
        return cls(crawler, crawl.settings, lambda: crawl.store)

    def process_item(self, item: Any) -> Any:
        """Canonicalize the configured fields of ``item`` in place; return it."""
        if not self.fields:
            return item
        adapter = ItemAdapter(item)
        for field in self.fields:
            value = adapter.get(field)
            if value is None:
                continue
            canonical = self._canonical_value(value, field)
            if self.config.url_keep_original:
                self._keep_original(adapter, field, value)
            if canonical != value:
                adapter[field] = canonical
        return item

    def _keep_original(self, adapter: ItemAdapter, field: str, value: Any) -> None:
        try:
            adapter[field + ORIGINAL_SUFFIX] = value
        except KeyError:
            if not self._warned_schema:
                logger.error(
                    "IRI_URL_KEEP_ORIGINAL: %(item)s has no field %(name)r; declare it to keep originals",
                    {"item": type(adapter.item).__name__, "name": field + ORIGINAL_SUFFIX},
                )
                self._warned_schema = True

    def _canonical_value(self, value: Any, field: str) -> Any:
        if isinstance(value, str):
            return self._canonical(value, field)
        if isinstance(value, (list, tuple)):
            return type(value)(self._canonical(v, field) if isinstance(v, str) else self._invalid(v, field) for v in value)
        return self._invalid(value, field)

    def _canonical(self, url: str, field: str) -> str:
        try:
            return canonicalize(
                url,
                self.rung,
                keep_fragment=self.config.url_keep_fragments,
                lenient=self.config.lenient,
                store=self._get_store() if self.rung is Rung.PROTOCOL else None,
            )
        except IRIError as exc:
            return self._invalid(url, field, exc)

    def _invalid(self, value: Any, field: str, error: Exception | None = None) -> Any:
        self.crawler.stats.inc_value(INVALID_STAT)
        reason = str(error) if error is not None else f"not a string but {type(value).__name__}"
        logger.warning(
            "Item field %(field)r is not a valid IRI, kept as it is: %(value)r (%(reason)s)",
            {"field": field, "value": value, "reason": reason},
        )
        return value

    def _get_store(self) -> Representatives:
        if self._store is None:
            self._store = self._store_getter()  # opened on first use: only the protocol rung needs it
        return self._store
