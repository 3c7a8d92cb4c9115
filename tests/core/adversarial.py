"""Generated IRI-like strings made of the pieces that break URL code (shared by the core tests).

Hosts: mixed scripts, bidi labels, labels valid in IDNA2008 but not in
UTS #46 transitional processing (ß, ς, joiners in and out of context),
full-width dots and digits, percent-encoded host octets (UTF-8 or not),
unassigned and disallowed code points, every WHATWG spelling of IPv4,
IPv6 with zone IDs and embedded IPv4. Paths, queries and fragments:
encoded dot segments, overlong and surrogate UTF-8, noncharacters, NUL,
C0 and C1 controls, lone surrogates, backslashes, '+', '%20', '&', '#'.
Schemes with '+', '.', '-', data:, mailto:, file: with drive letters,
opaque paths, ports from ':0' to ':65536' and ':+80'.
"""

from __future__ import annotations

from hypothesis import strategies as st

HOST_PIECES = [
    "例え", "faß", "fass", "FASS", "ς", "σ", "Σ", "a\u200cb", "\u0915\u094d\u200d\u0937", "\u0628\u200c\u0628",
    "\u05d0\u05d1", "a\u05d0", "\u05d01", "1\u05d0", "\u0661\u06f1", "pаypal", "xn--fa-hia", "XN--FA-HIA", "xn--fass",
    "%E4%BE%8B", "%e4%be%8b", "%E4%BE", "%C0%AF", "%ED%A0%80", "%41", "%2E", "%2e", "%20", "%25", "%00",
    "\uff0e", "\u3002", "\uff61", "\uff11", "\uff21", "\u0378", "\U000e0001", "\u00ad", "\u200b", "0x7f", "0X7F",
    "017700000001", "1", "255", "256", "0", "00", "www", "a", "A", "-a", "a-", "ab--c", "_", "\u2488", "\u2474",
    "\u1e9e", "\u0130", "\u0131", "\u212a", "\ufb01", "\u00df\u0301", "\u0301", "\ud800", "\x00", "\x1f", "\x7f",
    "\x85", "\u202e", "\u200e", "\ufeff", "\ufffd", "\uffff", "\U0001f600", "\u0627\u0644", "",
]
IP_LITERALS = [
    "[::1]", "[::1.2.3.4]", "[::ffff:1.2.3.4]", "[::FFFF:0102:0304]", "[fe80::1%25eth0]", "[fe80::1%eth0]",
    "[v1.x]", "[V1A.b:c]", "[::1", "[[::1]]", "[1::2::3]", "[0:0:0:0:0:0:0:1]", "[::]", "[::1]]",
]
PATH_PIECES = [
    "%2e", "%2E", ".", "..", "%2e%2E", "%C0%AF", "%C0%AE", "%E0%80%AE", "%ED%A0%80", "%ED%B0%80", "%F4%90%80%80",
    "%EF%BF%BF", "%EF%BF%BE", "%FF", "%E4%BE", "%e4%be%8b", "%E4%BE%8B", "例", "\u0378", "\ud800", "\udcff", "\x00",
    "\x01", "\x1f", "\x7f", "\x85", "\x9f", "\u202e", "\u200e", "\ue000", "\U000e0001", "\U0010fffd", "\ufdd0",
    "\uffff", "\U0001ffff", "+", "%20", " ", "&", "=", "#", "?", "/", "\\", "@", ":", "%40", "%3A", "%2F", "%2f",
    "%23", "%25", "%", "%2", "%zz", "a", "A", "\uff0e", "\uff0f", "\u3002", "~", "%7e", "%7E", "[", "]", "|", "\t",
    "\n", "é", "e\u0301", ";", "%3B", "%3b", "C:", "c|",
]
SCHEMES = [
    "http", "HTTP", "https", "hTTpS", "ws", "wss", "ftp", "file", "FILE", "mailto", "data", "urn", "svn+ssh",
    "a.b-c", "x", "foo", "coap", "1a", "+a", "h\u00e9", "",
]
PORTS = [None, "", "0", "00", "80", "080", "443", "65535", "65536", "+80", "-1", "8a", "\uff18\uff10", "99999999999999999999"]
USERINFOS = [None, "", "u", "u:p", "u%40v", "u%3Av", "u@v", "U:P%41", "é", "\x00", "u p", "[x]", "%"]

_host = st.lists(st.sampled_from(HOST_PIECES), max_size=4).map(".".join) | st.sampled_from(IP_LITERALS)
_segment = st.lists(st.sampled_from(PATH_PIECES), max_size=5).map("".join)
_path = st.lists(_segment, max_size=5).map(lambda segments: "/" + "/".join(segments)) | _segment


@st.composite
def hostile_iris(draw: st.DrawFn) -> str:
    """A string shaped like an IRI, built from the pieces above (most of them valid, many not)."""
    scheme = draw(st.sampled_from(SCHEMES))
    text = f"{scheme}:" if scheme else ""
    if draw(st.integers(0, 4)):
        userinfo, port = draw(st.sampled_from(USERINFOS)), draw(st.sampled_from(PORTS))
        text += "//" + (f"{userinfo}@" if userinfo is not None else "") + draw(_host)
        text += f":{port}" if port is not None else ""
        path = draw(_path)
        text += path if path[:1] in ("", "/") or draw(st.booleans()) else "/" + path
    else:
        text += draw(_path)
    if draw(st.booleans()):
        text += "?" + draw(_segment)
    if draw(st.booleans()):
        text += "#" + draw(_segment)
    if draw(st.integers(0, 9)) == 0:
        text = draw(st.sampled_from([" ", "\t", "\x00", "\x1f"])) + text + draw(st.sampled_from([" ", "\n", "\x00"]))
    return text
