"""The Kùzu schema of graphmem, versioned, with its migrations.

Bump ``SCHEMA_VERSION`` and add a step to ``_MIGRATIONS`` for every change; a
store is migrated in place when it is opened.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from graphmem.adapters.record_rows import MEMORY_FIELDS

SCHEMA_VERSION = 14
# From this version the vectors are in the vector log, not in Kùzu (``kuzu_vectors.py``): no
# Kùzu statement, the store moves them at open.
VECTORS_OUT_OF_KUZU = 9
# Version 12 moved the files' parses out of Kùzu (``FileParse``) to ``parse_store.py``.
PARSES_OUT_OF_KUZU = 12

ENTITY_TABLES = (
    "Project",
    "File",
    "Symbol",
    "MergeRequest",
    "Issue",
    "Epic",
    "Person",
    "Session",
    "ExternalModule",
)

# Columns of File and Symbol beyond an entity's (key, name, project, title).
CODE_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "File": (
        ("path", "STRING"),
        ("language", "STRING"),
        ("content_hash", "STRING"),
        ("size", "INT64"),
        ("mtime_ns", "INT64"),
        ("error_count", "INT64"),
        ("scanned_at", "TIMESTAMP"),
        ("deleted_at", "TIMESTAMP"),
    ),
    "Symbol": (
        ("path", "STRING"),
        ("kind", "STRING"),
        ("qualified_name", "STRING"),
        ("start_line", "INT64"),
        ("end_line", "INT64"),
        ("signature", "STRING"),
        ("docstring", "STRING"),
        ("body_hash", "STRING"),
        ("body_changed_at", "TIMESTAMP"),
        ("deleted_at", "TIMESTAMP"),
    ),
}
CO_CHANGES = "CREATE REL TABLE CO_CHANGES(FROM File TO File, count INT64)"
# Versions 10 and 11: a file's definitions and references as JSON, apart from ``File``: a
# pass replaced a changed file's row (DELETE, then COPY), never updated it. Kùzu 0.11
# updating 6 KB strings in place, one row at a time: its buffer pool full after about 700
# (every write failing after) and, once a checkpoint had run between them, most of the
# column read back empty. Version 12 moved the rows to ``parse_store.py`` and dropped it.
FILE_PARSE = (
    "CREATE NODE TABLE FileParse(key STRING, project STRING, path STRING, parsed STRING, PRIMARY KEY(key))"
)

# What enrichment stores on merge requests, issues and epics: where each stands in the
# queue, then the facts GitLab gave (see adapters/kuzu_gitlab.py).
_ENRICH_COLUMNS: tuple[tuple[str, str], ...] = (
    ("enrich_state", "STRING"),  # core.enrichment.EnrichState; NULL: never fetched (pending)
    ("enrich_error", "STRING"),
    ("enrich_attempts", "INT64"),
    ("fetched_at", "TIMESTAMP"),
    ("next_attempt", "TIMESTAMP"),
    ("hops", "INT64"),  # how far from an entity a memory names (NULL: named itself)
    ("state", "STRING"),
    ("labels", "STRING[]"),
    ("author", "STRING"),
    ("created_at", "TIMESTAMP"),
    ("updated_at", "TIMESTAMP"),
    ("web_url", "STRING"),
)
GITLAB_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "MergeRequest": (
        *_ENRICH_COLUMNS,
        ("draft", "BOOLEAN"),
        ("milestone", "STRING"),
        ("source_branch", "STRING"),
        ("target_branch", "STRING"),
        ("merged_at", "TIMESTAMP"),
        ("changed_files_total", "INT64"),
    ),
    "Issue": (*_ENRICH_COLUMNS, ("milestone", "STRING"), ("closed_at", "TIMESTAMP")),
    "Epic": _ENRICH_COLUMNS,
    "Person": (("username", "STRING"), ("web_url", "STRING")),
}
# The long texts GitLab gives an MR, issue or epic, apart from its node, replaced (DELETE,
# then CREATE, in one transaction) at each enrichment, never updated in place (see
# FILE_PARSE): ``description``, and an MR's ``changed_files`` (JSON: [{path, old_path,
# new, deleted, renamed, ranges}], up to 500 files). Kùzu 0.11 updating 6 KB
# descriptions of 3,000 MRs in place, one after the other, even with a checkpoint each
# time its pool had grown 128 MB: the pool full at the 2,511th, and 2,336 descriptions
# read back wrong; replaced, 6,000 of them held 45 MB and read back right.
GITLAB_TEXT = (
    "CREATE NODE TABLE GitLabText(key STRING, description STRING, changed_files STRING, PRIMARY KEY(key))"
)
# What ``GitLabText`` took from each table (they were its columns from schema 4 to 10).
GITLAB_TEXT_COLUMNS = {
    "MergeRequest": ("description", "changed_files"),
    "Issue": ("description",),
    "Epic": ("description",),
}
GITLAB_RELS = (
    "CREATE REL TABLE ASSIGNED(FROM Person TO MergeRequest, FROM Person TO Issue)",
    "CREATE REL TABLE REVIEWS(FROM Person TO MergeRequest)",
    "CREATE REL TABLE RELATED_MR(FROM Issue TO MergeRequest)",
)

# The Memory table's columns in its order (COPY maps by position): the record's fields, with the
# store's own (``seq``, ``search_text``, ``embedded``, ``embedding``) before the fields later schema
# versions added (``origin`` on).
_LATER = MEMORY_FIELDS.index("origin")
MEMORY_COLUMNS = (
    *MEMORY_FIELDS[:_LATER],
    "seq",
    "search_text",
    "embedded",
    "embedding",
    *MEMORY_FIELDS[_LATER:],
)
# Memory columns added after version 1, with their types (appended, as ALTER TABLE does).
MEMORY_ADDED: tuple[tuple[str, str], ...] = (("origin", "STRING"), ("trust", "STRING"))
MEMORY_EXPIRY = ("expires_at", "TIMESTAMP")  # version 7
MEMORY_BRANCH = ("branch", "STRING")  # version 8


# Each memory's history (core/events.py): one node per change, found by memory id (no edges, so
# that the history of a deleted memory stays readable); ``seq`` orders events of one instant.
MEMORY_EVENT = (
    "CREATE NODE TABLE MemoryEvent(id STRING, memory_id STRING, other_id STRING, at TIMESTAMP, "
    "kind STRING, actor STRING, rule STRING, reason STRING, before STRING, after STRING, "
    "undoes STRING, undone_by STRING, seq INT64, PRIMARY KEY(id))"
)


# Version 13: each content hash (``core.dedup.memory_hash``) a node keyed by it, holding the ids
# of the memories that have it: ``remember``'s duplicate check and an import's are primary-key
# lookups (Kùzu indexes primary keys alone). They replaced a map of every hash to its ids that
# the store loaded at its first check (a scan of the column: 1.6 s at 100,000 memories, 45 s
# at 943,000) and kept in memory (a dict of sets and its strings: 42 MB at 100,000, 415 MB at
# 1,000,000). The ids are a list, not edges: walking one node's edges read its whole node
# group (5-8 ms at 100,000 memories, against 0.3-0.8 ms for the node by its key).
CONTENT_HASH = "CREATE NODE TABLE ContentHash(key STRING, ids STRING[], PRIMARY KEY(key))"


def create_schema() -> list[str]:
    """Statements that create the current schema in an empty database."""
    statements = [
        "CREATE NODE TABLE Meta(key STRING, value STRING, PRIMARY KEY(key))",
        "CREATE NODE TABLE Memory("
        "id STRING, text STRING, category STRING, scope STRING, project STRING, "
        "created_at TIMESTAMP, updated_at TIMESTAMP, valid_from TIMESTAMP, valid_to TIMESTAMP, "
        "status STRING, content_hash STRING, source STRING, session STRING, reinforced INT64, "
        "seq INT64, search_text STRING, embedded BOOLEAN, embedding FLOAT[], "
        + "".join(f"{name} {kind}, " for name, kind in (*MEMORY_ADDED, MEMORY_EXPIRY, MEMORY_BRANCH))
        + "PRIMARY KEY(id))",
    ]
    statements += [
        f"CREATE NODE TABLE {table}(key STRING, name STRING, project STRING, title STRING"
        f"{''.join(f', {name} {kind}' for name, kind in _extra_columns(table))}, PRIMARY KEY(key))"
        for table in ENTITY_TABLES
    ]
    about_pairs = ", ".join(f"FROM Memory TO {table}" for table in ENTITY_TABLES)
    statements += [
        f"CREATE REL TABLE ABOUT({about_pairs}, body_hash STRING)",
        "CREATE REL TABLE RELATES(FROM Memory TO Memory, kind STRING, created_at TIMESTAMP)",
        "CREATE REL TABLE NEXT(FROM Memory TO Memory)",
        "CREATE REL TABLE CONTAINS(FROM Project TO File, FROM File TO Symbol, FROM Symbol TO Symbol)",
        "CREATE REL TABLE CALLS(FROM Symbol TO Symbol, confidence STRING)",
        "CREATE REL TABLE IMPORTS(FROM File TO File, FROM File TO ExternalModule)",
        "CREATE REL TABLE INHERITS(FROM Symbol TO Symbol)",
        "CREATE REL TABLE CHANGES(FROM MergeRequest TO File, FROM MergeRequest TO Symbol)",
        "CREATE REL TABLE CLOSES(FROM MergeRequest TO Issue)",
        "CREATE REL TABLE PART_OF(FROM Issue TO Epic, FROM Epic TO Epic)",
        "CREATE REL TABLE AUTHORED(FROM Person TO MergeRequest, FROM Person TO Issue, FROM Person TO Memory)",
        CO_CHANGES,
        *GITLAB_RELS,
        MEMORY_EVENT,
        GITLAB_TEXT,
        CONTENT_HASH,
    ]
    return statements


def _extra_columns(table: str) -> tuple[tuple[str, str], ...]:
    """Columns of an entity table beyond (key, name, project, title)."""
    return CODE_COLUMNS.get(table, ()) + GITLAB_COLUMNS.get(table, ())


def _v2_code_graph() -> list[str]:
    """Version 2: files and symbols carry what bootstrap learns; files that change together.
    (It added ``File.parsed`` too, which version 10 moved to ``FileParse``: a store below
    version 2 has no parse to move.)"""
    statements = [
        f"ALTER TABLE {table} ADD {name} {kind}"
        for table, columns in CODE_COLUMNS.items()
        for name, kind in columns
    ]
    return [*statements, CO_CHANGES]


def _v3_provenance() -> list[str]:
    """Version 3: where a learned memory came from (``origin``) and how far to trust it."""
    return [f"ALTER TABLE Memory ADD {name} {kind}" for name, kind in MEMORY_ADDED]


def _v4_gitlab() -> list[str]:
    """Version 4: GitLab enrichment: facts and queue state of MRs, issues, epics, people."""
    statements = [
        f"ALTER TABLE {table} ADD {name} {kind}"
        for table, columns in GITLAB_COLUMNS.items()
        for name, kind in columns
    ]
    return [*statements, *GITLAB_RELS]


def _v5_lexical_index(indexes: Collection[str]) -> list[str]:
    """Version 5: full-text search moves to ``lexical.sqlite3`` (adapters/lexical_index.py);
    Kùzu stops keeping its own FTS index (``memory_text``) up to date on every write."""
    if "memory_text" not in indexes:
        return []
    return ["LOAD EXTENSION fts", "CALL DROP_FTS_INDEX('Memory', 'memory_text')"]


def _v6_history() -> list[str]:
    """Version 6: each memory's history of changes (``MemoryEvent``)."""
    return [MEMORY_EVENT.replace("CREATE NODE TABLE", "CREATE NODE TABLE IF NOT EXISTS", 1)]


