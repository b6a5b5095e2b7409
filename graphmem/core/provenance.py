"""Who wrote a memory, and what that lets it do: memory restores information, never authority.

A memory's ``source`` is set by the code path that wrote it, never by its caller or a file:

======================  ==============================================================
``user``                a person: the CLI, the Python API, ``graphmem ui``
``opencode``,           the user's own words in an agent session of that client (OpenCode,
``claude-code``,        Claude Code, Codex CLI): ``core/extraction.py`` reads conventions
``codex``               only from the user's sentences
``summary:CLIENT``      a session's summary event, made by the ingest from what the client
                        keeps of the session: its title (OpenCode's title agent writes it) and
                        the files it touched; never the user's words
``mcp``                 an agent, through the MCP tools
``bootstrap:KEY``       a file of the repository, read by ``graphmem bootstrap``
``git:SHA``             a commit message, read by ``graphmem bootstrap``
``import:NAME``         an import of the file (or text) NAME
``gitlab:REF``          an MR's, issue's or epic's text on GitLab
anything else           not known (a store written by an older version): no authority
======================  ==============================================================

Only a person's conventions are injected as conventions: a directive or preference that a
person wrote (``PERSON``, ``SESSION``), or one a person confirmed (``Trust.CONFIRMED``).
Anything else is data, shown with where it came from; an agent's or an import's directive or
preference is stored ``proposed`` and waits for ``graphmem confirm`` / ``graphmem reject``.

On a team's store "the user" is the reader: a memory another person wrote
(``MemoryRecord.author``, which the store reads from the database) is named as theirs
("teammate bob", "teammate bob's agent"), and a memory they confirmed as "confirmed by teammate
bob" (``MemoryRecord.confirmed_by``). Their conventions are still conventions: a person made them.
Pure: no I/O.
"""

from __future__ import annotations

import re
from enum import StrEnum

from graphmem.core.events import State
from graphmem.core.models import Category, MemoryRecord, Status, Trust

PERSON_SOURCE = "user"
AGENT_SOURCE = "mcp"
SESSION_SOURCE = "opencode"
CLAUDE_CODE_SOURCE = "claude-code"
CODEX_SOURCE = "codex"
# The clients whose sessions graphmem learns from: what it reads there is the user's own words.
SESSION_SOURCES = frozenset({SESSION_SOURCE, CLAUDE_CODE_SOURCE, CODEX_SOURCE})
# Those clients as a person names them.
CLIENT_NAMES = {SESSION_SOURCE: "OpenCode", CLAUDE_CODE_SOURCE: "Claude Code", CODEX_SOURCE: "Codex"}
# A session's summary event: ``summary:<the client's source>`` (``service/ingest.py``).
SUMMARY_PREFIX = "summary:"
BOOTSTRAP_PREFIX = "bootstrap:"
GIT_PREFIX = "git:"
IMPORT_PREFIX = "import:"
FORGE_PREFIX = "gitlab:"
# The ``origin`` of a proposed change of a person's memory names it (``service/proposals.py``).
CHANGE_OF = "change of "
# A file's name as an import's origin keeps this much (a path may be long).
MAX_IMPORT_NAME_CHARS = 120
# A teammate's name shown as it is: a plain PostgreSQL role name (at most 63 bytes).
_TEAMMATE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,62}")
# What only a person may make a rule: directives and preferences.
CONVENTIONS = frozenset({Category.DIRECTIVE, Category.PREFERENCE})


class Origin(StrEnum):
    """Who wrote a memory, from its ``source``."""

    PERSON = "person"
    SESSION = "session"  # the user's own words in an agent session
    SUMMARY = "summary"  # a session's summary: the client's title of it, the files it touched
    AGENT = "agent"
    REPOSITORY = "repository"  # a file or a commit of the repository
    FORGE = "forge"  # GitLab: an MR's, issue's or epic's text
    IMPORT = "import"
    UNKNOWN = "unknown"


