"""Rules: conventional redirect patterns, learned per origin (pure Python, no Scrapy).

A *rule kind* predicts, for a URL it covers, the URL a server following the
convention would redirect it to (``/docs`` -> ``/docs/``). A kind may split
the URLs it covers into *scopes* (slash rules: one per path template, so
``/topic-1`` teaches about ``/topic-2`` but not about ``/both-1``), and a
rule is one (origin, kind, scope).

Each observation of a covered URL is judged against the prediction:

* support: a clean permanent redirect (301/308) to exactly the predicted URL;
* counterexample: any other redirect (302/303/307 included), or a document
  (a non-redirect answer below 400) at the URL itself: the server answered
  the unrewritten URL, so rewriting it could lose a page;
* neutral: an error (400 and above) or support from a context-dependent
  exchange (cookies, credentials, ``Vary``) or into a sink.

A rule applies once it has ``min_observations`` supports and no
counterexample. Evidence older than ``rule_ttl`` is forgotten: an idle rule
expires, and a suspended one may be learned again from fresh evidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from .._grammar import SPLIT as _SPLIT
from ._forms import CACHED_LENGTH, Form, origin_of, short_cache, split_form
from ._psl import WWW, is_ip_host, www_partner

#: statuses that make the source an exact alias of the target (RFC 9110 15.4)
PERMANENT = frozenset({301, 308})
#: every redirect status Scrapy follows
REDIRECTS = frozenset({301, 302, 303, 307, 308})

#: default documents a server answers for a directory ("index.html" -> "dir/")
DEFAULT_DOCUMENTS = frozenset(
    {
        "index.html",
        "index.htm",
        "index.php",
        "index.shtml",
        "index.asp",
        "index.aspx",
        "index.jsp",
        "default.htm",
        "default.html",
        "default.asp",
        "default.aspx",
    }
)

#: reserved characters a path segment may hold either raw or escaped
#: (RFC 3986 3.3: pchar = unreserved / pct-encoded / sub-delims / ":" / "@")
PATH_RESERVED = "!$&'()*+,;=:@"
_RESERVED_ESCAPES = {f"%{ord(c):02X}": c for c in PATH_RESERVED}
_ESCAPE = re.compile("|".join(_RESERVED_ESCAPES))
_RAW = re.compile("[" + re.escape(PATH_RESERVED) + "]")
_UPPER_OUTSIDE_ESCAPES = re.compile(r"%[0-9A-F]{2}|[A-Z]")

#: rules only generalize over URLs whose dereference these conventions describe
_SCHEMES = frozenset({"http", "https"})

#: the kind name that blocks every rule of an origin (a sink was seen there)
BLOCK = "*"
#: the kind name of the key of an origin's exact aliases taken together (see :func:`alias_key`)
ALIAS = "alias"
#: the kind name of the rule that predicts the case a server declared (see :func:`_declared_case`)
DECLARED_CASE = "declared-case"

#: what the store knows: the case a server declared for a case-insensitive key (:func:`case_key`),
#: the target of a case-only redirect or, on an origin that makes them, a document's own URL
Known = Callable[[str], "str | None"]


def _nothing(key: str) -> str | None:
    return None




def case_key_of(url: str) -> str:
    """A URL with its path case-folded: what a case-insensitive server cannot tell apart."""
    form = split_form(url)
    return Form(form.scheme, form.authority, form.path.lower(), form.query).unsplit()


#: :func:`case_key_of`, the last results remembered (learning asks twice per URL: read ahead, then
#: learning it; more than a learned chunk reads ahead)
case_key = short_cache(1 << 15)(case_key_of)


def is_case_change(source: str, target: str) -> bool:
    """Whether a redirect changes nothing but the case of the path."""
    if source == target or source.lower() != target.lower():  # most redirects: no parse needed
        return False
    return case_key(source) == case_key(target)


def alias_case_key(source: str, target: str) -> str | None:
    """The case key an alias declares a case for: its target's, when it changes nothing but case."""
    return case_key(target) if is_case_change(source, target) else None


