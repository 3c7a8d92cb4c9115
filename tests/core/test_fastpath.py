"""The fast paths equal the reference paths (speed is never traded for correctness).

``canonicalize`` = ``fast.web_form`` -> bounded memo -> ``canonicalize_step_by_step``;
``web_form`` skips ``normalize_dns_host`` where it knows the result;
``lenient.preprocess`` = a cheap "nothing to do" test -> ``preprocess_steps``;
``percent.normalize_component`` encodes after normalizing instead of before.
Each shortcut is checked against the code it shortcuts, as whole outcomes
(the canonical form, or the error's type, message, component and position),
on every string of the corpora and on generated strings built to hit the
fast path's boundaries.
"""

from __future__ import annotations

import contextlib
import json
import string
from collections.abc import Iterator
from unittest import mock

import pytest
from adversarial import hostile_iris
from corpora import CORPORA
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scrapy_iri import IRIError, Rung, canonicalize, resolve
from scrapy_iri import _fast as fast, _grammar as g, _idn as idn, _lenient as lenient, _percent as percent
from scrapy_iri._host import normalize_dns_host, normalize_host_syntax
from scrapy_iri._lenient import preprocess
from scrapy_iri._ladder import MEMO_MAX_LENGTH, _memo, canonicalize_step_by_step

SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow])

CONFIGS = [
    (rung, keep_fragment, lenient_)
    for rung in (Rung.SYNTAX, Rung.SCHEME)
    for keep_fragment in (True, False)
    for lenient_ in (False, True)
]
ALL_CONFIGS = [(Rung.STRING, k, le) for k in (True, False) for le in (False, True)] + CONFIGS


@contextlib.contextmanager
def reference_only() -> Iterator[None]:
    """Switch off the fast paths canonicalize_step_by_step could reach (web_form, the preprocessing shortcut)."""
    with (
        mock.patch.object(lenient, "_unchanged_by_preprocessing", lambda text: False),
        mock.patch.object(fast, "_web_fullmatch", lambda text: None),
        mock.patch.object(fast, "_plain_fullmatch", lambda text: None),
    ):
        yield


def outcome(call, *args, **kwargs) -> tuple:
    try:
        return ("ok", call(*args, **kwargs))
    except IRIError as exc:
        return ("IRIError", str(exc), exc.component, exc.position)
    except (TypeError, ValueError) as exc:  # e.g. the protocol rung without a store
        return (type(exc).__name__, str(exc))


def reference(text: object, rung: Rung, keep_fragment: bool, lenient_: bool) -> tuple:
    with reference_only():
        return outcome(canonicalize_step_by_step, text, rung, keep_fragment=keep_fragment, lenient=lenient_)


def assert_same(text: object, configs=ALL_CONFIGS) -> None:
    for rung, keep_fragment, lenient_ in configs:
        fast_result = outcome(canonicalize, text, rung, keep_fragment=keep_fragment, lenient=lenient_)
        assert fast_result == reference(text, rung, keep_fragment, lenient_), (text, rung, keep_fragment, lenient_)


# -- the pieces ---------------------------------------------------------------


def test_normal_triplet_pattern_is_exactly_the_triplets_syntax_normalization_keeps():
    import re

    pattern = re.compile(g.NORMAL_TRIPLET)
    for octet in range(256):
        for spelling in {f"%{octet:02X}", f"%{octet:02x}", f"%{octet:02X}"[:2] + f"{octet:02x}"[1], f"%{octet:02x}"[:2] + f"{octet:02X}"[1]}:
            kept = percent.normalize_triplets(spelling) == spelling
            assert bool(pattern.fullmatch(spelling)) == kept, spelling


def test_pct_encode_octets_matches_the_definition():
    for data in [b"", bytes(range(256)), "é日\U0001f600".encode(), b"\x00\xff"]:
        assert percent.pct_encode_octets(data) == "".join(f"%{b:02X}" for b in data)


@SETTINGS
@given(st.binary(max_size=40))
def test_pct_encode_octets_property(data):
    assert percent.pct_encode_octets(data) == "".join(f"%{b:02X}" for b in data)


component_text = st.text(
    alphabet=st.characters(codec="utf-8") | st.sampled_from(list("%%%AaFf09g/.:@?#[]\\ ") + ["\ud800"]),
    max_size=30,
)


