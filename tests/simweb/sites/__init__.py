"""Ready-made site sets (declarative data)."""

from __future__ import annotations

from .demo import demo_sites
from .protocol import protocol_sites

__all__ = ["demo_sites", "protocol_sites"]
