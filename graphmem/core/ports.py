"""Interfaces of the external systems graphmem uses (implemented in ``adapters``); GitLab's are
in ``core/gitlab_ports.py``."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypedDict, Unpack

import numpy as np
import numpy.typing as npt

from graphmem.core.code import ParsedFile
from graphmem.core.codegraph import CodeScan, FileState, SymbolInfo
from graphmem.core.events import EventKind, MemoryEvent

# The sources graphmem learns from (``core/learning_sources.py``), re-exported for their users.
from graphmem.core.learning_sources import CodeParser as CodeParser
from graphmem.core.learning_sources import GitHistory as GitHistory
from graphmem.core.learning_sources import LearningSources as LearningSources
from graphmem.core.learning_sources import ProjectRoots as ProjectRoots
from graphmem.core.learning_sources import RepositoryFiles as RepositoryFiles
from graphmem.core.learning_sources import SessionExtractor as SessionExtractor
from graphmem.core.learning_sources import SessionReader as SessionReader
from graphmem.core.learning_sources import SessionSource as SessionSource
from graphmem.core.learning_sources import SourceContent as SourceContent
from graphmem.core.learning_sources import SourceFile as SourceFile
from graphmem.core.learning_sources import SourceListing as SourceListing
from graphmem.core.models import (
    Category,
    Entity,
    EntityKind,
    Link,
    LinkKind,
    LoginRole,
    MemoryRecord,
    Scope,
    Status,
)

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Visibility:
    """Which memories a caller may see: global ones plus those of ``project``; of those on a
    branch, the ones on ``branch`` (all of them with ``all_branches``)."""

    project: str | None
    statuses: frozenset[Status] = frozenset({Status.ACTIVE, Status.RESOLVED})
    categories: frozenset[Category] | None = None
    since: datetime | None = None
    branch: str | None = None  # the caller's branch (None: the default branch, or no branch)
    all_branches: bool = False
    # A current memory whose expiry is at or before this counts as archived, before the daemon's
    # worker or the next write archives it: a read writes nothing. None: stored statuses only.
    expired_by: datetime | None = None
    # Other names the project's memories are still kept under till a writer moves them to
    # ``project`` (``service/project_names.py``): a read sees them as the project's.
    aliases: frozenset[str] = frozenset()

    @property
    def projects(self) -> frozenset[str]:
        """The names a project memory is seen under: ``project`` and its aliases (none: global only)."""
        return frozenset() if self.project is None else self.aliases | {self.project}

    def shows_project(self, project: str | None) -> bool:
        """Whether a project memory kept under ``project`` is of the caller's project."""
        return project is not None and (project == self.project or project in self.aliases)

    def shows_branch(self, branch: str | None) -> bool:
        """Whether a memory on ``branch`` (None: on no branch) is seen."""
        return branch is None or self.all_branches or branch == self.branch

    @property
    def hides_expired(self) -> bool:
        """Whether a current memory past its expiry is left out (archived ones are not shown)."""
        return self.expired_by is not None and Status.ARCHIVED not in self.statuses

    def shows_expiry(self, record: MemoryRecord) -> bool:
        """Whether ``record`` is seen as far as its expiry goes (see ``expired_by``)."""
        if not self.hides_expired or self.expired_by is None or record.expires_at is None:
            return True
        return not record.is_current or record.expires_at > self.expired_by