# -- predictions, one small function per convention ---------------------------


def _last_segment(path: str) -> str:
    return path.rpartition("/")[2]


_DIGITS_OUTSIDE_ESCAPES = re.compile(r"%[0-9A-F]{2}|[0-9]+")


_DIGIT = re.compile("[0-9]")
_DIGITS = re.compile("[0-9]+")


def path_template(path: str) -> str:
    """The path with each run of digits replaced by ``#`` (never in a path): ``/topic-#/``.

    Whether ``/x`` is a directory is a property of the file system behind
    the server, so slash rules generalize only within a family of numbered
    paths of one template (``/topic-1`` teaches about ``/topic-2``, nothing
    about ``/both-1`` or ``/about``); paths without digits are learned one
    by one, as exact aliases.
    """
    if "%" not in path:  # no escape to keep: every run of digits goes
        return _DIGITS.sub("#", path)
    return _DIGITS_OUTSIDE_ESCAPES.sub(lambda m: m.group() if m.group()[0] == "%" else "#", path)


def path_prefix(path: str) -> str:
    """The first-level directory a path lies in: ``/~alice/`` for ``/~alice/Foo``, ``/`` for ``/Foo``.

    Rules that do not generalize over a numbered family are scoped by it:
    three case redirects under ``/~alice/`` say nothing about ``/~bob/``.
    """
    head, sep, _ = path[1:].partition("/")
    return f"/{head}/" if sep else "/"


#: the scope of a rule learned on every first-level directory it was seen on (see :func:`generalized`)
ANYWHERE = "*"


def _scoped(path: str, detail: str = "") -> str:
    """A prefix scope (case rules pass the path case-folded: their directory is one in any case)."""
    prefix = path_prefix(path)
    return f"{prefix} {detail}" if detail else prefix


def generalized(scope: str) -> str:
    """A prefix scope with its prefix replaced by :data:`ANYWHERE` (``/a/ index.html`` -> ``* index.html``)."""
    _, sep, detail = scope.partition(" ")
    return f"{ANYWHERE} {detail}" if sep else ANYWHERE


@short_cache(1 << 14)
def _numbered(path: str) -> str | None:
    """The template of a path in a numbered family, or ``None`` (a template of one URL teaches nothing)."""
    if _DIGIT.search(path) is None:
        return None
    template = path_template(path)
    return template if template != path else None


def _with_path(f: Form, path: str) -> Form:
    return Form(f.scheme, f.authority, path, f.query)


def _add_slash(f: Form, known: Known) -> tuple[str, Form] | None:
    if not f.path or f.path.endswith("/"):
        return None
    template = _numbered(f.path)
    return None if template is None else (template, _with_path(f, f.path + "/"))


def _remove_slash(f: Form, known: Known) -> tuple[str, Form] | None:
    if len(f.path) < 2 or not f.path.endswith("/"):
        return None
    template = _numbered(f.path)
    return None if template is None else (template, _with_path(f, f.path[:-1]))


def _index_to_directory(f: Form, known: Known) -> tuple[str, Form] | None:
    name = _last_segment(f.path)
    if name not in DEFAULT_DOCUMENTS:
        return None
    return _scoped(f.path, name), _with_path(f, f.path[: -len(name)])


def _http_to_https(f: Form, known: Known) -> tuple[str, Form] | None:
    if f.scheme != "http" or f.host is None:
        return None
    return _scoped(f.path), Form("https", f.authority, f.path, f.query)


#: a host's ``www.`` partner, asked for every URL learned on it
_partner = short_cache(1 << 14)(www_partner)


def _www_to_apex(f: Form, known: Known) -> tuple[str, Form] | None:
    host = f.host
    if host is None or not host.startswith(WWW):
        return None
    apex = _partner(host)
    return None if apex is None else (_scoped(f.path), Form(f.scheme, apex, f.path, f.query))


