"""The one door to the store: every text that reaches it passes ``core.redaction`` here.

``MemoryService`` wraps the store it is given in a ``RedactingStore`` and ``Enricher``
wraps its GitLab graph in a ``RedactingGitLabGraph`` before anything else sees them, so
every write path -- remember, edit, import, ``/rpc``, bootstrap (docs, manifests, commit
messages), GitLab titles and descriptions, session ingest, the LLM extractor's output,
and any path added later -- writes through these two classes. Each write method of the
ports (``core/ports.py``) is defined here and redacts the text it carries: memory text,
source and origin, entity keys, names and titles, GitLab titles, descriptions, labels,
milestones and error notes. Reads pass through unchanged (``Door.__getattr__``).

Callers that derive keys or ids from text redact it first (``remember``, ``bootstrap``),
so a key never holds what the text loses; here a record's content hash is recomputed
when redaction changed a text it was computed from. ``tests/unit/test_architecture.py``
checks that every write method of the ports is defined here and calls ``redact``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any, Generic, TypeVar, Unpack

from graphmem.core.dedup import memory_hash
from graphmem.core.enrichment import Attempt
from graphmem.core.events import MemoryEvent
from graphmem.core.gitlab import EpicData, IssueRefData, MergeRequestData
from graphmem.core.gitlab_edits import GitLabData, GitLabEdit
from graphmem.core.gitlab_ports import GitLabGraph
from graphmem.core.models import Entity, EntityKind, Link, LinkKind, MemoryRecord
from graphmem.core.ports import GraphStore, NewText, Vector
from graphmem.core.redaction import redact

# Port methods that only read: they pass through. Every other method of ``GraphStore``
# and ``GitLabGraph`` writes and must be defined on the door below (the architecture
# test fails otherwise), so a write method added to a port cannot skip redaction.
STORE_READS = frozenset(
    {
        "close", "get_meta", "get_memories", "shared_memories", "shared_scopes", "find_by_hash",
        "find_by_hashes", "list_memories", "all_memories", "count_memories", "total_memories", "projects",
        "last_in_session", "expiring", "next_expiry",
        "full_text_search", "search_text", "text_matches",
        "pending_embeddings", "count_pending_embeddings", "load_vectors", "count_vectors", "embedding_of",
        "get_entities", "find_entities", "all_entities", "about", "about_bodies", "memories_about",
        "remembered", "links", "next_pairs", "neighbours",
        "events_of", "get_event", "all_events", "branch_memories",
    }
)  # fmt: skip
GITLAB_READS = frozenset(
    {
        "rows", "all_rows", "due", "counts", "waiting", "entities", "merge_request", "issue", "epic",
        "merge_requests_closing", "changed_by", "changed_symbols", "related_edges",
    }
)  # fmt: skip
# Write methods whose arguments carry no text (ids, vectors, dimensions): defined on the
# door to say so, they pass their arguments on as they are.
NO_TEXT_WRITES = frozenset(
    {
        "delete_memory", "set_embeddings", "clear_embeddings", "add_links", "remove_link", "add_next",
        "transaction", "set_undone",
    }
)  # fmt: skip


def _clean_optional(text: str | None) -> str | None:
    return None if text is None else redact(text).text


def redact_record(record: MemoryRecord) -> MemoryRecord:
    """``record`` with its text, source and origin redacted; the content hash follows the text."""
    text, source = redact(record.text).text, redact(record.source).text
    origin = _clean_optional(record.origin)
    if (text, source, origin) == (record.text, record.source, record.origin):
        return record
    digest = record.content_hash
    if text != record.text and digest == memory_hash(record.scope, record.project, record.text):
        digest = memory_hash(record.scope, record.project, text)
    return replace(record, text=text, source=source, origin=origin, content_hash=digest)


def redact_entity(entity: Entity) -> Entity:
    """``entity`` with its key, name and title redacted (the same key always redacts alike)."""
    key, name, title = redact(entity.key).text, redact(entity.name).text, redact(entity.title).text
    if (key, name, title) == (entity.key, entity.name, entity.title):
        return entity
    return replace(entity, key=key, name=name, title=title)


def redact_event(event: MemoryEvent) -> MemoryEvent:
    """``event`` with its reason and every text its states hold redacted."""
    return replace(
        event,
        reason=redact(event.reason).text,
        before=_redact_json(event.before),
        after=_redact_json(event.after),
    )


def _redact_json(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value).text
    if isinstance(value, list):
        return [_redact_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _redact_json(v) for k, v in value.items()}
    return value


def redact_changes(changes: Mapping[str, object]) -> dict[str, object]:
    """Field changes with every plain string value redacted (enums and times pass)."""
    return {
        field: redact(value).text if type(value) is str else value  # str enums pass
        for field, value in changes.items()
    }


Port = TypeVar("Port")


class Door(Generic[Port]):
    """A port behind the door: a subclass defines the port's write methods, each redacting
    what it writes; every other attribute (the reads) passes to ``inner`` unchanged."""

    def __init__(self, inner: Port) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class RedactingStore(Door[GraphStore]):
    """A ``GraphStore`` whose write methods redact what they write (see the module doc); its
    reads (``STORE_READS``) pass through."""

    # -- writes that carry text ----------------------------------------------------
    def set_meta(self, key: str, value: str) -> None:
        self.inner.set_meta(key, redact(value).text)

    def add_memories(self, records: Sequence[MemoryRecord], vectors: Vector | None = None) -> None:
        self.inner.add_memories([redact_record(r) for r in records], vectors)

    def update_memory(self, memory_id: str, changes: Mapping[str, object]) -> None:
        self.inner.update_memory(memory_id, redact_changes(changes))

    def replace_text(self, memory_id: str, **new: Unpack[NewText]) -> None:
        text, content_hash = new["text"], new["content_hash"]
        clean_text = redact(text).text
        if clean_text != text:
            stored = self.inner.get_memories([memory_id]).get(memory_id)
            if stored is not None and content_hash == memory_hash(stored.scope, stored.project, text):
                content_hash = memory_hash(stored.scope, stored.project, clean_text)
        self.inner.replace_text(
            memory_id,
            text=clean_text,
            content_hash=content_hash,
            updated_at=new["updated_at"],
            entities=[redact_entity(e) for e in new["entities"]],
        )

    def add_events(self, events: Sequence[MemoryEvent]) -> None:
        self.inner.add_events([redact_event(e) for e in events])

    def upsert_entities(self, entities: Sequence[Entity]) -> None:
        self.inner.upsert_entities([redact_entity(e) for e in entities])

    def link_about(self, pairs: Sequence[tuple[str, Entity]]) -> None:
        self.inner.link_about([(memory_id, redact_entity(e)) for memory_id, e in pairs])

    def move_about(self, kind: EntityKind, old: str, new: str) -> list[str]:
        # Keys are stored redacted (``redact_entity``); redacting one twice changes nothing.
        return self.inner.move_about(kind, redact(old).text, redact(new).text)

    # -- writes that carry no text -----------------------------------------------
    def delete_memory(self, memory_id: str) -> None:
        self.inner.delete_memory(memory_id)

    def set_embeddings(self, ids: Sequence[str], vectors: Vector) -> None:
        self.inner.set_embeddings(ids, vectors)

    def clear_embeddings(self, dimension: int) -> None:
        self.inner.clear_embeddings(dimension)

    def add_links(self, links: Sequence[Link]) -> None:
        self.inner.add_links(links)

    def remove_link(self, source: str, target: str, kind: LinkKind) -> bool:
        return self.inner.remove_link(source, target, kind)

    def add_next(self, pairs: Sequence[tuple[str, str]]) -> None:
        self.inner.add_next(pairs)

    def transaction(self) -> AbstractContextManager[None]:
        """The inner store's transaction: the writes inside still pass this door."""
        return self.inner.transaction()

    def set_undone(self, event_id: str, undone_by: str) -> None:
        self.inner.set_undone(event_id, undone_by)