@dataclass(frozen=True, slots=True)
class VectorQuery:
    """One search of a :class:`VectorIndex`: the ``k`` rows nearest ``vector`` by cosine that are
    of one of ``statuses`` and global or of ``project`` (or an alias); of its rows on a branch, those on
    ``branch`` (all of them with ``all_branches``). Projects are places (``core.branches.place``)."""

    vector: Vector
    k: int
    project: str | None
    statuses: frozenset[str]  # stored status names (``Status`` values)
    branch: str | None = None
    all_branches: bool = False
    aliases: frozenset[str] = frozenset()  # seen as ``project`` (``Visibility.aliases``)

    @classmethod
    def of(cls, vector: Vector, k: int, visibility: Visibility) -> VectorQuery:
        """The search of what ``visibility`` shows as far as an index can tell: its categories,
        ``since`` and expiry are not in the index, and are the caller's to check."""
        return cls(
            vector,
            k,
            visibility.project,
            frozenset(status.value for status in visibility.statuses),
            visibility.branch,
            visibility.all_branches,
            visibility.aliases,
        )

    @property
    def projects(self) -> frozenset[str]:
        """The projects whose rows are seen beside the global ones: ``project`` and its aliases."""
        return frozenset() if self.project is None else self.aliases | {self.project}


class VectorRows(Protocol):
    """Stored vectors read a few rows at a time where they are kept, not copied into memory
    (the Kùzu store's ``graph.vectors``: a million took 1.5 GB as one float32 matrix)."""

    @property
    def shape(self) -> tuple[int, int]: ...

    def take(self, positions: npt.NDArray[np.int64]) -> Vector:
        """The rows at ``positions``, in that order, float32."""
        ...

    def scores(self, positions: npt.NDArray[np.int64], query: Vector) -> npt.NDArray[np.float32]:
        """The inner product of ``query`` with each row at ``positions``, in that order: an
        exact scan, without handing the rows out."""
        ...


@dataclass(frozen=True, slots=True)
class StoredVectors:
    """Every embedded memory's vector with the fields recall filters on."""

    ids: list[str]
    matrix: Vector | VectorRows  # (n, dim), L2-normalised rows; ``np.asarray`` reads VectorRows whole
    projects: list[str | None]  # places: the project, with the branch when on one (core.branches.place)
    statuses: list[str]


@dataclass(frozen=True, slots=True)
class Neighbour:
    """One edge of the memory graph seen from ``memory_id``."""

    memory_id: str
    via: str  # entity key, or the RELATES/NEXT kind
    other_id: str  # a memory id
    fanout: int = 0  # memories about ``via`` when it is an entity; 0 for RELATES and NEXT


class Embedder(Protocol):
    """Turns text into L2-normalised vectors."""

    @property
    def model_name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vector: ...

    def embed_query(self, text: str) -> Vector:
        """The one vector (1-D) a search asks with. It may be computed more cheaply than
        ``embed``'s, within a cosine of 0.98 of it, since it is never stored."""

    def warm_up(self) -> None:
        """Start loading the model in the background, if loading takes time."""


# -- the memory store, by concern ---------------------------------------------------
#
# ``GraphStore`` is what the service is given; it is the union of the groups below, each
# of which a second store (see docs/architecture.md, "A second store") implements and
# tests/unit/adapters/test_store_contract.py checks, against Kùzu and the in-memory fake.
# Every method here has a caller outside the adapters. Writes pass service/redacting.py.


class StoreMeta(Protocol):
    """The store's own key/value settings (schema version, embedding model), closing it, and
    writes grouped into one transaction."""

    def close(self) -> None: ...
    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def transaction(self) -> AbstractContextManager[None]:
        """The writes made inside the block are kept together, with one commit when it ends
        (durable then), or none of them when it raises; inside an open transaction, part of
        that one. Other threads never see it half done: in Kùzu and the in-memory fake their
        calls wait till it ends; PostgreSQL shows them the state before it till it commits."""


class NewText(TypedDict):
    """What ``MemoryRecords.replace_text`` writes, given as its keywords: the new ``text``, its
    ``content_hash`` (``core.keys.memory_hash``), when it changed and the ``entities`` it is
    about now (its ABOUT edges). One definition for the port, the stores and the wrappers."""

    text: str
    content_hash: str
    updated_at: datetime
    entities: Sequence[Entity]


