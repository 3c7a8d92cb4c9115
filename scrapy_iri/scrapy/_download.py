"""The empty query on the wire: ``http://h/e?`` is requested as ``GET /e? HTTP/1.1``.

Scrapy's default HTTP(S) download handler drives Twisted's ``Agent``, which
writes the request target from ``URI.originForm``: the path, then ``?`` and
the query only when the query is not empty. So ``/e?`` -- another resource
than ``/e`` (3987bis 5.3.3) -- goes out as ``/e`` on a direct connection and
inside an HTTPS ``CONNECT`` tunnel. Through an HTTP proxy the target is the
absolute URL, which keeps the ``?``, except that Scrapy first strips the
fragment with ``urldefrag``, and that drops the ``?`` of ``/e?#f``.

:class:`IRIDownloadHandler` is Scrapy's ``HTTP11DownloadHandler`` with one
difference, for requests whose URL has an empty query: Scrapy picks its agent
for the connection as always (direct, proxy or tunnel), and that one agent is
turned into a subclass that ends the request target with the ``?``; the
response gets the request's URL (without the fragment). Every other request
takes Scrapy's path untouched.

The handler builds on private parts of
``scrapy.core.downloader.handlers.http11`` (the names in :data:`NEEDS`). When
they are not what it expects, it logs one warning at start and sends every
request the standard way: the crawl runs, and ``/e?`` is fetched as ``/e``.
"""

from __future__ import annotations

import inspect
import logging
from functools import lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.core.downloader.handlers import http11
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.exceptions import ResponseDataLossError
from scrapy.utils.defer import maybe_deferred_to_future

from scrapy_iri.errors import ScrapyIRIError

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

#: What the add-on puts in :setting:`DOWNLOAD_HANDLERS` for ``http`` and ``https``.
HANDLER = "scrapy_iri.scrapy._download.IRIDownloadHandler"
#: Requests sent with the ``?`` of their empty query in the request target.
STAT = "iri/download/empty_query"

#: The agents Scrapy's ``_ScrapyAgent._get_agent`` returns: direct, CONNECT tunnel, HTTP proxy.
AGENTS = ("_BindAddressAgent", "_TunnelingAgent", "_ScrapyProxyAgent")
#: The parameters of ``Agent._requestWithEndpoint`` the agents are called with.
ENDPOINT_PARAMETERS = ("key", "endpoint", "method", "parsedURI", "headers", "bodyProducer", "requestPath")
#: The keyword arguments ``_ScrapyAgent`` is built with, from the handler's attributes of the same role.
SCRAPY_AGENT_ARGUMENTS = {
    "contextFactory": "_contextFactory",
    "bindAddress": "_bind_address",
    "pool": "_pool",
    "fail_on_dataloss": "_fail_on_dataloss",
    "crawler": "_crawler",
    "tls_verbose_logging": "_tls_verbose_logging",
}
#: Everything the handler takes from Scrapy's module, besides the classes above.
NEEDS = ("_ScrapyAgent", *AGENTS, "wrap_twisted_exceptions", "get_dataloss_msg")

def has_empty_query(url: str) -> bool:
    """Whether ``url`` has a query and it is empty (``/e?``, ``/e?#f``; not ``/e``, ``/e#?``)."""
    head = url.partition("#")[0]
    return head.endswith("?") and head.find("?") == len(head) - 1


def with_question_mark(target: bytes) -> bytes:
    """The request target of an empty-query URL: ``/e`` -> ``/e?``, ``http://h/e`` -> ``http://h/e?``."""
    return target if b"?" in target else target + b"?"


class InternalsMismatch(ScrapyIRIError):
    """Scrapy's HTTP/1.1 handler is not built the way :class:`IRIDownloadHandler` expects."""


class _KeepEmptyQuery:
    """Mixin for Scrapy's agents: the request target ends with the ``?`` Twisted leaves out."""

    def _requestWithEndpoint(self, *args: Any, **kwargs: Any) -> Any:  # noqa: N802 (Twisted's name)
        kwargs.update(zip(ENDPOINT_PARAMETERS, args))  # Agent.request passes them by position
        kwargs["requestPath"] = with_question_mark(kwargs["requestPath"])
        return super()._requestWithEndpoint(**kwargs)  # type: ignore[misc]


