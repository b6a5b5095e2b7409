"""The PostgreSQL schema of graphmem, as numbered migrations that apply and roll back.

Each migration is a pair of SQL scripts: ``up`` takes the schema from version ``n - 1`` to
``n``, ``down`` back. ``graphmem migrate`` applies them (``--to N`` rolls back to N); each runs
in its own transaction with the version it reaches, under an advisory lock, so two daemons
that migrate at once do it once. The version is in ``graphmem_migrations``; a store opened by
an older graphmem than its schema refuses to run (``StoreMismatchError``). docs/team.md says
what each table holds.

Vectors are pgvector's ``vector`` (its dimension set by the store, ``PostgresGraphStore``,
from the embedding model, with an HNSW index for cosine distance); the lexical channel's
``terms`` are a ``tsvector`` the store writes from graphmem's own analysis (folded, stemmed,
positions kept) with a GIN index.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphmem.adapters.postgres_feed import CHANGE_FEED_18, UNDO_CHANGE_FEED_18
from graphmem.adapters.postgres_functions import (
    ANSWER_ONLY_WHAT_IS_SEEN_10,
    APPEND_ONLY_16,
    CONFIRMED_BY_21,
    MOVE_ABOUT_9,
    PERSON_SET_13,
    RECORDED_BODIES_14,
    RECORDED_CHANGES_20,
    REMEMBERED_8,
    SCOPES_HELD_22,
    SESSIONS_HELD_17,
    TERM_STATS_7,
    UNDO_10,
    UNDO_14,
    UNDO_16,
    UNDO_CONFIRMED_BY_21,
    UNDO_RECORDED_CHANGES_20,
    UNDO_SCOPES_HELD_22,
    UNDO_SESSIONS_HELD_17,
)
from graphmem.adapters.postgres_recorded import COUNT_RECORDED_23, UNDO_COUNT_RECORDED_23
from graphmem.adapters.postgres_vector_parts import DROP_HALF_INDEX_12, HALF_INDEX_12, PARTS_19, UNDO_PARTS_19

# Taken by a migration (and by a store that sets its vector column up) so that two processes
# never change the schema at once: pg_advisory_xact_lock's key.
SCHEMA_LOCK_KEY = 0x6772_6D65  # "grme"
# The row size past which PostgreSQL moves a memory's largest values out of its row (schema
# 11): its largest allowed, a page's worth (TOAST_TUPLE_TARGET_MAIN).
ROW_TARGET_BYTES = 8160


# Who sees a memory (schema 6): everyone sees project memories and the global ones from before
# schema 6 (no owner); a global memory written since, only the role that wrote it.
SEEN = "scope <> 'global' OR owner IS NULL OR owner = current_user::text"


# Schema 15: who an entity is private to (NULL: the team's). Of the entities from before, those only
# global memories with an owner are about, that no scan (a file, symbol or module of a checkout) or
# GitLab (a person) stored, are their memories' owner's (the first, by name, when several people's:
# each of the others sees it through their own memory). The code graph's and GitLab's are the team's.
ENTITY_OWNERS_15 = """
ALTER TABLE entities ADD COLUMN owner text;
UPDATE entities e SET owner = p.owner FROM (
    SELECT a.entity_key, min(m.owner) AS owner FROM about a JOIN memories m ON m.id = a.memory_id
    GROUP BY a.entity_key HAVING bool_and(m.scope = 'global' AND m.owner IS NOT NULL)
) p
WHERE e.key = p.entity_key AND e.kind <> 'ExternalModule'
    AND NOT EXISTS (SELECT FROM code_files f WHERE f.key = e.key)
    AND NOT EXISTS (SELECT FROM code_symbols s WHERE s.key = e.key)
    AND NOT EXISTS (SELECT FROM gitlab_people g WHERE g.key = e.key);