# Origins whose words are a person's: their conventions are conventions.
_PERSONS = frozenset({Origin.PERSON, Origin.SESSION})


def acts_as_person(actor: str) -> bool:
    """Whether a change made by ``actor`` (an event's actor: ``user``, ``agent``, ``rule``, an
    import's source...) is a person's: the user's, or the ingest of the user's own session."""
    return origin_of(actor) in _PERSONS


def origin_of(source: str) -> Origin:
    """The origin a ``source`` names (see the module doc)."""
    if source == PERSON_SOURCE:
        return Origin.PERSON
    if source in SESSION_SOURCES:
        return Origin.SESSION
    if source.startswith(SUMMARY_PREFIX):
        return Origin.SUMMARY
    if source == AGENT_SOURCE:
        return Origin.AGENT
    if source.startswith((BOOTSTRAP_PREFIX, GIT_PREFIX)):
        return Origin.REPOSITORY
    if source.startswith(FORGE_PREFIX):
        return Origin.FORGE
    if source == "import" or source.startswith(IMPORT_PREFIX):
        return Origin.IMPORT
    return Origin.UNKNOWN


def record_origin(record: MemoryRecord) -> Origin:
    """Who wrote ``record``: its source's origin, except that a session's summary event stored
    before summaries had a source of their own (the client's, its ``origin`` the session's id, as
    only the ingester writes one) is a summary, never the user's words."""
    origin = origin_of(record.source)
    if (
        origin is Origin.SESSION
        and record.category is Category.EVENT
        and record.session
        and record.origin == record.session
    ):
        return Origin.SUMMARY
    return origin


def summary_source(client: str) -> str:
    """The ``source`` of the summary event of a session of ``client`` (``opencode``, ``claude-code``,
    ``codex``): the ingest writes it from what the client keeps (its title, the files it touched)."""
    return SUMMARY_PREFIX + client


# What a summary's label says of the session and of its title, by the client's source: OpenCode's
# title agent writes a session's title; Claude Code's and Codex's readers cut it from the first message.
_SUMMARIES = {
    SESSION_SOURCE: "an OpenCode session: its title, written by OpenCode",
    CLAUDE_CODE_SOURCE: "a Claude Code session: its title, cut from its first message",
    CODEX_SOURCE: "a Codex session: its title, cut from its first message",
}


def import_source(name: str) -> str:
    """The ``source`` of what an import of ``name`` (a file's name, or who sent the text) stores."""
    cleaned = " ".join(name.split()) or "a file"
    if len(cleaned) > MAX_IMPORT_NAME_CHARS:  # its end kept: a path's file name says the most
        cleaned = "…" + cleaned[-(MAX_IMPORT_NAME_CHARS - 1) :]
    return IMPORT_PREFIX + cleaned


def is_persons(record: MemoryRecord) -> bool:
    """Whether a person wrote or confirmed ``record``: what only a person may change the standing of."""
    if record.trust is Trust.CONFIRMED:
        return True
    return record_origin(record) in _PERSONS and record.trust is not Trust.LOW


def is_convention(record: MemoryRecord) -> bool:
    """Whether ``record`` may be injected as a convention: an active directive or preference a
    person wrote or confirmed."""
    return record.category in CONVENTIONS and record.status is Status.ACTIVE and is_persons(record)


def proposes(source: str, category: Category) -> bool:
    """Whether a new memory from ``source`` in ``category`` is stored ``proposed``: a directive or
    preference that no person wrote."""
    return category in CONVENTIONS and origin_of(source) not in _PERSONS


def may_replace(source: str, older: MemoryRecord) -> bool:
    """Whether a memory from ``source`` may supersede ``older``: anything may replace what no
    person wrote; only a person replaces a person's."""
    return origin_of(source) in _PERSONS or not is_persons(older)


