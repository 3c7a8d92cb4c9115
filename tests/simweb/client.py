"""Read and reset a running simulated web's counters from another process."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from .web import CONTROL_HOST


def _control(proxy_url: str, path: str, timeout: float) -> Any:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy_url}))
    with opener.open(f"http://{CONTROL_HOST}{path}", timeout=timeout) as answer:
        return json.loads(answer.read().decode("utf-8"))


def remote_counts(proxy_url: str, timeout: float = 10.0) -> dict[str, Any]:
    """The ``/counts`` snapshot: requests, redirects, per resource/URL/policy."""
    return dict(_control(proxy_url, "/counts", timeout))


def remote_reset(proxy_url: str, timeout: float = 10.0) -> None:
    """Zero every counter."""
    _control(proxy_url, "/reset", timeout)


def remote_resources(proxy_url: str, timeout: float = 10.0) -> dict[str, Any]:
    """Reachable resource ids, traps and start URLs of the running web."""
    return dict(_control(proxy_url, "/resources", timeout))
