"""What the Memory service's verbs return.

Light on purpose (models only): the CLI decodes a daemon's answers into these without
importing the service (see ``graphmem.server.rpc_types``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from typing_extensions import TypedDict  # pydantic reads TypedDicts from here on Python < 3.12

from graphmem.core.models import Entity, Hit, Link, LoginRole, MemoryRecord
from graphmem.core.text import clip

__all__ = [
    "BootstrapReport",
    "ExportSummary",
    "Gauges",
    "ImportSummary",
    "IngestReport",
    "MemoryDetail",
    "RecallResult",
    "RememberResult",
    "RepositoryExport",
    "RepositoryFiles",
    "ReviewItem",
    "Stats",
    "Supersession",
]


# Characters of a replaced memory's text quoted where a supersession is reported: enough to
# recognise it, short enough for one line.
SUPERSEDED_QUOTE_CHARS = 80
# Characters of a memory's text a command line in a note repeats; a longer text (or one of several
# lines) is read from standard input ("-") in the command instead.
QUOTED_TEXT_MAX_CHARS = 200


class SupersededView(TypedDict):
    """A ``Supersession`` as JSON."""

    memory_id: str
    text: str
    event_id: str
    automatic: bool


@dataclass(frozen=True, slots=True)
class Supersession:
    """An older memory that ``remember`` replaced: what it said, and the event that ``undo``
    reverses to make it current again."""

    memory_id: str
    text: str
    event_id: str
    automatic: bool  # found on the new memory's subject, not named by ``supersedes``

    def quote(self) -> str:
        """The beginning of the replaced memory's text, on one line, in quotes."""
        return f'"{clip(self.text, SUPERSEDED_QUOTE_CHARS)}"'

    def view(self) -> SupersededView:
        """As ``remember --json`` and the ``remember`` tool give it: the replaced memory, its text,
        the event whose undo makes it current again, and whether its subject found it."""
        return {
            "memory_id": self.memory_id,
            "text": self.text,
            "event_id": self.event_id,
            "automatic": self.automatic,
        }


@dataclass(frozen=True, slots=True)
class RememberResult:
    """What ``remember`` did: stored a new memory, or reinforced an existing one."""

    memory: MemoryRecord
    created: bool
    duplicate_of: str | None = None  # set when an existing memory was reinforced
    superseded: tuple[str, ...] = ()
    entities: tuple[Entity, ...] = ()
    redacted: int = 0  # secrets replaced by [REDACTED:kind] before storing
    supersessions: tuple[Supersession, ...] = ()  # the ``superseded`` ones, with text and event
    # Only its writer sees it on a store others share: a person's own global memory on a team's
    # store (docs/team.md, "Scopes"); never on a store of one person, where no one else looks.
    private: bool = False

    def sharing(self) -> str:
        """The command that shares the memory with the project's team instead (a project memory
        that supersedes it), for a private one's note: its text quoted when short and on one line,
        else read from standard input."""
        memory = self.memory
        kind = memory.category.value
        command = f"graphmem remember --scope project --category {kind} --supersedes {memory.id}"
        if "\n" in memory.text or len(memory.text) > QUOTED_TEXT_MAX_CHARS:
            return f"`{command} -` with its text on standard input"
        return f"`{command} {shlex.quote(memory.text)}`"


@dataclass(frozen=True, slots=True)
class MemoryDetail:
    """One memory with what it is about and how it relates to others."""

    memory: MemoryRecord
    entities: tuple[Entity, ...]
    links: tuple[Link, ...]


@dataclass(frozen=True, slots=True)
class Stats:
    total: int
    by_category: dict[str, int]
    by_status: dict[str, int]
    by_scope: dict[str, int]
    entities: dict[str, int]
    pending_embeddings: int
    data_dir: str
    model: str
    stale: int = 0  # current memories about code that changed or went away since (``staleness.py``)
    # The role a team's store logs in with (None: the embedded store, which has no login).
    role: LoginRole | None = None


@dataclass
class Gauges:
    """What the daemon's /metrics reads on every scrape: counts the store keeps at hand."""

    by_category: dict[str, int]
    pending_embeddings: int