def keeping_agents(module: ModuleType) -> dict[type, type]:
    """Each of Scrapy's agent classes in ``module`` -> its subclass that keeps the empty query."""
    agents: dict[type, type] = {}
    for name in AGENTS:
        base = getattr(module, name)
        method = getattr(base, "_requestWithEndpoint", None)
        if not isinstance(base, type) or method is None:
            raise InternalsMismatch(f"{name} is not an agent class")
        parameters = list(inspect.signature(method).parameters)[1:]
        if parameters != list(ENDPOINT_PARAMETERS):
            raise InternalsMismatch(f"{name}._requestWithEndpoint takes {parameters}")
        agents[base] = type(f"KeepEmptyQuery{name}", (_KeepEmptyQuery, base), {"__doc__": _KeepEmptyQuery.__doc__})
    return agents


@lru_cache(maxsize=None)
def scrapy_agent_class(module: ModuleType) -> type:
    """A subclass of ``module._ScrapyAgent`` whose agents keep the empty query; :class:`InternalsMismatch` if it cannot be made."""
    missing = [name for name in NEEDS if not hasattr(module, name)]
    if missing:
        raise InternalsMismatch(f"missing {', '.join(missing)}")
    base = module._ScrapyAgent
    if not callable(getattr(base, "_get_agent", None)) or not callable(getattr(base, "download_request", None)):
        raise InternalsMismatch("_ScrapyAgent has no _get_agent() or download_request()")
    accepted = set(inspect.signature(base).parameters)
    wanted = {*SCRAPY_AGENT_ARGUMENTS, "maxsize", "warnsize"}
    if not wanted <= accepted:
        raise InternalsMismatch(f"_ScrapyAgent() does not take {sorted(wanted - accepted)}")
    agents = keeping_agents(module)

    class KeepEmptyQueryScrapyAgent(base):  # type: ignore[misc,valid-type]
        """Scrapy's agent choice, then that agent's subclass that keeps the empty query."""

        def _get_agent(self, request: Request, timeout: float) -> Any:
            agent = super()._get_agent(request, timeout)
            keeping = agents.get(type(agent))
            if keeping is None:
                raise InternalsMismatch(f"unknown agent {type(agent).__qualname__}")
            agent.__class__ = keeping  # same object, same state: Scrapy swaps its parser's class alike
            return agent

    return KeepEmptyQueryScrapyAgent


class IRIDownloadHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 download handler that sends ``/e?`` as ``/e?`` (see the module doc).

    The add-on sets it for ``http`` and ``https`` in :setting:`DOWNLOAD_HANDLERS`
    unless the project or spider chose a handler of its own.
    """

    #: Scrapy's module whose private parts the handler uses (checked when the handler starts).
    scrapy_module: ClassVar[ModuleType] = http11

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._keeping_agent: type | None = None
        try:
            missing = [attr for attr in SCRAPY_AGENT_ARGUMENTS.values() if not hasattr(self, attr)]
            if missing:
                raise InternalsMismatch(f"the handler has no {', '.join(missing)}")
            self._keeping_agent = scrapy_agent_class(self.scrapy_module)
        except InternalsMismatch as exc:
            self._fall_back(exc)

    def _fall_back(self, reason: Exception) -> None:
        """From now on every request goes Scrapy's standard way; say so once per crawl."""
        from ._crawl import IRICrawl

        self._keeping_agent = None
        if not IRICrawl.of(self._crawler).first_time("IRIDownloadHandler cannot keep the empty query"):
            return
        logger.warning(
            "scrapy_iri's IRIDownloadHandler cannot keep an empty query on the wire with this Scrapy"
            " (%(reason)s): requests go Scrapy's standard way, and a URL like http://h/e? is fetched as"
            " http://h/e.",
            {"reason": reason},
            extra={"crawler": self._crawler},
        )

    async def download_request(self, request: Request) -> Response:
        if self._keeping_agent is None or not has_empty_query(request.url):
            return await super().download_request(request)
        spider = self._crawler.spider
        agent = self._keeping_agent(
            **{argument: getattr(self, attr) for argument, attr in SCRAPY_AGENT_ARGUMENTS.items()},
            maxsize=getattr(spider, "download_maxsize", self._default_maxsize),
            warnsize=getattr(spider, "download_warnsize", self._default_warnsize),
        )
        module = self.scrapy_module
        self._crawler.stats.inc_value(STAT)
        try:
            with module.wrap_twisted_exceptions():
                response: Response = await maybe_deferred_to_future(agent.download_request(request))
        except InternalsMismatch as exc:
            self._fall_back(exc)
            return await super().download_request(request)
        except ResponseDataLossError:
            if not self._fail_on_dataloss_warned:
                logger.warning(module.get_dataloss_msg(request.url))
                self._fail_on_dataloss_warned = True
            raise
        url = request.url.partition("#")[0]
        return response if response.url == url else response.replace(url=url)
