"""Text rules shared by every entry point: validation, hashing, token estimates."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from graphmem.errors import InvalidInputError

# A memory is a note, not a document: long enough for a decision with its reasons,
# short enough to fit a prompt. Longer text is rejected, never truncated silently.
MAX_TEXT_CHARS = 8_000
# The names a memory keeps of where it was learned: its session's id, and its origin (where in the
# session or file, e.g. an OpenCode message id).
MAX_SESSION_CHARS = 4096
MAX_ORIGIN_CHARS = 500
MAX_SOURCE_CHARS = 4096  # who or what wrote a memory ("user", "import:<file>", "bootstrap:<key>")

# Rough English average for BERT/GPT-style tokenizers; used only for budgets.
CHARS_PER_TOKEN = 4.0

_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
_SPACE_RE = re.compile(r"\s+")
_LONE_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def validate_text(text: str, *, what: str = "text") -> str:
    """Return ``text`` stripped, or raise when it is empty, too long or not text."""
    if not isinstance(text, str):
        raise InvalidInputError(f"{what} must be a string, got {type(text).__name__}.")
    cleaned = text.strip()
    if not cleaned:
        raise InvalidInputError(f"{what} is empty: give the memory some words.")
    if "\x00" in cleaned:
        raise InvalidInputError(f"{what} contains a NUL character: pass plain text.")
    ensure_utf8(cleaned, what=what)
    if len(cleaned) > MAX_TEXT_CHARS:
        raise InvalidInputError(
            f"{what} is {len(cleaned):,} characters; the limit is {MAX_TEXT_CHARS:,}. "
            "Split it into several memories, one idea each."
        )
    return cleaned


def validate_label(value: object, *, what: str, most: int) -> str | None:
    """``value``, a name a memory keeps (its session, its origin), when every store can hold it;
    None stays None. Not a string, a NUL (PostgreSQL holds none), half a UTF-16 pair or over
    ``most`` characters is an ``InvalidInputError`` naming ``what``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"The {what} must be a string, got {type(value).__name__}.")
    if "\x00" in value:
        raise InvalidInputError(f"The {what} contains a NUL character: give plain text.")
    ensure_utf8(value, what=f"The {what}")
    if len(value) > most:
        raise InvalidInputError(f"The {what} is {len(value):,} characters; the limit is {most:,}.")
    return value


