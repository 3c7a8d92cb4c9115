"""Turning benchmark results into the targets' verdicts, a Markdown report and an SVG chart."""

from __future__ import annotations

from html import escape
from typing import Any

OURS = "scrapy-iri lenient"
W3LIB = "w3lib canonicalize_url"
ADA = "ada-url normalize_url"
RFP = "Scrapy RFPDupeFilter"
IRI = "scrapy-iri IRIDupeFilter"
IRI_SCHEME = "scrapy-iri IRIDupeFilter, IRI_RUNG=scheme"


def _us(results: dict[str, Any], data: str, name: str) -> float | None:
    try:
        return results["sections"]["canonicalization"]["datasets"][data]["results"][name]["us_per_url"]
    except KeyError:
        return None


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The speed targets, each with the measured ratio and whether it is met."""
    out = []
    ours, w3lib, ada = (_us(results, "kasztp", n) for n in (OURS, W3LIB, ADA))
    if ours and w3lib:
        out.append({
            "target": "scheme-rung canonicalization (lenient) <= 1/2 of w3lib's time on the 48k list",
            "ratio": round(ours / w3lib, 3),
            "met": ours <= 0.5 * w3lib,
        })
    if ours and ada:
        out.append({
            "target": "scheme-rung canonicalization (lenient) <= 1/2 of ada-url's time on the 48k list",
            "ratio": round(ours / ada, 3),
            "met": ours <= 0.5 * ada,
        })
    ours_iri, ada_iri = (_us(results, "IRI-heavy", n) for n in (OURS, ADA))
    if ours_iri and ada_iri:
        out.append({
            "target": "scheme-rung canonicalization (lenient) <= ada-url's time on the IRI-heavy set",
            "ratio": round(ours_iri / ada_iri, 3),
            "met": ours_iri <= ada_iri,
        })
    try:
        filters = results["sections"]["dupefilter_memory"]["filters"]
        rfp, iri = filters[RFP]["bytes_per_request"], filters[IRI]["bytes_per_request"]
    except (KeyError, TypeError):
        pass
    else:
        out.append({
            "target": "IRIDupeFilter retained memory per seen request <= 1/2 of RFPDupeFilter's",
            "ratio": round(iri / rfp, 3),
            "met": iri <= 0.5 * rfp,
        })
    return out


# -- Markdown -----------------------------------------------------------------------


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join("" if c is None else str(c) for c in cells) + " |"


def markdown(results: dict[str, Any], svg_name: str) -> str:
    m = results["machine"]
    packages = ", ".join(f"{k} {v}" for k, v in m["packages"].items() if v)
    lines = [
        "# scrapy-iri benchmarks",
        "",
        f"`{results['command']}` on {results['date']} (commit {m.get('commit') or 'unknown'}).",
        "",
        f"- CPU: {m['cpu']}, {m['logical_cpus']} logical CPUs; load average {m.get('load_average_at_start')}"
        f" at start, {m.get('load_average_at_end')} at end",
        f"- {m['python']} on {m['os']}",
        f"- {packages}",
        "",
        f"![chart]({svg_name})",
        "",
    ]
    if results.get("targets"):
        lines += ["## Speed targets", "", _row(["target", "ratio", "met"]), _row(["---", "---:", "---"])]
        for t in results["targets"]:
            lines.append(_row([t["target"], f"{t['ratio']:.2f}", "yes" if t["met"] else "**no**"]))
        lines.append("")
    sections = results["sections"]
    canon = sections.get("canonicalization", {})
    lines += ["## 1. Canonicalization at the scheme rung", ""]
    if "skipped" in canon:
        lines += [f"Skipped: {canon['skipped']}", ""]
    elif canon:
        lines += [
            f"µs per URL of {'CPU' if canon.get('clock') == 'cpu' else 'wall'} time (best of "
            f"{canon['repeats']} passes, caches cleared before each), and how many URLs each one"
            " rejected (raised). Fragments dropped (w3lib's default; ada-url and url-normalize keep"
            " them). The reference path is scrapy-iri without its fast path and memo.",
            "",
        ]
        names = list(next(iter(canon["datasets"].values()))["results"])
        lines.append(_row(["input", "URLs (unique)"] + names))
        lines.append(_row(["---", "---:"] + ["---:"] * len(names)))
        for data, entry in canon["datasets"].items():
            cells = [data, f"{entry['size']:,} ({entry['unique']:,})"]
            for name in names:
                r = entry["results"][name]
                cells.append(f"{r['us_per_url']:.2f} µs" + (f" ({r['errors']:,} err)" if r["errors"] else ""))
            lines.append(_row(cells))
        lines.append("")
        for data, entry in canon["datasets"].items():
            lines.append(f"- **{data}**: {entry['what']}")
        for name, why in canon.get("missing", {}).items():
            lines.append(f"- {name}: skipped, {why}")
        lines.append("")
    memory = sections.get("dupefilter_memory", {})
    lines += ["## 2. Dupefilter: retained memory per seen request", ""]
    if "skipped" in memory:
        lines += [f"Skipped: {memory['skipped']}", ""]
    elif memory:
        lines += [memory["how"], ""]
        lines.append(_row(["filter", "bytes/request", "marginal bytes/request", "RSS delta bytes/request",
                           "seen-set bytes/request", "warm-up (MB)", "µs per request"]))
        lines.append(_row(["---"] + ["---:"] * 6))
        for name, r in memory["filters"].items():
            if "skipped" in r:
                lines.append(_row([name, f"skipped: {r['skipped']}", "", "", "", "", ""]))
                continue
            lines.append(_row([
                name, r["bytes_per_request"], r["marginal_bytes_per_request"], r["rss_delta_bytes_per_request"],
                r.get("seen_set_nbytes_per_request", "—"), f"{r['warm_up_bytes'] / 1e6:.1f}", r["us_per_request"],
            ]))
            if r.get("duplicates_reported"):
                lines.append(_row([f"↳ {name} reported {r['duplicates_reported']:,} of the distinct requests as"
                                   " seen", "", "", "", "", "", ""]))
        lines.append("")
    store = sections.get("store_lookup", {})
    lines += ["## 3. Equivalence store: lookup latency", ""]
    if "skipped" in store:
        lines += [f"Skipped: {store['skipped']}", ""]
    elif store:
        lines += [store["how"], ""]
        kinds = ["hit (an alias)", "miss, known host", "miss, unknown host"]
        lines.append(_row(["backend"] + [f"{k} (µs)" for k in kinds] + ["record_redirect (µs)", "reopen (s)"]))
        lines.append(_row(["---"] + ["---:"] * (len(kinds) + 2)))
        for name, r in store["backends"].items():
            if "skipped" in r:
                lines.append(_row([name, f"skipped: {r['skipped']}"] + [""] * (len(kinds) + 1)))
                continue
            lines.append(_row([name] + [r[k] for k in kinds] + [r["record_redirect_us"], r.get("reopen_s", "—")]))
        lines.append("")
    return "\n".join(lines)


# -- SVG ------------------------------------------------------------------------------

_COLORS = {
    "scrapy-iri strict": "#1f6f8b",
    "scrapy-iri lenient": "#2a9d8f",
    "scrapy-iri lenient, reference path": "#a8dadc",
    "w3lib canonicalize_url": "#e76f51",
    "url-normalize": "#f4a261",
    "ada-url normalize_url": "#6d597a",
    RFP: "#e76f51",
    IRI: "#2a9d8f",
    IRI_SCHEME: "#1f6f8b",
}


def _panel(title: str, bars: list[tuple[str, float, str]], unit: str, y: int, width: int) -> tuple[list[str], int]:
    """A horizontal bar chart: one bar per (label, value, text); returns its elements and height."""
    label_w, bar_h, gap = 250, 16, 4
    usable = width - label_w - 120
    values = sorted(v for _, v, _ in bars)
    top = values[-1] if values else 1.0
    if len(values) > 1 and values[-1] > 3 * values[-2] > 0:
        top = values[-2] * 1.2  # one far slower contender: clip its bar rather than flatten the others
    top = top or 1.0
    out = [f'<text x="10" y="{y + 14}" font-weight="bold">{escape(title)}</text>']
    y += 24
    for label, value, text in bars:
        clipped = value > top
        w = max(1.0, usable * min(value, top) / top)
        color = _COLORS.get(label, "#888")
        out.append(f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end">{escape(label)}</text>')
        out.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{color}"/>')
        if clipped:  # a white zig-zag across the bar's end: "axis broken here"
            x = label_w + w - 14
            out.append(f'<path d="M{x} {y - 1} l4 {bar_h / 2 + 1} l-4 {bar_h / 2 + 1} h5 l4 -{bar_h / 2 + 1} '
                       f'l-4 -{bar_h / 2 + 1} z" fill="white"/>')
        suffix = " (bar clipped)" if clipped else ""
        out.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 12}">{escape(text)} {escape(unit)}{suffix}</text>')
        y += bar_h + gap
    return out, y + 10


def svg(results: dict[str, Any]) -> str:
    width = 760
    elements: list[str] = []
    y = 10
    canon = results["sections"].get("canonicalization", {})
    for data, entry in canon.get("datasets", {}).items():
        bars = [(name, r["us_per_url"], f"{r['us_per_url']:.2f}") for name, r in entry["results"].items()]
        part, y = _panel(f"Canonicalization, {data} ({entry['size']:,} URLs): µs per URL, lower is better",
                         bars, "µs", y, width)
        elements += part
    memory = results["sections"].get("dupefilter_memory", {})
    bars = [
        (name, r["bytes_per_request"], f"{r['bytes_per_request']:.0f}")
        for name, r in memory.get("filters", {}).items()
        if "bytes_per_request" in r
    ]
    if bars:
        part, y = _panel("Dupefilter: retained bytes per seen request, lower is better", bars, "B", y, width)
        elements += part
    store = results["sections"].get("store_lookup", {})
    bars = []
    for backend, r in store.get("backends", {}).items():
        for kind in ("hit (an alias)", "miss, known host", "miss, unknown host"):
            if kind in r:
                bars.append((f"{backend}: {kind}", r[kind], f"{r[kind]:.2f}"))
    if bars:
        part, y = _panel("Store: µs per representative() lookup", bars, "µs", y, width)
        elements += part
    m = results["machine"]
    elements.append(
        f'<text x="10" y="{y + 4}" fill="#555">{escape(m["cpu"])}, {m["logical_cpus"]} CPUs, '
        f'{escape(m["python"])}; {escape(results["date"])}</text>'
    )
    height = y + 16
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">\n'
        f'<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(elements) + "\n</svg>\n"
    )