class MemoryRecords(Protocol):
    """Memory nodes: add, read, change, delete, list and count them."""

    def add_memories(self, records: Sequence[MemoryRecord], vectors: Vector | None = None) -> None: ...
    def get_memories(self, ids: Collection[str]) -> dict[str, MemoryRecord]: ...
    def find_by_hash(self, content_hash: str) -> list[MemoryRecord]: ...
    def find_by_hashes(self, content_hashes: Collection[str]) -> dict[str, list[MemoryRecord]]:
        """``find_by_hash`` of many hashes in one read (an import's): each hash that some
        memory has → those memories, by id; hashes no memory has are left out."""

    def shared_memories(self, ids: Collection[str]) -> set[str]:
        """Of ``ids``, the stored memories people other than the caller see too: on a team's store
        every project memory and each team-wide global one (no owner), never a person's own global
        memory; none on a store of one person (Kùzu, the fake), where no one else sees anything."""

    def shared_scopes(self) -> frozenset[Scope]:
        """The scopes whose memories, written by the caller, people other than the caller see too
        (what ``shared_memories`` says of them once stored): ``project`` on a team's store, where a
        global memory is its writer's own; none on a store of one person (Kùzu, the fake)."""

    def update_memory(self, memory_id: str, changes: Mapping[str, object]) -> None:
        """Set fields of a memory (not ``text``: see ``replace_text``); an unknown field: ValueError.
        An ``updated_at`` later than the stored one records on its ABOUT edges to symbols their
        bodies of now (``EntityGraph.about_bodies``), in the same write."""

    def replace_text(self, memory_id: str, **new: Unpack[NewText]) -> None:
        """New text: the RELATES and NEXT edges stay, ABOUT becomes ``entities``, the vector is pending."""

    def delete_memory(self, memory_id: str) -> None:
        """Remove the memory and every edge it has; its entities stay."""

    def list_memories(self, visibility: Visibility, *, limit: int, offset: int = 0) -> list[MemoryRecord]:
        """Visible memories, newest first (``created_at`` descending, then id)."""

    def all_memories(self, project: str | None = None) -> Iterable[MemoryRecord]:
        """Every memory (only those whose project is ``project`` when given), oldest first."""

    def count_memories(self) -> dict[tuple[str, str, str], int]:
        """Memories by (category, scope, status) values."""

    def projects(self) -> dict[str, datetime]:
        """Each project the store keeps memories under (of any status; on a team's store, of
        the memories the caller sees), with when the first of them was made: which spellings
        of a project a team's store already keeps (``core.projects.stored_spelling``)."""

    def total_memories(self) -> int:
        """How many memories the store holds: what ``count_memories`` adds up to, without
        reading them (a store that knows its row count answers from it)."""

    def last_in_session(self, session: str) -> str | None:
        """The id of the memory of ``session`` stored last."""

    def expiring(self, now: datetime, limit: int) -> list[MemoryRecord]:
        """Current memories (active, resolved, not merged) whose ``expires_at`` is ``now`` or
        earlier, soonest first, at most ``limit``."""

    def next_expiry(self) -> datetime | None:
        """The earliest ``expires_at`` of a current memory (None: no current memory expires)."""

    def branch_memories(self, project: str | None, branch: str | None, limit: int) -> list[MemoryRecord]:
        """Current memories on a branch: of ``project`` and ``branch`` (None: any), oldest
        first, at most ``limit``."""


class TextHits(list[tuple[str, float]]):
    """What ``search_text`` found: ``(memory id, score)`` pairs, best first, and ``exact``,
    the ids among them whose text holds the asked phrase word for word (they come first)."""

    def __init__(self, hits: Iterable[tuple[str, float]] = (), exact: Iterable[str] = ()) -> None:
        super().__init__(hits)
        self.exact = frozenset(exact)


@dataclass(frozen=True, slots=True)
class TextMatch:
    """A memory ``text_matches`` found, with what comparing its text with another needs."""

    id: str
    text: str
    category: Category
    scope: Scope
    project: str | None
    branch: str | None = None


