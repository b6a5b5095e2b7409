"""The enrichment queue: GitLab facts for every MR, issue and epic graphmem has seen.

The queue is the graph itself: every MR, issue or epic node a memory, a commit or a
session names starts *pending* (``enrich_state`` NULL), whoever created it. The
daemon's background worker (``server/runtime.py``) calls ``run_due`` between tool
calls, never inside one; ``enrich`` does the same work synchronously for the CLI and
the ``enrich_entity`` tool.

Faults never touch what is stored: GitLab is asked first, and an entity is written
only from a complete answer. When a saved answer changes an entity's state (an MR
merged or closed, an issue closed or reopened), the listeners ``listen`` added are told
(``service/forge_rules.py`` applies the lifecycle rules to the memories about it).

- 401: the whole queue pauses (no retry storm) until an explicit ``enrich`` or a restart.
- 404 / 403: the entity is ``missing`` / ``forbidden``, asked again after the long TTL.
- 429: the queue waits for ``Retry-After``.
- 5xx, timeouts, refused connections, garbage: exponential back-off, for the entity and
  for the queue.

A ref a person asks for by name (``enrich_refs``) that names another's private entity on a
team's store (one they are not shown) is fetched for them as an unknown one would be, and the
report is the same; nothing of it is stored, since the row is not theirs to change (the store
would refuse anyway: ``GitLabGraph.queue``, ``mark`` and ``apply`` write only what the writer is
shown), and nothing says it is there (docs/team.md).

A ref of a repository on another forge (``core.enrichment.foreign_ref``: a GitHub checkout's
``#12``, resolved in its ``origin``'s path) is GitLab's no more than it is graphmem's to fetch:
GitLab is never asked about it (a GitLab project of the same path would answer about another
issue). The worker sets such a row aside (``unresolvable``, saying why: never due again, its
facts as they were), ``enrich_refs`` does not queue it, and every report says why (``foreign``).
What an older graphmem fetched of it is never shown (``another_projects``: decided when read,
not cleared by the worker, since a ref is foreign only as a checkout's origin names it now).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from graphmem.core.enrichment import (
    Attempt,
    EnrichmentRow,
    EnrichReport,
    EnrichState,
    GitLabStatus,
    Outcome,
    backoff_s,
    foreign_ref,
    parse_key,
    symbols_touched,
)
from graphmem.core.gitlab import EpicData, IssueData, MergeRequestData
from graphmem.core.gitlab_edits import GitLabAnswer, changed_file_keys, edit_for
from graphmem.core.gitlab_ports import GitLabClient, GitLabGraph
from graphmem.core.models import GITLAB_KINDS, Entity, EntityKind
from graphmem.core.ports import CodeGraph
from graphmem.core.projects import ForeignRemote
from graphmem.core.redaction import redact
from graphmem.errors import (
    ConfigError,
    GitLabAuthError,
    GitLabError,
    GitLabForbiddenError,
    GitLabNotFoundError,
    GitLabRateLimitedError,
)
from graphmem.service.redacting import guard_gitlab

log = logging.getLogger(__name__)

# Entities the background worker fetches per step (then it yields to the store's other users).
STEP_LIMIT = 10
# Back-off after 5xx / timeouts / refused connections: 2 s, 4 s, ... up to 15 minutes.
BACKOFF_BASE_S = 2.0
BACKOFF_CAP_S = 900.0
# A synchronous enrich waits out a 429 this long at most; longer waits are left to the daemon.
SYNC_RATE_WAIT_MAX_S = 30.0
# Most entities one ``enrich --all`` or queue drain considers.
MAX_BATCH = 100_000

Progress = Callable[[int, int], None]
# Told of a state change: (entity key, its kind, the state stored before or None, the new
# state, when it changed if GitLab says).
StateListener = Callable[[str, EntityKind, str | None, str, datetime | None], object]
# A project's ``origin`` when it is on a forge other than GitLab (``core.projects.foreign_remote``).
ForeignOf = Callable[[str], ForeignRemote | None]
_PROBLEMS = (Outcome.MISSING, Outcome.FORBIDDEN, Outcome.ERROR, Outcome.UNRESOLVABLE)


@dataclass(frozen=True, slots=True)
class EnrichmentConfig:
    """What ``app`` passes from ``[gitlab]`` (never the token)."""

    url: str = "https://gitlab.com"
    enabled: bool = True
    token_set: bool = False
    ttl_s: float = 86_400
    missing_ttl_s: float = 7 * 86_400


def _on_gitlab(project: str) -> ForeignRemote | None:
    return None


class _Remotes:
    """Each project's remote on another forge, asked once (a ``git config`` each) per run."""

    def __init__(self, foreign_of: ForeignOf) -> None:
        self._foreign_of = foreign_of
        self._found: dict[str, ForeignRemote | None] = {}

    def of_ref(self, key: str, *projects: str | None) -> ForeignRemote | None:
        """The repository on another forge ``key`` is a ref of, in the first of ``projects`` (those
        it was named in) whose remote it resolves in; None when it may be GitLab's."""
        for project in dict.fromkeys(p for p in projects if p):
            if project not in self._found:
                self._found[project] = self._foreign_of(project)
            if foreign_ref(key, self._found[project]):
                return self._found[project]
        return None