def _apex_to_www(f: Form, known: Known) -> tuple[str, Form] | None:
    host = f.host
    if host is None or host.startswith(WWW):
        return None
    www = _partner(host)
    return None if www is None else (_scoped(f.path), Form(f.scheme, www, f.path, f.query))


def _lowercase_path(f: Form, known: Known) -> tuple[str, Form] | None:
    path = f.path
    if path.lower() == path:  # no capital letter, inside escapes or out
        return None
    if not any(m.group().isalpha() for m in _UPPER_OUTSIDE_ESCAPES.finditer(path)):
        return None
    lowered = _UPPER_OUTSIDE_ESCAPES.sub(lambda m: m.group() if len(m.group()) == 3 else m.group().lower(), path)
    return _scoped(path.lower()), _with_path(f, lowered)


def _declared_case(f: Form, known: Known) -> tuple[str, Form] | None:
    if known is _nothing:
        return None
    url = f.unsplit()
    declared = known(case_key(url))
    if declared is None or declared == url:
        return None
    return _scoped(f.path.lower()), split_form(declared)


def _decode_reserved(f: Form, known: Known) -> tuple[str, Form] | None:
    if "%" not in f.path:
        return None
    found = sorted(set(_ESCAPE.findall(f.path)))
    if not found:
        return None
    return _scoped(f.path, "".join(found)), _with_path(f, _ESCAPE.sub(lambda m: _RESERVED_ESCAPES[m.group()], f.path))


def _encode_reserved(f: Form, known: Known) -> tuple[str, Form] | None:
    found = sorted(set(_RAW.findall(f.path)))
    if not found:
        return None
    return _scoped(f.path, "".join(found)), _with_path(f, _RAW.sub(lambda m: f"%{ord(m.group()):02X}", f.path))


@dataclass(frozen=True)
class RuleKind:
    """One convention: its name, what it does, its prediction, and how far it generalizes.

    A kind that ``generalizes`` is a server-wide convention (a redirect the
    server's configuration makes): once its rule is active under
    ``min_observations`` first-level directories and refuted under none, it
    applies under every directory of the origin (scope :data:`ANYWHERE`).
    Other kinds (case, escapes) depend on the files and the software under
    one directory, and apply only where they were learned.
    """

    name: str
    summary: str
    predict: Callable[[Form, Known], tuple[str, Form] | None]
    generalizes: bool = False


#: the conventions, in the order they are tried on a URL
KINDS: tuple[RuleKind, ...] = (
    RuleKind("http-to-https", "http:// -> https:// on the same host", _http_to_https, generalizes=True),
    RuleKind("www-to-apex", "www.example.com -> example.com (one registrable domain)", _www_to_apex, generalizes=True),
    RuleKind("apex-to-www", "example.com -> www.example.com (one registrable domain)", _apex_to_www, generalizes=True),
    RuleKind("index-to-directory", "/dir/index.html -> /dir/", _index_to_directory, generalizes=True),
    RuleKind("add-slash", "/dir -> /dir/", _add_slash),
    RuleKind("remove-slash", "/page/ -> /page", _remove_slash),
    RuleKind("lowercase-path", "/About -> /about", _lowercase_path),
    RuleKind(
        DECLARED_CASE,
        "/DOCS/PAGE-1 -> /Docs/Page-1: a case-insensitive server, the case it redirected to or answered at before",
        _declared_case,
    ),
    RuleKind("decode-reserved", "/a%3Ab -> /a:b", _decode_reserved),
    RuleKind("encode-reserved", "/a:b -> /a%3Ab", _encode_reserved),
)
KINDS_BY_NAME = {kind.name: kind for kind in KINDS}
#: rule kind name -> whether it is a server-wide convention (a directory's rule speaks for the origin-wide one)
GENERALIZES = {kind.name: kind.generalizes for kind in KINDS}