@dataclass
class BootstrapReport:
    project: str
    files: int = 0
    parsed: int = 0
    unchanged: int = 0
    removed: int = 0
    # ``files``: those indexed, ``parsed`` + ``unchanged``; ``removed``: gone since the last pass.
    # ``skipped``: those left out, counted by why (binary, huge, ...), and the first few of each
    # named in ``skipped_files`` (why -> paths, sorted; ``core.skipped_files``).
    skipped: dict[str, int] = field(default_factory=dict)
    skipped_files: dict[str, list[str]] = field(default_factory=dict)
    parse_errors: int = 0
    # The files with the most syntax errors, worst first (path, errors), so the user can look.
    parse_error_files: list[tuple[str, int]] = field(default_factory=list)
    symbols: int = 0
    calls: dict[str, int] = field(default_factory=dict)
    imports: int = 0
    facts_added: int = 0
    facts_updated: int = 0
    facts_archived: int = 0
    # What a file says since a person changed its fact: proposed beside the person's version.
    facts_proposed: int = 0
    commits: int = 0
    # Symbols renamed or moved, files renamed, since the last pass (``core.code_moves``), the
    # memory links that followed them, and the symbols left alone because several were alike.
    moved_symbols: int = 0
    moved_files: int = 0
    memories_moved: int = 0
    ambiguous_moves: int = 0
    moves: list[str] = field(default_factory=list)  # one line each, at most 20
    # The checkout's code graph kept under its path till the project was named, or under another
    # spelling of its name (a team's store, ``service/renamed_code.py``; several: ", "-joined):
    # the memory links that followed it to the name, those kept.
    renamed_from: str | None = None
    links_followed: int = 0
    links_kept: int = 0
    seconds: float = 0.0
    # Memories still waiting for their vector when the bootstrap ended (its commits and facts
    # among them): a daemon's worker embeds them; with no daemon, ``graphmem bootstrap`` does.
    pending_vectors: int = 0
    # What the person should know about the repository's history (a shallow clone, no commits).
    notes: list[str] = field(default_factory=list)


@dataclass
class IngestReport:
    """What one ``ingest_opencode`` run did."""

    db_path: str
    extractor: str = "rules"  # rules, or llm (with the rules as fallback)
    sessions_read: int = 0  # sessions looked at
    sessions_ingested: int = 0  # stored (new, or grown since the last run)
    sessions_unchanged: int = 0  # stored before and not changed since
    sessions_pending: int = 0  # still active or being written: the next run looks again
    # skipped this run, each with a line in ``errors``: unreadable (locked, corrupt: the next run
    # retries) or a row no store holds (an id over 500 characters, no absolute directory: until it changes)
    sessions_skipped: int = 0
    sessions_subagent: int = 0  # a subagent's (child) sessions: nothing learned from them
    skipped_parts: int = 0  # parts with corrupt JSON, left out
    # What an agent's own runs taught in a session outside any project: not stored (an agent's
    # memory belongs to a project; it would be global).
    agent_items_without_project: int = 0
    memories: dict[str, int] = field(default_factory=dict)  # new memories by category
    reinforced: int = 0  # learned items that repeated a stored memory
    llm_sessions: int = 0  # sessions the LLM extractor read
    llm_fallbacks: int = 0  # sessions where it failed and the rules ran instead
    cursor: str | None = None  # the new cursor, "<time_updated_ms> <session id>", when it moved
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class RecallResult:
    """Ranked hits and how the recall ran."""

    query: str
    plan: str
    hits: list[Hit]
    channels: Mapping[str, int] = field(default_factory=dict)  # candidates per channel
    took_ms: float = 0.0
    semantic_ready: bool = True
    # The entities the question names, then the symbols it describes without naming them
    # (``core.code_search``), best first: where ``get_context`` goes next.
    entities: list[Entity] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ExportSummary:
    memories: int
    entities: int
    links: int


@dataclass(frozen=True, slots=True)
class ImportSummary:
    records: int
    memories_added: int
    memories_skipped: int  # already present (same id or same text in the same scope)
    entities: int  # entities the store did not hold yet
    links: int  # links between memories the store did not hold yet
    dry_run: bool
    memories_updated: int = 0  # same id, newer in the file: its status, times and text taken
    # Same id, newer in the file, and a person's memory whose text or category it changes: that
    # memory stays in force and the file's copy is a proposal beside it (``graphmem review``).
    changes_proposed: int = 0
    # New directives and preferences stored as proposals: an import never makes a rule, a person
    # confirms it (``graphmem review``, ``confirm``).
    proposed: int = 0
    # Links the file made that would supersede a memory a person wrote or confirmed (``graphmem
    # link NEW OLD --kind supersedes`` makes one, by that person), or hide a memory the team sees
    # behind one only the importer sees: left out, as an agent's are.
    links_refused: int = 0


@dataclass(frozen=True, slots=True)
class RepositoryFiles:
    """A repository export's files (name -> text, to write into the folder) and what they hold."""

    files: dict[str, str]
    memories: int
    entities: int
    links: int


@dataclass(frozen=True, slots=True)
class RepositoryExport:
    """What ``export_dir`` wrote: counts, and the files changed or already up to date."""

    memories: int
    entities: int
    links: int
    written: tuple[str, ...]
    unchanged: tuple[str, ...]
    folder: str = ""  # the folder written, resolved


@dataclass(frozen=True, slots=True)
class ReviewItem:
    """A memory ``review`` asks a person to confirm, edit or archive, and why (one line each)."""

    memory: MemoryRecord
    reasons: tuple[str, ...]