class Enricher:
    """Fetches MRs, issues and epics from GitLab into the graph, and knows how that goes."""

    def __init__(
        self,
        graph: GitLabGraph,
        client: GitLabClient | None,
        config: EnrichmentConfig,
        *,
        namespace: Callable[[str], str | None],
        clock: Callable[[], datetime],
        code: CodeGraph | None = None,
        sleep: Callable[[float], None] = time.sleep,
        foreign: ForeignOf = _on_gitlab,
    ) -> None:
        self.graph = guard_gitlab(graph)  # GitLab's titles and descriptions are redacted when saved
        self.client = client
        self.config = config
        self._namespace = namespace
        self._foreign_of = foreign  # a GitHub checkout's refs are never asked of GitLab
        self._clock = clock
        self._code = code
        self._sleep = sleep
        self._lock = threading.Lock()  # one fetch at a time: the worker or a caller
        self._token = "unchecked" if client is not None else "missing"
        self._reachable: bool | None = None
        self._auth_paused = False
        self._wait_until: datetime | None = None  # Retry-After, or the back-off after failures
        self._rate_limited_until: datetime | None = None
        self._failures = 0
        self._last_error: str | None = None
        self._user: str | None = None
        self._said: str | None = None  # the error of the last attempt, as stored (redacted)
        self._listeners: list[StateListener] = []

    def listen(self, listener: StateListener) -> None:
        """Call ``listener`` after each saved answer that changed an entity's state."""
        self._listeners.append(listener)

    @property
    def configured(self) -> bool:
        return self.client is not None

    def foreign(self, key: str, *projects: str | None) -> ForeignRemote | None:
        """The repository on another forge (GitHub, Bitbucket) the MR, issue or epic ``key`` is a
        ref of, as the ``projects`` it was named in resolve it (their ``origin`` remotes); None
        when it may be GitLab's. GitLab is never asked about such a ref (see the module doc)."""
        return _Remotes(self._foreign_of).of_ref(key, *projects)

    def another_projects(self, entity: Entity, *projects: str | None) -> bool:
        """Whether what GitLab may have said of ``entity`` (its title, state, changes, closing
        issues) is another project's: it is an MR, issue or epic of a repository on another forge
        (``foreign``, as ``projects`` or its own project resolve it), which an older graphmem
        fetched from a GitLab project of the same path. Such facts are never shown; they are
        decided when read, the stored ones left as they were, since whether a ref is foreign
        depends on a checkout's origin, which a reader's own checkout may name otherwise. The
        service's answers read stored entities as ``Stores.shown`` shows them, from this."""
        return entity.kind in GITLAB_KINDS and self.foreign(entity.key, *projects, entity.project) is not None

    # -- the background worker ------------------------------------------------------

    def run_due(self, limit: int = STEP_LIMIT) -> int:
        """Fetch up to ``limit`` due entities; how many were tried (0: nothing to do now)."""
        if self.client is None or self._auth_paused or self._waiting():
            return 0
        remotes = _Remotes(self._foreign_of)
        with self._lock:
            rows = self.graph.due(self._clock(), limit)
            tried = 0
            for row in rows:
                remote = remotes.of_ref(row.key, row.project)
                outcome = self._set_aside(row, remote) if remote else self._attempt(row, refresh=False)
                if outcome is Outcome.DEFERRED:
                    break
                tried += 1
            return tried

    def _waiting(self) -> bool:
        return self._wait_until is not None and self._clock() < self._wait_until

    # -- explicit requests ------------------------------------------------------------

    def enrich_refs(
        self, named: Sequence[Entity], *, refresh: bool = False, progress: Progress | None = None
    ) -> EnrichReport:
        """Fetch the MRs, issues and epics a person's refs name now (``graphmem enrich REF``,
        MCP ``enrich_entity``): each is queued first (``GitLabGraph.queue``: even when GitLab is
        not configured, for the daemon), then fetched as ``enrich`` fetches keys. A ref of a
        repository on another forge is not queued, and is reported (``foreign``) with why."""
        remotes = _Remotes(self._foreign_of)
        self.graph.queue([e for e in named if remotes.of_ref(e.key, e.project) is None])
        asked = {entity.key: entity for entity in named}
        return self.enrich(list(asked), refresh=refresh, progress=progress, named=asked)

    def enrich(
        self,
        keys: Sequence[str] | None,
        *,
        all: bool = False,
        refresh: bool = False,
        progress: Progress | None = None,
        named: Mapping[str, Entity] | None = None,
    ) -> EnrichReport:
        """Fetch ``keys`` (or everything due, or ``all``: every row this daemon enriches,
        ``GitLabGraph.all_rows``) now. Within the TTL an enriched entity is not asked again unless
        ``refresh``; a 404 or 403 one only with ``all`` after its long TTL, or when named. A key
        the store does not show is fetched all the same and reported as any (by its name in
        ``named``, the entities a person named), but nothing of it is stored (see the module doc).
        A ref of a repository on another forge (in the project it is stored under, or the one
        ``named`` names) is never asked for: it counts as ``foreign``, even without GitLab
        configured."""
        if self.client is None and keys is None:
            raise ConfigError(self._not_configured())
        now = self._clock()
        by_key = named or {}
        remotes = _Remotes(self._foreign_of)
        unseen: set[str] = set()
        if keys is not None:
            found = self.graph.rows(keys)
            unseen = {key for key in keys if key not in found}
            asked = (found.get(key) or _unseen_row(key, by_key.get(key)) for key in dict.fromkeys(keys))
            rows = [row for row in asked if row is not None]
        elif all:
            rows = self.graph.all_rows()
        else:
            rows = self.graph.due(now, MAX_BATCH)

        def foreign(row: EnrichmentRow) -> ForeignRemote | None:
            asker = by_key.get(row.key)
            return remotes.of_ref(row.key, asker.project if asker is not None else None, row.project)

        if self.client is None and (not rows or any(foreign(row) is None for row in rows)):
            raise ConfigError(self._not_configured())  # foreign refs alone are answered without GitLab
        if refresh and self.client is not None:
            self.client.clear_cache()  # else a refresh within the client's cache TTL gets the old answer
        counts: Counter[str] = Counter()
        problems: list[str] = []
        paused: str | None = None
        self._auth_paused = False  # asked for: try the token once more
        seen: set[str] = set()
        done = 0
        with self._lock:
            while rows:
                for row in rows:
                    seen.add(row.key)
                    remote = foreign(row)
                    if remote is not None:
                        counts[self._set_aside(row, remote, kept=row.key not in unseen).value] += 1
                        problems.append(f"{row.name}: {self._said}.")
                    elif paused is not None:
                        counts[Outcome.DEFERRED.value] += 1
                    elif self._is_fresh(row, now, named=keys is not None, refresh=refresh):
                        counts[Outcome.FRESH.value] += 1
                    else:
                        outcome = self._attempt_waiting(row, refresh=refresh, kept=row.key not in unseen)
                        counts[outcome.value] += 1
                        if outcome is Outcome.DEFERRED:
                            paused = self._pause_reason()
                        elif outcome in _PROBLEMS:
                            problems.append(f"{row.name}: {self._said or 'failed'}")
                    done += 1
                    if progress is not None:
                        progress(done, done + len(rows) - rows.index(row) - 1)
                if keys is not None or paused is not None or len(seen) >= MAX_BATCH:
                    break
                # what this pass found (an MR's closing issues, their epic) is due now too
                rows = [r for r in self.graph.due(self._clock(), MAX_BATCH) if r.key not in seen]
        return EnrichReport(dict(counts), problems, paused)

    def _is_fresh(self, row: EnrichmentRow, now: datetime, *, named: bool, refresh: bool) -> bool:
        if refresh or row.next_attempt is None:
            return False
        if row.state is EnrichState.OK:
            return row.next_attempt > now
        if row.state in (EnrichState.MISSING, EnrichState.FORBIDDEN):
            return not named and row.next_attempt > now
        return False

    def _set_aside(self, row: EnrichmentRow, remote: ForeignRemote, *, kept: bool = True) -> Outcome:
        """Keep a ref of a repository on another forge out of the queue, GitLab not asked: it is
        ``unresolvable``, saying why (never due again; its facts, if any, as they were)."""
        if row.state is EnrichState.UNRESOLVABLE and row.error == remote.why:
            self._said = remote.why  # set aside before: nothing to write
        else:
            attempt = Attempt(EnrichState.UNRESOLVABLE, error=remote.why, attempts=row.attempts)
            self._mark(row, kept, attempt)
        return Outcome.FOREIGN

    def _attempt_waiting(self, row: EnrichmentRow, *, refresh: bool, kept: bool) -> Outcome:
        """One attempt; a short 429 is waited out once, as a person would."""
        outcome = self._attempt(row, refresh=refresh, kept=kept)
        if outcome is Outcome.DEFERRED and self._rate_limited_until is not None and not self._auth_paused:
            wait = (self._rate_limited_until - self._clock()).total_seconds()
            if wait <= SYNC_RATE_WAIT_MAX_S:
                self._sleep(max(wait, 0.0))
                outcome = self._attempt(row, refresh=refresh, kept=kept)
        return outcome

    def _pause_reason(self) -> str | None:
        if self._auth_paused:
            return (
                f"GitLab at {self.config.url} rejected the token (401): it is wrong, revoked or expired. "
                "Set a valid one (read_api scope) in GRAPHMEM_GITLAB_TOKEN, GITLAB_TOKEN or [gitlab] "
                "token_file; a running daemon reads it when it starts (`graphmem stop`, then run again)."
            )
        if self._rate_limited_until is not None and self._clock() < self._rate_limited_until:
            return f"GitLab asked to wait until {self._rate_limited_until:%H:%M:%S} UTC (429)."
        if self._wait_until is not None and self._clock() < self._wait_until:
            return (
                f"GitLab is unreachable ({self._last_error}); retrying after {self._wait_until:%H:%M:%S} UTC."
            )
        return None

    # -- one attempt ------------------------------------------------------------------

    def _attempt(self, row: EnrichmentRow, *, refresh: bool, kept: bool = True) -> Outcome:
        """Ask GitLab for one entity and store the answer, or record why not; nothing is stored
        of a row the store does not show (not ``kept``)."""
        assert self.client is not None
        self._said = None
        now = self._clock()
        target = parse_key(row.key)
        if target is None:
            self._mark(
                row,
                kept,
                Attempt(
                    EnrichState.UNRESOLVABLE,
                    error=(
                        "the ref names no GitLab project: write group/project!N, or set [gitlab] "
                        "default_project, or give the repository an origin remote on GitLab"
                    ),
                    attempts=row.attempts + 1,
                    next_attempt=None,
                    fetched_at=now,
                ),
            )
            return Outcome.UNRESOLVABLE
        data: MergeRequestData | IssueData | EpicData
        try:
            if target.kind is EntityKind.MERGE_REQUEST:
                data = self.client.merge_request(target.namespace, target.iid)
            elif target.kind is EntityKind.ISSUE:
                data = self.client.issue(target.namespace, target.iid)
            else:
                data = self.client.epic(target.namespace, target.iid)
        except GitLabAuthError as exc:
            self._auth_paused, self._token, self._reachable = True, "rejected", True
            self._last_error = str(exc)
            log.warning("GitLab rejected the token; enrichment paused")
            return Outcome.DEFERRED
        except GitLabRateLimitedError as exc:
            self._reachable = True
            self._rate_limited_until = now + timedelta(seconds=max(exc.retry_after_s, 1.0))
            self._wait_until = self._rate_limited_until
            log.info("GitLab rate-limited enrichment for %.0f s", exc.retry_after_s)
            return Outcome.DEFERRED
        except (GitLabNotFoundError, GitLabForbiddenError) as exc:
            self._answered()
            missing = isinstance(exc, GitLabNotFoundError)
            self._mark(
                row,
                kept,
                Attempt(
                    EnrichState.MISSING if missing else EnrichState.FORBIDDEN,
                    error=str(exc),
                    attempts=row.attempts + 1,
                    next_attempt=now + timedelta(seconds=self.config.missing_ttl_s),
                    fetched_at=now,
                ),
            )
            return Outcome.MISSING if missing else Outcome.FORBIDDEN
        except GitLabError as exc:  # unavailable: 5xx, timeout, refused, malformed
            self._failures += 1
            self._reachable = False
            self._last_error = str(exc)
            pause = backoff_s(self._failures, base_s=BACKOFF_BASE_S, cap_s=BACKOFF_CAP_S)
            self._wait_until = now + timedelta(seconds=pause)
            attempts = row.attempts + 1
            self._mark(
                row,
                kept,
                Attempt(
                    EnrichState.OK if row.state is EnrichState.OK else EnrichState.ERROR,
                    error=str(exc),
                    attempts=attempts,
                    next_attempt=now + timedelta(seconds=backoff_s(attempts, base_s=60.0, cap_s=86_400.0)),
                ),
            )
            log.info("GitLab unavailable (%s); backing off %.0f s", type(exc).__name__, pause)
            return Outcome.ERROR
        self._answered()
        next_attempt = now + timedelta(seconds=self.config.ttl_s)
        if (
            not refresh
            and row.state is EnrichState.OK
            and row.updated_at is not None
            and data.updated_at is not None
            and abs((data.updated_at - row.updated_at).total_seconds()) < 1e-3
            and not self._symbols_moved(row, data)
        ):
            self._mark(
                row,
                kept,
                Attempt(EnrichState.OK, error=None, attempts=0, next_attempt=next_attempt, fetched_at=now),
            )
            return Outcome.UNCHANGED
        if kept:
            self._save(row, data, now, next_attempt)
        return Outcome.FETCHED

    def _mark(self, row: EnrichmentRow, kept: bool, attempt: Attempt) -> None:
        """Record ``attempt`` on ``row`` when ``kept``; its error is what the report says."""
        self._said = redact(attempt.error).text if attempt.error else None  # as the store keeps it
        if kept:
            self.graph.mark(row.key, attempt)

    def _answered(self) -> None:
        """GitLab answered (even 404/403): the token is good and it is reachable."""
        self._token, self._reachable = "ok", True
        self._failures = 0
        self._wait_until = None
        self._rate_limited_until = None
        self._last_error = None

    def _save(
        self,
        row: EnrichmentRow,
        data: MergeRequestData | IssueData | EpicData,
        now: datetime,
        next_at: datetime,
    ) -> None:
        before = self._stored_state(row)
        local, files, symbols = self._changed_here(row, data)
        self.graph.apply(edit_for(GitLabAnswer(row.key, data, row.hops, now, next_at, local, files, symbols)))
        if before != data.state:
            changed_at = data.merged_at if isinstance(data, MergeRequestData) else None
            if isinstance(data, IssueData):
                changed_at = data.closed_at if data.state == "closed" else data.updated_at
            for listener in self._listeners:
                try:
                    listener(row.key, row.kind, before, data.state, changed_at or data.updated_at)
                except Exception:  # a rule's failure must not undo what GitLab said
                    log.exception("a lifecycle rule failed for %s", row.key)

    def _stored_state(self, row: EnrichmentRow) -> str | None:
        """The entity's GitLab state as stored before this answer (None: never fetched)."""
        if row.kind is EntityKind.MERGE_REQUEST:
            stored: MergeRequestData | IssueData | EpicData | None = self.graph.merge_request(row.key)
        elif row.kind is EntityKind.ISSUE:
            stored = self.graph.issue(row.key)
        else:
            stored = self.graph.epic(row.key)
        return stored.state if stored is not None else None

    def _changed_here(
        self, row: EnrichmentRow, data: MergeRequestData | IssueData | EpicData
    ) -> tuple[tuple[str, str] | None, list[tuple[str, str]], list[str]]:
        """The local checkout of the answer's GitLab project (if it is one), and the files and
        today's symbols an MR changed there."""
        local = None if isinstance(data, EpicData) else self._local(row, data.project)
        if not isinstance(data, MergeRequestData):
            return local, [], []
        return local, changed_file_keys(data, local), self._touched_symbols(data, local)

    def _touched_symbols(self, data: MergeRequestData, local: tuple[str, str] | None) -> list[str]:
        """Keys of today's symbols whose lines the MR's hunks meet (its project checked out here)."""
        if local is None or self._code is None:
            return []
        symbols: list[str] = []
        for changed in data.changed_files:
            if changed.ranges and not changed.deleted_file:
                in_file = self._code.symbols_in(local[1], changed.new_path)
                symbols += [s.key for s in symbols_touched(changed.ranges, in_file)]
        return symbols

    def _symbols_moved(self, row: EnrichmentRow, data: MergeRequestData | IssueData | EpicData) -> bool:
        """Whether an MR GitLab did not change meets other symbols than those linked: the code
        was scanned (or changed) since, so its ``CHANGES`` edges are saved again."""
        if not isinstance(data, MergeRequestData):
            return False
        local = self._local(row, data.project)
        if local is None or self._code is None:
            return False
        return set(self._touched_symbols(data, local)) != set(self.graph.changed_symbols(row.key))

    def _local(self, row: EnrichmentRow, project_path: str) -> tuple[str, str] | None:
        """(GitLab project path, local root) when the entity's project is the local one."""
        if row.project and self._namespace(row.project) == project_path:
            return project_path, row.project
        return None

    # -- status ----------------------------------------------------------------------

    def status(self, *, probe: bool = False) -> GitLabStatus:
        """Whether GitLab is configured, reachable and accepts the token; what waits.

        ``probe`` asks the instance now (one request); otherwise the last answer counts.
        """
        now = self._clock()
        if probe and self.client is not None:
            try:
                found = self.client.probe()
                self._user = found.username
                self._answered()
            except GitLabAuthError as exc:
                self._token, self._reachable, self._last_error = "rejected", True, str(exc)
                self._auth_paused = True
            except GitLabRateLimitedError as exc:
                self._reachable = True
                self._rate_limited_until = now + timedelta(seconds=max(exc.retry_after_s, 1.0))
            except GitLabError as exc:
                self._reachable, self._last_error = False, str(exc)
        limited = (
            self._rate_limited_until if self._rate_limited_until and self._rate_limited_until > now else None
        )
        token = self._token if self.config.token_set else "missing"
        return GitLabStatus(
            configured=self.configured,
            url=self.config.url,
            enabled=self.config.enabled,
            token=token,
            reachable=self._reachable,
            rate_limited_until=limited,
            paused=self._pause_reason() if self.configured else self._not_configured(),
            pending=self.graph.waiting(),
            by_state=self.graph.counts(),
            last_error=self._last_error,
            user=self._user,
        )

    def _not_configured(self) -> str:
        if not self.config.enabled:
            return "GitLab enrichment is off ([gitlab] enabled = false)."
        return (
            "GitLab is not configured: set GRAPHMEM_GITLAB_TOKEN (or GITLAB_TOKEN, or [gitlab] token_file) "
            f"and [gitlab] url (now {self.config.url}); see docs/gitlab.md."
        )


def _unseen_row(key: str, named: Entity | None) -> EnrichmentRow | None:
    """The queue row of a key the store does not show, as a new one would be (None: no MR,
    issue or epic key)."""
    label = key.partition(":")[0]
    kind = next((k for k in GITLAB_KINDS if k.value == label), None)
    if kind is None:
        return None
    name, project = (named.name, named.project) if named is not None else (key, None)
    return EnrichmentRow(key, kind, name, project, EnrichState.PENDING)
