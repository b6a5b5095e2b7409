"""The ports of the sources graphmem learns from: code, repository files, git, agent sessions.

Part of ``core/ports.py`` (which re-exports every name here), kept apart by concern.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from graphmem.core.code import ParsedFile
from graphmem.core.commits import Commit
from graphmem.core.sessions import Learned, SessionRead, SessionRow, Transcript
from graphmem.core.skipped_files import skip_counts

# -- what graphmem learns from: code, repository files, git, agent sessions ----------
#
# The sources that ``service/bootstrap.py`` and ``service/ingest.py`` read, each behind a
# narrow port (only what the service calls); ``app`` picks the implementations and
# passes them in a ``LearningSources``. Implemented in ``adapters``: ``parse_pool.py``
# (``ParserPool``, over ``code_parser.py``'s ``TreeSitterParser``), ``repo_files.py``
# (``RepositoryFileWalker``), ``git_history.py`` (``GitLog``), ``git.py`` (``GitToplevel``),
# ``opencode_sessions.py`` (``OpenCodeSessions``) and ``llm_extractor.py`` (``LLMExtractor``).


class CodeParser(Protocol):
    """Source bytes into definitions, calls, imports and inheritance (tree-sitter)."""

    def parse_many(self, sources: Sequence[tuple[bytes, str]]) -> list[ParsedFile]:
        """Each ``(source, language)`` parsed, in order (on several cores when there are many).
        Never raises on bad source: syntax errors are counted in ``ParsedFile.error_count``, and
        a file the parser cannot read at all is one error and no symbols."""

    def prepare(self, files: int) -> None:
        """Start, without waiting, what parsing about ``files`` files will need (a pool's
        processes import their grammars meanwhile); ``parse_many`` waits for it."""

    def close(self) -> None:
        """Stop what ``prepare`` and ``parse_many`` started; the parser is not used again."""


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One file of a repository to parse."""

    path: str  # relative to the repository root, POSIX
    language: str
    size: int
    mtime_ns: int


@dataclass(slots=True)
class SourceListing:
    """A repository's files: those to parse, every listed path, and why the others were skipped."""

    files: list[SourceFile] = field(default_factory=list)
    docs: list[str] = field(default_factory=list)  # every listed path (for docs and manifests)
    skipped_files: dict[str, str] = field(default_factory=dict)  # path -> why, as ``skip`` left them
    # Paths this user may not read now (a folder's end with "/", the project's own is ""): what the
    # store holds of them is kept as it is, not taken for removed (a folder made unreadable for a
    # moment is not deleted).
    denied: list[str] = field(default_factory=list)

    def skip(self, path: str, why: str) -> None:
        """Leave ``path`` out for ``why``, named so the report can say which."""
        self.skipped_files[path] = why

    @property
    def skipped(self) -> dict[str, int]:
        """How many paths each reason left out."""
        return skip_counts(self.skipped_files)

    def may_hold(self, path: str) -> bool:
        """Whether ``path`` may still be there, unseen: it is, or is under, a denied path."""
        return any(path == d or ((d == "" or d.endswith("/")) and path.startswith(d)) for d in self.denied)


@dataclass(frozen=True, slots=True)
class SourceContent:
    data: bytes
    content_hash: str


class RepositoryFiles(Protocol):
    """Which files of a repository to index, and their bytes."""

    def list_sources(self, root: Path) -> SourceListing: ...

    def read_source(self, root: Path, path: str) -> SourceContent | str:
        """The file's bytes, or why it is skipped ("binary", "generated", "unreadable")."""

    def read_doc(self, root: Path, path: str, max_bytes: int) -> bytes | None:
        """The first ``max_bytes`` of a document or manifest; None when it cannot be read."""