@SETTINGS
@given(component_text)
@example("%%34%61")
@example("%é%41")
@example("%4\u00e9")
def test_normalize_component_equals_encode_then_normalize(text):
    expected = text if "%" not in text and text.isascii() else percent.normalize_triplets(percent.encode_non_ascii(text))
    assert percent.normalize_component(text) == expected


@SETTINGS
@given(st.text(max_size=40) | st.text(alphabet=string.printable + "é\u202e\ue000", max_size=40))
@example("http://a/b#c#d")
@example("//@@")
@example("http://u@v@host/p@q")
@example("http://[::1]/")
@example("http://a/%zz")
@example("http://a/\ue000?\ue000")
def test_preprocess_shortcut_is_sound(text):
    if lenient._unchanged_by_preprocessing(text):
        assert lenient.preprocess_steps(text) == text
    assert lenient.preprocess(text) == lenient.preprocess_steps(text)


_ascii_name = st.text(alphabet=string.ascii_lowercase + string.digits + "-._~!$&'()*+,;=", min_size=1, max_size=30)


def _kept_as_is(name: str) -> bool:
    """web_form skips normalize_dns_host for a lowercase ASCII name without '%' and 'xn--'."""
    return name.isascii() and name == name.lower() and "%" not in name and "xn--" not in name


@SETTINGS
@given(_ascii_name | st.lists(_ascii_name, min_size=1, max_size=4).map(".".join))
@example("xn")
@example("a.xn-")
@example("example.com.")
@example("127.0.0.1")
@example("a" * 300)
@example(".".join(["a" * 70] * 4))
def test_dns_form_shortcut_holds(name):
    """web_form skips normalize_dns_host for these names: its result must be the name itself."""
    if _kept_as_is(name):
        try:
            assert normalize_dns_host(name) == name
        except IRIError:  # it may not reject a name the fast path lets through either
            pytest.fail(f"normalize_dns_host rejects {name!r}, which web_form accepts unchecked")


def test_dns_form_shortcut_on_corpus_hosts():
    from urllib.parse import urlsplit

    for url in _lines("realworld/ada_kasztp.txt") + REALWORLD["citizenlab"]():
        host = urlsplit(url).netloc.rpartition("@")[2].partition(":")[0].lower()
        if host and _kept_as_is(host) and fast._WEB.fullmatch(f"http://{host}/"):
            assert normalize_dns_host(host) == host


# -- the corpora --------------------------------------------------------------


def _lines(relative: str) -> list[str]:
    path = CORPORA / relative
    if not path.exists():
        pytest.skip(f"corpus {relative} not found under {CORPORA} (set SCRAPY_IRI_CORPORA)")
    return path.read_text(encoding="utf-8-sig").splitlines()


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


REALWORLD = {
    "ada_kasztp": lambda: _lines("realworld/ada_kasztp.txt"),
    "ada_userbait": lambda: _lines("realworld/ada_userbait.txt"),
    "citizenlab": lambda: [row.split("\t")[1] for row in _lines("realworld/citizenlab_test_lists_urls.tsv")[1:] if "\t" in row],
}


@pytest.mark.parametrize("name", sorted(REALWORLD))
def test_realworld_lists(name):
    urls = REALWORLD[name]()
    # The common configurations of a crawl on the whole list; all of them on a slice.
    for url in urls:
        assert_same(url, [(Rung.SCHEME, False, True), (Rung.SCHEME, False, False), (Rung.SYNTAX, False, True)])
    for url in urls[::25]:
        assert_same(url)


def test_realworld_fast_path_covers_the_common_case():
    urls = _lines("realworld/ada_kasztp.txt")
    covered = sum(fast.web_form(url, True, False) is not None for url in urls)
    assert covered / len(urls) > 0.98


def test_relative_references_resolved():
    rows = _lines("realworld/oxiri_relative_urls_cc_10k.csv")[1:]
    for row in rows:
        base, _, relative = row.partition(",")
        strings = [base, relative]
        try:
            strings.append(resolve(base, relative, lenient=True))
        except IRIError:
            pass
        for text in strings:
            assert_same(text, [(Rung.SCHEME, False, True), (Rung.SYNTAX, True, False)])