#: near-universal host-wide conventions: once a crawl has seen one hold on :data:`PRIOR_SITES` other
#: sites (registrable domains) and fail on none, one observation makes its rule on a new origin
PRIOR_KINDS = frozenset({"http-to-https", "www-to-apex", "apex-to-www", "add-slash", "index-to-directory"})
PRIOR_SITES = 2


_KIND_INDEX = {kind.name: i for i, kind in enumerate(KINDS)}


def kind_order(key: RuleKey) -> tuple[int, str]:
    """Sort key: rules are tried in the order of :data:`KINDS`, then by scope."""
    return _KIND_INDEX.get(key.kind, len(KINDS)), key.scope


class RuleKey(NamedTuple):
    """A rule's identity: where it was learned, which convention, which scope."""

    origin: str
    kind: str
    scope: str = ""

    def __str__(self) -> str:
        return f"{self.origin} {self.kind} {self.scope}".rstrip()

    @classmethod
    def parse(cls, text: str) -> RuleKey:
        """Inverse of ``str()`` (origins and kind names hold no spaces)."""
        origin, _, rest = text.partition(" ")
        kind, _, scope = rest.partition(" ")
        return cls(origin, kind, scope)


def alias_key(source: str) -> RuleKey:
    """The key of the aliases of ``source``'s origin, taken together.

    Its record counts the crawls' confirmations of the origin's aliases
    (support) and the aliases that ended (counterexamples); the requests
    that aliases of an earlier crawl merged are kept under it, and scheduled
    again when one of the origin's aliases ends.
    """
    return RuleKey(origin_of(source), ALIAS, ANYWHERE)


class Prediction(NamedTuple):
    key: RuleKey
    target: str


def predictions(url: str, known: Known = _nothing) -> Iterator[Prediction]:
    """Every rule that covers a scheme form, with the URL it predicts."""
    found = _known_free(url)
    if found is None:
        return
    before, after = found
    yield from before
    if known is not _nothing:
        declared = declared_prediction(url, known)
        if declared is not None:
            yield declared
    yield from after


def declared_prediction(url: str, known: Known) -> Prediction | None:
    """The prediction of the declared-case rule for a scheme form a rule covers, from what is ``known``."""
    form = split_form(url)
    declared = _declared_case(form, known)
    if declared is None:
        return None
    return Prediction(RuleKey(form.origin, DECLARED_CASE, declared[0]), declared[1].unsplit())


#: the kinds whose prediction depends on the URL alone, before and after the declared case
_BEFORE_DECLARED = tuple(kind for kind in KINDS[: _KIND_INDEX[DECLARED_CASE]])
_AFTER_DECLARED = tuple(kind for kind in KINDS[_KIND_INDEX[DECLARED_CASE] + 1 :])


def _covered_host(authority: str) -> bool:
    """Whether conventions may generalize on an authority: a host without userinfo, not an IP."""
    if "@" in authority:
        return False
    host = authority if authority.startswith("[") else authority.partition(":")[0]
    return not is_ip_host(host)


_covered = short_cache(1 << 14)(_covered_host)


@short_cache(1 << 13)
def _known_free(url: str) -> tuple[tuple[Prediction, ...], tuple[Prediction, ...]] | None:
    """The predictions of ``url`` that need nothing known (those tried before the declared case, and
    after it); ``None`` when no rule covers it. Learning asks twice per URL (read ahead, then count)."""
    form = split_form(url)
    if form.scheme not in _SCHEMES or not form.authority or not _covered(form.authority):
        return None
    origin = form.origin
    return _predicted(form, origin, _BEFORE_DECLARED), _predicted(form, origin, _AFTER_DECLARED)


#: an origin -> (kind, target origin) of each host-wide convention that covers its URLs, in
#: :data:`KINDS` order (``None``: no rule covers the origin)
_HOST_RULES: dict[str, tuple[tuple[str, str], ...] | None] = {}
_HOST_RULES_HELD = 1 << 14
_NEW = tuple.__new__


