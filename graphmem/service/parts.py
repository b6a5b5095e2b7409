"""What the Memory service is made of: ``MemoryParts``, the frozen bundle ``graphmem.app`` (the
composition root) builds once and ``MemoryService`` (``memory.py``) hands each verb to; and how
a verb is declared there: a part's own (``PartVerb``, ``CheckoutVerb``), and, for a verb that
stores memories under a project, a write (``writes=True``, or ``@writes`` on a method written
out), whose calls run inside ``ProjectNames.writing``: the memories still kept under the
project's other names move to it first, where a read only sees them (``project_names.py``).
``tests/unit/service/test_write_verbs.py`` walks the verbs' table (``server/verbs.py``): a verb
that writes is declared a write here or is named there with why it stores nothing under a project.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
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
Service = TypeVar("Service", bound=Composed)
P = ParamSpec("P")
R = TypeVar("R")


def _call_context(
    parts: MemoryParts, writes: bool, kwargs: Mapping[str, object]
) -> AbstractContextManager[None]:
    """What a verb's call runs in: a write's in ``ProjectNames.writing`` (but a dry run, which
    writes nothing), a read's in nothing."""
    return parts.names.writing() if writes and not kwargs.get("dry_run") else nullcontext()


def writes(method: Callable[Concatenate[Service, P], R]) -> Callable[Concatenate[Service, P], R]:
    """A verb written out on the service that stores memories under a project: a write, as
    ``writes=True`` declares a part's verb one (see the module doc)."""

    @functools.wraps(method)
    def call(service: Service, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with _call_context(service.parts, True, kwargs):
            return method(service, *args, **kwargs)

    vars(call)["writes"] = True
    return call


def is_write(verb: object) -> bool:
    """Whether a verb, as the service's class holds it (``inspect.getattr_static``), is declared a
    write: ``writes=True`` or ``@writes``."""
    return getattr(verb, "writes", False) is True


class PartVerb(Generic[Part, P, R]):
    """A verb of the service that is one of its parts' own, as it is: ``MemoryService.export``
    is ``TransferFiles.export`` on the service's transfer part (its signature and types, for
    mypy, ``inspect`` and ``help`` alike). Its doc is the one ``graphmem.api.Memory`` declares
    for the verb (the part's own method's for a verb the protocol does not declare). ``writes``:
    it stores memories under a project, and its calls run as a write's (see the module doc)."""

    def __init__(
        self,
        part: Callable[[MemoryParts], Part],
        verb: Callable[Concatenate[Part, P], R],
        *,
        writes: bool = False,
    ) -> None:
        self._part = part
        self._verb = verb
        self.writes = writes
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
        parts, written = service.parts, self.writes
        method: Callable[P, R] = types.MethodType(self._verb, self._part(parts))

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            with _call_context(parts, written, kwargs):
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
    so that a call naming none is about the service's own. ``first`` runs before each call,
    once they are (``remember`` archives what expired)."""

    def __init__(
        self,
        part: Callable[[MemoryParts], Part],
        verb: Callable[Concatenate[Part, P], R],
        *,
        writes: bool = False,
        first: Callable[[MemoryParts], object] | None = None,
    ) -> None:
        super().__init__(part, verb, writes=writes)
        self._first = first
        self._branch = "branch" in inspect.signature(verb).parameters

    def _bound(self, service: Composed) -> Callable[P, R]:
        """The verb as ``service`` offers it: for its checkout."""
        first, branch, parts, written = self._first, self._branch, service.parts, self.writes
        method: Callable[P, R] = types.MethodType(self._verb, self._part(parts))

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            with _call_context(parts, written, kwargs):  # a write's project is moved to as it is named
                named = kwargs.get("project")
                kwargs["project"] = service.own_project(named)
                if branch:
                    kwargs["branch"] = service.own_branch(named, kwargs.get("branch"))
                if first is not None:
                    first(parts)
                return method(*args, **kwargs)

        return self._shown(call, method)