@pytest.mark.parametrize(
    "relative",
    [
        "conformance/oxiri_iri_tests.json",
        "conformance/urltestdata.json",
        "conformance/rfc3986_5.4_resolution_examples.json",
        "conformance/toascii.json",
        "conformance/IdnaTestV2.json",
        "peers/w3lib_canonicalize_url.json",
        "peers/w3lib_safe_url_string.json",
    ],
)
def test_conformance_and_peer_strings(relative):
    path = CORPORA / relative
    if not path.exists():
        pytest.skip(f"corpus {relative} not found under {CORPORA}")
    strings = set(_strings(json.loads(path.read_text(encoding="utf-8"))))
    for text in sorted(strings):
        assert_same(text)
        if "/" not in text and len(text) < 100:  # host names (toascii, IdnaTestV2): as web URLs
            assert_same(f"http://{text}/")
            assert_same(f"https://{text}:443?q#f", CONFIGS)


# -- generated strings at the fast path's boundaries ----------------------------

# Pieces that the fast path accepts and pieces just outside it.
_host_chars = string.ascii_lowercase + string.digits + "-._~!$&'()*+,;=" + "AZ"
_label = st.text(alphabet=_host_chars, min_size=1, max_size=6) | st.sampled_from(
    ["xn--bcher-kva", "xn--bcher-KVA", "XN--bcher-kva", "xn--a", "xn--", "www", "example", "b\u00fccher", "%41", "%c3%bc", "faß", "[::1]", "1", "255",
     "\uff21\uff22", "a\uff0fb", "\u00ad", "\u03c2", "\u03a3", "\u65e5\u672c", "\u0301a", "\u200d"]
)
_host = st.lists(_label, min_size=0, max_size=4).map(".".join)
_port = st.none() | st.sampled_from(["", "80", "443", "080", "0443", "8080", "65535", "65536", "99999999999", "a", "0"])
_triplet = st.integers(0, 255).flatmap(lambda b: st.sampled_from([f"%{b:02X}", f"%{b:02x}"]))
_pchar = st.sampled_from(list(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@/?#%[]\\ \"<>^`{|}\t") + ["é", "日", "\u202e", "\ue000", "..", "/./", "/../", "%2E", "%2e"]) | _triplet
_rest = st.lists(_pchar, max_size=12).map("".join)
_scheme = st.sampled_from(["http", "https", "HTTP", "Https", "ftp", "ws", "httpx", "mailto", "file"])


@st.composite
def web_like(draw: st.DrawFn) -> str:
    userinfo = draw(st.none() | st.sampled_from(["", "u", "u:p"]))
    authority = (userinfo + "@" if userinfo is not None else "") + draw(_host)
    port = draw(_port)
    if port is not None:
        authority += ":" + port
    path = draw(st.sampled_from(["", "/"]) | _rest.map(lambda r: "/" + r))
    text = f"{draw(_scheme)}://{authority}{path}"
    if draw(st.booleans()):
        text += "?" + draw(_rest)
    if draw(st.booleans()):
        text += "#" + draw(_rest)
    if draw(st.integers(0, 9)) == 0:
        text = draw(st.sampled_from([" ", "\t", "\n", ""])) + text + draw(st.sampled_from([" ", "\r\n", ""]))
    return text


@SETTINGS
@given(web_like())
@example("http://a.example")
@example("http://a.example:80?q#f")
@example("https://A.Example:0443/x/./y/../z?%41%2f#%7e")
@example("http://xn--bcher-kva.example/")
@example("http://xn--a.example/")
@example("http://a.example:65536/")
@example("http://a.example/.well-known/x")
@example("http://a.example/..")
@example("http://a.example/a%2Eb")
@example("http://a.example/%C3%A9?%E2%82%AC#%5B")
def test_fast_path_equals_reference_on_web_like_strings(text):
    assert_same(text)


@SETTINGS
@given(hostile_iris())
@example("http://%E4%BE%8B.jp/%ED%A0%80?a+b=%20&&c#x#y")
@example("https://\uff11\uff12\uff17.0.0.1:0/%2e%2E/%C0%AE")
@example("http://faß.ς.\u0915\u094d\u200d\u0937:65536/")
@example("HTTP://0x7f.1:080/a\\b?\x00#\x85")
def test_fast_path_equals_reference_on_hostile_strings(text):
    """Strings made of the pieces that break URL code (tests/core/adversarial.py)."""
    assert_same(text)


@SETTINGS
@given(st.text(max_size=60))
def test_fast_path_equals_reference_on_any_string(text):
    assert_same(text, CONFIGS)


# -- the memo -----------------------------------------------------------------


def test_memo_returns_the_computed_form_and_errors_again():
    _memo.cache_clear()
    url = "HTTP://u@Example.COM:80/a/../b?q#f"  # userinfo: not for fast path 1
    first = canonicalize(url, "scheme", keep_fragment=False)
    assert _memo.cache_info().currsize == 1
    assert canonicalize(url, "scheme", keep_fragment=False) == first == "http://u@example.com/b?q"
    assert _memo.cache_info().hits == 1
    assert canonicalize(url, "syntax", keep_fragment=False) == "http://u@example.com:80/b?q"
    assert canonicalize(url, "scheme") == "http://u@example.com/b?q#f"
    with pytest.raises(IRIError) as one:
        canonicalize("http://a b/", "scheme")
    with pytest.raises(IRIError) as two:
        canonicalize("http://a b/", "scheme")
    assert (str(one.value), one.value.position) == (str(two.value), two.value.position)


def test_memo_is_bounded_and_skips_long_strings():
    _memo.cache_clear()
    long_url = "http://u@a.example/" + "x" * MEMO_MAX_LENGTH
    canonicalize(long_url)
    assert _memo.cache_info().currsize == 0
    canonicalize("http://a.example/")  # fast path 1: not memoized
    assert _memo.cache_info().currsize == 0
    for i in range(_memo.cache_info().maxsize + 10):
        canonicalize(f"http://u@a.example/{i}")
    assert _memo.cache_info().currsize == _memo.cache_info().maxsize


def test_memo_keys_on_truthiness_and_str_type():
    class Sub(str):
        pass

    form = canonicalize(Sub("HTTP://A.example/"))
    assert form == "http://a.example/" and type(form) is str
    assert canonicalize("http://a.example/#x", keep_fragment=[]) == "http://a.example/"  # unhashable, falsy
    assert canonicalize("http://a.example/#x", keep_fragment=1) == "http://a.example/#x"
    with pytest.raises(TypeError):
        canonicalize(b"http://a.example/")


# -- generated IRIs in many scripts -------------------------------------------------

# Code point ranges of the scripts of the web: Latin with diacritics, Greek,
# Cyrillic, Hebrew, Arabic, Devanagari, Thai, Hangul, kana, CJK; and the
# combining marks, joiners and compatibility forms IDNA treats apart.
_SCRIPTS = [
    (0x00C0, 0x024F), (0x0370, 0x03FF), (0x0400, 0x04FF), (0x0590, 0x05FF), (0x0600, 0x06FF),
    (0x0900, 0x097F), (0x0E00, 0x0E7F), (0xAC00, 0xD7A3), (0x3040, 0x30FF), (0x4E00, 0x9FFF),
]
_TRAPS = [
    "\u0301", "\u200c", "\u200d", "\u00ad", "\u00df", "\u03c2", "\u3002", "\uff0e", "\u2488", "\uff21",
    "\uff0f", "\u00a0", "\u0660", "\u06f0", "\U0001f600", "\u2160", "\u1e9e",
]
_WORDS = [
    "café", "München", "Straße", "façade", "Ελληνικά", "σελίδα", "ΣΕΛΊΔΑ", "русский", "НОВОСТИ", "日本語",
    "ニュース", "新闻", "한국어", "العربية", "עברית", "हिन्दी", "ไทย", "e\u0301te\u0301",
]
_HOST_WORDS = [
    "例え", "пример", "ПРИМЕР", "faß", "FASS", "bücher", "BÜCHER", "δοκιμή", "ΔΟΚΙΜΉ", "مثال", "דוגמה",
    "실례", "テスト", "ǆemal", "Ǆemal", "xn--bcher-kva", "xn--Bcher-kva", "www", "example", "a-b", "",
]
_TLDS = ["jp", "рф", "РФ", "de", "中国", "한국", "com", "org", "XN--P1AI", ""]


def _script_text(min_size: int = 1, max_size: int = 8) -> st.SearchStrategy[str]:
    script = st.sampled_from(_SCRIPTS).flatmap(lambda r: st.integers(*r).map(chr))
    extra = st.sampled_from(_TRAPS + list("aZ09-._~"))
    return st.text(alphabet=script | extra, min_size=min_size, max_size=max_size)


def _spelled(word: str, how: int) -> str:
    """A word as written on the web: raw, or percent-encoded UTF-8 in upper or lower case."""
    if how == 0:
        return word
    encoded = "".join(c if c.isascii() and (c.isalnum() or c in "-._~") else "".join(f"%{b:02X}" for b in c.encode()) for c in word)
    return encoded.lower() if how == 2 else encoded


_word = st.builds(_spelled, st.sampled_from(_WORDS) | _script_text(), st.sampled_from([0, 0, 0, 1, 2]))
_host_label = st.sampled_from(_HOST_WORDS) | _script_text(0, 6)


@st.composite
def iri_like(draw: st.DrawFn) -> str:
    scheme = "".join(c.upper() if draw(st.booleans()) else c for c in draw(st.sampled_from(["http", "https"])))
    labels = draw(st.lists(_host_label, min_size=1, max_size=3)) + [draw(st.sampled_from(_TLDS))]
    host = ".".join(labels)
    if draw(st.integers(0, 9)) == 0:
        host = _spelled(host, draw(st.sampled_from([1, 2])))  # escapes in the host
    port = draw(st.sampled_from(["", "", "", ":", ":80", ":443", ":8080", ":0443"]))
    segments = draw(st.lists(_word | st.sampled_from([".", "..", "%2E", "%2e", "%41%7e", "%2f", "%20", ""]), max_size=5))
    text = f"{scheme}://{host}{port}" + "".join("/" + s for s in segments)
    if draw(st.booleans()):
        pairs = draw(st.lists(st.tuples(_word, _word), min_size=1, max_size=3))
        text += "?" + "&".join(f"{k}={v}" for k, v in pairs)
    if draw(st.integers(0, 3)) == 0:
        text += "#" + draw(_word)
    return text


@SETTINGS
@given(iri_like())
@example("HTTPS://例え.JP/café?q=новости#Ελληνικά")
@example("http://ПРИМЕР.РФ:80/%d0%bf%D1%80/./x/../y?q=%c3%a9&r=é")
@example("hTTps://faß.de/Straße/%2e%2E/ü")
@example("http://a\u3002b.jp/")
@example("http://\u2488x.jp/")
@example("http://x.\u0301a.jp/")
@example("http://%D1%80%d1%84.example/")
@example("https://www.\u05d0\u0031.\u05d1/")
@example("https://xn--bcher-kva.例え/")
def test_fast_path_equals_reference_on_iris_in_many_scripts(text):
    assert_same(text)


@SETTINGS
@given(st.lists(_host_label, min_size=1, max_size=4).map(".".join))
@example("a\u3002b")
@example("\u2488x")
@example("x.\u0301a")
@example("\u05d0\u0031.\u05d1")
@example("a." * 200 + "é")
@example("é" * 64)
@example("\u00ad")
def test_idn_hosts_label_by_label_equal_the_whole_name(host):
    """_idn.dns_form is normalize_dns_host(normalize_host_syntax(host)), and None exactly where that raises."""
    if host.isascii() or "%" in host:
        return
    try:
        expected = normalize_dns_host(normalize_host_syntax(host))
    except IRIError:
        expected = None
    assert idn.dns_form(host) == expected


def test_iris_take_the_fast_path():
    for text in [
        "HTTPS://例え.JP/café?q=новости#Ελληνικά",
        "http://пример.рф/%d0%bf%D1%80/./x/../y?q=%c3%a9",
        "https://faß.de/Straße",
        "https://www.bücher.de:8080/ü?ü=ü",
        "http://a\\b.example/%7e",  # lenient: "\\" is "/" in a web path
        "http://example.com/a b",  # lenient: the space is encoded
    ]:
        for scheme_rung in (False, True):
            form = fast.web_form(text, scheme_rung, False) or fast.web_form(preprocess(text), scheme_rung, False)
            assert form is not None, (text, scheme_rung)
            assert form.isascii()


def test_nfc_never_reorders_or_composes_across_a_dot():
    """What _idn.dns_form rests on: NFC of pieces joined by '.' is the join of their NFC forms.

    Composition is pairwise and reordering stops at a starter such as '.',
    so it is enough that no code point composes with a '.' on either side.
    """
    import sys
    import unicodedata

    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        for text in ("." + c, c + "."):
            assert unicodedata.normalize("NFC", text) == ".".join(unicodedata.normalize("NFC", p) for p in text.split(".")), hex(cp)