def _host_rules(scheme: str, authority: str) -> tuple[tuple[str, str], ...] | None:
    if not _covered_host(authority):
        return None
    host = Form(scheme, authority, "/", None).host
    if host is None:
        return ()
    found: list[tuple[str, str]] = []
    if scheme == "http":
        found.append(("http-to-https", "https://" + authority))
    partner = _partner(host)
    if partner is not None:
        found.append(("www-to-apex" if host.startswith(WWW) else "apex-to-www", f"{scheme}://{partner}"))
    return tuple(found)


def known_free(url: str) -> tuple[tuple[Prediction, ...], tuple[Prediction, ...]] | None:
    """What :func:`_known_free` answers, each origin's host-wide conventions remembered (learning
    in bulk: one call per observed URL, nothing kept per URL)."""
    scheme, authority, path, query, _ = _SPLIT.fullmatch(url).groups()  # type: ignore[union-attr]
    if scheme not in _SCHEMES or not authority or not path.startswith("/"):
        return _known_free(url)
    end = len(scheme) + 3 + len(authority)
    origin = url[:end]
    try:
        host_rules = _HOST_RULES[origin]
    except KeyError:
        host_rules = _host_rules(scheme, authority)
        if end <= CACHED_LENGTH:  # a hostile origin is never held
            if len(_HOST_RULES) >= _HOST_RULES_HELD:
                _HOST_RULES.clear()
            _HOST_RULES[origin] = host_rules
    if host_rules is None:
        return None
    head, sep, _ = path[1:].partition("/")
    prefix = f"/{head}/" if sep else "/"
    query = "" if query is None else "?" + query
    before = [_NEW(Prediction, (_NEW(RuleKey, (origin, kind, prefix)), target + path + query)) for kind, target in host_rules]
    name = path.rpartition("/")[2]
    if name in DEFAULT_DOCUMENTS:
        key = _NEW(RuleKey, (origin, "index-to-directory", f"{prefix} {name}"))
        before.append(_NEW(Prediction, (key, origin + path[: -len(name)] + query)))
    if _DIGIT.search(path) is not None:
        template = path_template(path)
        if template != path:
            if not path.endswith("/"):
                before.append(_NEW(Prediction, (_NEW(RuleKey, (origin, "add-slash", template)), f"{origin}{path}/{query}")))
            elif len(path) >= 2:
                before.append(_NEW(Prediction, (_NEW(RuleKey, (origin, "remove-slash", template)), origin + path[:-1] + query)))
    form: Form | None = None
    if path.lower() != path:
        form = Form(scheme, authority, path, query[1:] if query else None)
        found = _lowercase_path(form, _nothing)
        if found is not None:
            before.append(Prediction(RuleKey(origin, "lowercase-path", found[0]), found[1].unsplit()))
    if "%" in path or _RAW.search(path) is not None:
        form = form or Form(scheme, authority, path, query[1:] if query else None)
        return tuple(before), _predicted(form, origin, _AFTER_DECLARED)
    return tuple(before), ()


def _predicted(form: Form, origin: str, kinds: tuple[RuleKind, ...]) -> tuple[Prediction, ...]:
    out = []
    for kind in kinds:
        found = kind.predict(form, _nothing)
        if found is not None:
            scope, target = found
            out.append(Prediction(RuleKey(origin, kind.name, scope), target.unsplit()))
    return tuple(out)


def predict(url: str, key: RuleKey, known: Known = _nothing) -> str | None:
    """What the rule ``key`` predicts for ``url`` (``None``: not covered)."""
    form = split_form(url)
    if form.origin != key.origin or "@" in (form.authority or "@"):
        return None
    kind = KINDS_BY_NAME[key.kind]
    found = kind.predict(form, known)
    if found is None:
        return None
    scope = generalized(found[0]) if kind.generalizes and key.scope.partition(" ")[0] == ANYWHERE else found[0]
    return found[1].unsplit() if scope == key.scope else None


# -- judging evidence ---------------------------------------------------------


