"""Reference resolution (RFC 3986 sec. 5.2; 3987bis sec. 6.5)."""

from __future__ import annotations

import re

from .errors import IRIError
from ._parse import IRIReference, parse, recompose


_DOT_SEGMENT = re.compile(r"(?:^|/)\.\.?(?:/|$)")


def remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4, rules A-E of the RFC's loop, reading the input by index (linear time)."""
    if not _DOT_SEGMENT.search(path):
        return path
    out: list[str] = []  # output buffer as segments, each with its leading "/" if any
    i, n = 0, len(path)
    while i < n:
        if path.startswith("../", i):  # A
            i += 3
        elif path.startswith("./", i):  # A
            i += 2
        elif path.startswith("/./", i):  # B: "/./" -> "/"
            i += 2
        elif n - i == 2 and path.startswith("/.", i):  # B: "/." -> "/", then E moves it
            out.append("/")
            break
        elif path.startswith("/../", i):  # C: "/../" -> "/", dropping the last output segment
            i += 3
            if out:
                out.pop()
        elif n - i == 3 and path.startswith("/..", i):  # C: "/.." -> "/"
            if out:
                out.pop()
            out.append("/")
            break
        elif path[i:] in (".", ".."):  # D (only reached with one or two characters left)
            break
        else:  # E
            cut = path.find("/", i + 1)
            if cut < 0:
                cut = n
            out.append(path[i:cut])
            i = cut
    return "".join(out)


def merge_paths(base: IRIReference, ref_path: str) -> str:
    """RFC 3986 5.2.3."""
    if base.host is not None and base.path == "":
        return "/" + ref_path
    return base.path[: base.path.rfind("/") + 1] + ref_path


def resolve_components(base: IRIReference, ref: IRIReference) -> IRIReference:
    """RFC 3986 5.2.2, strict (a reference with a scheme is never made relative)."""
    if ref.scheme is not None:
        return ref._replace(path=remove_dot_segments(ref.path))
    if ref.host is not None:
        return ref._replace(scheme=base.scheme, path=remove_dot_segments(ref.path))
    if ref.path == "":
        # The base path as it stands, but in resolved form: a base read from a
        # document may still hold dot segments (RFC 3986 5.2.1 asks for an
        # absolute base; oxiri and JSON-LD expect them removed here too).
        query = ref.query if ref.query is not None else base.query
        return base._replace(path=remove_dot_segments(base.path), query=query, fragment=ref.fragment)
    if ref.path.startswith("/"):
        path = remove_dot_segments(ref.path)
    else:
        path = remove_dot_segments(merge_paths(base, ref.path))
    return base._replace(path=path, query=ref.query, fragment=ref.fragment)


def resolve(base: str, ref: str, *, lenient: bool = False) -> str:
    """Resolve the IRI reference ``ref`` against the absolute IRI ``base`` (RFC 3986 5.2).

    The result is an IRI (not mapped to a URI). ``base`` may carry a
    fragment, which is ignored (5.1).
    """
    base_ref = parse(base, lenient=lenient)
    if base_ref.scheme is None:
        raise IRIError("the base must be an absolute IRI (it has no scheme)", "scheme", 0)
    target = resolve_components(base_ref, parse(ref, lenient=lenient))
    if target.host is None and target.path.startswith("//"):
        raise IRIError("the resolved path starts with '//' but there is no authority", "path")
    return recompose(target)
