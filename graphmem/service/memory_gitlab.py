"""``MemoryService``'s GitLab verbs: enrich refs now, the daemon's worker step, the status.

The work is the enrichment queue's (``service/enrichment.py``); this is how the service
hands it the refs a caller typed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from graphmem.core.enrichment import EnrichReport, GitLabStatus
from graphmem.core.ports import GraphStore
from graphmem.errors import ConfigError, InvalidInputError
from graphmem.service.enrichment import Enricher
from graphmem.service.memory_mentions import Namespace, parse_ref_entity

# Refs one enrich call may name.
MAX_ENRICH_REFS = 1_000


class GitLabVerbs:
    """Enrichment of MRs, issues and epics (mixed into ``MemoryService``)."""

    store: GraphStore
    enricher: Enricher | None
    _namespace: Namespace
    _write_lock: threading.RLock
    project: str | None

    def enrich(
        self,
        refs: Sequence[str] | None = None,
        *,
        project: str | None = None,
        all: bool = False,
        refresh: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> EnrichReport:
        """Fetch GitLab facts now: for ``refs`` (``!12``, ``#4``, ``&7``, ``group/proj!12``,
        URLs; relative ones resolved in ``project``), else for everything waiting, or with
        ``all`` for every MR, issue and epic. Within ``[gitlab] ttl_seconds`` an enriched
        entity is not asked again unless ``refresh``. ``progress(done, total)``.
        """
        enricher = self._enricher()
        keys = None
        if refs:
            if isinstance(refs, str) or len(refs) > MAX_ENRICH_REFS:
                raise InvalidInputError(f"Give a list of at most {MAX_ENRICH_REFS} refs.")
            own = self.project if project is None else project
            entities = [parse_ref_entity(token, own, self._namespace) for token in refs]
            with self._write_lock:
                self.store.upsert_entities(entities)
            keys = [e.key for e in entities]
        return enricher.enrich(keys, all=all, refresh=refresh, progress=progress)

    def enrich_due(self, limit: int = 10) -> int:
        """Fetch a few entities whose enrichment is due (the daemon's worker); how many were tried."""
        return self.enricher.run_due(limit) if self.enricher is not None else 0

    def gitlab_status(self, *, probe: bool = False) -> GitLabStatus:
        """Whether GitLab is configured, reachable, rate-limited, the token's state (never
        the token), and how many entities wait for enrichment. ``probe`` asks GitLab now."""
        return self._enricher().status(probe=probe)

    def _enricher(self) -> Enricher:
        if self.enricher is None:
            raise ConfigError("This store has no GitLab enrichment: open it with graphmem.open_memory().")
        return self.enricher