class Verdict(Enum):
    SUPPORT = "support"
    AGAINST = "against"
    NEUTRAL = "neutral"


def judge(predicted: str, status: int, target: str | None, *, trusted: bool) -> Verdict:
    """What one answer at a covered URL says about the rule that predicted ``predicted``.

    ``trusted`` is False for context-dependent exchanges and hops into a
    sink: they may count against a rule, never for it.
    """
    if status in PERMANENT and target == predicted:
        return Verdict.SUPPORT if trusted else Verdict.NEUTRAL
    if status in REDIRECTS or status < 400:
        return Verdict.AGAINST
    return Verdict.NEUTRAL


# -- a rule's life ------------------------------------------------------------


class RuleStatus(Enum):
    CANDIDATE = "candidate"
    ACTIVE = "active"
    SUSPENDED = "suspended"


@dataclass(frozen=True)
class LearningPolicy:
    """How much evidence makes a rule, and how long evidence lasts."""

    #: K: consistent observations before a pattern becomes a rule
    min_observations: int = 3
    #: seconds after which support or counterexamples are forgotten
    rule_ttl: float = 30 * 86400.0
    #: distinct sources redirected to one page that make it a sink
    sink_fanin: int = 5
    #: hops followed in a row before giving up (no merge); Scrapy's REDIRECT_MAX_TIMES
    max_chain: int = 20
    #: whether a clean permanent redirect to another registrable domain is an exact alias
    #: (source -> target only; rules never cross registrable domains)
    cross_site_aliases: bool = True
    #: seconds an exact alias is used after the server last stated it, when the redirect
    #: stated no lifetime of its own (``Cache-Control: max-age``, ``Expires``)
    alias_ttl: float = 7 * 86400.0

    def __post_init__(self) -> None:
        if self.min_observations < 1:
            raise ValueError("min_observations must be at least 1")
        if self.sink_fanin < 2:
            raise ValueError("sink_fanin must be at least 2")
        if self.max_chain < 1:
            raise ValueError("max_chain must be at least 1")
        if self.rule_ttl <= 0:
            raise ValueError("rule_ttl must be positive")
        if self.alias_ttl <= 0:
            raise ValueError("alias_ttl must be positive")


@dataclass
class RuleRecord:
    """The evidence about one rule."""

    key: RuleKey
    support: int = 0
    against: int = 0
    first_seen: float = 0.0
    last_support: float = 0.0
    last_against: float = 0.0
    example: str = ""
    counterexample: str = ""

    def status(self, policy: LearningPolicy, now: float) -> RuleStatus:
        """The rule's status at ``now``, evidence older than the TTL left out."""
        if self.against and now - self.last_against <= policy.rule_ttl:
            return RuleStatus.SUSPENDED
        if self.support >= policy.min_observations and now - self.last_support <= policy.rule_ttl:
            return RuleStatus.ACTIVE
        return RuleStatus.CANDIDATE

    def stale(self, policy: LearningPolicy, now: float) -> bool:
        """Whether :meth:`expire` would forget a count now."""
        return bool(self.against and now - self.last_against > policy.rule_ttl) or bool(
            self.support and now - self.last_support > policy.rule_ttl
        )

    def expire(self, policy: LearningPolicy, now: float) -> None:
        """Forget evidence older than the TTL (a suspended rule starts learning afresh)."""
        if self.against and now - self.last_against > policy.rule_ttl:
            self.against, self.support, self.example, self.counterexample = 0, 0, "", ""
        if self.support and now - self.last_support > policy.rule_ttl:
            self.support, self.example = 0, ""

    def add(self, verdict: Verdict, now: float, note: str) -> None:
        """Count one judged observation."""
        if not self.first_seen:
            self.first_seen = now
        if verdict is Verdict.SUPPORT:
            self.support += 1
            self.last_support = now
            self.example = note
        elif verdict is Verdict.AGAINST:
            self.against += 1
            self.last_against = now
            self.counterexample = note