def _v7_expiry() -> list[str]:
    """Version 7: a memory can carry an expiry (``remember --expires 14d``)."""
    return [f"ALTER TABLE Memory ADD IF NOT EXISTS {MEMORY_EXPIRY[0]} {MEMORY_EXPIRY[1]}"]


def _v8_branch() -> list[str]:
    """Version 8: a memory written on a branch carries it (``core/branches.py``)."""
    return [f"ALTER TABLE Memory ADD IF NOT EXISTS {MEMORY_BRANCH[0]} {MEMORY_BRANCH[1]}"]


def _v10_file_parse() -> list[str]:
    """Version 10: the files' parses move from ``File.parsed`` to ``FileParse`` (the move
    itself, when the store has the column: ``_v10_moved_parses``)."""
    return [FILE_PARSE.replace("CREATE NODE TABLE", "CREATE NODE TABLE IF NOT EXISTS", 1)]


def _v10_moved_parses(columns: Mapping[str, Collection[str]]) -> list[str]:
    if "parsed" not in columns.get("File", ()):
        return []
    return [
        "COPY FileParse FROM (MATCH (f:File) WHERE f.parsed IS NOT NULL AND f.deleted_at IS NULL "
        "RETURN f.key, f.project, f.path, f.parsed)",
        "ALTER TABLE File DROP parsed",
    ]


