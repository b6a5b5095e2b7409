"""What the daemon holds while it runs: the service, agent sessions, metrics, and the
background worker that loads the model and embeds the backlog."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from graphmem.core.timeparse import utc_now
from graphmem.errors import GraphmemError, InvalidInputError, NoSessionStoreError, StoreUnavailableError
from graphmem.server.metrics import Metrics
from graphmem.service.coordination import Coordination
from graphmem.service.inputs import parse_project
from graphmem.service.memory import MemoryService
from graphmem.service.semantic import SemanticIndex

log = logging.getLogger(__name__)

# Memories embedded per background step: few enough to run on one core (the other core stays
# free for reads: ``embedders.EMBED_ONE_CORE_TOKENS``), and a step a read may overlap is short.
BACKGROUND_BATCH = 8
# The worker waits for the calls in flight to end before each step, but no longer than this:
# under a steady stream of calls the backlog still drains.
CALLS_FIRST_MAX_WAIT_S = 2.0
# MRs, issues and epics fetched per background step (one request or a few each).
ENRICH_STEP = 5
# Health turns "degraded" while more than this many memories wait for a vector.
BACKLOG_DEGRADED = 1000
IDLE_POLL_S = 0.5
# After the system refused the model's files for a moment (too many open files), the worker
# tries loading it again this often; recall stays lexical meanwhile.
MODEL_RETRY_S = 5.0
# The enrichment worker looks for due MRs, issues and epics this often when idle (a write wakes it).
ENRICH_POLL_S = 5.0
# While the store's server cannot be reached, the workers try it again this often, quietly
# (the store logs once that it is gone and once that it is back).
STORE_RETRY_S = 5.0
# Seconds between two checks of deleted branches when idle (each runs git once per project).
BRANCH_CHECK_S = 300.0
NOT_SERVED = (
    "The daemon serves only the daemon's Memory service: build it with "
    "graphmem.app.serve_memory(settings), not open_memory or build_memory (its path verbs are held "
    "to what an agent may touch, and a coordinator keeps sessions and claims)."
)


class CallsInFlight:
    """The clients' calls being served; the background worker steps aside while there are any
    (reads are the user's; embedding the backlog can wait a moment)."""

    def __init__(self) -> None:
        self._count = 0
        self._idle = threading.Condition()

    @contextmanager
    def serving(self) -> Iterator[None]:
        with self._idle:
            self._count += 1
        try:
            yield
        finally:
            with self._idle:
                self._count -= 1
                if self._count == 0:
                    self._idle.notify_all()

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no call is in flight (at most ``timeout_s``); whether none is."""
        with self._idle:
            return self._idle.wait_for(lambda: self._count == 0, timeout_s)


@dataclass
class IngestState:
    """What the background ingest has done since the daemon started."""

    runs: int = 0
    last_run: datetime | None = None
    last_error: str | None = None
    waiting: str | None = None  # why there is nothing to read yet (OpenCode has not run here)
    sessions_ingested: int = 0
    memories: dict[str, int] = field(default_factory=dict)  # new memories by category

    def view(self, enabled: bool) -> dict[str, Any]:
        """JSON-ready, for ``status()``."""
        return {
            "enabled": enabled,
            "runs": self.runs,
            "last_run": self.last_run.isoformat() if self.last_run else None,
            "last_error": self.last_error,
            "waiting": self.waiting,
            "sessions_ingested": self.sessions_ingested,
            "memories": dict(self.memories),
        }


class Runtime:
    """The daemon's state, shared by the MCP tools and the HTTP routes."""

    def __init__(
        self,
        memory: MemoryService,
        *,
        log_hint: str,
        resolve_project: Callable[[str | None], str | None],
        version: str,
        clock: Callable[[], datetime] = utc_now,
        resolve_branch: Callable[[str], str | None] = lambda path: None,
    ) -> None:
        self.log_hint = log_hint  # where the daemon's log goes, for error messages
        self.version = version
        self.now = clock
        # What reaches the daemon (MCP tools, /rpc) is an agent's call: the daemon's service
        # holds its path verbs to what an agent may touch and keeps sessions and claims (a team's
        # store's for every daemon, else this daemon's). It is wired once, by the composition root
        # (``app.serve_memory``), which also leaves embedding to this worker: recall never waits
        # for it, and is lexical until the model has loaded.
        if not memory.serves_agents or memory.coordinator is None:
            raise ValueError(NOT_SERVED)
        self.memory = memory
        self.coordinator: Coordination = memory.coordinator
        self.metrics = Metrics()
        self.calls = CallsInFlight()  # the MCP tools, /rpc and the plugin's routes count here
        self.metrics.watch(self._gauges)
        self._resolve_project = resolve_project
        self._resolve_branch = resolve_branch
        self._branches_checked = 0.0  # monotonic time of the last check of deleted branches
        self.started = time.monotonic()
        self.model_error: str | None = None
        self.store_error: str | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._worker: threading.Thread | None = None
        self._ingester: threading.Thread | None = None
        self.ingest = IngestState()
        self._enrich_wake = threading.Event()
        self._enricher: threading.Thread | None = None
        self.enrich_error: str | None = None

    # -- background work ----------------------------------------------------------

    def start_worker(self) -> None:
        self._worker = threading.Thread(target=self._work, name="graphmem-embedder", daemon=True)
        self._worker.start()
        if self.memory.ingest_options.background:
            self._ingester = threading.Thread(target=self._ingest_loop, name="graphmem-ingest", daemon=True)
            self._ingester.start()
        if self.memory.enricher is not None and self.memory.enricher.configured:
            self._enricher = threading.Thread(target=self._enrich, name="graphmem-enricher", daemon=True)
            self._enricher.start()

    def stop_worker(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        self._enrich_wake.set()
        if self._worker is not None:
            self._worker.join(timeout)
        if self._ingester is not None:
            self._ingester.join(timeout)
        if self._enricher is not None:
            self._enricher.join(timeout)

    def served(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``function(*args, **kwargs)`` as a client's call: the background worker steps aside."""
        with self.calls.serving():
            return function(*args, **kwargs)

    def written(self) -> None:
        """A memory was written: embed it soon (and enrich the refs it names)."""
        self._wake.set()
        self._enrich_wake.set()

    def _enrich(self) -> None:
        """Fetch due MRs, issues and epics from GitLab, a few at a time, off every tool call."""
        while not self._stop.is_set():
            try:
                done = self.memory.enrich_due(ENRICH_STEP)
                self.enrich_error = None
            except StoreUnavailableError as exc:  # the store said so once; tried again when idle
                self.enrich_error = str(exc)
                done = 0
            except GraphmemError as exc:
                self.enrich_error = str(exc)
                log.error("background enrichment failed: %s", exc)
                done = 0
            if done == 0:
                self._enrich_wake.wait(ENRICH_POLL_S)
                self._enrich_wake.clear()

    def _work(self) -> None:
        semantic = self.memory.semantic
        if semantic is None:
            self._housekeeping()
            return
        while True:
            try:
                self.memory.load_model()
                semantic.index()  # open the vectors here, not on the first read
                semantic.ready = True
                self.model_error = None
                log.info("embedding model loaded")
                break
            except StoreUnavailableError as exc:  # the store said so once: loaded when it is back
                self.store_error = str(exc)
                if self._stop.wait(STORE_RETRY_S):
                    return
            except GraphmemError as exc:
                self.model_error = str(exc)
                log.error("the embedding model could not be loaded: %s", exc)
                self._housekeeping()
                return
            except OSError as exc:  # the system said no for now (no file descriptor left): again
                self.model_error = f"the embedding model could not be loaded yet ({exc})"
                log.error("%s; trying again in %.0f s", self.model_error, MODEL_RETRY_S)
                if self._stop.wait(MODEL_RETRY_S):
                    return
        while not self._stop.is_set():
            try:
                self.calls.wait_idle(CALLS_FIRST_MAX_WAIT_S)
                done = semantic.embed_pending(limit=BACKGROUND_BATCH)
                self.store_error = None
            except StoreUnavailableError as exc:  # the store said so once: no retry every poll
                self.store_error = str(exc)
                self._wake.wait(STORE_RETRY_S)
                self._wake.clear()
                continue
            except (GraphmemError, OSError) as exc:  # OSError: no file descriptor left, for now
                if str(exc) != self.store_error:  # once, not at each poll (a schema to migrate)
                    log.error("background embedding failed: %s", exc)
                self.store_error = str(exc)
                done = 0
            if done == 0:
                self._move_projects()
                self._expire()
                self._tidy_index(semantic)
                self._check_branches()
                self._wake.wait(IDLE_POLL_S)
                self._wake.clear()

    def _housekeeping(self) -> None:
        """Without embeddings: only move pending projects' memories and archive what expired, when
        idle, until stopped."""
        wait = IDLE_POLL_S
        while not self._stop.wait(wait):
            wait = IDLE_POLL_S if self._move_projects() and self._expire() else STORE_RETRY_S

    def _move_projects(self) -> bool:
        """Idle: move the memories still kept under a project's other names to it (reads see
        them as its own meanwhile: ``ProjectNames``); False when the store cannot be reached."""
        return self._idle_chore(self.memory.move_pending_projects, "moving memories to their project's name")

    def _expire(self) -> bool:
        """Idle: archive the memories whose expiry has passed (reads leave them out meanwhile);
        False when the store cannot be reached."""
        return self._idle_chore(self.memory.expire_due, "archiving expired memories")

    @staticmethod
    def _idle_chore(chore: Callable[[], object], what: str) -> bool:
        """Run an idle chore of the store's: a failure is logged (``what`` failed) and the next
        idle poll tries again; False when the store cannot be reached (it said so once)."""
        try:
            chore()
        except StoreUnavailableError:
            return False
        except GraphmemError as exc:
            log.error("%s failed: %s", what, exc)
        return True

    def _tidy_index(self, semantic: SemanticIndex) -> None:
        """Idle: build or merge the vector index's graph, save it when due."""
        try:
            semantic.tidy()
        except StoreUnavailableError:  # the store said so once
            return
        except (GraphmemError, OSError, RuntimeError, ValueError) as exc:
            log.error("vector index upkeep failed: %s", exc)

    def _ingest_loop(self) -> None:
        """Ingest finished OpenCode sessions every ``[ingest] interval_seconds`` until stopped."""
        interval = self.memory.ingest_options.interval_seconds
        while not self._stop.wait(interval):
            self.ingest_once()

    def ingest_once(self) -> None:
        """One background ingest run; its outcome goes to ``status()["ingest"]``, never raises."""
        state = self.ingest
        try:
            report = self.memory.ingest_opencode()
        except NoSessionStoreError as exc:  # OpenCode has not run here: nothing to learn yet
            if str(exc) != state.waiting:
                log.info("background ingest waits: %s", exc)
            state.waiting, state.last_error = str(exc), None
        except StoreUnavailableError as exc:  # the store said so once
            state.waiting, state.last_error = None, str(exc)
        except GraphmemError as exc:
            if str(exc) != state.last_error:  # a broken database would otherwise log every 30 s
                log.warning("background ingest: %s", exc)
            state.waiting, state.last_error = None, str(exc)
        else:
            state.waiting = None
            state.last_error = "; ".join(report.errors[:3]) or None
            state.sessions_ingested += report.sessions_ingested
            for category, count in report.memories.items():
                state.memories[category] = state.memories.get(category, 0) + count
            if report.memories:
                self.written()
        state.runs += 1
        state.last_run = self.now()

    # -- state ----------------------------------------------------------------------

    def resolve_project(self, path: str | None) -> str | None:
        path = parse_project(path)  # no NUL, not longer than a path can be
        if path is None:
            return None
        if not Path(path).expanduser().is_absolute():
            raise InvalidInputError(
                f"project {path[:200]!r} is relative: give the absolute path of the project directory."
            )
        try:
            return self._resolve_project(path)
        except (OSError, ValueError, RuntimeError) as exc:
            raise InvalidInputError(f"Cannot read the project {path[:200]!r}: {exc}.") from None

    def resolve_branch(self, path: str | None) -> str | None:
        """The branch the checkout at ``path`` is on, when not its default; None otherwise or
        when git cannot say (``resolve_project`` checked the path first)."""
        if self.resolve_project(path) is None or path is None:
            return None
        try:
            return self._resolve_branch(path)
        except (GraphmemError, OSError, ValueError, RuntimeError) as exc:
            log.info("no branch for %s: %s", path[:200], exc)
            return None

    def _check_branches(self) -> None:
        """Idle, at most every ``BRANCH_CHECK_S``: archive the memories of deleted branches."""
        now = time.monotonic()
        if now - self._branches_checked < BRANCH_CHECK_S:
            return
        self._branches_checked = now
        try:
            self.memory.check_branches()
        except StoreUnavailableError:  # the store said so once
            return
        except (GraphmemError, OSError) as exc:
            log.error("branch check failed: %s", exc)

    @property
    def model_loaded(self) -> bool:
        semantic = self.memory.semantic
        return semantic is not None and semantic.ready

    def backlog(self) -> int:
        return self.memory.store.count_pending_embeddings()

    def health(self) -> tuple[bool, list[str]]:
        """(healthy, reasons it is not)."""
        reasons: list[str] = []
        if self.model_error:
            reasons.append(f"embedding model unavailable: {self.model_error}")
        elif not self.model_loaded:
            reasons.append("embedding model still loading (recall is lexical until it has)")
        if self.store_error:
            reasons.append(f"store error: {self.store_error}")
        try:
            backlog = self.backlog()
        except GraphmemError as exc:
            if str(exc) != self.store_error:  # the worker's error said it already
                reasons.append(f"store unavailable: {exc}")
        else:
            if backlog > BACKLOG_DEGRADED:
                reasons.append(f"embedding backlog over {BACKLOG_DEGRADED} memories")
        return not reasons, reasons

    def uptime(self) -> float:
        return round(time.monotonic() - self.started, 1)

    def store_bytes(self) -> int:
        path = self.memory.store.path if hasattr(self.memory.store, "path") else self.memory.data_dir
        root = Path(path)
        if root.is_file():
            return root.stat().st_size
        return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())

    def status(self) -> dict[str, Any]:
        stats = self.memory.stats()
        healthy, reasons = self.health()
        return {
            "healthy": healthy,
            "reasons": reasons,
            "version": self.version,
            "uptime_s": self.uptime(),
            "data_dir": stats.data_dir,
            "store_bytes": self.store_bytes(),
            "model": stats.model,
            "model_loaded": self.model_loaded,
            "memories": stats.total,
            "ingest": self.ingest.view(self.memory.ingest_options.background),
            "by_category": stats.by_category,
            "by_status": stats.by_status,
            "by_scope": stats.by_scope,
            "entities": stats.entities,
            "embedding_backlog": stats.pending_embeddings,
            "stale_memories": stats.stale,
            "stale_share": _share(stats.stale, stats.by_status),
            "active_sessions": len(self.coordinator.active()),
            "gitlab": self.gitlab_status(),
            # as `graphmem stats --json` says it: a team's store's login role, None on the embedded one
            "role": None if stats.role is None else asdict(stats.role),
            # a team's store's word search: "index" (beside this daemon) or "database"; None embedded
            "full_text": self.memory.store.full_text_search,
        }

    def gitlab_status(self) -> dict[str, Any] | None:
        """GitLab's part of the status, JSON-ready (never the token); None without enrichment."""
        if self.memory.enricher is None:
            return None
        found = self.memory.gitlab_status()
        view = asdict(found)
        until = found.rate_limited_until
        view["rate_limited_until"] = until.isoformat() if until else None
        if self.enrich_error:
            view["worker_error"] = self.enrich_error
        return view

    def _gauges(self) -> dict[str, object]:
        gauges = self.memory.gauges()
        return {
            "by_category": gauges.by_category,
            "embedding_backlog": gauges.pending_embeddings,
            "active_sessions": len(self.coordinator.active()),
            "model_loaded": self.model_loaded,
            "uptime_seconds": self.uptime(),
        }


def _share(stale: int, by_status: dict[str, int]) -> float:
    """The share of current (active and resolved) memories flagged stale."""
    current = by_status.get("active", 0) + by_status.get("resolved", 0)
    return round(stale / current, 4) if current else 0.0
