from __future__ import annotations
from ..model import Site
def protocol_sites() -> list[Site]:
    return []
