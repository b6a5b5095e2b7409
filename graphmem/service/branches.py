"""Branch-aware memory over time: a branch's memories follow what happens to the branch.

A memory written on a branch other than the default carries it (``core/branches.py``,
``Rememberer.remember``). Then:

- **merged**: when enrichment sees the MR whose source branch it is merged (``Enricher``
  tells ``BranchLifecycle.state_changed``), its memories become project memories (an
  event of kind ``branch``, rule ``branch-merged``);
- **closed unmerged**: they are archived (rule ``branch-closed``), as they are when
- **the branch is deleted**: ``check`` (run by ``graphmem enrich``, ``graphmem bootstrap``
  and the daemon when idle) asks git for the project's branches, local and remote-tracking;
  the memories of a branch that is gone from both are archived (rule ``branch-deleted``).

An archived memory leaves its branch: ``graphmem restore`` brings it back as a project
memory, ``graphmem undo`` as it was (on its branch).

Each change is an audited event in the memory's history (actor ``rule``, the rule, a reason
such as "feature/x merged in !12 on 2026-11-20"); ``graphmem undo EVENT_ID`` reverses it,
and ``graphmem restore`` brings an archived one back. An MR's project is matched with the
memory's through the project's GitLab path (its ``origin`` remote); a memory whose project
has no such remote is left as it is.
"""

from __future__ import annotations

import logging
from datetime import datetime

from graphmem.core.branches import read_branch
from graphmem.core.events import Cause
from graphmem.core.models import EntityKind, MemoryRecord
from graphmem.core.ports import ProjectRoots
from graphmem.errors import GraphmemError
from graphmem.service.stores import Stores
from graphmem.service.writer import MemoryWriter

log = logging.getLogger(__name__)

BranchChanges = list[tuple[str, str]]  # (memory id, rule) of each memory a rule changed
RULE_ACTOR = "rule"
MERGED, CLOSED, DELETED = "branch-merged", "branch-closed", "branch-deleted"
# Memories on branches looked at per call: a branch holds a handful; the next call goes on.
MAX_BRANCH_MEMORIES = 2000


class BranchLifecycle:
    """Promotes or archives the memories of a branch when its MR merges or closes, or it is deleted."""

    def __init__(self, stores: Stores, writer: MemoryWriter, roots: ProjectRoots | None = None) -> None:
        self._stores = stores  # reads: the memories on branches, GitLab's MRs, a project's GitLab path
        self._writer = writer
        self._roots = roots  # git's branches of a checkout; None: deleted branches are not checked

    def state_changed(
        self, key: str, kind: EntityKind, before: str | None, after: str, changed_at: datetime | None
    ) -> list[tuple[str, str]]:
        """An MR merged or closed (``Enricher``'s listener): its source branch's memories in the
        MR's project are promoted or archived; the (memory id, rule) of each change."""
        gitlab = self._stores.gitlab
        if kind is not EntityKind.MERGE_REQUEST or after not in ("merged", "closed") or gitlab is None:
            return []
        request = gitlab.merge_request(key)
        branch = read_branch(request.source_branch) if request is not None else None
        if request is None or branch is None:
            return []
        when = f" on {changed_at:%Y-%m-%d}" if changed_at is not None else ""
        name = f"{request.project}!{request.iid}"
        found = self._stores.store.branch_memories(None, branch, MAX_BRANCH_MEMORIES)
        ours = [r for r in found if r.project and self._gitlab_path(r.project) == request.project]
        if after == "merged":
            cause = Cause(RULE_ACTOR, f"{branch} merged in {name}{when}", MERGED)
            return [(r.id, MERGED) for r in ours if self._promote(r, cause)]
        cause = Cause(RULE_ACTOR, f"{name} from {branch} was closed without merging{when}", CLOSED)
        return [(r.id, CLOSED) for r in ours if self._archive(r, cause)]

    def check(self, project: str | None = None) -> list[tuple[str, str]]:
        """Archive the memories of branches deleted from their project's repository (of
        ``project``, or of every project); the (memory id, rule) of each change. A project git
        cannot read (moved, not a repository) is left as it is."""
        if self._roots is None:
            return []
        found = self._stores.store.branch_memories(project, None, MAX_BRANCH_MEMORIES)
        changed: list[tuple[str, str]] = []
        for owner in sorted({r.project for r in found if r.project}):
            branches = self._roots.local_branches(owner)
            if branches is None:
                continue
            kept = {read_branch(b) for b in branches}
            for record in found:
                if record.project == owner and record.branch not in kept:
                    why = f"branch {record.branch} no longer exists in {owner}"
                    if self._archive(record, Cause(RULE_ACTOR, why, DELETED)):
                        changed.append((record.id, DELETED))
        if changed:
            log.info("branch check archived %d memories of deleted branches", len(changed))
        return changed

    def _gitlab_path(self, project: str) -> str | None:
        try:
            return self._stores.namespace(project)
        except (OSError, ValueError, GraphmemError):
            return None

    def _promote(self, record: MemoryRecord, cause: Cause) -> bool:
        try:
            self._writer.leave_branch(record.id, cause)
        except GraphmemError as exc:  # deleted meanwhile: the next one goes on
            log.info("rule %s skipped %s: %s", cause.rule, record.id, exc)
            return False
        return True

    def _archive(self, record: MemoryRecord, cause: Cause) -> bool:
        try:
            self._writer.leave_branch(record.id, cause, archive=True)
        except GraphmemError as exc:  # deleted meanwhile
            log.info("rule %s skipped %s: %s", cause.rule, record.id, exc)
            return False
        return True
