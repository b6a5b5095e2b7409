"""What the Memory service is made of: ``MemoryParts``, the frozen bundle ``graphmem.app`` (the
composition root) builds once and ``MemoryService`` (``memory.py``) hands each verb to."""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

from graphmem.api import Memory
from graphmem.core.ports import CodeGraph
from graphmem.service.bootstrap import Bootstrapper
from graphmem.service.branches import BranchLifecycle
from graphmem.service.context import ContextBuilder
from graphmem.service.coordination import Coordination
from graphmem.service.enrichment import Enricher
from graphmem.service.home import Home
from graphmem.service.ingest import Ingester, IngestOptions
from graphmem.service.lifecycle import Lifecycle
from graphmem.service.listing import Listing
from graphmem.service.mentions import Mentions
from graphmem.service.neighbourhood import NeighbourhoodReader
from graphmem.service.project_names import ProjectNames
from graphmem.service.recall import Recaller
from graphmem.service.remember import Rememberer
from graphmem.service.review import Review
from graphmem.service.session_files import SessionFiles
from graphmem.service.staleness import Staleness
from graphmem.service.transfer_files import TransferFiles
from graphmem.service.writer import MemoryWriter


@dataclass(frozen=True, slots=True)
class MemoryParts:
    """What the Memory service is made of, each part owning its concern: built once, by
    ``graphmem.app`` (the composition root), and never changed after."""

    writer: MemoryWriter
    rememberer: Rememberer  # what a ``remember`` means; the writer applies it
    mentions: Mentions
    recaller: Recaller
    context: ContextBuilder
    listing: Listing
    lifecycle: Lifecycle
    review: Review
    staleness: Staleness
    transfer: TransferFiles
    ingest: IngestOptions
    names: ProjectNames
    neighbourhood: NeighbourhoodReader  # the page's graph around a memory or entity
    home: Home  # the page's home: counts, what to review, recent changes
    enricher: Enricher | None = None
    bootstrapper: Bootstrapper | None = None
    ingester: Ingester | None = None
    session_files: SessionFiles = field(default_factory=SessionFiles)  # Claude Code's, Codex's
    code: CodeGraph | None = None
    branches: BranchLifecycle | None = None  # what a branch's merge, close or deletion does
    coordinator: Coordination | None = None  # sessions and claims: a daemon's, or a team's store's


class Composed(Protocol):
    """A service made of ``MemoryParts``, for one checkout."""

    @property
    def parts(self) -> MemoryParts: ...

    def own_project(self, project: object) -> str | None: ...

    def own_branch(self, project: object, branch: object) -> str | None: ...


Part = TypeVar("Part")
P = ParamSpec("P")
R = TypeVar("R")


class PartVerb(Generic[Part, P, R]):
    """A verb of the service that is one of its parts' own, as it is: ``MemoryService.export``
    is ``TransferFiles.export`` on the service's transfer part (its signature and types, for
    mypy, ``inspect`` and ``help`` alike). Its doc is the one ``graphmem.api.Memory`` declares
    for the verb (the part's own method's for a verb the protocol does not declare)."""

    def __init__(self, part: Callable[[MemoryParts], Part], verb: Callable[Concatenate[Part, P], R]) -> None:
        self._part = part
        self._verb = verb
        self.__doc__ = verb.__doc__

    def __set_name__(self, owner: type[object], name: str) -> None:
        declared = getattr(Memory, name, None)
        if declared is not None and declared.__doc__:
            self.__doc__ = declared.__doc__

    @overload
    def __get__(self, service: None, owner: type[object]) -> Callable[Concatenate[Part, P], R]: ...

    @overload
    def __get__(self, service: Composed, owner: type[object]) -> Callable[P, R]: ...

    def __get__(
        self, service: Composed | None, owner: type[object]
    ) -> Callable[Concatenate[Part, P], R] | Callable[P, R]:
        return self._verb if service is None else self._bound(service)

    def _bound(self, service: Composed) -> Callable[P, R]:
        """The verb as ``service`` offers it."""
        method: Callable[P, R] = types.MethodType(self._verb, self._part(service.parts))

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return method(*args, **kwargs)

        return self._shown(call, method)

    def _shown(self, call: Callable[P, R], method: Callable[P, R]) -> Callable[P, R]:
        """``call`` as ``help`` and ``inspect`` show the verb: its name, its doc, and the part's
        method's signature (``inspect.signature`` follows ``__wrapped__`` when asked)."""
        call.__name__ = call.__qualname__ = self._verb.__name__
        call.__doc__ = self.__doc__
        vars(call)["__wrapped__"] = method
        return call


class CheckoutVerb(PartVerb[Part, P, R]):
    """A part's verb called for the service's checkout, as it is but for two keywords: a call's
    ``project`` and ``branch`` are resolved by the service (``own_project``, ``own_branch``),
    so that a call naming none is about the service's own. ``first`` runs before each call
    (``remember`` archives what expired)."""

    def __init__(
        self,
        part: Callable[[MemoryParts], Part],
        verb: Callable[Concatenate[Part, P], R],
        *,
        first: Callable[[MemoryParts], object] | None = None,
    ) -> None:
        super().__init__(part, verb)
        self._first = first
        self._branch = "branch" in inspect.signature(verb).parameters

    def _bound(self, service: Composed) -> Callable[P, R]:
        """The verb as ``service`` offers it: for its checkout."""
        first, branch, parts = self._first, self._branch, service.parts
        method: Callable[P, R] = types.MethodType(self._verb, self._part(parts))

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            named = kwargs.get("project")
            kwargs["project"] = service.own_project(named)
            if branch:
                kwargs["branch"] = service.own_branch(named, kwargs.get("branch"))
            if first is not None:
                first(parts)
            return method(*args, **kwargs)

        return self._shown(call, method)
