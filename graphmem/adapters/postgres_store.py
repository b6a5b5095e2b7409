"""PostgreSQL implementation of :class:`graphmem.core.ports.GraphStore`: one store a team shares.

Many daemons, CLIs and bots use one database at once, so nothing the store answers comes from
a copy in this process but one: memory records, vector search (pgvector's HNSW,
``postgres_vectors.py``) and graph expansion (``postgres_graph.py``) are queries, and every write
is a transaction that others see whole or not at all. Full-text search is a daemon's index
beside it (``lexical``, ``postgres_lexical.py``), brought up to the database's change feed before
each search, or, while it is not current and in a process without one, the database's own
(``tsvector`` + GIN, ``postgres_text.py``).

The store is composed of parts that each own their state, all over one connection part
(``db``, ``postgres_connection.py``: the pool, transactions, errors translated): ``graph``
(entities and edges, ``postgres_graph.py``), ``history`` (events and expiry,
``postgres_events.py``), ``text`` (full-text search, ``postgres_text.py``) and ``vectors``
(the vector column and its index, ``postgres_embeddings.py``). The memory records are this
module's; the ports of the other parts are delegated to them (``store_parts.StoreParts``).
The other PostgreSQL adapters (code, GitLab, coordination) run their statements through
``db``. The schema and its migrations are ``postgres_schema.py`` and ``postgres_migrate.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import nullcontext
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Unpack

from graphmem.adapters.postgres_connection import PostgresConnection
from graphmem.adapters.postgres_embeddings import PostgresEmbeddings
from graphmem.adapters.postgres_events import PostgresHistory
from graphmem.adapters.postgres_functions import SHARED
from graphmem.adapters.postgres_graph import RECORD_BODIES, PostgresGraph
from graphmem.adapters.postgres_lexical import PostgresLexical
from graphmem.adapters.postgres_migrate import check_schema
from graphmem.adapters.postgres_rows import (
    INSERT_MEMORY,
    MEMORY_RETURN,
    db_value,
    lexemes,
    memory_from_row,
    memory_params,
    vector_param,
    visibility_clause,
)
from graphmem.adapters.postgres_text import PostgresTextSearch
from graphmem.adapters.record_rows import ENUM_READ_CHARS, check_changes, memory_counts
from graphmem.adapters.store_parts import StoreParts
from graphmem.core.dedup import holds_each
from graphmem.core.models import LoginRole, MemoryRecord, Scope
from graphmem.core.ports import NewText, TextHits, TextMatch, Vector, Visibility

log = logging.getLogger(__name__)


class PostgresGraphStore(StoreParts):
    """A graphmem store in a PostgreSQL database (its schema applied by ``graphmem migrate``)."""

    def __init__(
        self,
        url: str,
        *,
        dimension: int,
        password: str | None = None,
        tls: Mapping[str, str | None] | None = None,
        wait: bool = False,
        then: Callable[[PostgresGraphStore], None] | None = None,
        text_index: Path | None = None,
        text_index_background: bool = True,
    ) -> None:
        """``wait`` (a daemon's): a server that does not answer yet is waited for, and the store
        checked (its schema, its vector column, then ``then``) once it answers, each call failing
        with a ``StoreUnavailableError`` meanwhile; else the store is checked, or fails, here.
        ``text_index``: a data folder where a full-text index of the store is kept, which answers
        the searches once built (``postgres_lexical.py``; on a thread unless not
        ``text_index_background``); without it the database answers them."""
        self.db = PostgresConnection(url, password=password, tls=tls, wait=wait)
        self.graph = PostgresGraph(self.db)
        history = PostgresHistory(self.db)
        self.text = PostgresTextSearch(self.db)
        self.vectors = PostgresEmbeddings(self.db, dimension, analysed=self.text.forget_stats)
        super().__init__(
            connection=self.db,
            entities=self.graph,
            links=self.graph,
            history=history,
            scans=history,
            vectors=self.vectors,
        )
        self.lexical: PostgresLexical | None = None
        try:
            self.db.open_with(partial(self._check, dimension, then))
            if text_index is not None:
                self.lexical = PostgresLexical(self, text_index, background=text_index_background)
        except BaseException:
            self.db.close()
            raise

    def _check(self, dimension: int, then: Callable[[PostgresGraphStore], None] | None) -> None:
        check_schema(self.db)
        self.vectors.set_dimension(dimension)
        if then is not None:
            then(self)

    @property
    def where(self) -> str:  # where the store is, as messages name it (no password)
        return self.db.where

    @property
    def path(self) -> str:
        return self.db.where

    @property
    def dimension(self) -> int:
        return self.vectors.dimension

    def close(self) -> None:
        if self.lexical is not None:
            self.lexical.close()
        self.db.close()

    def login_role(self) -> LoginRole:
        """The role this store logs in with (``current_user``: who owns the global memories it
        writes), whether it may store memories, and whether row-level security passes it by."""
        name, writes, sees_all = self.db.rows(
            "SELECT current_user::text, "
            "has_table_privilege('memories', 'INSERT') AND NOT pg_is_in_recovery(), "
            "NOT c.relrowsecurity OR r.rolsuper OR r.rolbypassrls "
            "OR (NOT c.relforcerowsecurity AND pg_has_role(c.relowner, 'USAGE')) "
            "FROM pg_roles r, pg_class c WHERE r.rolname = current_user AND c.oid = 'memories'::regclass"
        )[0]
        return LoginRole(str(name), bool(writes), bool(sees_all))

    # -- memories -------------------------------------------------------------------------

    def add_memories(self, records: Sequence[MemoryRecord], vectors: Vector | None = None) -> None:
        if not records:
            return
        rows = [memory_params(r, None if vectors is None else vectors[i]) for i, r in enumerate(records)]
        with self.db.transaction():
            self.db.many(INSERT_MEMORY, rows)

    def get_memories(self, ids: Collection[str]) -> dict[str, MemoryRecord]:
        if not ids:
            return {}
        wanted = list(dict.fromkeys(ids))
        rows = self.db.rows(f"SELECT {MEMORY_RETURN} FROM memories m WHERE m.id = ANY(%s)", (wanted,))
        found = {record.id: record for record in map(memory_from_row, rows)}
        return {i: found[i] for i in wanted if i in found}

    def shared_memories(self, ids: Collection[str]) -> set[str]:
        """Project memories and team-wide global ones: ``SHARED``, who sees a memory besides its writer."""
        if not ids:
            return set()
        rows = self.db.rows(f"SELECT id FROM memories WHERE id = ANY(%s) AND ({SHARED})", (list(set(ids)),))
        return {str(row[0]) for row in rows}

    def shared_scopes(self) -> frozenset[Scope]:
        """``SHARED`` of a memory the caller writes: a project one; a global one is owned by its
        writer (``owner`` defaults to the role writing it), so only they see it."""
        return frozenset({Scope.PROJECT})

    def find_by_hash(self, content_hash: str) -> list[MemoryRecord]:
        rows = self.db.rows(
            f"SELECT {MEMORY_RETURN} FROM memories m WHERE m.content_hash = %s ORDER BY m.id", (content_hash,)
        )
        return [memory_from_row(row) for row in rows]

    def find_by_hashes(self, content_hashes: Collection[str]) -> dict[str, list[MemoryRecord]]:
        if not content_hashes:
            return {}
        rows = self.db.rows(
            f"SELECT {MEMORY_RETURN} FROM memories m WHERE m.content_hash = ANY(%s) ORDER BY m.id",
            (list(set(content_hashes)),),
        )
        found: dict[str, list[MemoryRecord]] = {}
        for record in map(memory_from_row, rows):
            found.setdefault(record.content_hash, []).append(record)
        return found

    def update_memory(self, memory_id: str, changes: Mapping[str, object]) -> None:
        check_changes(changes)
        if not changes:
            return
        params: dict[str, Any] = {"id": memory_id}
        sets = []
        for name, value in changes.items():  # names are UPDATABLE columns (check_changes), never input
            if name == "embedding":
                sets.append("embedding = %(embedding)s::vector")
                params[name] = None if value is None else vector_param(value)  # type: ignore[arg-type]
            else:
                sets.append(f"{name} = %({name})s")
                params[name] = db_value(value)
        later = "updated_at" in changes  # written or confirmed later: against the bodies of now
        with self.db.transaction() if later else nullcontext():
            if later:
                self.db.run(RECORD_BODIES, params)
            self.db.run(f"UPDATE memories SET {', '.join(sets)} WHERE id = %(id)s", params)

    def replace_text(self, memory_id: str, **new: Unpack[NewText]) -> None:
        with self.db.transaction():
            changed = self.db.run(
                "UPDATE memories SET text = %(text)s, content_hash = %(hash)s, updated_at = %(at)s, "
                "terms = %(terms)s::tsvector, embedding = NULL WHERE id = %(id)s",
                {
                    "id": memory_id,
                    "text": new["text"],
                    "hash": new["content_hash"],
                    "at": db_value(new["updated_at"]),
                    "terms": lexemes(new["text"]),
                },
            )
            if not changed:
                return
            self.db.run("DELETE FROM about WHERE memory_id = %s", (memory_id,))
            entities = new["entities"]
            if entities:
                self.upsert_entities(entities)
                self.link_about([(memory_id, entity) for entity in entities])

    def delete_memory(self, memory_id: str) -> None:
        self.db.run("DELETE FROM memories WHERE id = %s", (memory_id,))  # its edges go with it

    def list_memories(self, visibility: Visibility, *, limit: int, offset: int = 0) -> list[MemoryRecord]:
        where, params = visibility_clause(visibility)
        params.update(limit=max(limit, 0), offset=max(offset, 0))
        rows = self.db.rows(
            f"SELECT {MEMORY_RETURN} FROM memories m WHERE {where} "
            "ORDER BY m.created_at DESC, m.id LIMIT %(limit)s OFFSET %(offset)s",
            params,
        )
        return [memory_from_row(row) for row in rows]

    def all_memories(self, project: str | None = None) -> Iterable[MemoryRecord]:
        where = "WHERE m.project = %(p)s" if project is not None else ""
        rows = self.db.rows(
            f"SELECT {MEMORY_RETURN} FROM memories m {where} ORDER BY m.created_at, m.id", {"p": project}
        )
        return [memory_from_row(row) for row in rows]

    def total_memories(self) -> int:
        return int(self.db.rows("SELECT count(*) FROM memories")[0][0])

    def count_memories(self) -> dict[tuple[str, str, str], int]:
        rows = self.db.rows(
            f"SELECT left(category, {ENUM_READ_CHARS}), left(scope, {ENUM_READ_CHARS}), project IS NOT NULL, "
            f"left(status, {ENUM_READ_CHARS}), count(*) FROM memories GROUP BY 1, 2, 3, 4"
        )
        return memory_counts(rows)

    def projects(self) -> dict[str, datetime]:
        # One probe of the (project, created_at) index a project, not a read of every memory: a
        # team's store is asked each time a checkout's name is bound (service/project_names.py).
        rows = self.db.rows(
            "SELECT n.project, (SELECT min(m.created_at) FROM memories m WHERE m.project = n.project) "
            "FROM (WITH RECURSIVE names(project) AS ("
            " (SELECT project FROM memories WHERE project IS NOT NULL ORDER BY project LIMIT 1)"
            " UNION ALL SELECT (SELECT m.project FROM memories m WHERE m.project > names.project"
            " ORDER BY m.project LIMIT 1) FROM names WHERE names.project IS NOT NULL"
            ") SELECT project FROM names WHERE project IS NOT NULL) n"
        )
        return {str(project): made.astimezone(UTC) for project, made in rows}

    def last_in_session(self, session: str) -> str | None:
        rows = self.db.rows(
            "SELECT id FROM memories WHERE session = %s ORDER BY created_at DESC, seq DESC LIMIT 1",
            (session,),
        )
        return str(rows[0][0]) if rows else None

    # -- the other parts' ports, delegated ------------------------------------------------------

    def pending_embeddings(self, limit: int) -> list[tuple[str, str]]:
        return self.vectors.pending_embeddings(limit)

    def count_pending_embeddings(self) -> int:
        return self.vectors.count_pending_embeddings()

    def set_embeddings(self, ids: Sequence[str], vectors: Vector) -> None:
        self.vectors.set_embeddings(ids, vectors)

    def clear_embeddings(self, dimension: int) -> None:
        self.vectors.clear_embeddings(dimension)

    def search_text(
        self, query: str, visibility: Visibility, limit: int, *, phrase: str | None = None
    ) -> TextHits:
        indexed = self.lexical and self.lexical.search_text_near(query, visibility, limit, None, phrase)
        return indexed[0] if indexed else self.text.search_text(query, visibility, limit, phrase=phrase)

    @property
    def full_text_search(self) -> str:
        return "database" if self.lexical is None else self.lexical.answering

    @property
    def cosines_with_words(self) -> bool:
        """Whether ``search_text_near`` reads the hits' cosines in its search's own statement: the
        database's search does; the daemon's index, once it answers, finds its hits without the
        vector and reads their cosines in a statement after (``NearTextSearch``)."""
        return self.lexical is None or self.lexical.answering != "index"

    def search_text_near(
        self, query: str, visibility: Visibility, limit: int, vector: Vector, *, phrase: str | None = None
    ) -> tuple[TextHits, dict[str, float]]:
        """``search_text`` with each hit's cosine to ``vector`` (``NearTextSearch``): in the database's
        search statement, or by the index's hits' ids in one statement after it."""
        indexed = self.lexical and self.lexical.search_text_near(query, visibility, limit, vector, phrase)
        return indexed or self.text.search_text_near(query, visibility, limit, vector, phrase=phrase)

    def text_matches(
        self, query: str, visibility: Visibility, limit: int, *, holding: Sequence[Collection[str]] = ()
    ) -> list[TextMatch]:
        indexed = self.lexical.text_matches(query, visibility, limit, holding) if self.lexical else None
        if indexed is not None:
            return indexed
        # Filtered after the search: a memory's ``terms`` keep its first words only (``MAX_POSITION``).
        return [m for m in self.text.text_matches(query, visibility, limit) if holds_each(m.text, holding)]
