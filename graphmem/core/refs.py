"""GitLab references (``!12``, ``group/proj#4``, ``&7``, URLs) and file paths in free text.

Pure functions over strings; no I/O. ``find_refs`` never raises on any input:
a memory's text is whatever an agent or a user wrote.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from graphmem.core.models import EntityKind
from graphmem.errors import InvalidInputError

MAX_IID = 2**31 - 1  # GitLab stores iids as 32-bit signed integers
_MAX_IID_DIGITS = 10  # longer digit runs cannot be an iid; int() of huge runs is slow

_SIGIL = {EntityKind.MERGE_REQUEST: "!", EntityKind.ISSUE: "#", EntityKind.EPIC: "&"}
_KIND = {sigil: kind for kind, sigil in _SIGIL.items()}
_URL_KIND = {
    "merge_requests": EntityKind.MERGE_REQUEST,
    "issues": EntityKind.ISSUE,
    "work_items": EntityKind.ISSUE,
    "epics": EntityKind.EPIC,
}

# A namespace segment as GitLab allows it (it may not start with "." or "-").
_SEG = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
_NS = rf"{_SEG}(?:/{_SEG})*"
_REF_BODY = rf"(?P<ns>{_NS})?(?P<sigil>[!#&])(?P<iid>[0-9]+)"
_TEXT_REF_RE = re.compile(rf"""(?<![^\s(\[{{,;:"']){_REF_BODY}(?=$|[\s.,;:)\]}}!?'"])""")
_WHOLE_REF_RE = re.compile(_REF_BODY)

# The lookbehind keeps the scheme scan linear on long runs of letters.
_URL_RE = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s<>\"'`]+")
_URL_TRAILING = ".,;:!?'\"]}>"
_GITLAB_URL_RE = re.compile(
    r"https?://(?:[^/?#@\s]*@)?(?P<host>[^/?#\s]+)/"
    rf"(?:(?P<group>groups/)(?P<gns>{_NS})/-/(?P<gtype>epics|work_items)"
    rf"|(?P<pns>{_SEG}(?:/{_SEG})+)/-/(?P<ptype>merge_requests|issues|work_items))"
    r"/(?P<iid>[0-9]+)(?:[/?#]\S*)?",
    re.IGNORECASE,
)

_FENCE_RE = re.compile(r"(```|~~~).*?(?:\1|\Z)", re.DOTALL)
_INLINE_CODE_RE = re.compile(r"(`+)[^\n]*?\1")
_HEADING_RE = re.compile(r"^[ \t]{0,3}#+(?=[ \t]|$)", re.MULTILINE)
# "color: #123456" and friends: an all-digit hex colour, not issue 123456.
_COLOUR_CONTEXT_RE = re.compile(
    r"(?:colou?r|background|bg|fg|fill|stroke|border|shadow|outline)[\w-]*\s*[:=]\s*[\"']?$",
    re.IGNORECASE,
)
_COLOUR_DIGITS = frozenset({3, 4, 6, 8})
_COLOUR_CONTEXT_CHARS = 40  # how far back "color:" may be; bounded so long lines stay linear
_MASK = "\x00"  # neither a ref boundary nor a namespace character


@dataclass(frozen=True, slots=True)
class Ref:
    """A reference to a GitLab merge request, issue or epic.

    ``namespace`` is ``"group/sub/project"`` for MRs and issues, ``"group/sub"``
    for epics, and None when the ref is relative to the current project/group.
    """

    kind: EntityKind
    iid: int
    namespace: str | None
    host: str | None = None
    raw: str = ""
    start: int = 0
    end: int = 0

    def __post_init__(self) -> None:
        if self.kind not in _SIGIL:
            raise InvalidInputError(f"A ref must be a merge request, issue or epic, not {self.kind.value}.")
        if not 1 <= self.iid <= MAX_IID:
            raise InvalidInputError(f"A ref's number must be between 1 and {MAX_IID}, not {self.iid}.")

    @property
    def name(self) -> str:
        """Canonical short form: ``"!123"``, ``"group/proj#4"``, ``"group&7"`` (never the host)."""
        return f"{self.namespace or ''}{_SIGIL[self.kind]}{self.iid}"

    def key(self, default_namespace: str | None) -> str:
        """Stable entity key, e.g. ``"MergeRequest:group/proj!12"`` or ``"Issue:#4"``.

        A relative ref is resolved against ``default_namespace`` (the current
        project for MRs and issues, the current group for epics) when given.
        """
        namespace = self.namespace or default_namespace or ""
        return f"{self.kind.value}:{namespace}{_SIGIL[self.kind]}{self.iid}"

    @property
    def identity(self) -> tuple[EntityKind, str | None, int]:
        """What makes two refs the same reference: ``(kind, namespace, iid)``."""
        return (self.kind, self.namespace, self.iid)


def find_refs(text: str, *, gitlab_hosts: Collection[str] | None = None) -> list[Ref]:
    """Every GitLab ref in ``text``, in order of appearance, each (kind, namespace, iid) once.

    Finds ``!12``, ``#4``, ``&7``, ``group/proj!12``, ``group&3`` and GitLab URLs of
    merge requests, issues, work items and epics. Code (fenced or inline), Markdown
    heading markers, hex colours and non-GitLab URLs hold no refs. When
    ``gitlab_hosts`` is given, URLs of other hosts are ignored.
    """
    hosts = None if gitlab_hosts is None else {h.lower() for h in gitlab_hosts}
    masked = _mask_code(text)
    found: list[Ref] = []
    url_spans: list[tuple[int, int]] = []
    for match in _URL_RE.finditer(masked):
        url_spans.append(match.span())
        url = _strip_url_trailing(match.group())
        ref = _parse_url(url, match.start(), hosts)
        if ref is not None:
            found.append(ref)
    masked = _mask_spans(masked, url_spans)
    masked = _mask_spans(masked, [m.span() for m in _HEADING_RE.finditer(masked)])
    for match in _TEXT_REF_RE.finditer(masked):
        ref = _ref_from_match(match, text)
        if ref is not None and not _is_colour(ref, masked):
            found.append(ref)
    found.sort(key=lambda ref: ref.start)
    seen: set[tuple[EntityKind, str | None, int]] = set()
    unique: list[Ref] = []
    for ref in found:
        if ref.identity not in seen:
            seen.add(ref.identity)
            unique.append(ref)
    return unique


def parse_ref(token: str) -> Ref | None:
    """The ref that the whole (stripped) ``token`` is, or None.

    Accepts the same forms as ``find_refs`` (``"!12"``, ``"group/proj#4"``,
    ``"group&3"``, a GitLab URL of any host) and nothing around them.
    """
    stripped = token.strip()
    if _URL_RE.fullmatch(stripped):
        return _parse_url(stripped, 0, None)
    match = _WHOLE_REF_RE.fullmatch(stripped)
    return None if match is None else _ref_from_match(match, stripped)


def _ref_from_match(match: re.Match[str], text: str) -> Ref | None:
    kind = _KIND[match.group("sigil")]
    namespace = match.group("ns")
    if namespace is not None and kind is not EntityKind.EPIC and "/" not in namespace:
        return None  # "proj!12": a project path has at least two segments
    iid = _iid(match.group("iid"))
    if iid is None:
        return None
    start, end = match.span()
    return Ref(kind, iid, namespace, raw=text[start:end], start=start, end=end)


def _parse_url(url: str, start: int, hosts: set[str] | None) -> Ref | None:
    match = _GITLAB_URL_RE.fullmatch(url)
    if match is None:
        return None
    host = match.group("host").lower()
    if hosts is not None and host not in hosts and host.partition(":")[0] not in hosts:
        return None
    iid = _iid(match.group("iid"))
    if iid is None:
        return None
    if match.group("group"):
        # A group-level work item is an epic (GitLab 17+ shows epics as work items).
        kind, namespace = EntityKind.EPIC, match.group("gns")
    else:
        kind, namespace = _URL_KIND[match.group("ptype").lower()], match.group("pns")
    return Ref(kind, iid, namespace, host=host, raw=url, start=start, end=start + len(url))


def _iid(digits: str) -> int | None:
    if len(digits) > _MAX_IID_DIGITS:
        return None
    value = int(digits)
    return value if 1 <= value <= MAX_IID else None


def _is_colour(ref: Ref, masked: str) -> bool:
    if ref.kind is not EntityKind.ISSUE or ref.namespace is not None:
        return False
    if len(ref.raw) - 1 not in _COLOUR_DIGITS:
        return False
    context_start = max(ref.start - _COLOUR_CONTEXT_CHARS, masked.rfind("\n", 0, ref.start) + 1)
    return _COLOUR_CONTEXT_RE.search(masked, context_start, ref.start) is not None


def _strip_url_trailing(url: str) -> str:
    """``url`` without sentence punctuation after it; a ")" stays if it closes a "(" in the URL."""
    open_parens = url.count("(")
    close_parens = url.count(")")
    end = len(url)
    while end:
        last = url[end - 1]
        if last == ")" and close_parens > open_parens:
            close_parens -= 1
        elif last not in _URL_TRAILING:
            break
        end -= 1
    return url[:end]


def _mask_code(text: str) -> str:
    masked = _mask_spans(text, [m.span() for m in _FENCE_RE.finditer(text)])
    return _mask_spans(masked, [m.span() for m in _INLINE_CODE_RE.finditer(masked)])


def _mask_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span blanked out, keeping offsets and line breaks."""
    if not spans:
        return text
    parts: list[str] = []
    pos = 0
    for start, end in spans:
        parts.append(text[pos:start])
        parts.append(re.sub(r"[^\n]", _MASK, text[start:end]))
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


# --- file paths -------------------------------------------------------------

_PATH_TOKEN_RE = re.compile(r"[^\s\"'`()\[\]{}<>,;|]+")
_PATH_CHARS_RE = re.compile(r"[\w.\-/~@+]+")
_LINE_SUFFIX_RE = re.compile(r"(?::[0-9]+)+$|#L[0-9]+(?:-L?[0-9]+)?$")
_PATH_TRAILING = ".,:;!?"
_EXT_RE = re.compile(r"[A-Za-z0-9]{1,10}")
_VERSION_STEM_RE = re.compile(r"[vV]?[0-9][0-9.]*")
_PATH_PREFIXES = ("./", "../", "~/", "/")


def find_path_candidates(text: str) -> list[str]:
    """Tokens of ``text`` that look like file or directory paths, in order, each once.

    ``src/app/models.py``, ``./README.md``, ``docs/cli.md:12`` (yields
    ``docs/cli.md``), ``pyproject.toml``, ``graphmem/core/``. Quotes, backticks,
    brackets, trailing punctuation and ``:line`` / ``#L12`` suffixes are removed.
    URLs, refs, version numbers, abbreviations (``e.g.``) and word pairs such as
    ``and/or`` are not paths. Unlike refs, paths inside code are found. These are
    candidates: the caller checks them against the files that exist.
    """
    masked = _mask_spans(text, [m.span() for m in _URL_RE.finditer(text)])
    seen: set[str] = set()
    found: list[str] = []
    for match in _PATH_TOKEN_RE.finditer(masked):
        if masked.startswith("(", match.end()):
            continue  # "Memory.recall()": a call, not a file
        path = _clean_path_token(match.group())
        if path is not None and path not in seen:
            seen.add(path)
            found.append(path)
    return found


def _clean_path_token(token: str) -> str | None:
    if _MASK in token or "/-/" in token or token.startswith("www."):
        return None
    token = token.rstrip(_PATH_TRAILING)
    token = _LINE_SUFFIX_RE.sub("", token).rstrip(_PATH_TRAILING)
    if not token or not _PATH_CHARS_RE.fullmatch(token) or _looks_like_email(token):
        return None
    return token if _is_path_shaped(token) else None


def _is_path_shaped(token: str) -> bool:
    last = token.rstrip("/").rsplit("/", 1)[-1]
    if not last.strip("."):
        return False  # ".", "..", "/", "./"
    if "/" in token:
        segments = [s for s in token.split("/") if s]
        if not any(c.isalpha() for c in token):
            return False  # "2024/05/01", "1/2"
        if token.startswith("/") and len(segments) == 1 and not token.endswith("/"):
            return _has_extension(last)  # "/help" is a slash command; "/setup.cfg" a file
        return (
            token.endswith("/")
            or token.startswith(_PATH_PREFIXES)
            or len(segments) >= 3
            or _has_extension(last)
        )
    return _has_extension(last)


def _has_extension(name: str) -> bool:
    stem, dot, ext = name.rpartition(".")
    if not dot or not _EXT_RE.fullmatch(ext):
        return False
    if ext.isdigit() or (stem and _VERSION_STEM_RE.fullmatch(stem)):
        return False  # "0.11.3", "v1.2.x", "3.14"
    # "e.g", "i.e", "a.k.a": abbreviations, not files
    return not all(len(part) <= 1 for part in name.split("."))


def _looks_like_email(token: str) -> bool:
    user, at, domain = token.partition("@")
    return bool(at) and bool(user) and "/" not in token and "." in domain


# --- bare code identifiers ----------------------------------------------------

# A word standing alone: not part of a dotted name, a path, a ref or a call (``x.y``, ``a/b``,
# ``!12``, ``f()``: other readers handle those), nor of a hyphenated word.
_IDENTIFIER_RE = re.compile(r"(?<![\w.$/\\:@#!&~\-])[A-Za-z_][A-Za-z0-9_]*(?![\w$(/]|\.\w|::|-\w)")
_CAMEL_RE = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
MIN_PLAIN_IDENTIFIER_CHARS = 4
# Plain lower-case words of at least four letters that a sentence about code uses in their
# English sense even when a project defines a function of that name ("update the docs", "the
# tests fail"): common English, then the generic verbs and nouns of programming prose. A plain
# word outside this list is linked only when exactly one live symbol of the project has it as
# its name (``graphmem.service.mentions``); `backticks` link any of them.
COMMON_WORDS = frozenset(
    """
    about above after again against also always another because been before being below between
    both cannot could does doing done down during each either else even ever every first from
    have having here into just last least less like many more most much must never next none
    only other over same should since some still such than that their them then there these
    they this those though through thus under until upon very want were what when where which
    while will with within without would your yours today tomorrow yesterday week weeks year
    years month months time times thing things work works worked working make makes made need
    needs needed used uses using look looks said says tell told know known think thought
    instead maybe please thanks sure good better best right wrong fine slow fast true false
    update updates updated change changes changed check checks checked test tests tested call
    calls called return returns returned start starts started stop stops stopped open opens
    opened close closes closed read reads write writes load loads save saves send sends build
    builds create creates created delete deletes deleted remove removes removed handle handles
    parse format print show shows list lists find finds fetch sort merge merged apply reset
    clear init setup main help name names type types value values data file files path paths
    text error errors user users item items config option options default result results input
    output line lines code fixes fixed added adds move moves moved rename renamed support
    supports allow allows runs running
    """.split()  # noqa: SIM905 - a word list reads better as words
)


def is_plain_word(word: str) -> bool:
    """Whether an identifier is shaped like a word of prose (``cancel``), not like code
    (``refund_all``, ``refundAll``, ``RefundService``)."""
    return "_" not in word.strip("_") and not _CAMEL_RE.search(word)


def find_identifiers(text: str) -> list[str]:
    """Bare words of ``text`` that may name a code symbol, each once: identifier-shaped ones first
    (``refund_all``, ``refundAll``, ``RefundService``), then plain lower-case words of at least
    four letters that are not common English (``cancel``), each group in order of appearance.

    Code spans, URLs, paths, refs, dotted names and calls are left to the other readers, as are
    dunder names and capitalised plain words (``Context`` starts sentences). These are candidates:
    the caller links one only when the project's code graph knows it.
    """
    masked = _mask_code(text)
    masked = _mask_spans(masked, [m.span() for m in _URL_RE.finditer(masked)])
    shaped: dict[str, None] = {}
    plain: dict[str, None] = {}
    for match in _IDENTIFIER_RE.finditer(masked):
        word = match.group()
        if word.startswith("__") and word.endswith("__"):
            continue
        if not is_plain_word(word):
            shaped.setdefault(word)
        elif (
            word.islower()
            and word.isalpha()
            and len(word) >= MIN_PLAIN_IDENTIFIER_CHARS
            and word not in COMMON_WORDS
        ):
            plain.setdefault(word)
    return [*shaped, *plain]


# --- dotted names -------------------------------------------------------------

# A dotted name standing alone (``res.sendFile``, ``os.path.join``, ``self.flush``): not inside a
# path, a URL, an e-mail or a longer name, nor followed by a part that is no identifier (``v1.2``).
_DOTTED_RE = re.compile(r"(?<![\w.$/\\:@#!&~\-])[A-Za-z_][\w$]*(?:\.[A-Za-z_][\w$]*)+(?![\w$/]|\.\w|::|-\w)")
MAX_DOTTED_CHARS = 200  # longer is no name a person writes


def find_dotted_names(text: str) -> list[str]:
    """Dotted names of ``text`` written as plain text (``res.sendFile``, ``os.path.join``), each
    once, in order of appearance.

    Code spans and URLs are left to the other readers, as are abbreviations (``e.g.``, ``i.e.``)
    and a name no identifier starts (``v1.2``, ``3.14``). A file name (``index.js``) is shaped
    like one: these are candidates, the caller links one only when the project's code graph
    has a symbol of that name."""
    masked = _mask_code(text)
    masked = _mask_spans(masked, [m.span() for m in _URL_RE.finditer(masked)])
    found: dict[str, None] = {}
    for match in _DOTTED_RE.finditer(masked):
        name = match.group()
        if len(name) <= MAX_DOTTED_CHARS and any(len(part) > 1 for part in name.split(".")):
            found.setdefault(name)
    return list(found)
