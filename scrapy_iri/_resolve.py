"""Reference resolution (RFC 3986 sec. 5.2; 3987bis sec. 6.5)."""

from __future__ import annotations

from .errors import IRIError
from ._grammar import DOT_SEGMENT
from ._parse import IRIReference, parse, recompose




def remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4, one segment at a time (linear time).

    The RFC's loop moves "/segment" units from the input to the output
    buffer; here each output item is such a unit (the first segment of a
    relative path has no "/"), so rule C's "remove the last segment" is a
    list pop.
    """
    if not DOT_SEGMENT.search(path):
        return path
    segments = path.split("/")
    last = len(segments) - 1
    out: list[str] = []
    if path.startswith("/"):
        i = 1
    else:
        i = 0
        while i < last and segments[i] in (".", ".."):  # A: a "../" or "./" prefix
            i += 1
        if segments[i] in (".", ".."):  # D: the input is "." or ".."
            return ""
        out.append(segments[i])  # E, without a leading "/"
        i += 1
    for index in range(i, last + 1):
        segment = segments[index]
        if segment == ".":  # B: "/./" -> "/"; "/." at the end -> "/", which E then moves
            if index == last:
                out.append("/")
        elif segment == "..":  # C: as B, and the last output unit is removed
            if out:
                out.pop()
            if index == last:
                out.append("/")
        else:  # E
            out.append("/" + segment)
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
        # 5.2.2: the target keeps the base path, so that a same-document
        # reference (4.4) stays the same document. A base read from a document
        # may hold dot segments; removing them from a path that starts with
        # "/" gives a path the syntax rung equates with the base's (oxiri and
        # JSON-LD expect it), while a rootless path ("urn:example:a/../b") is
        # opaque and kept as it is, as the syntax rung keeps it.
        query = ref.query if ref.query is not None else base.query
        path = remove_dot_segments(base.path) if base.path.startswith("/") else base.path
        return base._replace(path=path, query=query, fragment=ref.fragment)
    if ref.path.startswith("/"):
        path = remove_dot_segments(ref.path)
    else:
        path = remove_dot_segments(merge_paths(base, ref.path))
    return base._replace(path=path, query=ref.query, fragment=ref.fragment)


def resolve(base: str, ref: str, *, lenient: bool = False) -> str:
    """Resolve the IRI reference ``ref`` against the absolute IRI ``base`` (RFC 3986 5.2).

    The result is an IRI (not mapped to a URI). ``base`` may carry a
    fragment, which is ignored (5.1). An error in the base says so ("in the
    base: ..."); its position is then in ``base``, else in ``ref``.
    """
    try:
        base_ref = parse(base, lenient=lenient)
    except IRIError as exc:  # its position is in the base, not in the reference
        raise exc.within("the base") from None
    if base_ref.scheme is None:
        raise IRIError("the base must be an absolute IRI (it has no scheme)", "scheme", 0)
    target = resolve_components(base_ref, parse(ref, lenient=lenient, base_scheme=base_ref.scheme))
    return recompose(target._replace(path=keep_apart_from_authority(target.path, target.host)))


def keep_apart_from_authority(path: str, host: str | None) -> str:
    """``//x`` without an authority -> ``/.//x``: a path that is not read as an authority.

    RFC 3986 3.3: without an authority a path cannot begin with "//", but
    removing dot segments (5.2.4) can produce one ("a:/.//." -> "a://").
    Prefixing the dot segment "/." keeps the path's meaning: removing dot
    segments again gives the same path, so the form is stable.
    """
    if host is None and path.startswith("//"):
        return "/." + path
    return path