def ensure_utf8(text: str, *, what: str = "text") -> None:
    """Raise when ``text`` holds lone surrogates (undecodable bytes read from a pipe or file)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{what} is not valid UTF-8 (at character {exc.start}): pass UTF-8 text."
        ) from None


def well_formed(text: str) -> str:
    """``text`` with each lone surrogate (half of a UTF-16 pair: JSON escapes one where a client cut
    an emoji, and Python decodes one from bytes) as U+FFFD: UTF-8 cannot hold it, so the store would
    refuse the whole text for it (``ensure_utf8``). For text read from another program's files."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def escape_undecodable(text: str, limit: int | None = None) -> str:
    """``text`` with what UTF-8 cannot encode spelled out, for a message that shows it: a byte
    that was no UTF-8 (kept as a lone surrogate from U+DC80 to U+DCFF, as ``os.fsdecode`` keeps a
    command line's) as ``\\xff``, any other lone surrogate as ``\\ud800``. Over ``limit``
    characters, only ``limit`` of them around the first such one, the cuts marked "…"."""
    if limit is not None and len(text) > limit:
        found = _LONE_SURROGATE_RE.search(text)
        start = max(0, min((found.start() if found else 0) - limit // 2, len(text) - limit))
        end = start + limit
        text = ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")
    return _LONE_SURROGATE_RE.sub(_escape, text)


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def normalize(text: str) -> str:
    """Case-, width- and whitespace-insensitive form used for exact-duplicate detection."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _SPACE_RE.sub(" ", folded).strip()


def content_hash(text: str) -> str:
    """Stable hash of the normalized text (hex, 32 chars)."""
    return hashlib.blake2b(normalize(text).encode("utf-8"), digest_size=16).hexdigest()


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters and digits, inner apostrophes kept)."""
    return [w.casefold() for w in _WORD_RE.findall(text)]


def estimate_tokens(text: str) -> int:
    """Approximate model tokens in ``text`` (at least 1 for non-empty text)."""
    if not text:
        return 0
    return max(1, round(len(text) / CHARS_PER_TOKEN))


def fold(text: str) -> str:
    """Accent- and case-folded text ("Kùzu" → "kuzu"), what the full-text index sees."""
    if text.isascii():  # nothing to decompose: most text, and the per-character walk is slow
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def clean_fts_query(query: str) -> str:
    """Folded words only: Kùzu's FTS keeps ``?`` in terms and treats ``*`` as match-all."""
    return " ".join(words(fold(query)))


# Agent-noun endings the full-text index's Porter stemmer keeps ("linter" stays "linter" while
# "linting" becomes "lint"): a query word with one also asks for its base word.
AGENT_ENDINGS = ("ers", "er", "ors", "or")
MIN_BASE_LETTERS = 4


def word_variants(word: str) -> list[str]:
    """Other forms of ``word`` the stemmer does not join to it: "linter" → ["lint"],
    "formatters" → ["format"], "runner" → ["run"]; none for short or non-alphabetic words."""
    if not word.isalpha():
        return []
    for ending in AGENT_ENDINGS:
        base = word[: -len(ending)]
        if word.endswith(ending) and len(base) >= MIN_BASE_LETTERS:
            if base[-1] == base[-2] and base[-1] not in "aeiouls":  # "formatt" → "format"
                base = base[:-1]
            return [base]
    return []


def lexical_query(query: str) -> str:
    """``clean_fts_query`` plus each word's ``word_variants``: what recall's lexical channel
    asks, so that "which linter" finds "Use ruff for linting" before any model is loaded."""
    terms = words(fold(query))
    extra = [v for w in terms for v in word_variants(w) if v not in terms]
    return " ".join([*terms, *dict.fromkeys(extra)])


# A query of this many words is also asked whole, as one phrase (stopwords kept): the
# sentence a user half-remembers ranks first when a memory holds it word for word.
MIN_PHRASE_WORDS, MAX_PHRASE_WORDS = 3, 12


def phrase_words(text: str) -> list[str]:
    """The folded words of ``text`` when it is a phrase of ``MIN_PHRASE_WORDS`` to
    ``MAX_PHRASE_WORDS`` words, which full-text search also asks whole; else none."""
    tokens = words(fold(text))
    return tokens if MIN_PHRASE_WORDS <= len(tokens) <= MAX_PHRASE_WORDS else []


def shingles(text: str, size: int = 3) -> frozenset[str]:
    """Word n-grams of the normalized text, for near-duplicate checks."""
    tokens = words(text)
    if len(tokens) < size:
        return frozenset({" ".join(tokens)}) if tokens else frozenset()
    return frozenset(" ".join(tokens[i : i + size]) for i in range(len(tokens) - size + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two sets (0 when both are empty)."""
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary with "…" when longer than ``limit``."""
    flat = _SPACE_RE.sub(" ", text).strip()
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1].rsplit(" ", 1)[0] or flat[: limit - 1]
    return cut.rstrip(" ,;:") + "…"


# The marks graphmem puts before an item it shows ([from the user], [proposed by an agent, ...],
# [low trust]): a text that holds one is shown with parentheses, so only graphmem's own marks read
# as who wrote it.
_FORGED_MARK_RE = re.compile(r"\[(?=\s*(?:from|proposed by|low trust)\b)([^\[\]]*)\]?", re.IGNORECASE)


def inert(text: str) -> str:
    """``text`` as one line of a block graphmem renders: its whitespace (newlines that would start a
    heading or a list item of their own) collapsed, and its look-alikes of graphmem's marks
    (``[from the user]``) turned into plain words in parentheses.

    A mark drawn with other characters (``［from the user］`` in full-width brackets, a zero-width
    space inside it, a Cyrillic ``о`` in "from") reads the same to a model: when the text as
    ``trust.normalize_text`` reads it holds a mark, the text is shown so read, its marks in
    parentheses."""
    flat = " ".join(text.split())
    if not flat.isascii():
        from graphmem.core.trust import normalize_text

        folded = normalize_text(flat)
        if _FORGED_MARK_RE.search(folded):
            flat = " ".join(folded.split())
    return _FORGED_MARK_RE.sub(lambda m: f"({m.group(1).strip()})", flat)


def sentence(text: str) -> str:
    """``text`` ending with a full stop (unless it ends with one already, or ?, ! or …)."""
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def names_phrase(names: list[str], limit: int) -> str:
    """``"A"``, ``"A and B"``, ``"A, B and C"``; beyond ``limit`` names, ``"A, B and 5 more"``."""
    if len(names) > limit:
        return f"{', '.join(names[:limit])} and {len(names) - limit} more"
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"
