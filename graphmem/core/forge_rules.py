"""The forge's lifecycle rules: when an MR merges or closes, an issue closes or reopens, an epic
closes, what happens to the memories that depended on it. No LLM: each rule is a row of
``RULES`` -- the change it waits for, the memories it applies to, and the *cue*: how the
memory's sentence must name the ref for it to be the memory's cause, not a passing mention.

``docs/learning.md`` ("Lifecycle rules") lists them with an example each; the service that
applies them is ``service/forge_rules.py``, and each change they make is an audited event
(``core/events.py``) that ``graphmem undo`` reverses. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from graphmem.core.models import Category, EntityKind, MemoryRecord, Status

MERGE_REQUEST, ISSUE, EPIC = EntityKind.MERGE_REQUEST, EntityKind.ISSUE, EntityKind.EPIC
OPEN_STATES = frozenset({"opened", "reopened"})


class Cue(StrEnum):
    """How a sentence names the ref it depends on."""

    CAUSE = "cause"  # "blocked by !12", "blocked until #4 is fixed", "!12 must land first"
    WAITING = "waiting"  # "waiting for !12", "in progress: #4", "TODO after !12 merges"
    TIED = "tied"  # "we switch to tenacity in !12", "(!12)", "!12 introduces ..."


class Action(StrEnum):
    """What a rule does to a memory."""

    RESOLVE = "resolve"  # status resolved: a blocker no longer blocks, waited-for work is done
    UNRESOLVE = "unresolve"  # status active again (only what ``after_rules`` resolved)
    ARCHIVE = "archive"  # the work was abandoned
    NOT_MERGED = "not_merged"  # a decision whose MR was closed without merging


ACTION_STATUS = {
    Action.RESOLVE: Status.RESOLVED,
    Action.UNRESOLVE: Status.ACTIVE,
    Action.ARCHIVE: Status.ARCHIVED,
    Action.NOT_MERGED: Status.NOT_MERGED,
}


@dataclass(frozen=True, slots=True)
class LifecycleRule:
    """One rule: when an entity of ``kind`` reaches one of ``to_states`` (from one of
    ``from_states``; empty: from any), a memory about it of ``categories`` (None: any) in one
    of ``statuses`` whose text names it as ``cue`` gets ``action``, with ``reason``."""

    name: str
    kind: EntityKind
    to_states: frozenset[str]
    statuses: frozenset[Status]
    categories: frozenset[Category] | None
    cue: Cue
    action: Action
    reason: str  # "{ref} merged on {date}"; "{ref}" is the ref as the memory wrote it
    example: str  # a memory it applies to (docs/learning.md and the tests use it)
    from_states: frozenset[str] = frozenset()
    after_rules: frozenset[str] = frozenset()  # UNRESOLVE: only memories these rules resolved


_BLOCKER = frozenset({Category.BLOCKER})
_ACTIVE = frozenset({Status.ACTIVE})

# In order: the first rule that applies to a memory is the one that fires.
RULES: tuple[LifecycleRule, ...] = (
    LifecycleRule(
        "mr-merged-resolves-blocker", MERGE_REQUEST, frozenset({"merged"}), _ACTIVE, _BLOCKER,
        Cue.CAUSE, Action.RESOLVE, "{ref} merged on {date}",
        "Releases are blocked by !13: the refund fix must land first.",
    ),
    LifecycleRule(
        "issue-closed-resolves-blocker", ISSUE, frozenset({"closed"}), _ACTIVE, _BLOCKER,
        Cue.CAUSE, Action.RESOLVE, "{ref} closed on {date}",
        "Deploys to production are blocked until #35 is fixed.",
    ),
    LifecycleRule(
        "epic-closed-resolves-blocker", EPIC, frozenset({"closed"}), _ACTIVE, _BLOCKER,
        Cue.CAUSE, Action.RESOLVE, "{ref} closed on {date}",
        "The 2.0 release is blocked on &6.",
    ),
    LifecycleRule(
        "issue-reopened-reopens-blocker", ISSUE, OPEN_STATES, frozenset({Status.RESOLVED}), _BLOCKER,
        Cue.CAUSE, Action.UNRESOLVE, "{ref} reopened on {date}",
        "Deploys to production are blocked until #35 is fixed.",
        from_states=frozenset({"closed"}), after_rules=frozenset({"issue-closed-resolves-blocker"}),
    ),
    LifecycleRule(
        "mr-merged-finishes-work", MERGE_REQUEST, frozenset({"merged"}), _ACTIVE, None,
        Cue.WAITING, Action.RESOLVE, "{ref} merged on {date}: done",
        "Waiting for !13 to merge before the refund cleanup.",
    ),
    LifecycleRule(
        "issue-closed-finishes-work", ISSUE, frozenset({"closed"}), _ACTIVE, None,
        Cue.WAITING, Action.RESOLVE, "{ref} closed on {date}: done",
        "In progress: #35, rounding in refunds.",
    ),
    LifecycleRule(
        "mr-closed-not-merged", MERGE_REQUEST, frozenset({"closed"}), _ACTIVE, frozenset({Category.DECISION}),
        Cue.TIED, Action.NOT_MERGED, "{ref} closed without merging on {date}",
        "We switch refund retries to tenacity in !13.",
    ),
    LifecycleRule(
        "mr-closed-abandons-work", MERGE_REQUEST, frozenset({"closed"}), _ACTIVE, None,
        Cue.WAITING, Action.ARCHIVE, "{ref} closed without merging on {date}: abandoned",
        "TODO after !13 merges: drop the legacy refund path.",
    ),
)  # fmt: skip

# -- cues ------------------------------------------------------------------------------------
#
# ``before`` is the sentence up to the ref, ``after`` the sentence after it (lower case).

# Words that may stand between a cue and the ref: "blocked by the MR !12", "until issue #4".
_FILLER = (
    r"(?:(?:the|a|an|mr|merge request|pr|pull request|issue|epic|ticket|bug|fix(?:es)? (?:in|from))\s+){0,3}"
)
# A ref named like this is cited, not depended on (checked first, for every cue).
_PASSING = re.compile(
    r"(?:\bsee(?: also)?|\bcf\.?|\bunlike|\binstead of|\brather than|\blike|\bas in|\bfrom"
    r"|\b(?:mentioned|discussed|reported|described|raised|noted|found|seen|explained|linked)(?: in| on| by)?)"
    rf"\s+{_FILLER}[(\[]?$"
)
_NEGATED = re.compile(r"\b(?:not|no longer|never|isn't|wasn't|aren't|weren't|no)\s+(?:\w+\s+){0,1}$")
_BEFORE = {
    Cue.CAUSE: re.compile(
        r"(?:\b(?:blocked|blocking|stuck|held up|gated|waiting|waits|wait|depends|depending|dependent)"
        r"\s+(?:by|on|upon|for)|\buntil|\btill|\bblocker\s*:|\bblocked\s*:|\bneeds|\brequires)"
        rf"\s+{_FILLER}$"
    ),
    Cue.WAITING: re.compile(
        r"(?:\b(?:waiting|waits|wait)\s+(?:for|on)|\bin progress(?:\s*:|\s+on|\s+in|\s+with)?"
        r"|\bworking on|\b(?:todo|to do|to-do)\s*:?\s*(?:after|once|when)"
        r"|\bwip\s*:?|\bin review\s*:?)"
        rf"\s+{_FILLER}$"
    ),
    Cue.TIED: re.compile(
        r"(?:\b(?:in|via|with|per|through)|\b(?:implemented|introduced|decided|done|adopted|agreed|made)\s+in"
        r"|\(\s*)"
        rf"\s*{_FILLER}$"
    ),
}
_AFTER = {
    Cue.CAUSE: re.compile(
        r"^\s*(?:\)\s*)?(?:blocks|is blocking|must (?:land|merge|be merged|ship|be fixed) first"
        r"|has to (?:land|merge|be merged) first|needs to (?:land|merge|ship) first|is needed first)\b"
    ),
    Cue.WAITING: re.compile(
        r"^\s*(?:\)\s*)?(?:is\s+|:\s*)?(?:still\s+)?(?:in progress|in review|under review|wip)\b"
    ),
    Cue.TIED: re.compile(
        r"^\s*(?:switches|moves|introduces|adopts|replaces|implements|decides|makes|changes|drops|adds)\b"
    ),
}
# After "after/once/when": the WAITING cue needs the ref to be what happens ("after !12 merges").
_WHEN = re.compile(r"\b(?:after|once|when)\s+" + _FILLER + "$")
_HAPPENS = re.compile(r"^\s*(?:merges|is merged|lands|has landed|ships|is closed|closes|is done|is fixed)\b")
_SENTENCE_END = re.compile(r"[.?!;\n](?=\s|$)")


def names_as(cue: Cue, text: str, start: int, end: int) -> bool:
    """Whether ``text`` names the ref at ``text[start:end]`` as ``cue`` (its cause, the work
    waited for, the MR a decision is made in), not in passing."""
    before = _sentence_before(text, start).lower()
    after = _sentence_after(text, end).lower()
    if _PASSING.search(before):
        return False
    found = _BEFORE[cue].search(before)
    if found is not None:
        if _NEGATED.search(before[: found.start()]):
            return False
        cited = cue is Cue.TIED and found.group().lstrip().startswith("(")
        return not cited or after.lstrip().startswith(")")  # "(!12)" only when closed right after
    if cue is Cue.WAITING and _WHEN.search(before) and _HAPPENS.search(after):
        return not _NEGATED.search(before)
    return bool(_AFTER[cue].search(after)) and not _NEGATED.search(after[:40])


def _sentence_before(text: str, start: int) -> str:
    ends = [m.end() for m in _SENTENCE_END.finditer(text, 0, start)]
    return text[ends[-1] if ends else 0 : start]


def _sentence_after(text: str, end: int) -> str:
    found = _SENTENCE_END.search(text, end)
    return text[end : found.start() if found else len(text)]


# -- when a rule fires -----------------------------------------------------------------------


def rules_for(kind: EntityKind, old_state: str | None, new_state: str) -> list[LifecycleRule]:
    """The rules a change of an entity of ``kind`` from ``old_state`` (None: not known before)
    to ``new_state`` may fire; none when the state did not change."""
    if old_state == new_state:
        return []
    return [
        rule
        for rule in RULES
        if rule.kind is kind
        and new_state in rule.to_states
        and (not rule.from_states or old_state in rule.from_states)
    ]


def applies(rule: LifecycleRule, memory: MemoryRecord, changed_at: datetime | None, *, seen: bool) -> bool:
    """Whether ``rule`` may change ``memory`` (its category and status; then the cue decides).

    A change graphmem saw happen (``seen``: the state stored before differed) applies to every
    memory written before it (when its time is known); one found on the first fetch only
    to memories written before its known time: a memory written after an MR merged is no
    blocker that the merge resolved."""
    if memory.status not in rule.statuses:
        return False
    if rule.categories is not None and memory.category not in rule.categories:
        return False
    if changed_at is None:
        return seen
    return memory.created_at < changed_at


def reason(rule: LifecycleRule, ref: str, changed_at: datetime | None) -> str:
    """The rule's reason for one memory: ``!13 merged on 2026-11-20``."""
    text = rule.reason.format(ref=ref, date=f"{changed_at:%Y-%m-%d}" if changed_at else "")
    return text.replace(" on :", ":").removesuffix(" on ")
