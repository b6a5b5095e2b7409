"""What the service's parts read: ``Stores``, the store and its peers in one frozen value.

``graphmem.app`` (the composition root) builds it once, on the store behind the writer's
redaction door, and hands it to each part that reads them (``Recaller``, ``ContextBuilder``,
``Transfer``, ``BranchLifecycle``, ``Staleness``, ``Listing``, ``Review``, ``Home``); a part
holds the bundle, as sqlite-utils' ``Table`` holds its ``Database``, and reads
``stores.store``, ``stores.code`` and the rest from it, so that the list of what a service is
built on is written once.

What a reader is shown of a stored entity is decided here too (``shown``, ``shown_about``):
what a recall's hits, ``remember``'s answer, ``show``'s detail and a context say a memory is
about, a context's heading and the graph view's nodes are read through them, so that none leaves
the service as another project's (a GitHub checkout's ref without the title GitLab gave a
project of the same path: ``another_projects``, ``Enricher.another_projects``); the graph view
asks ``another_projects`` before it draws what GitLab said links such a ref to.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from datetime import datetime

from graphmem.core.gitlab_ports import GitLabGraph
from graphmem.core.models import Entity
from graphmem.core.ports import CodeGraph, GraphStore
from graphmem.core.timeparse import utc_now
from graphmem.service.mentions import Namespace
from graphmem.service.semantic import SemanticIndex


def _no_namespace(project: str) -> str | None:
    return None


def _no_aliases(project: str | None) -> frozenset[str]:
    return frozenset()


# Whether what GitLab said of an entity is another project's, for a reader in a project (None: none).
Theirs = Callable[[Entity, str | None], bool]


def never_theirs(entity: Entity, project: str | None) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Stores:
    """The memory store and its peers, as every part of one service reads them."""

    store: GraphStore  # behind the writer's redaction door (``MemoryWriter.store``)
    semantic: SemanticIndex | None = None  # search by meaning; None: words, entities and the graph
    code: CodeGraph | None = None  # files and symbols; None: no code graph
    gitlab: GitLabGraph | None = None  # MRs, issues and epics (the ``Enricher``'s graph)
    namespace: Namespace = _no_namespace  # a project's GitLab path, for relative refs (!12)
    clock: Callable[[], datetime] = utc_now
    # The other names a project's memories are still kept under till a writer moves them
    # (``ProjectNames.pending``): a read of the project sees them as its own (``Visibility.aliases``).
    aliases: Callable[[str | None], frozenset[str]] = _no_aliases
    # Whether what GitLab said of an entity (its title, its edges) is another project's for a
    # reader in a project: never shown (``Enricher.another_projects``); none without GitLab.
    another_projects: Theirs = never_theirs

    def shown(self, entity: Entity, project: str | None) -> Entity:
        """``entity`` as a reader in ``project`` is shown it: without a title that is another
        project's (``another_projects``)."""
        if entity.title and self.another_projects(entity, project):
            return replace(entity, title="")
        return entity

    def shown_about(self, memory_ids: Collection[str], project: str | None) -> dict[str, list[Entity]]:
        """The entities each of ``memory_ids`` is about (one read, ``GraphStore.about``), as a
        reader in ``project`` is shown them (``shown``): what a verb's answer says a memory is
        about. What the service reads for itself (staleness, an export) reads the store."""
        about = self.store.about(memory_ids)
        return {memory_id: [self.shown(e, project) for e in found] for memory_id, found in about.items()}
