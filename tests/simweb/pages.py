"""HTML documents the simulated servers send."""

from __future__ import annotations

from html import escape

from .model import Resource

#: the ``<meta name=...>`` that carries a page's resource id
RESOURCE_ID_META = "resource-id"


def render_resource(resource: Resource) -> bytes:
    """A small UTF-8 HTML page: id in a meta tag, links as written."""
    base = f'<base href="{escape(resource.base)}">' if resource.base else ""
    items = "".join(
        f'<li><a href="{escape(href)}">{escape(href)}</a></li>' for href in resource.links
    )
    text = f"<p>{escape(resource.text)}</p>" if resource.text else ""
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
        f'<meta name="{RESOURCE_ID_META}" content="{escape(resource.id)}">'
        f"{base}<title>{escape(resource.title)}</title></head>\n"
        f"<body><h1>{escape(resource.title)}</h1>{text}<ul>{items}</ul></body></html>\n"
    ).encode("utf-8")


def render_message(status: int, message: str, location: str | None = None) -> bytes:
    """Body of a redirect or error answer (no resource id)."""
    link = f'<p><a href="{escape(location)}">{escape(location)}</a></p>' if location else ""
    return (
        f"<!DOCTYPE html>\n<html><head><title>{status}</title></head>"
        f"<body><p>{escape(message)}</p>{link}</body></html>\n"
    ).encode("utf-8")
