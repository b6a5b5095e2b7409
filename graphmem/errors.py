"""The errors graphmem raises.

Every error says what happened and what to do about it. Adapters translate
third-party exceptions into these at their boundary; entry points present them
(the CLI prints one line and exits with ``exit_code``).

    GraphmemError
     ├── InvalidInputError      bad text, category, scope, ref, option, file
     │    └── ImportFileError    an import file with invalid records (line numbers)
     ├── NotFoundError          no memory or entity with that id
     ├── ConflictError          the operation contradicts the current state
 │    └── NotAllowedError    only a person may do this (an agent asked to)
     ├── StoreError             the database failed
     │    ├── StoreLockedError   another process holds the data dir
     │    ├── StoreConflictError another writer's transaction won (nothing of this call kept)
     │    ├── StoreUnavailableError the store's server cannot be reached now (a team's PostgreSQL)
     │    └── StoreMismatchError built with another embedding model / schema
     ├── EmbedderError          the embedding model cannot be loaded or run
     ├── ConfigError            a setting is wrong
     ├── IntegrationError       an agent client's files (OpenCode config) are invalid
     ├── GitLabError            GitLab could not answer (enrichment keeps the entity queued)
     │    ├── GitLabAuthError        401: the token is missing, wrong or expired
     │    ├── GitLabForbiddenError   403: the token may not see this project or entity
     │    ├── GitLabNotFoundError    404: no such project, MR, issue or epic
     │    ├── GitLabRateLimitedError 429: wait ``retry_after_s`` seconds
     │    └── GitLabUnavailableError 5xx, timeout, refused connection, malformed answer
     └── SessionStoreError      an agent client's session database cannot be read
          └── NoSessionStoreError   none where it is by default: the client never ran here
"""

from __future__ import annotations

__all__ = [
    "ClaimConflictError",
    "ConfigError",
    "ConflictError",
    "EmbedderError",
    "GitLabAuthError",
    "GitLabError",
    "GitLabForbiddenError",
    "GitLabNotFoundError",
    "GitLabRateLimitedError",
    "GitLabUnavailableError",
    "GraphmemError",
    "ImportFileError",
    "IntegrationError",
    "InvalidInputError",
    "NoSessionStoreError",
    "NotAllowedError",
    "NotFoundError",
    "SessionStoreError",
    "StoreConflictError",
    "StoreError",
    "StoreLockedError",
    "StoreMismatchError",
    "StoreUnavailableError",
]


class GraphmemError(Exception):
    """Base of every error graphmem raises on purpose."""

    exit_code = 1


class InvalidInputError(GraphmemError):
    """The caller passed something graphmem cannot accept."""

    exit_code = 2


class ImportFileError(InvalidInputError):
    """An import file holds invalid records; nothing was imported."""

    def __init__(self, message: str, problems: list[tuple[int, str]]) -> None:
        super().__init__(message)
        self.problems = problems


class NotFoundError(GraphmemError):
    """No memory or entity matches the given id or ref."""

    exit_code = 3


class ConflictError(GraphmemError):
    """The operation does not fit the current state (e.g. resolving a non-blocker)."""

    exit_code = 4


class NotAllowedError(ConflictError):
    """An agent asked for what only a person may do: change the standing of the user's own
    memory (archive, replace, restore, delete, undo a person's change) or confirm a proposal."""


class StoreError(GraphmemError):
    """The graph store failed."""

    exit_code = 5


class StoreLockedError(StoreError):
    """Another process holds the database directory."""

    exit_code = 6


class StoreConflictError(StoreError):
    """Another writer locked the same rows at the same moment (a deadlock or a serialization
    failure): the database rolled this call back, and it may simply be tried again."""


class StoreUnavailableError(StoreError):
    """The store's server cannot be reached now (down, restarting, or refusing connections):
    every call fails at once until it is back, and the first call after that goes through.
    Background work waits for it quietly (the store says once that it is gone, once that it is
    back)."""


class StoreMismatchError(StoreError):
    """The store was built with another embedding model, dimension or schema."""

    exit_code = 7


class EmbedderError(GraphmemError):
    """The embedding model could not be loaded or run."""

    exit_code = 8


class ConfigError(GraphmemError):
    """A setting is missing or wrong."""

    exit_code = 9


class IntegrationError(GraphmemError):
    """An agent client's files (OpenCode's config, AGENTS.md) are invalid or cannot be read or written."""

    exit_code = 10


class GitLabError(GraphmemError):
    """GitLab could not answer a request; what was stored stays as it was."""

    exit_code = 11


class GitLabAuthError(GitLabError):
    """GitLab refused the token (401): it is missing, wrong, revoked or expired."""


class GitLabForbiddenError(GitLabError):
    """The token may not see the project or entity (403)."""


class GitLabNotFoundError(GitLabError):
    """No such project, merge request, issue or epic (404) -- or it is hidden from the token."""


class GitLabRateLimitedError(GitLabError):
    """GitLab asked to slow down (429); try again after ``retry_after_s`` seconds."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class GitLabUnavailableError(GitLabError):
    """GitLab is unreachable or answered garbage: 5xx, timeout, refused connection, bad JSON."""


class SessionStoreError(GraphmemError):
    """An agent client's session store (OpenCode's SQLite database) is missing, locked or unreadable."""

    exit_code = 12


class NoSessionStoreError(SessionStoreError):
    """No session database where the client keeps it by default: it has not run here (yet)."""


class ClaimConflictError(ConflictError):
    """Another live session holds the item; ``held`` describes that claim (item, agent,
    session, claimed_at, expires_at) when known."""

    def __init__(self, message: str, held: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.held = held