class MemorySearch(Protocol):
    """Full-text search over memory text (accents and case folded, words stemmed)."""

    @property
    def full_text_search(self) -> str | None:
        """Which search answers ``search_text`` now, in a store that has two: ``"index"`` (a
        full-text index beside this process, current with the store) or ``"database"`` (the
        database's own: no index beside this process, or one being built or catching up). None
        in a store with one search (the embedded store's index, written with the memories)."""

    def search_text(
        self, query: str, visibility: Visibility, limit: int, *, phrase: str | None = None
    ) -> TextHits:
        """Visible memories matching any word of ``query``, best first, with a positive score.

        ``phrase`` (``query`` when not given) is also asked whole when it is a phrase
        (``core.text.phrase_words``): a memory that holds its words in that order, each
        adjacent to the next (folded and stemmed, stopwords kept), is in ``exact`` and comes
        before every other hit. A phrase of stopwords alone finds the memories that hold it.
        """

    def text_matches(
        self, query: str, visibility: Visibility, limit: int, *, holding: Sequence[Collection[str]] = ()
    ) -> list[TextMatch]:
        """Visible memories matching any word of ``query`` (no phrase asked), best first, each
        with its text, category, scope and project at the cost of the search alone
        (``remember``'s near-duplicate check). With ``holding``, a memory is left out only if
        it holds no word of one of its groups (plain lower-case letters and digits; a word: a
        longest run of letters and digits of the folded text, so "wasn't" holds "wasn" and
        "t"): what every near-duplicate holds (``core.dedup.repeat_words``). Ranked as
        without, the first ``limit`` of those kept (a store that filters after its search:
        those among its first ``limit`` matches); a store that reads stems may keep one that
        holds another word of the same stem ("handler" for "handled")."""