CREATE INDEX entities_owner ON entities (owner) WHERE owner IS NOT NULL;
"""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    summary: str
    up: str
    down: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "memories, their edges, entities and history",
        up="""
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE graphmem_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE memories (
    id text PRIMARY KEY,
    text text NOT NULL,
    category text NOT NULL,
    scope text NOT NULL,
    project text,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    valid_from timestamptz NOT NULL,
    valid_to timestamptz,
    status text NOT NULL,
    content_hash text NOT NULL,
    source text NOT NULL,
    session text,
    reinforced bigint NOT NULL DEFAULT 0,
    origin text,
    trust text NOT NULL,
    expires_at timestamptz,
    seq bigserial NOT NULL,
    terms tsvector NOT NULL,
    embedding vector
);
CREATE INDEX memories_terms ON memories USING gin (terms);
CREATE INDEX memories_hash ON memories (content_hash);
CREATE INDEX memories_created ON memories (created_at DESC, id);
CREATE INDEX memories_project ON memories (project, created_at DESC);
CREATE INDEX memories_session ON memories (session, created_at DESC, seq DESC) WHERE session IS NOT NULL;
CREATE INDEX memories_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX memories_pending ON memories (seq) WHERE embedding IS NULL;
CREATE TABLE entities (
    key text PRIMARY KEY,
    kind text NOT NULL,
    name text NOT NULL,
    project text,
    title text NOT NULL DEFAULT ''
);
CREATE INDEX entities_name ON entities (name);
CREATE TABLE about (
    memory_id text NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    entity_key text NOT NULL REFERENCES entities (key) ON DELETE CASCADE,
    PRIMARY KEY (memory_id, entity_key)
);
CREATE INDEX about_entity ON about (entity_key);
CREATE TABLE links (
    source text NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    target text NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    kind text NOT NULL,
    created_at timestamptz NOT NULL,
    seq bigserial NOT NULL,
    PRIMARY KEY (source, target, kind)
);
CREATE INDEX links_target ON links (target);
CREATE TABLE next_links (
    source text NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    target text NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    PRIMARY KEY (source, target)
);
CREATE INDEX next_links_target ON next_links (target);
CREATE TABLE memory_events (
    id text PRIMARY KEY,
    memory_id text NOT NULL,
    other_id text,
    at timestamptz NOT NULL,
    kind text NOT NULL,
    actor text NOT NULL,
    rule text,
    reason text NOT NULL,
    before jsonb NOT NULL,
    after jsonb NOT NULL,
    undoes text,
    undone_by text,
    seq bigserial NOT NULL
);
CREATE INDEX memory_events_memory ON memory_events (memory_id, seq DESC);
CREATE INDEX memory_events_other ON memory_events (other_id, seq DESC) WHERE other_id IS NOT NULL;
""",
        down="""
DROP TABLE memory_events;
DROP TABLE next_links;
DROP TABLE links;
DROP TABLE about;
DROP TABLE entities;
DROP TABLE memories;
DROP TABLE graphmem_meta;
""",
    ),
    Migration(
        2,
        "the code graph: files, symbols and their edges",
        up="""
ALTER TABLE about ADD COLUMN body_hash text;
CREATE TABLE code_files (
    key text PRIMARY KEY REFERENCES entities (key) ON DELETE CASCADE,
    project text NOT NULL,
    path text NOT NULL,
    language text,
    content_hash text,
    size bigint,
    mtime_ns bigint,
    error_count bigint,
    parsed text,
    scanned_at timestamptz,
    deleted_at timestamptz
);
CREATE INDEX code_files_project ON code_files (project, path);
CREATE TABLE code_symbols (
    key text PRIMARY KEY REFERENCES entities (key) ON DELETE CASCADE,
    project text NOT NULL,
    path text NOT NULL,
    kind text NOT NULL,
    name text NOT NULL,
    qualified_name text NOT NULL,
    start_line bigint NOT NULL,
    end_line bigint NOT NULL,
    signature text NOT NULL,
    docstring text,
    body_hash text NOT NULL,
    body_changed_at timestamptz,
    deleted_at timestamptz
);
CREATE INDEX code_symbols_path ON code_symbols (project, path, start_line);
CREATE INDEX code_symbols_name ON code_symbols (name);
CREATE INDEX code_symbols_qualified ON code_symbols (qualified_name);
CREATE TABLE code_edges (
    kind text NOT NULL,
    source text NOT NULL REFERENCES entities (key) ON DELETE CASCADE,
    target text NOT NULL REFERENCES entities (key) ON DELETE CASCADE,
    project text NOT NULL,
    confidence text,
    PRIMARY KEY (kind, source, target)
);
CREATE INDEX code_edges_target ON code_edges (kind, target);
CREATE INDEX code_edges_project ON code_edges (project, kind);
CREATE TABLE co_changes (
    a text NOT NULL REFERENCES entities (key) ON DELETE CASCADE,
    b text NOT NULL REFERENCES entities (key) ON DELETE CASCADE,
    project text NOT NULL,
    count bigint NOT NULL,
    PRIMARY KEY (a, b)
);
CREATE INDEX co_changes_b ON co_changes (b);
CREATE INDEX co_changes_project ON co_changes (project);
""",
        down="""