def label(record: MemoryRecord) -> str:
    """Where a memory came from, in words: ``the user``, ``an agent, proposed, unconfirmed``,
    ``CONTRIBUTING.md``, ``commit 1a2b3c4``, ``an import of team.jsonl``, ``the summary of an
    OpenCode session: its title, written by OpenCode``..."""
    source = record.source
    origin = record_origin(record)
    person = _person(record)
    if record.status is Status.PROPOSED and origin in _PERSONS:
        # Only an agent's or a file's change makes a person's memory a proposal: not their words.
        return f"a change to {_possessive(person)} memory by an agent or a file, proposed, unconfirmed"
    if origin is Origin.PERSON:
        text = person
    elif origin is Origin.SESSION:
        text = f"{_possessive(person)} words in a session"
    elif origin is Origin.SUMMARY:
        text = f"the summary of {_SUMMARIES.get(source.removeprefix(SUMMARY_PREFIX), 'a session')}"
    elif origin is Origin.AGENT:
        text = f"{_possessive(person)} agent" if record.author is not None else "an agent"
    elif origin is Origin.REPOSITORY:
        kind, _, rest = source.partition(":")
        text = (
            f"commit {rest[:7]}" if kind == "git" else f"the repository's {rest.partition('#')[0] or 'files'}"
        )
    elif origin is Origin.FORGE:
        text = f"GitLab {source.removeprefix(FORGE_PREFIX)}".rstrip()
    elif origin is Origin.IMPORT:
        name = source.removeprefix("import").removeprefix(":")
        text = f"an import of {name}" if name else "an import"
    else:
        text = f"an unknown source ({source[:40]})"
    if record.status is Status.PROPOSED and record.origin and record.origin.startswith(CHANGE_OF):
        text += f" (as a change of the user's {record.origin.removeprefix(CHANGE_OF)}), proposed, unconfirmed"
    elif record.status is Status.PROPOSED:
        text += ", proposed, unconfirmed"
    elif record.trust is Trust.CONFIRMED:
        text += f", confirmed by {_confirmer(record.confirmed_by)}"
    return text


def _confirmer(role: str | None) -> str:
    """Who confirmed a memory: the user (the reader), a teammate (``_teammate``), or a person when
    a team's store does not know who (a confirmation from before it kept that)."""
    if role is None:
        return "the user"
    return _teammate(role) if role else "a person"


def _person(record: MemoryRecord) -> str:
    """Who wrote ``record`` when a person did: the user (the reader), or a teammate by their role's
    name when it is a plain one (brackets or a line break in a role named by hand could pose as
    graphmem's marks)."""
    return _teammate(record.author) if record.author is not None else "the user"


def _teammate(role: str) -> str:
    return f"teammate {role}" if _TEAMMATE_NAME.fullmatch(role) else "a teammate"


def _possessive(person: str) -> str:
    return f"{person}'" if person.endswith("s") else f"{person}'s"


# The mark of a memory stored as low trust (an injection-like or destructive text): shown before
# it wherever a memory is given to a model or a person, so its text is never read as an order.
LOW_TRUST_MARK = "[low trust]"


def origin_mark(record: MemoryRecord) -> str:
    """The mark an injected line carries: ``[from the user]``, ``[proposed by an agent, unconfirmed]``."""
    if record.status is Status.PROPOSED:
        return f"[proposed by {label(record).removesuffix(', proposed, unconfirmed')}, unconfirmed]"
    return f"[from {label(record)}]"


def unconfirmed(record: MemoryRecord, before: State, after: State) -> dict[str, object]:
    """The changes that make a person's memory a proposal again (an agent or a file changed it),
    added to the event's ``before``/``after`` so that ``undo`` reverses them with the change."""
    changes: dict[str, object] = {}
    if record.status is Status.ACTIVE:
        before["status"], after["status"] = record.status.value, Status.PROPOSED.value
        changes["status"] = Status.PROPOSED
    if record.trust is Trust.CONFIRMED and "trust" not in after:
        before["trust"], after["trust"] = record.trust.value, Trust.NORMAL.value
        changes["trust"] = Trust.NORMAL
    return changes