def _v11_gitlab_text() -> list[str]:
    """Version 11: the descriptions and an MR's changed files move to ``GitLabText`` (the
    move itself, when the store has the columns: ``_v11_moved_texts``)."""
    return [GITLAB_TEXT.replace("CREATE NODE TABLE", "CREATE NODE TABLE IF NOT EXISTS", 1)]


def _v11_moved_texts(columns: Mapping[str, Collection[str]]) -> list[str]:
    statements = []
    for table, moved in GITLAB_TEXT_COLUMNS.items():
        if not set(moved) <= set(columns.get(table, ())):
            continue  # a store from before version 4: no GitLab facts to move
        files = "e.changed_files" if "changed_files" in moved else "CAST(NULL AS STRING)"
        statements += [
            f"COPY GitLabText FROM (MATCH (e:{table}) WHERE e.description IS NOT NULL OR {files} IS NOT NULL "
            f"RETURN e.key, e.description, {files})",
            *(f"ALTER TABLE {table} DROP {column}" for column in moved),
        ]
    return statements


def _v13_content_hashes() -> list[str]:
    """Version 13: the content hashes as nodes (``CONTENT_HASH``), filled by the store at open
    (``FILL_CONTENT_HASHES``)."""
    return [CONTENT_HASH.replace("CREATE NODE TABLE", "CREATE NODE TABLE IF NOT EXISTS", 1)]