DROP TABLE co_changes;
DROP TABLE code_edges;
DROP TABLE code_symbols;
DROP TABLE code_files;
ALTER TABLE about DROP COLUMN body_hash;
""",
    ),
    Migration(
        3,
        "GitLab: merge requests, issues, epics, people and their edges",
        up="""
CREATE TABLE gitlab_nodes (
    key text PRIMARY KEY REFERENCES entities (key) ON DELETE CASCADE,
    state text,
    error text,
    attempts bigint NOT NULL DEFAULT 0,
    fetched_at timestamptz,
    next_attempt timestamptz,
    hops bigint NOT NULL DEFAULT 0,
    data jsonb,
    gl_state text,
    updated_at timestamptz,
    merged_at timestamptz
);
CREATE INDEX gitlab_nodes_due ON gitlab_nodes (state, next_attempt);
CREATE TABLE gitlab_people (
    key text PRIMARY KEY REFERENCES entities (key) ON DELETE CASCADE,
    username text NOT NULL,
    name text NOT NULL DEFAULT '',
    web_url text NOT NULL DEFAULT ''
);
CREATE TABLE gitlab_edges (
    rel text NOT NULL,
    source text NOT NULL REFERENCES entities (key) ON DELETE CASCADE,
    target text NOT NULL REFERENCES entities (key) ON DELETE CASCADE,
    PRIMARY KEY (rel, source, target)
);
CREATE INDEX gitlab_edges_source ON gitlab_edges (source);
CREATE INDEX gitlab_edges_target ON gitlab_edges (target);
CREATE INDEX entities_kind ON entities (kind, key);
""",
        down="""
DROP INDEX entities_kind;
DROP TABLE gitlab_edges;
DROP TABLE gitlab_people;
DROP TABLE gitlab_nodes;
""",
    ),
    Migration(
        4,
        "the branch a memory was written on",
        up="""
ALTER TABLE memories ADD COLUMN branch text;
CREATE INDEX memories_branch ON memories (project, branch) WHERE branch IS NOT NULL;
""",
        down="""
DROP INDEX memories_branch;
ALTER TABLE memories DROP COLUMN branch;
""",
    ),
    Migration(
        5,
        "agent sessions and their claims",
        up="""