def guard_store(store: GraphStore) -> GraphStore:
    """``store`` behind the door (once: a guarded store is returned as it is)."""
    return store if isinstance(store, RedactingStore) else RedactingStore(store)


# -- GitLab ------------------------------------------------------------------------


def _refs(refs: tuple[IssueRefData, ...]) -> tuple[IssueRefData, ...]:
    return tuple(replace(r, title=redact(r.title).text) for r in refs)


def redact_gitlab(data: GitLabData) -> GitLabData:
    """GitLab's answer with its title, description, labels, milestone, an MR's branches and the
    titles of the issues it names (closed, or an epic's children) redacted."""
    texts: dict[str, Any] = {
        "title": redact(data.title).text,
        "description": redact(data.description).text,
        "labels": tuple(redact(label).text for label in data.labels),
    }
    if isinstance(data, MergeRequestData):
        source, target = redact(data.source_branch).text, redact(data.target_branch).text
        texts |= {"source_branch": source, "target_branch": target, "closes": _refs(data.closes)}
    if isinstance(data, EpicData):
        texts["child_issues"] = _refs(data.child_issues)
    else:
        texts["milestone"] = _clean_optional(data.milestone)
    return replace(data, **texts)


class RedactingGitLabGraph(Door[GitLabGraph]):
    """A ``GitLabGraph`` whose saves redact GitLab's text (see the module doc); its reads
    (``GITLAB_READS``) pass through."""

    def mark(self, key: str, attempt: Attempt) -> None:
        self.inner.mark(key, replace(attempt, error=_clean_optional(attempt.error)))

    def queue(self, entities: Sequence[Entity]) -> None:
        self.inner.queue([redact_entity(e) for e in entities])

    def apply(self, edit: GitLabEdit) -> None:
        """``edit`` with GitLab's texts redacted: the answer's, and the titles of what it names."""
        facts = replace(edit.facts, data=redact_gitlab(edit.facts.data))
        nodes = tuple(replace(node, title=redact(node.title).text) for node in edit.nodes)
        self.inner.apply(replace(edit, facts=facts, nodes=nodes))


def guard_gitlab(graph: GitLabGraph) -> GitLabGraph:
    """``graph`` behind the door (once)."""
    return graph if isinstance(graph, RedactingGitLabGraph) else RedactingGitLabGraph(graph)
