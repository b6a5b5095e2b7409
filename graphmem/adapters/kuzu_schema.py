"""The Kùzu schema of graphmem, versioned, with its migrations.

Bump ``SCHEMA_VERSION`` and add a step to ``_MIGRATIONS`` for every change; a
store is migrated in place when it is opened.
"""

from __future__ import annotations

from collections.abc import Callable

SCHEMA_VERSION = 1

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

MEMORY_COLUMNS = (
    "id",
    "text",
    "category",
    "scope",
    "project",
    "created_at",
    "updated_at",
    "valid_from",
    "valid_to",
    "status",
    "content_hash",
    "source",
    "session",
    "reinforced",
    "seq",
    "search_text",
    "embedded",
    "embedding",
)


def create_schema() -> list[str]:
    """Statements that create the current schema in an empty database."""
    statements = [
        "CREATE NODE TABLE Meta(key STRING, value STRING, PRIMARY KEY(key))",
        "CREATE NODE TABLE Memory("
        "id STRING, text STRING, category STRING, scope STRING, project STRING, "
        "created_at TIMESTAMP, updated_at TIMESTAMP, valid_from TIMESTAMP, valid_to TIMESTAMP, "
        "status STRING, content_hash STRING, source STRING, session STRING, reinforced INT64, "
        "seq INT64, search_text STRING, embedded BOOLEAN, embedding FLOAT[], PRIMARY KEY(id))",
    ]
    statements += [
        f"CREATE NODE TABLE {table}(key STRING, name STRING, project STRING, title STRING, PRIMARY KEY(key))"
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
    ]
    return statements


# version reached -> statements that bring the previous version to it
_MIGRATIONS: dict[int, Callable[[], list[str]]] = {}


def migrate(from_version: int) -> list[str]:
    """Statements that bring a store at ``from_version`` to ``SCHEMA_VERSION``."""
    statements: list[str] = []
    for version in range(from_version + 1, SCHEMA_VERSION + 1):
        step = _MIGRATIONS.get(version)
        if step is not None:
            statements += step()
    return statements
