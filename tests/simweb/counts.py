"""Thread-safe fetch counters of the simulated web."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from .router import SimRequest, SimResponse


class FetchCounts:
    """Requests served: per resource id, per URL as received, per policy (and per policy and URL)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._resources: Counter[str] = Counter()
        self._urls: Counter[str] = Counter()
        self._redirects: Counter[str] = Counter()
        self._redirect_urls: Counter[tuple[str, str]] = Counter()
        self._statuses: Counter[int] = Counter()

    def record(self, request: SimRequest, response: SimResponse) -> None:
        with self._lock:
            self._urls[request.url] += 1
            self._statuses[response.status] += 1
            if response.resource_id is not None:
                self._resources[response.resource_id] += 1
            if response.policy is not None:
                self._redirects[response.policy] += 1
                self._redirect_urls[(response.policy, request.url)] += 1

    def reset(self) -> None:
        with self._lock:
            for counter in (self._resources, self._urls, self._redirects, self._redirect_urls, self._statuses):
                counter.clear()

    def resource(self, resource_id: str) -> int:
        with self._lock:
            return self._resources[resource_id]

    def resources(self) -> dict[str, int]:
        with self._lock:
            return dict(self._resources)

    def urls(self) -> dict[str, int]:
        with self._lock:
            return dict(self._urls)

    def redirects(self) -> dict[str, int]:
        with self._lock:
            return dict(self._redirects)

    def redirect_urls(self) -> dict[str, dict[str, int]]:
        """Policy -> URL as received -> redirects it answered there."""
        with self._lock:
            return _by_policy(self._redirect_urls)

    def statuses(self) -> dict[int, int]:
        with self._lock:
            return dict(self._statuses)

    def requests(self) -> int:
        with self._lock:
            return sum(self._statuses.values())

    def snapshot(self) -> dict[str, Any]:
        """Everything, JSON-ready (the control endpoint's ``/counts``)."""
        with self._lock:
            return {
                "requests": sum(self._statuses.values()),
                "redirects_served": sum(self._redirects.values()),
                "resources": dict(self._resources),
                "urls": dict(self._urls),
                "redirects": dict(self._redirects),
                "redirect_urls": _by_policy(self._redirect_urls),
                "statuses": {str(k): v for k, v in sorted(self._statuses.items())},
            }


def _by_policy(counts: Counter[tuple[str, str]]) -> dict[str, dict[str, int]]:
    grouped: dict[str, dict[str, int]] = {}
    for (policy, url), n in counts.items():
        grouped.setdefault(policy, {})[url] = n
    return grouped
