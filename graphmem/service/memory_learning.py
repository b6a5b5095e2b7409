"""``MemoryService``'s learning verbs: scan a repository, ingest OpenCode sessions.

The work is the bootstrapper's (``service/bootstrap.py``) and the ingester's
(``service/ingest.py``); both write through the service's own verbs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

from graphmem.core.ports import CodeGraph, LearningSources
from graphmem.errors import InvalidInputError
from graphmem.service.ingest import Ingester, IngestOptions
from graphmem.service.results import BootstrapReport, IngestReport
from graphmem.service.semantic import SemanticIndex

if TYPE_CHECKING:
    from graphmem.service.memory import MemoryService


class LearningVerbs:
    """What graphmem learns by itself (mixed into ``MemoryService``)."""

    code: CodeGraph | None
    semantic: SemanticIndex | None
    _clock: Callable[[], datetime]
    _write_lock: threading.RLock
    _ingest: IngestOptions
    _sources: LearningSources | None

    def bootstrap(
        self,
        path: str | Path,
        *,
        history: int = 500,
        progress: Callable[[int, int], None] | None = None,
        history_before: datetime | None = None,
        history_merges: bool = True,
        history_revision: str = "HEAD",
    ) -> BootstrapReport:
        """Scan a repository into files, symbols and edges, facts from its docs, and its history.

        Incremental: unchanged files cost a ``stat``; see ``service/bootstrap.py``.
        ``history_before`` keeps only commits older than that time and
        ``history_merges=False`` leaves merge commits out, and ``history_revision`` (a sha)
        walks the history from that commit instead of HEAD (the code-memory benchmark's cut).
        """
        from graphmem.service.bootstrap import Bootstrapper  # it imports the service

        if self.code is None:
            raise InvalidInputError("This store has no code graph.")
        if not 0 <= history <= 100_000:
            raise InvalidInputError("history must be between 0 and 100000 commits.")
        sources = self._learning_sources()
        with self._write_lock:
            bootstrapper = Bootstrapper(
                self._service(),
                self.code,
                self._clock,
                parser=sources.new_parser(),
                files=sources.files,
                history=sources.history,
            )
            return bootstrapper.run(
                Path(path),
                history=history,
                progress=progress,
                history_before=history_before,
                history_merges=history_merges,
                history_revision=history_revision,
            )

    @property
    def ingest_options(self) -> IngestOptions:
        """How sessions are ingested (``[ingest]``); the daemon reads ``background`` and its interval."""
        return self._ingest

    def ingest_opencode(
        self,
        *,
        db_path: str | None = None,
        since: datetime | None = None,
        session_id: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> IngestReport:
        """Learn from finished OpenCode sessions: decisions, blockers, procedures, preferences...

        Reads OpenCode's SQLite store read-only (``db_path``, else ``[ingest] opencode_db``,
        ``OPENCODE_DB``, the XDG data dir) from the stored cursor on, or every session
        changed since ``since``; ``session_id`` ingests that one session now, finished or
        not (the OpenCode plugin calls this on ``session.idle``). Idempotent: a session is
        stored once, and again only with what its new messages teach. ``progress`` gets
        the number of sessions looked at so far. See ``service/ingest.py``.
        """
        sources = self._learning_sources()
        ingester = Ingester(
            self._service(),
            options=self._ingest,
            write_lock=self._write_lock,
            clock=self._clock,
            sessions=sources.sessions,
            roots=sources.roots,
            llm=sources.extractor,
        )
        report = ingester.run(db_path=db_path, since=since, session_id=session_id, progress=progress)
        if self.semantic is not None and report.memories:
            self.semantic.added()
        return report

    def _learning_sources(self) -> LearningSources:
        if self._sources is None:
            raise InvalidInputError(
                "This Memory service was built without sources to learn from: open it with "
                "graphmem.open_memory(), which gives it the code parser, git and OpenCode's sessions."
            )
        return self._sources

    def _service(self) -> MemoryService:
        return cast("MemoryService", self)  # only MemoryService mixes this in