class MemoryVectors(Protocol):
    """Each memory's embedding: what is still to embed, storing, clearing and loading vectors."""

    def pending_embeddings(self, limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` memories still without a vector, ids and texts, the oldest written
        first; fewer only when no more are waiting (then they are the whole backlog)."""
        ...

    def count_pending_embeddings(self) -> int:
        """How many memories are still without a vector (the embedding backlog): as many as
        ``pending_embeddings`` would give without a limit, their texts not read."""
        ...

    def set_embeddings(self, ids: Sequence[str], vectors: Vector) -> None: ...
    def clear_embeddings(self, dimension: int) -> None: ...
    def load_vectors(self) -> StoredVectors: ...
    def count_vectors(self) -> int:
        """Memories that have a vector."""

    def embedding_of(self, memory_id: str) -> Vector | None: ...


class VectorIndex(Protocol):
    """The in-process index recall searches: cosine top-k of memory vectors, filtered by
    project and status (``adapters/vector_index.py``)."""

    dimension: int
    changed: bool  # since it was last saved or restored
    # False: derived from the store's vectors (loaded from it at open, kept in step by the
    # service); True: the store's own index, which holds every write already (pgvector).
    in_store: bool

    def __len__(self) -> int: ...
    def __contains__(self, memory_id: object) -> bool: ...
    def load(self, stored: StoredVectors) -> None:
        """Replace the contents with ``stored``; its matrix may be kept as it is (not copied):
        the caller hands it over (``VectorRows``: read as needed, from where the store keeps them)."""
        ...

    def add(
        self, ids: Sequence[str], vectors: Vector, projects: Sequence[str | None], statuses: Sequence[str]
    ) -> None: ...
    def set_status(self, memory_id: str, status: str) -> None: ...
    def remove(self, memory_id: str) -> None: ...
    def vector(self, memory_id: str) -> Vector | None: ...
    def similarities(self, query: Vector, ids: Collection[str]) -> dict[str, float]: ...
    def search(self, query: VectorQuery) -> list[tuple[str, float]]:
        """The top ``query.k`` rows ``query`` shows, with their cosines, best first:
        ``projects`` given to ``add`` and ``load`` are places (``core.branches.place``)."""

    def bulk_load(self, rows: int) -> AbstractContextManager[None]:
        """The block stores ``rows`` memories with their vectors (an import): the index may put
        its upkeep off till the block ends, whether it ends well or not."""

    def tidy(self) -> bool:
        """Background upkeep (building or merging a graph); whether anything was done."""

    def interrupt(self) -> None:
        """Stop the upkeep under way (closing): the index stays as it was."""


class VectorIndexFiles(Protocol):
    """Where a vector index is kept between runs, with the journal of the memories whose
    vector, status or project the store is about to change (``adapters/vector_files.py``)."""

    @property
    def unsaved(self) -> int: ...
    def will_change(self, ids: Iterable[str]) -> None: ...
    def applied(self, ids: Iterable[str]) -> None: ...
    def save(self, index: VectorIndex, key: str) -> None: ...
    def restore(self, index: VectorIndex, key: str) -> list[str] | None: ...
    def discard(self) -> None: ...
    def close(self) -> None: ...


class EntityGraph(Protocol):
    """Entities (files, MRs, issues, people...) and the ABOUT edges from memories to them."""

    def upsert_entities(self, entities: Sequence[Entity]) -> None:
        """Create or update by key; an empty title keeps the known one."""

    def get_entities(self, keys: Collection[str]) -> dict[str, Entity]: ...
    def find_entities(self, name: str, kinds: Collection[EntityKind]) -> list[Entity]:
        """Entities of ``kinds`` named ``name`` or whose key ends with ``::name``."""

    def all_entities(self) -> Iterable[Entity]: ...
    def link_about(self, pairs: Sequence[tuple[str, Entity]]) -> None:
        """ABOUT edges from memory ids to (already upserted) entities; unknown ends are skipped.
        A new edge to a symbol records the symbol's body hash of now; one there already keeps its."""

    def about(self, memory_ids: Collection[str]) -> dict[str, list[Entity]]: ...
    def about_bodies(self, memory_ids: Collection[str]) -> dict[str, dict[str, str]]:
        """Memory id -> symbol key -> the symbol's body hash its ABOUT edge records: the body when
        the edge was made (``link_about``, ``replace_text``) or the memory's ``updated_at`` last
        moved later (``update_memory``); ``move_about`` carries it. What makes a memory possibly
        stale is its symbol's body differing from it (service/staleness.py). Edges that record
        none (made before schema 14 while flagged, or to a symbol no scan had stored) are left out."""

    def memories_about(self, entity_keys: Collection[str]) -> dict[str, list[str]]: ...
    def remembered(self, keys: Collection[str]) -> set[str]:
        """The keys of ``keys`` that some memory is about, anyone's: on a team's store row-level
        security hides another person's global memories from ``memories_about``. What decides
        whether an entity may go; asked inside the transaction that removes the others (a team's
        store locks them until it ends)."""

    def move_about(self, kind: EntityKind, old: str, new: str) -> list[str]:
        """Make the memories about entity ``old`` about ``new`` instead (both of ``kind``; ``new``
        must be stored), anyone's, each edge with the body it records; the ids of the memories
        moved that the caller sees (none when ``old`` is ``new``)."""


class MemoryLinks(Protocol):
    """Edges between memories: RELATES (with a kind), NEXT (in a session), and both walked."""

    def add_links(self, links: Sequence[Link]) -> None:
        """RELATES edges, merged on (source, target, kind); unknown ends are skipped."""

    def remove_link(self, source: str, target: str, kind: LinkKind) -> bool: ...
    def links(self, memory_ids: Collection[str] | None = None) -> list[Link]:
        """RELATES edges touching ``memory_ids`` (every edge when None), oldest first."""

    def add_next(self, pairs: Sequence[tuple[str, str]]) -> None: ...
    def next_pairs(self, memory_ids: Collection[str] | None = None) -> list[tuple[str, str]]:
        """NEXT edges starting at ``memory_ids`` (every edge when None)."""

    def neighbours(self, memory_ids: Collection[str], limit: int) -> list[Neighbour]:
        """Edges from ``memory_ids`` to other memories, at most ``limit``: NEXT, RELATES, then
        through each shared entity with its fanout (hubs about more than 50 memories skipped)."""


class MemoryHistory(Protocol):
    """Each memory's history: the events that changed it (``core/events.py``)."""

    def add_events(self, events: Sequence[MemoryEvent]) -> None: ...
    def events_of(
        self, memory_id: str, limit: int, *, kinds: Collection[EventKind] | None = None
    ) -> list[MemoryEvent]:
        """Events whose ``memory_id`` or ``other_id`` is ``memory_id``, newest first (stored last
        first); with ``kinds``, only those of these kinds, chosen by the store's query before it
        counts ``limit`` (``core.events.CHANGES``: a memory's repeats never fill the window)."""

    def get_event(self, event_id: str) -> MemoryEvent | None: ...
    def set_undone(self, event_id: str, undone_by: str) -> None: ...
    def all_events(self) -> Iterable[MemoryEvent]:
        """Every event, oldest first."""


class GraphStore(
    StoreMeta, MemoryRecords, MemorySearch, MemoryVectors, EntityGraph, MemoryLinks, MemoryHistory, Protocol
):
    """The graph database: memories, entities and the edges between them (every group above)."""


class StoreLogin(Protocol):
    """The role a shared store logs in with (the PostgreSQL store; the embedded store has none)."""

    def login_role(self) -> LoginRole: ...


class CodeGraph(Protocol):
    """Files, symbols and their edges, stored (see ``adapters/kuzu_code.py``)."""

    def file_states(self, project: str) -> dict[str, FileState]: ...
    def projects(self) -> set[str]:
        """The projects whose code graph holds a live file: one a pass stored and no pass
        since removed."""
        ...

    def load_parsed(self, project: str, paths: Collection[str] | None = None) -> dict[str, ParsedFile]: ...
    def save(self, scan: CodeScan) -> dict[str, int]:
        """Store a pass; the memories about the symbols and files ``scan.moves`` names move to
        their new keys (the old ones are then removed). Returns old key -> memories moved.

        A file or symbol of the pass that the store holds but no pass stored (an entity only:
        an import's, a merge request's changed file) is taken over: it gets the pass's columns
        (its body first seen: no ``body_changed_at``) and keeps what points at it."""
        ...

    def scan_interrupted(self, project: str) -> bool: ...
    def scanned_head(self, project: str) -> str | None:
        """The commit the last pass of ``project`` saw checked out (``CodeScan.head``), if any."""
        ...

    def touch(self, project: str, states: Sequence[FileState]) -> None: ...
    def replace_co_changes(self, project: str, pairs: dict[tuple[str, str], int]) -> None: ...
    def symbols_in(self, project: str, path: str) -> list[SymbolInfo]: ...
    def find_symbols(self, project: str | None, name: str, limit: int = 10) -> list[SymbolInfo]: ...
    def unique_symbols(self, project: str, names: Collection[str]) -> dict[str, SymbolInfo]:
        """name -> the one live symbol of ``project`` whose simple name it is; a name that several
        live symbols share, or none, is left out (one query for all names)."""

    def symbols(self, keys: Collection[str]) -> dict[str, SymbolInfo]: ...
    def calls(
        self, keys: Collection[str], *, incoming: bool, limit: int
    ) -> list[tuple[SymbolInfo, str, str]]: ...
    def imports(self, project: str, path: str, *, incoming: bool, limit: int) -> list[str]: ...
    def co_changes(self, project: str, path: str, limit: int) -> list[tuple[str, int]]: ...
    def deleted_files(self, keys: Collection[str]) -> dict[str, datetime]:
        """File key -> when it left the code, for the files of ``keys`` that did (kept because
        memories are about them)."""
        ...

    def code_links(self, limit: int) -> list[tuple[str, Entity]]:
        """(memory id, entity) for memories about a symbol, or about a deleted file: what can
        make a memory stale. At most ``limit`` pairs."""
        ...

    def remove_unused_modules(self, project: str) -> int:
        """Remove ``project``'s external modules that no file imports and no memory is about
        (anyone's memory, on a team's store); how many went. A module a memory is about stays."""
        ...