# What fills version 13's table from the memories (what an open cut short left is deleted
# first: the schema version is written after).
CONTENT_HASHES_IN_KUZU = 13
FILL_CONTENT_HASHES = (
    "MATCH (h:ContentHash) DELETE h",
    "COPY ContentHash FROM (MATCH (m:Memory) WHERE m.content_hash IS NOT NULL "
    "RETURN m.content_hash, collect(m.id))",
)


def _v14_recorded_bodies() -> list[str]:
    """Version 14: an ABOUT edge to a symbol records the body its memory was written against
    (``body_hash``, what staleness compares with the symbol's body of now). The links the rule of
    before did not flag (the body unchanged since the memory was last written) get the body of
    now; the flagged ones keep none, and that rule, until their memory is written again."""
    return [
        "MATCH (m:Memory)-[a:ABOUT]->(s:Symbol) WHERE a.body_hash IS NULL AND s.body_hash IS NOT NULL "
        "AND (s.body_changed_at IS NULL OR s.body_changed_at <= m.updated_at) SET a.body_hash = s.body_hash"
    ]


# version reached -> statements that bring the previous version to it
_MIGRATIONS: dict[int, Callable[[], list[str]]] = {
    2: _v2_code_graph,
    3: _v3_provenance,
    4: _v4_gitlab,
    6: _v6_history,
    7: _v7_expiry,
    8: _v8_branch,
    10: _v10_file_parse,
    11: _v11_gitlab_text,
    13: _v13_content_hashes,
    14: _v14_recorded_bodies,
}


def migrate(
    from_version: int,
    indexes: Collection[str] = (),
    columns: Mapping[str, Collection[str]] | None = None,
) -> list[str]:
    """Statements that bring a store at ``from_version`` to ``SCHEMA_VERSION``; ``indexes``
    names the store's indexes (``CALL SHOW_INDEXES()``), ``columns`` the columns of its
    tables that a step moves (``CALL table_info(...)``, by table)."""
    statements: list[str] = []
    for version in range(from_version + 1, SCHEMA_VERSION + 1):
        step = _MIGRATIONS.get(version)
        if step is not None:
            statements += step()
    if from_version < 5 <= SCHEMA_VERSION:
        statements += _v5_lexical_index(indexes)
    if from_version < 10 <= SCHEMA_VERSION:
        statements += _v10_moved_parses(columns or {})
    if from_version < 11 <= SCHEMA_VERSION:
        statements += _v11_moved_texts(columns or {})
    return statements
