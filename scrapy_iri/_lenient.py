"""Lenient input: 3987bis sec. 7 preprocessing of what crawlers really meet.

LEIRI (7.1) and Web Address (7.2) processing map strings that are not IRIs
into IRIs. Every step touches only characters that cannot occur in a valid
IRI at that place, so a valid IRI passes through unchanged.
"""

from __future__ import annotations

import re

from . import _grammar as g
from .errors import IRIError
from ._percent import encode_match

# 7.2 step 1: leading and trailing C0 controls and space (the draft names
# space, CR, LF and TAB; the other C0 controls are never valid either).
_EDGES = "".join(chr(c) for c in range(0x21))
# 7.2 step 2 (as HTML does): TAB, LF and CR anywhere are dropped.
_STRIPPED = re.compile(r"[\t\n\r]")
# Schemes whose paths browsers read with '\' as '/' (7.2 step 5, href-path-sep).
_BACKSLASH_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp", "file"})


def _encode(text: str, component: str) -> str:
    """Step 3: what strict parsing rejects in a component, percent-encoded as UTF-8."""
    return g.FORBIDDEN[component].sub(encode_match, text)


def _backslashes_to_slashes(text: str, base_scheme: str | None = None) -> str:
    """7.2 step 5: '\\' before the query or fragment is a path separator for web schemes.

    A relative reference takes the scheme of its base; with no base known, it is read as web.
    """
    m = g.SCHEME_PREFIX.match(text)
    scheme = m.group()[:-1] if m is not None else base_scheme
    if scheme is not None and scheme.lower() not in _BACKSLASH_SCHEMES:
        return text
    end = len(text)
    for delimiter in "?#":
        found = text.find(delimiter)
        if 0 <= found < end:
            end = found
    return text[:end].replace("\\", "/") + text[end:]


# Fast path of preprocess(): characters no step below ever rewrites. Steps 1-2
# and 5 touch only controls, space and '\\'; step 4 only characters a
# component forbids. Unreserved characters, sub-delims and ucschar are
# allowed in every component; the RFC 3986 split keeps ":/?#@" out of every
# component that forbids them (a second '#' lands in the fragment, which
# allows it), except a second '@' (the userinfo ends at the last '@' of the
# authority), which is counted apart. '%' is fine when it starts a triplet.
# Everything else may be rewritten ('[' and ']' too: they are allowed only
# around an IP literal; iprivate only in the query).
_MAYBE_REWRITTEN = re.compile(
    f"[^{g.UNRESERVED}{g.SUB_DELIMS}:/?#@%{g.UCSCHAR}]|%(?![0-9A-Fa-f]{{2}})"
)


def _unchanged_by_preprocessing(text: str) -> bool:
    """A cheap sufficient test that ``preprocess(text) == text``: skip the steps.

    Shortcuts the common case of a string that already is an IRI reference;
    equivalent because the steps of :func:`preprocess_steps` change no
    character outside ``_MAYBE_REWRITTEN`` except a second ``@``
    (see the comment above ``_MAYBE_REWRITTEN``).
    """
    return _MAYBE_REWRITTEN.search(text) is None and text.count("@") <= 1


def preprocess(text: str, *, base_scheme: str | None = None) -> str:
    """Turn a string found in the wild into an IRI reference where one is meant.

    Trims whitespace and controls at both ends, drops TAB/CR/LF inside,
    reads ``\\`` as ``/`` in web paths, and percent-encodes (as UTF-8) every
    character the 3987bis grammar forbids in the component it stands in,
    including a ``%`` not followed by two hex digits (-> ``%25``).
    ``base_scheme`` is the scheme of the base a relative reference will be
    resolved against: it decides whether ``\\`` is a path separator.
    """
    if _unchanged_by_preprocessing(text):
        return text
    return preprocess_steps(text, base_scheme=base_scheme)


def preprocess_steps(text: str, *, base_scheme: str | None = None) -> str:
    """:func:`preprocess` without its fast path: the sec. 7 steps one by one."""
    _reject_lone_surrogates(text)
    text = _STRIPPED.sub("", text.strip(_EDGES))
    if "\\" in text:
        text = _backslashes_to_slashes(text, base_scheme)
    scheme, authority, path, query, fragment = g.split(text).groups()
    out = []
    if scheme is not None:
        out.append(scheme + ":")
    if authority is not None:
        out.append("//" + _lenient_authority(authority))
    out.append(_encode(path, "path"))
    if query is not None:
        out.append("?" + _encode(query, "query"))
    if fragment is not None:
        out.append("#" + _encode(fragment, "fragment"))
    return "".join(out)


_COMPONENT_OF_GROUP = ("scheme", "authority", "path", "query", "fragment")


def _reject_lone_surrogates(text: str) -> None:
    """A lone surrogate is no character: there is nothing to percent-encode (7.3).

    Such strings come from undecodable input (``surrogateescape``); encoding
    the surrogate would invent octets, so the input is refused instead.
    """
    bad = g.LONE_SURROGATE.search(text)
    if bad is None:
        return
    position = bad.start()
    m = g.split(text)
    component = next(
        (name for group, name in enumerate(_COMPONENT_OF_GROUP, 1) if m.start(group) <= position < m.end(group)),
        "path",
    )
    if component == "authority":
        component = "host"
    raise IRIError(f"lone surrogate U+{ord(bad.group()):04X} is not a character", component, position)


def _lenient_authority(authority: str) -> str:
    userinfo, at, hostport = authority.rpartition("@")
    out = _encode(userinfo.replace("@", "%40"), "userinfo") + at if at else ""
    if hostport.startswith("["):
        return out + hostport  # IP literals are validated strictly
    host, colon, port = hostport.partition(":")
    return out + _encode(host, "host") + colon + port


_HEX = frozenset("0123456789ABCDEFabcdef")


def source_position(text: str, position: int, *, base_scheme: str | None = None) -> int:
    """The index in ``text`` of what sits at ``position`` in ``preprocess(text)``.

    Each character of ``text`` is dropped (the trimmed edges, TAB, LF, CR),
    kept (``\\`` read as ``/`` included) or percent-encoded: what an error
    found in the preprocessed string points at in the string given.
    """
    processed = preprocess(text, base_scheme=base_scheme)
    if processed == text:
        return position
    start = len(text) - len(text.lstrip(_EDGES))
    end = len(text.rstrip(_EDGES))
    kept = [i for i in range(start, max(start, end)) if text[i] not in "\t\n\r"]
    j = 0
    for index, i in enumerate(kept):
        char = text[i]
        if char == "%":
            follows = "".join(text[k] for k in kept[index + 1 : index + 3])
            encoded = len(follows) < 2 or not set(follows) <= _HEX
        else:
            kept_as = processed[j : j + 1]
            encoded = kept_as != char and not (char == "\\" and kept_as == "/")
        width = 3 * len(char.encode("utf-8", "surrogatepass")) if encoded else 1
        if position < j + width:
            return i
        j += width
    return end
