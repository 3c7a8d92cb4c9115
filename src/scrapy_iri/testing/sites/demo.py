from __future__ import annotations
from ..model import Site
def demo_sites() -> list[Site]:
    s = Site("bücher.example")
    s.page("b:home", "/", "/a", "https://faß.example/", "http://fass.example/")
    s.page("b:a", "/a")
    f = Site("faß.example"); f.page("faß:home", "/")
    g = Site("fass.example"); g.page("fass:home", "/")
    return [s, f, g]
