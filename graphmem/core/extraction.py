"""Deterministic extraction: what a finished agent session teaches (decisions, blockers, ...).

Pure functions over ``Transcript``; no I/O, no model. Precision matters more than
recall: a rule that is not sure says nothing. What the rules read:

- the user's own sentences (decisions, blockers, preferences, directives, facts),
  after code blocks, quoted lines, quotations, text behind a reporting frame ("The page
  said:") and log lines are dropped and secrets redacted;
- an assistant's suggestion of a decision only when the user's next message
  confirms it ("yes, do it");
- the session's shell runs: a command that worked after a similar one failed
  (``procedure.retry``), and a command that failed, then passed after files were
  changed or another command was run (``procedure.error-fix``).

Questions, hypotheticals, hedges, negations, reported speech and non-English text
yield nothing. Text that looks like a prompt injection is kept as data with
``Trust.LOW`` and never becomes a directive or a preference. docs/learning.md
describes every rule with examples.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from graphmem.core.models import Category, Trust
from graphmem.core.redaction import redact
from graphmem.core.refs import find_path_candidates
from graphmem.core.sessions import Learned, SessionMessage, Transcript
from graphmem.core.shell_runs import Run, command_runs, learn_from_runs
from graphmem.core.text import normalize, sentence, words
from graphmem.core.trust import looks_like_injection


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Bounds, so a session of megabytes costs the same as a long one.
MAX_MESSAGES = 2_000  # messages read per session (the first ones; a session is rarely longer)
MAX_MESSAGE_CHARS = 20_000  # text read per message; the rest is usually pasted output
MAX_SENTENCE_CHARS = 400  # a longer "sentence" is a paragraph or a log line, not one statement
MIN_SENTENCE_WORDS = 4  # "use pnpm" alone says too little to stand as a memory
MAX_PER_CATEGORY = 12  # learned items per category per session, in message order
MAX_CONFIRMATION_WORDS = 8  # "yes, do it" confirms; a long reply is a new topic

_FENCE_RE = re.compile(r"(```|~~~).*?(?:\1|\Z)", re.DOTALL)
_LOG_LINE_RE = re.compile(
    r"""^\s*(?:
        \d{4}-\d\d-\d\d[T ]\d\d:\d\d      # timestamps
      | \[?(?:ERROR|WARN(?:ING)?|INFO|DEBUG|TRACE|FATAL)\b  # log levels
      | Traceback\b | File\ " | at\ [\w.$]+\( # stack traces
      | [$#>]\ | >>>\ | \.\.\.\            # prompts
      | [A-Z][A-Z0-9_]*=\S                 # KEY=value (.env lines)
      | [{}\[\]()<]                         # code and markup
    )""",
    re.VERBOSE,
)
_QUOTE_LINE_RE = re.compile(r"^\s*>")
_INDENTED_RE = re.compile(r"^(?: {4}|\t)")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+|\s*;\s+")
_FILLER_RE = re.compile(
    r"""^(?:(?:ok(?:ay)?|so|alright|all\s+right|right|well|um+|uh+|hey|hi|btw|by\s+the\s+way|fyi|
        also|and|but|oh|ah|yeah|yes|yep|anyway|great|cool|thanks|thank\s+you|
        quick\s+context|for\s+context|context|for\s+the\s+record|heads\s+up|just\s+so\s+you\s+know|
        note\s+to\s+self|note(?:\s+that)?|ps|remember(?:\s+that)?|keep\s+in\s+mind(?:\s+that)?)\b[\s,:;.!-]*)+""",
    re.IGNORECASE | re.VERBOSE,
)
_QUESTION_START_RE = re.compile(
    r"^(?:should|shall|could|would|can|do|does|did|is|are|was|were|what|why|how|which|who|when|where"
    r"|any\s+idea|wdyt|thoughts)\b",
    re.IGNORECASE,
)
# Words that make a statement not a statement of fact: maybes, conditions, plans.
_HEDGE_RE = re.compile(
    r"\b(?:maybe|perhaps|probably|possibly|might|could|would(?!\s+rather)|if|unless|suppose|supposing"
    r"|imagine|hypothetically|wondering|not\s+sure|i\s+think|i\s+guess|i\s+believe|i\s+wonder|someday"
    r"|eventually|hopefully|in\s+theory|assuming|whether)\b",
    re.IGNORECASE,
)
# Someone else's words, reported: flips who holds the view.
_REPORTED_RE = re.compile(
    r"\b(?:said|says|told\s+(?:me|us)|claims?|claimed|thinks|suggested|mentioned|according\s+to|heard"
    r"|apparently|rumou?red|supposedly|wants\s+us|asked\s+(?:me|us))\b",
    re.IGNORECASE,
)
# What makes a suggestion sentence someone else's advice, relayed ("the page says we should ...").
_RELAYED_RE = re.compile(
    r"\b(?:recommends?|recommended|suggests|advises?|advised|writes|wrote|states|reads|contains|per\s+the)\b",
    re.IGNORECASE,
)
# A quotation: "...", “...”, or '...' (an apostrophe inside a word does not open or close one).
_QUOTATION_RE = re.compile(
    r"\"[^\"]{1,4000}\"|“[^”]{1,4000}”|(?<!\w)'(?:[^'\n]|(?<=\w)'(?=\w)){1,4000}?'(?!\w)"
)
_QUOTED_SENTENCE_RE = re.compile(r"[.!?;:](?:\s|$)|\n")
_QUOTED = "\x00"  # stands for a dropped quotation until the sentence holding it is dropped too
# A reporting frame: what follows its colon (the rest of the line, then the next paragraph) is
# someone else's text: "The page said:", "I pasted this from the issue:", "here is what Sam wrote:".
_FRAME_RE = re.compile(
    r"""(?:\b(?:said|says|wrote|writes|contains?|reads|states|stated|claims?|claimed|suggests|suggested
        |recommends|recommended|replied|replies|answered|posted|pasted|copied|quoted|quoting|forwarded
        |told\s+(?:me|us))\b
      | \bfrom\s+(?:the|this|that|their|his|her|its|a|an|our|my)\s+(?:[\w-]+\s+){0,2}?
        (?:issue|page|readme|docs?|documentation|bot|ticket|thread|comments?|e-?mail|mail|chat|slack|post
        |article|blog|site|website|pr|mr|review|wiki|forum|answer|message|tweet|discussion|changelog)\b
    )[^:\n.!?]{0,80}:(?=\s|$)""",
    re.IGNORECASE | re.VERBOSE,
)
_NEGATED_BEFORE_RE = re.compile(r"\b(?:not|no\s+longer|n't|never|no)\s+(?:\w+\s+)?$", re.IGNORECASE)
# An object that only points back ("go with that", "use option 2"): not self-contained.
_VAGUE_OBJECT_RE = re.compile(
    r"^(?:to\s+)?(?:(?:use|go\s+with|do|keep|try|switch\s+to)\s+)?"
    r"(?:it|this|that|these|those|them|the\s+(?:first|second|third|last|former|latter|other)(?:\s+one)?"
    r"|option\s+\w+|your\s+(?:suggestion|idea|approach|proposal|plan)|what\s+you\s+(?:said|suggested))\b"
    r"(?!\s+(?:\w+\s+){0,2}(?:instead|rather|over)\b)",
    re.IGNORECASE,
)
_CONFIRMATION_RE = re.compile(
    r"^(?:yes|yep|yeah|yup|ok(?:ay)?|sure|agreed|sounds\s+good|go\s+ahead|do\s+it|lgtm|perfect|great"
    r"|let'?s\s+do\s+(?:it|that)|makes\s+sense|👍)\b",
    re.IGNORECASE,
)
_RETRACTION_RE = re.compile(
    r"^(?:actually,?\s+)?(?:scratch\s+that|never\s*mind|forget\s+(?:it|that)|ignore\s+that|wait,?\s+no"
    r"|no,?\s+wait|on\s+second\s+thought)\s*(?:[,.!;:-]|$)",
    re.IGNORECASE,
)

_ENGLISH = _word_set(
    "the a an is are was were be to of and or in on at for with we i you it this that not no do "
    "don't use our my your as by from but so have has will can can't should always never"
)
_FOREIGN = (
    _word_set(
        "der die das und ist nicht wir ich mit für auf zu den dem ein eine bitte immer nie haben le "
        "la les et est pas nous je avec pour sur des un une du que ne jamais toujours el los las y "
        "es no nosotros con por para una siempre nunca que del lo il di che non sono con per una "
        "sempre mai o os as e não com para um uma sempre nunca de het een en niet wij ik met voor "
        "altijd nooit"
    )
    - _ENGLISH
)


@dataclass(frozen=True, slots=True)
class _Rule:
    name: str
    category: Category
    pattern: re.Pattern[str]
    object_group: str | None = None  # the group that must not be a vague pronoun


def _rule(name: str, category: Category, pattern: str, object_group: str | None = "obj") -> _Rule:
    return _Rule(name, category, re.compile(pattern, re.IGNORECASE), object_group)


_SWITCH = r"(?:use|go\s+with|switch\s+to|stick\s+with|move\s+to|adopt|keep)"
_INSTEAD = r"(?:instead\s+of|rather\s+than|over|and\s+not|not)"
_PLACE = r"(?:repo|repository|project|codebase|code\s*base|team|monorepo|service)"

# In order: the first rule that matches a sentence decides its category.
_RULES: tuple[_Rule, ...] = (
    _rule("decision.label", Category.DECISION, r"^decision\s*:\s*(?P<obj>\S.*)"),
    _rule(
        "decision.we-decided",
        Category.DECISION,
        r"\b(?:we|i|the\s+team)\s+(?:have\s+|'ve\s+|finally\s+|just\s+|eventually\s+)?"
        r"(?:decided|agreed|chose|picked|settled\s+on|went\s+with|opted\s+for)\s*:?\s+(?:on\s+|to\s+)?(?P<obj>\S.*)",
    ),
    _rule(
        "decision.going-with",
        Category.DECISION,
        r"\bwe(?:'re|\s+are|'ll|\s+will)\s+(?:going\s+with|go\s+with|standardi[sz]ing\s+on)\s+(?P<obj>\S.*)",
    ),
    _rule("decision.lets-use", Category.DECISION, rf"^let'?s\s+{_SWITCH}\s+(?P<obj>\S.+?)\s+{_INSTEAD}\s+\S"),
    _rule(
        "decision.lets-use",
        Category.DECISION,
        r"^let'?s\s+(?:go\s+with|stick\s+with|switch\s+to|standardi[sz]e\s+on)\s+(?P<obj>\S.*)",
    ),
    _rule(
        "blocker.blocked",
        Category.BLOCKER,
        r"\bblocked\s+(?:on|by)\s+(?P<obj>\S.*)",
    ),
    _rule(
        "blocker.until",
        Category.BLOCKER,
        r"\b(?:can't|cannot|can\s+not|won't|unable\s+to)\s+(?P<obj>\w+(?:\s+\S+){0,8}?)\s+until\s+\S",
        None,
    ),
    _rule("blocker.is-a-blocker", Category.BLOCKER, r"^(?P<obj>.+?)\s+(?:is|are)\s+(?:a|the)\s+blockers?\b"),
    _rule(
        "blocker.broken",
        Category.BLOCKER,
        r"^(?P<obj>(?:the|our|my)\s+.{1,60}?|\S+)\s+(?:is|are)\s+(?:still\s+|currently\s+)?"
        r"(?:broken|failing|down)\b(?:\s+(?:on|in|since|for)\s+[^,.]+)?\s*(?:,|\band\b|\bso\b|\bwhich\b)",
    ),
    _rule(
        "directive.in-this-repo",
        Category.DIRECTIVE,
        rf"^(?:in|for|across)\s+(?:this|our|the)\s+{_PLACE},?\s+(?P<obj>(?:we|all|every|always|never)\b.*)",
    ),
    _rule(
        "directive.convention",
        Category.DIRECTIVE,
        r"^(?:our|the)\s+(?:convention|rule|policy|standard)\s+(?:here\s+)?is\s+(?P<obj>\S.*)",
    ),
    _rule(
        "preference.always-never",
        Category.PREFERENCE,
        r"^(?:please\s+)?(?:always|never|don'?t\s+ever|do\s+not\s+ever)\s+(?!mind\b|again\b|ever\b)(?P<obj>\w+\s+\S.*)",
    ),
    _rule(
        "preference.please-dont",
        Category.PREFERENCE,
        r"^please\s+(?:don'?t|do\s+not)\s+(?!worry\b|bother\b|mind\b)(?P<obj>\w+\s+\S.*)",
    ),
    _rule(
        "preference.use-instead",
        Category.PREFERENCE,
        rf"^(?:please\s+)?(?:use|prefer)\s+(?P<obj>\S.+?)\s+{_INSTEAD}\s+\S",
    ),
    _rule(
        "preference.prefer",
        Category.PREFERENCE,
        # at the start (after fillers): "This is what the page contains: I prefer ..." is not a preference
        r"^(?:i|we)(?:\s+really|\s+strongly|\s+generally|\s+usually)?(?:\s+prefer|'d\s+rather|\s+would\s+rather)"
        r"\s+(?P<obj>\S.*)",
    ),
    _rule(
        "preference.prefer",
        Category.PREFERENCE,
        r"^(?:i|we)\s+(?:really\s+)?like\s+(?P<obj>\S.+?)\s+(?:more\s+than|better\s+than|over|instead\s+of)\s+\S",
    ),
    _rule("preference.from-now-on", Category.PREFERENCE, r"^from\s+now\s+on,?\s+(?P<obj>\S.*)"),
)

_PROJECT_WORDS_RE = re.compile(rf"\b(?:in|for)\s+(?:this|our|the)\s+{_PLACE}\b|\bhere\b", re.IGNORECASE)

# Facts: "the staging DB is on port 5433", "our CI runs on GitLab runners".
_FACT_RE = re.compile(
    r"^(?:the|our)\s+(?P<subj>[\w./-]+(?:\s+[\w./-]+){0,4}?)\s+"
    r"(?P<verb>is|are|runs?|lives?|listens?|sits?|uses?|is\s+served|are\s+served|is\s+hosted|is\s+deployed"
    r"|are\s+deployed|is\s+stored|are\s+stored|points?\s+to|talks?\s+to)\s+(?P<rest>\S.*)",
    re.IGNORECASE,
)
_FACT_SUBJECT_STOP = _word_set(
    "problem issue idea question thing point reason answer result output error fix test tests "
    "build bug plan difference goal trick way key token password secret one code function "
    "method change pr mr diff log logs message commit branch pipeline job"
)
_FACT_UNSURE_RE = re.compile(
    r"\b(?:broken|failing|down|slow|wrong|missing|flaky|crash\w*|bug|error|now|again|currently|today"
    r"|yesterday|tomorrow|this\s+morning|still|temporarily|for\s+now|should|supposed)\b",
    re.IGNORECASE,
)
_CONCRETE_RE = re.compile(
    r"\d|/|`|\b[\w-]+\.[a-z]{2,}\b|\bport\b|(?<=\s)[A-Z][\w-]*[A-Z0-9][\w-]*|(?<=\s)[A-Z][a-z]+\b"
)
_PLACEHOLDER_RE = re.compile(r"\[REDACTED:[a-z0-9-]+\]")

# Assistant suggestions that count once the user confirms them.
_SUGGESTION_RE = re.compile(
    r"\b(?:i'?d\s+(?:suggest|recommend|propose)|i\s+(?:suggest|recommend|propose)|let'?s|we\s+should)\s+"
    r"(?:that\s+)?(?:we\s+)?(?P<obj>(?:go\s+with|use|switch\s+to|move\s+to|adopt|stick\s+with)\s+\S.+?"
    rf"\s+{_INSTEAD}\s+\S.*)",
    re.IGNORECASE,
)
# A proposal the assistant asks about: "Shall we use tenacity for the retries?"
_PROPOSAL_RE = re.compile(
    r"^(?:(?:shall|should)\s+(?:we|i)|how\s+about\s+we|(?:do\s+you\s+)?want\s+me\s+to)\s+"
    r"(?P<obj>(?:go\s+with|use|switch\s+to|move\s+to|adopt|stick\s+with)\s+[^?]+?)\s*\?$",
    re.IGNORECASE,
)
# A closing question that asks for the go-ahead on the sentence before it: "Shall I go ahead?"
_GO_AHEAD_RE = re.compile(
    r"^(?:(?:shall|should|can|may)\s+i|(?:do\s+you\s+)?want\s+me\s+to|ok(?:ay)?|sounds?\s+good|agreed"
    r"|alright|all\s+right)(?:\s+(?:go\s+ahead|proceed|start|do\s+(?:it|that|this|so)"
    r"|make\s+(?:the|that|this)\s+change|apply\s+(?:it|that|this|the\s+change)))?(?:\s+with\s+(?:it|that|this))?"
    r"\s*\?$",
    re.IGNORECASE,
)


def extract(transcript: Transcript) -> list[Learned]:
    """The memories one finished session teaches, in message order (bounded; never raises).

    Each item says which message it came from and which rule found it; secrets in
    its text are redacted. See docs/learning.md for the rules.
    """
    messages = [m for m in transcript.messages[:MAX_MESSAGES] if m.agent != "title"]
    learned: list[tuple[int, Learned]] = []  # (index of the message, item)
    last_user: int | None = None
    for index, message in enumerate(messages):
        if message.role == "user":
            text = _visible(message)
            if _RETRACTION_RE.match(_strip_filler(text)) and last_user is not None:
                learned = [(i, item) for i, item in learned if i < last_user]
            learned.extend((index, item) for item in _from_user(message, text))
            last_user = index
        elif message.role == "assistant":
            reply = _next_user(messages, index)
            if reply is not None and _confirms(_visible(reply)):
                learned.extend((index, item) for item in _from_suggestion(message))
    runs: list[Run] = []
    for message in messages:
        if message.role == "assistant":
            runs.extend(command_runs(message))
    items = [item for _, item in learned] + learn_from_runs(runs)
    return _bounded(_unique(items))


def _visible(message: SessionMessage) -> str:
    return redact(message.text[:MAX_MESSAGE_CHARS]).text


def _next_user(messages: list[SessionMessage], index: int) -> SessionMessage | None:
    for later in messages[index + 1 :]:
        if later.role == "user":
            return later
    return None


def _confirms(text: str) -> bool:
    cleaned = text.strip()
    return (
        bool(_CONFIRMATION_RE.match(cleaned))
        and len(words(cleaned)) <= MAX_CONFIRMATION_WORDS
        and "?" not in cleaned
        and not re.search(r"\b(?:but|no|not|don't|wait)\b", cleaned, re.IGNORECASE)
    )


# -- the user's sentences -------------------------------------------------------


def statements(text: str) -> Iterator[str]:
    """The prose sentences of a message that are the writer's own words.

    Dropped, and decided on the message's structure before it is split into sentences
    (so no sentence of a quotation reaches a rule without its frame): code blocks,
    quoted (``>``), indented and log lines; a quotation of a sentence ("...", “...”,
    '...') together with the sentence that holds it; and what a reporting frame
    introduces ("The page said:", "I pasted this from the issue:"): the rest of the
    frame's line and the lines after it up to the end of the next paragraph.
    """
    prose = _QUOTATION_RE.sub(_drop_quotation, _FENCE_RE.sub("\n", text))
    reported = ""  # "next": a frame ended a line; "in": inside the paragraph it introduced
    for line in prose.splitlines():
        if not line.strip():
            reported = "" if reported == "in" else reported
            continue
        if reported:
            reported = "in"
            continue
        if _QUOTE_LINE_RE.match(line) or _INDENTED_RE.match(line) or _LOG_LINE_RE.match(line):
            continue
        frame = _FRAME_RE.search(line)
        if frame is not None:
            reported = "in" if line[frame.end() :].strip() else "next"
            # the sentences before the frame's own stay; the frame's sentence is a report
            line = line[: frame.start()]
        parts = _SENTENCE_END_RE.split(line)
        for part in parts[:-1] if frame is not None else parts:
            part = part.strip()
            if part and len(part) <= MAX_SENTENCE_CHARS and _QUOTED not in part:
                yield part


def _drop_quotation(match: re.Match[str]) -> str:
    """A quoted sentence becomes a mark that drops its sentence; a quoted word or name stays."""
    inside = match.group(0)[1:-1]
    if not _QUOTED_SENTENCE_RE.search(inside) and len(words(inside)) < 6:
        return match.group(0)
    end = inside.rstrip()[-1:]
    return _QUOTED + (end if end in ".!?" else "")


def _from_user(message: SessionMessage, text: str) -> list[Learned]:
    if not text:
        return []
    low = looks_like_injection(text)
    found = []
    for raw in statements(text):
        item = _classify(raw)
        if item is not None:
            rule, category, body = item
            found.append(_learned(category, body, message, rule, low))
    return found


def _classify(raw: str) -> tuple[str, Category, str] | None:
    """(rule, category, text) for one sentence, or None when no rule is sure."""
    body = _strip_filler(raw)
    if not body or _is_question(body) or not _is_english(body):
        return None
    if len(words(body)) < MIN_SENTENCE_WORDS:
        return None
    main = re.split(r"\bbecause\b|\bsince\b|\bso\s+that\b", body, maxsplit=1, flags=re.IGNORECASE)[0]
    if _HEDGE_RE.search(main) or _REPORTED_RE.search(main):
        return None
    for rule in _RULES:
        match = rule.pattern.search(body)
        if match is None or _NEGATED_BEFORE_RE.search(body[: match.start()]):
            continue
        if rule.object_group and _VAGUE_OBJECT_RE.match(match.group(rule.object_group)):
            return None
        category, name = rule.category, rule.name
        if category is Category.PREFERENCE and _PROJECT_WORDS_RE.search(body):
            category, name = Category.DIRECTIVE, name.replace("preference.", "directive.")
        return name, category, body
    if _is_fact(body):
        return "fact.stated", Category.FACT, body
    return None


def _is_fact(body: str) -> bool:
    match = _FACT_RE.match(body)
    if match is None:
        return False
    subject_words = match.group("subj").casefold().split()
    main = re.split(r"\bbecause\b|\bsince\b", body, maxsplit=1, flags=re.IGNORECASE)[0]
    if subject_words[-1] in _FACT_SUBJECT_STOP or _FACT_UNSURE_RE.search(main):
        return False
    return bool(_CONCRETE_RE.search(" " + _PLACEHOLDER_RE.sub("", match.group("rest"))))


def _from_suggestion(message: SessionMessage) -> list[Learned]:
    """The one suggestion a user's short "yes" confirms, as a decision.

    Which sentence a bare "ok" answers: the message's last one (a suggestion, or a
    proposal asked as a question: "Shall we use tenacity for the retries?"), or the
    one before a closing go-ahead question ("... instead of X. Shall I go ahead?").
    A suggestion earlier in a message that ends on something else (a status report:
    "Tests pass now.") is not what the user confirmed; this keeps every confirmed
    suggestion of the tests and the labelled sessions, which end on their suggestion.
    """
    sentences = list(statements(_visible(message)))
    if not sentences:
        return []
    raw = sentences[-1]
    obj = _proposed(raw)
    if obj is None:
        if len(sentences) > 1 and _GO_AHEAD_RE.match(_strip_filler(raw)):
            raw = sentences[-2]
        obj = _suggested(raw)
    if obj is None:
        return []
    text = "Decided: " + obj
    if len(words(text)) < MIN_SENTENCE_WORDS:
        return []
    rule = "decision.confirmed-suggestion"
    return [_learned(Category.DECISION, text, message, rule, looks_like_injection(raw))]


def _suggested(raw: str) -> str | None:
    """What an assistant's sentence suggests doing, unless it relays someone else's advice."""
    match = _SUGGESTION_RE.search(raw)
    if match is None or _is_question(raw):
        return None
    obj = match.group("obj")
    main = re.split(r"\bbecause\b|\bsince\b", obj, maxsplit=1, flags=re.IGNORECASE)[0]
    frame = raw[: match.start()]  # "The fetched page says we should ...": the page's advice
    if _REPORTED_RE.search(frame) or _RELAYED_RE.search(frame) or _REPORTED_RE.search(main):
        return None
    if _HEDGE_RE.search(main) or _VAGUE_OBJECT_RE.match(obj):
        return None
    return obj


def _proposed(raw: str) -> str | None:
    """What an assistant's closing question proposes ("Shall we use X for Y?"), if one clear thing."""
    match = _PROPOSAL_RE.match(_strip_filler(raw))
    if match is None:
        return None
    obj = match.group("obj")
    if re.search(r"\bor\b", obj, re.IGNORECASE) or _HEDGE_RE.search(obj) or _REPORTED_RE.search(obj):
        return None  # "use tenacity or backoff?": a "yes" does not say which
    return None if _VAGUE_OBJECT_RE.match(obj) else obj


def _strip_filler(text: str) -> str:
    return _FILLER_RE.sub("", text.strip()).strip()


def _is_question(text: str) -> bool:
    return text.rstrip().endswith("?") or bool(_QUESTION_START_RE.match(text))


def _is_english(text: str) -> bool:
    """True unless the text is mostly in another language (then no rule should read it)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return False
    if sum(1 for c in letters if not c.isascii()) / len(letters) > 0.1:
        return False
    tokens = [w.casefold() for w in re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?", text)]
    english = sum(1 for w in tokens if w in _ENGLISH)
    foreign = sum(1 for w in tokens if w in _FOREIGN)
    return english > 0 and english > foreign


def _learned(category: Category, body: str, message: SessionMessage, rule: str, low: bool) -> Learned:
    text = sentence(body[:1].upper() + body[1:])
    low = low or looks_like_injection(text)
    if low and category in (Category.DIRECTIVE, Category.PREFERENCE):
        # Never an instruction to inject later: kept as what was said, at low trust.
        category, rule = Category.CONVERSATION, rule + ".low-trust"
    trust = Trust.LOW if low else Trust.NORMAL
    return Learned(category, text, message.id, rule, trust, tuple(find_path_candidates(text)))


# -- bounds -------------------------------------------------------------------------


def _unique(items: list[Learned]) -> list[Learned]:
    seen: set[str] = set()
    unique = []
    for item in items:
        key = normalize(item.text)
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique


def _bounded(items: list[Learned]) -> list[Learned]:
    per_category: Counter[Category] = Counter()
    kept = []
    for item in items:
        per_category[item.category] += 1
        if per_category[item.category] <= MAX_PER_CATEGORY:
            kept.append(item)
    return kept