class GitHistory(Protocol):
    """A repository's commits and who last changed each line. Never raises: no git, no history."""

    def read_history(
        self, root: Path, *, max_commits: int, before: datetime | None, merges: bool, revision: str
    ) -> list[Commit]:
        """The newest ``max_commits`` commits reachable from ``revision``, newest first."""

    def blame_files(
        self, root: Path, paths: Sequence[str], since: datetime | None = None
    ) -> Generator[tuple[str, list[str]], None, None]:
        """For each of ``paths``, in order: the sha that last changed each of its lines at HEAD,
        in line order (empty: unknown). With ``since``, a line last changed before that time is
        ``""``: only newer commits are looked for. Closing the iterator early stops the rest."""

    def notes(self, root: Path) -> list[str]:
        """What to tell a person about the history of ``root`` (not a repository, no commits yet,
        a shallow clone); empty when it is whole."""

    def head(self, root: Path) -> str | None:
        """The sha of the commit checked out in ``root`` (None: not a repository, no commits)."""

    def renames(self, root: Path, since: str) -> dict[str, str]:
        """Old path -> new path of the files git sees renamed between commit ``since`` and the
        working tree (``git diff -M``); empty when git cannot say."""


class ProjectRoots(Protocol):
    """Which project a directory belongs to, and the branches its repository has."""

    def project_root(self, path: Path) -> Path | None:
        """The repository root containing ``path`` (the main checkout's, for every worktree of
        one repository), or None outside one; an ``InvalidInputError`` when ``path`` does not exist."""

    def project_name(self, root: Path) -> str:
        """The name the store keeps the project checked out at ``root`` under: its path, or on
        a team's store its shared name (``core.projects``). Remembers the checkout for ``checkout``."""

    def checkout(self, project: str) -> Path | None:
        """Where ``project`` is checked out on this machine: its path, or the checkout a
        ``project_name`` call last named so (or another spelling of it, equal by
        ``core.projects.project_key``); None when not known here."""

    def origin(self, root: Path) -> str | None:
        """The ``origin`` remote of the checkout at ``root`` as ``host/group/repo``
        (``core.projects.remote_name``); None when it has none, or a local one. Read at most once
        a while (it is asked for each MR or issue a context shows)."""

    def local_branches(self, project: str) -> frozenset[str] | None:
        """The names of the branches of ``project``'s repository, local and remote-tracking
        (without the remote's name); None when git cannot say (the directory is gone or no
        repository)."""

    def branch(self, root: Path) -> tuple[str, str] | None:
        """The branch the checkout at ``root`` is on and its repository's default branch, when
        they differ (each as ``core.branches.read_branch`` keeps it); None on the default branch,
        on a detached HEAD, when no default branch is known, or outside a repository."""


class SessionReader(Protocol):
    """One opened agent-session database, read-only. Raises ``SessionStoreError`` on failure."""

    @property
    def path(self) -> Path: ...

    def changed_sessions(self, after: tuple[int, str] | None) -> list[SessionRow]:
        """The next batch of sessions updated after ``(time_updated_ms, id)``, oldest change first."""

    def session(self, session_id: str) -> SessionRow | None: ...

    def read(self, row: SessionRow) -> SessionRead: ...

    def close(self) -> None: ...


class SessionSource(Protocol):
    """Where an agent keeps its sessions (OpenCode's SQLite database)."""

    def locate(self, explicit: str | None, session_id: str | None = None) -> Path:
        """The database to read (``explicit``, else the agent's default); ``SessionStoreError`` if none.

        With ``session_id``, a client that keeps one session per file (Claude Code, Codex) also
        checks, from its name, that ``explicit`` is that session's file (a ``SessionStoreError``
        saying so, and what to send); a database of many sessions (OpenCode's) ignores it."""

    def open(self, path: Path) -> SessionReader: ...


class SessionExtractor(Protocol):
    """Something that reads a transcript into learned items (the LLM extractor)."""

    def extract(self, transcript: Transcript) -> list[Learned]:
        """Raises anything on failure: the ingester falls back to the rules."""


@dataclass(frozen=True, slots=True)
class LearningSources:
    """The implementations bootstrap and ingest read from, picked by ``app``."""

    new_parser: Callable[[], CodeParser]  # one parser per bootstrap: a parser is not thread-safe
    files: RepositoryFiles
    history: GitHistory
    roots: ProjectRoots
    sessions: SessionSource
    extractor: SessionExtractor | None = None  # None: the extraction rules alone
    # The clients whose sessions are files the hook names (Claude Code, Codex), by their source.
    session_files: Mapping[str, SessionSource] = field(default_factory=dict)