CREATE TABLE agent_sessions (
    id text PRIMARY KEY,
    agent text NOT NULL,
    project text,
    task text,
    started_at timestamptz NOT NULL,
    last_seen timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX agent_sessions_expiry ON agent_sessions (expires_at);
CREATE TABLE agent_claims (
    project_key text NOT NULL,
    item text NOT NULL,
    project text,
    session text NOT NULL REFERENCES agent_sessions (id) ON DELETE CASCADE,
    agent text NOT NULL,
    claimed_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (project_key, item)
);
CREATE INDEX agent_claims_session ON agent_claims (session);
""",
        down="""
DROP TABLE agent_claims;
DROP TABLE agent_sessions;
""",
    ),
    Migration(
        6,
        "global memories belong to the role that wrote them (row-level security)",
        # Memories from before keep owner NULL: team-global, seen by everyone as they were.
        # The owner role and superusers bypass the policies (they administer the store).
        up=f"""
ALTER TABLE memories ADD COLUMN owner text;
ALTER TABLE memories ALTER COLUMN owner SET DEFAULT current_user;
CREATE INDEX memories_owner ON memories (owner) WHERE scope = 'global';
ALTER TABLE memory_events ADD COLUMN owner text;
ALTER TABLE memories ENABLE ROW LEVEL SECURITY;
CREATE POLICY graphmem_seen ON memories USING ({SEEN});
CREATE POLICY graphmem_written_by_self ON memories AS RESTRICTIVE FOR INSERT
    WITH CHECK (owner = current_user::text);
ALTER TABLE memory_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY graphmem_seen ON memory_events USING (owner IS NULL OR owner = current_user::text);
ALTER TABLE about ENABLE ROW LEVEL SECURITY;
CREATE POLICY graphmem_seen ON about USING (EXISTS (SELECT FROM memories m WHERE m.id = about.memory_id));
ALTER TABLE links ENABLE ROW LEVEL SECURITY;
CREATE POLICY graphmem_seen ON links USING (EXISTS (SELECT FROM memories m WHERE m.id = links.source)
    AND EXISTS (SELECT FROM memories m WHERE m.id = links.target));
ALTER TABLE next_links ENABLE ROW LEVEL SECURITY;
CREATE POLICY graphmem_seen ON next_links
    USING (EXISTS (SELECT FROM memories m WHERE m.id = next_links.source)
    AND EXISTS (SELECT FROM memories m WHERE m.id = next_links.target));
""",
        down="""
DROP POLICY graphmem_seen ON next_links;
ALTER TABLE next_links DISABLE ROW LEVEL SECURITY;
DROP POLICY graphmem_seen ON links;
ALTER TABLE links DISABLE ROW LEVEL SECURITY;
DROP POLICY graphmem_seen ON about;
ALTER TABLE about DISABLE ROW LEVEL SECURITY;
DROP POLICY graphmem_seen ON memory_events;
ALTER TABLE memory_events DISABLE ROW LEVEL SECURITY;
DROP POLICY graphmem_written_by_self ON memories;
DROP POLICY graphmem_seen ON memories;
ALTER TABLE memories DISABLE ROW LEVEL SECURITY;
ALTER TABLE memory_events DROP COLUMN owner;
DROP INDEX memories_owner;
ALTER TABLE memories DROP COLUMN owner;
""",
    ),
    Migration(
        7,
        "the word statistics of the full-text search, for every role (a SECURITY DEFINER function)",
        # pg_stats shows a table under row-level security to the roles that bypass it only: the
        # writer and reader roles counted each query word's memories instead (COUNT_MAX rows a
        # word). The function runs as the schema's owner and returns the statistics of the
        # ``terms`` column: the most common words of all memories and their shares, never a
        # memory. Its schema is written in at creation (its search_path is pinned, as a
        # SECURITY DEFINER function's must be, so current_schema() would not find it).
        up=TERM_STATS_7,
        down="""
DROP FUNCTION graphmem_term_stats();
""",
    ),
    Migration(
        8,
        "which entities any memory is about, for every role (a SECURITY DEFINER function)",
        # Row-level security hides another person's global memories and their ``about`` rows, so
        # a pass of the code graph took a file or symbol only they remember for one nobody does,
        # deleted it, and the foreign key took their link with it. The function runs as the
        # schema's owner and answers, of the keys it is given, those some memory is about:
        # never which memory, nor anything of it. ``row_security = off`` makes a role that row-
        # level security would still apply to (FORCE ROW LEVEL SECURITY) fail rather than be
        # answered from its own memories. EXECUTE is every role's (PUBLIC), as for
        # graphmem_term_stats(); granted here so that default privileges cannot take it away.
        up=REMEMBERED_8,
        down="""
DROP FUNCTION graphmem_remembered(text[]);
""",
    ),
    Migration(
        9,
        "every memory's links follow a moved file or symbol, for every writer (a SECURITY DEFINER function)",
        # A code scan that saw a symbol or file move (or a project take a new name) moved the
        # links this role sees; another person's global memories, hidden by row-level security,
        # stayed on the old node, marked deleted, and nobody's later scan would move them. The
        # function moves every link from ``from_key`` to ``to_key`` (both entities of ``entity_kind``) and
        # answers how many, never which. It may change rows the caller cannot see, so only a
        # role that may write ``about`` itself (the writer role, not the read-only one) may run it.
        up=MOVE_ABOUT_9,
        down="""
DROP FUNCTION graphmem_move_about(text, text, text);
""",
    ),
    Migration(
        10,
        "only an administrator changes a memory's owner; the functions answer only what the caller sees",
        # The policies' USING was their WITH CHECK: a writer could make his global memory
        # team-wide (owner NULL) or take a team-wide one. The word statistics were every
        # memory's (a private memory's words among them), and a move counted every link moved
        # (whether a hidden memory was about a ref). postgres_functions.py has the SQL and why.
        up=ANSWER_ONLY_WHAT_IS_SEEN_10,
        down=UNDO_10,
    ),
    Migration(
        11,
        "a memory's vector stays in its row (toast_tuple_target), where recall reads it",
        # pgvector stores a vector EXTERNAL: past PostgreSQL's 2 KB a row, it moved to the
        # TOAST table, and at 384 dimensions every memory's row was past it (2.2 KB). Each
        # cosine a search returns then read the vector through the TOAST index: the HNSW
        # search's 100 hits took 10 ms in the server instead of 3.6 at 100,000 memories.
        # Rows up to a page stay whole now. Rows written before keep their vector where it is
        # until rewritten (`VACUUM FULL memories`, docs/team.md).
        up=f"ALTER TABLE memories SET (toast_tuple_target = {ROW_TARGET_BYTES});",
        down="ALTER TABLE memories RESET (toast_tuple_target);",
    ),
    Migration(
        12,
        "the HNSW index holds the vectors at half precision (halfvec), searched with the full ones",
        # An index over ``embedding::halfvec(n)`` is about half the size (112 instead of 196 MB
        # at 100,000 memories of 384 dimensions): a search reads fewer pages (1,100 instead of
        # 1,250-1,900 at ef_search 100) and its distances cost less; the cosines a search returns
        # are still the stored vectors' own. The index is built again here (about two minutes at
        # 100,000 memories, the table locked for writes meanwhile); a store whose column has no
        # dimension yet gets it from the store at open (postgres_embeddings.py).
        up=HALF_INDEX_12,
        down=DROP_HALF_INDEX_12,
    ),
    Migration(
        13,
        "who made each change: the person (role) of each history event and agent session",
        # A team's history said "user" for every person's change, and any member's client could
        # end another's agent session or release its claims. Events and sessions from before keep
        # person NULL (not known); a session's ``owner`` is its client (core/coordination.py). A
        # forced end or release of another's session is a row of ``agent_overrides``.
        up="""
ALTER TABLE memory_events ADD COLUMN person text;
ALTER TABLE agent_sessions ADD COLUMN owner text;
ALTER TABLE agent_sessions ADD COLUMN person text;
CREATE TABLE agent_overrides (
    seq bigserial PRIMARY KEY,
    at timestamptz NOT NULL,
    act text NOT NULL,
    session text NOT NULL,
    agent text NOT NULL,
    item text,
    holder text,
    person text NOT NULL
);
"""
        + PERSON_SET_13,
        down="""
DROP TABLE agent_overrides;
DROP TRIGGER graphmem_person_set ON agent_sessions;
DROP TRIGGER graphmem_person_set ON memory_events;
DROP FUNCTION graphmem_person_set();
ALTER TABLE agent_sessions DROP COLUMN person;
ALTER TABLE agent_sessions DROP COLUMN owner;
ALTER TABLE memory_events DROP COLUMN person;
""",
    ),
    Migration(
        14,
        "a memory's link to a symbol records the body it was written against (staleness follows checkouts)",
        # A memory was flagged when its symbol's body changed after it was written
        # (``body_changed_at``, which only moves forward): a branch switched to and back kept the
        # flag. Now the flag stands while the body differs from the one its link records.
        up=RECORDED_BODIES_14,
        down=UNDO_14,
    ),
    Migration(
        15,
        "an entity only a person's own global memories name is that person's (entities.owner)",
        # Entities had no owner: the person, issue or file only Bob's private global memory named
        # was listed, counted and found by everyone. The stores' reads show such an entity to him
        # and to whoever sees a memory about it (postgres_graph.py, SEEN_ENTITY); docs/team.md.
        up=ENTITY_OWNERS_15,
        down="""
DROP INDEX entities_owner;
ALTER TABLE entities DROP COLUMN owner;
""",
    ),
    Migration(
        16,
        "a memory's history and the record of overrides are append-only for the team's roles",
        # A writer's psql session could UPDATE or DELETE events (another person's change gone, or
        # rewritten) and forced overrides. Now only an administrator may; graphmem's own one
        # update, an undo marking the event it reversed, is checked (postgres_functions.py).
        up=APPEND_ONLY_16,
        down=UNDO_16,
    ),
    Migration(
        17,
        "agent sessions and claims are their person's for the team's roles (row-level security)",
        # A writer's psql session could delete or update anyone's session or claim (end it, take
        # it over) with no override recorded, since every daemon deletes everyone's expired ones.
        # Now the database holds graphmem's rules: SESSIONS_HELD_17 says which.
        up=SESSIONS_HELD_17,
        down=UNDO_SESSIONS_HELD_17,
    ),
    Migration(
        18,
        "the memories' change feed: a change number and transaction a row, a tombstone a removal",
        # A daemon's full-text index beside it (postgres_lexical.py) learns what others wrote from
        # it; the trigger, the tombstones and who reads which are postgres_feed.py's. Rows from
        # before have no number: an index is built from every row, then follows the feed.
        up=CHANGE_FEED_18,
        down=UNDO_CHANGE_FEED_18,
    ),
    Migration(
        19,
        "the vectors' HNSW index in parts: the global memories', and 16 parts of the projects'",
        # pgvector filters a scan after the graph's walk: a recall of one project of 20 in a
        # million memories visited some twenty rows for each it kept (34-38 ms), and often
        # stopped short of its hits. A partial index per part (postgres_vector_parts.py); the
        # parts are built here (minutes at a million, the table locked for writes meanwhile).
        up=PARTS_19,
        down=UNDO_PARTS_19,
    ),
    Migration(
        20,
        "a change to a memory is in its history: a team's role changes or deletes one with its event",
        # A writer's psql UPDATE of a memory's trust, source or text left no event and read as a
        # teammate's `graphmem confirm`: a rule with no trace of who made it. postgres_functions.py.
        up=RECORDED_CHANGES_20,
        down=UNDO_RECORDED_CHANGES_20,
    ),
    Migration(
        21,
        "who confirmed a memory: the role that made it confirmed, set by the database",
        # Each confirmed memory said "by a person" or "by the user", whoever it was. postgres_functions.py.
        up=CONFIRMED_BY_21,
        down=UNDO_CONFIRMED_BY_21,
    ),
    Migration(
        22,
        "a team's role writes a memory of graphmem's scopes only, a project's with its project",
        # A writer's memory of the scope 'team', or 'project' with no project, was in every recall.
        up=SCOPES_HELD_22,
        down=UNDO_SCOPES_HELD_22,
    ),
    Migration(
        23,
        "a team's role's change of a memory's count is in its history: the database records it",
        # A writer's psql UPDATE of reinforced left no event, where graphmem's repeat writes a
        # reinforce event. postgres_recorded.py.
        up=COUNT_RECORDED_23,
        down=UNDO_COUNT_RECORDED_23,
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1].version

VERSION_TABLE = (
    "CREATE TABLE IF NOT EXISTS graphmem_migrations "
    "(version integer PRIMARY KEY, summary text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
)


def steps(current: int, target: int) -> list[tuple[Migration, bool]]:
    """The migrations that take the schema from ``current`` to ``target``: each with whether
    it is applied (``up``, True) or rolled back (``down``, False), in order."""
    if target >= current:
        return [(m, True) for m in MIGRATIONS if current < m.version <= target]
    return [(m, False) for m in reversed(MIGRATIONS) if target < m.version <= current]
