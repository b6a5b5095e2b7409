"""The HNSW index of the memories' vectors, at half precision (schema 12) and in parts (schema
19): one of the global memories, and one of each of ``PARTS`` parts of the projects' memories, a
project's part being its name's ``hashtext`` modulo ``PARTS``.

A recall sees the global memories and its project's. pgvector filters an HNSW scan after its
walk: with one index over every memory, a project that is a twentieth of a million was searched
by visiting some twenty rows for each it kept (34-38 ms at p50), and 9 to 15 searches of 300
stopped at ``hnsw.max_scan_tuples`` with fewer than they asked for (docs/benchmarks.md). A
partial index holds only its part's rows, so a search of the global memories and of one
project's part walks graphs where the rows it keeps are a large share (its project's alone, or
shared with the few others of its part); the parts' hits come in one statement and are put
together by their cosines (``PostgresEmbeddings.nearest``, which reads a project of few memories
whole instead of its part: ``READ_WHOLE_MAX``).

The planner takes a partial index only when the statement states its predicate, and a
statement's plan may be reused with other parameters: a search states each part's predicate as
a literal (``Part.where``), never a parameter. Every vector is in exactly one part, so the parts
together hold what the one index held, and a write inserts into one graph, a smaller one.
Projects that share a part are told apart by the filter, as before, within the part.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ALL_INDEXED",
    "DROP_HALF_INDEX_12",
    "GLOBAL",
    "HALF_INDEX_12",
    "INDEXED_SINCE",
    "PARTS",
    "PARTS_19",
    "PART_OF_NAMES",
    "PROJECT_PARTS",
    "UNDO_PARTS_19",
    "VECTOR_INDEXES",
    "WHOLE",
    "Part",
    "create_index",
    "create_whole",
    "drop_indexes",
    "indexed_vector",
    "rebuilt",
]

# Parts of the projects' memories: 20 projects fall into about 12 of them (11.6 expected), about
# 6 alone in theirs and the others two or three to a part (the benchmark's 20: 12 parts, the
# project it asks for one of three); each part is a read of the table when the index is built.
PARTS = 16


@dataclass(frozen=True, slots=True)
class Part:
    """One partial HNSW index of the vectors: its name and which rows it holds (its predicate,
    stated as it is by a search that is to use it)."""

    name: str
    where: str


GLOBAL = Part("memories_embedding_global", "project IS NULL")
VECTOR_INDEXES: tuple[Part, ...] = (
    GLOBAL,
    *(Part(f"memories_embedding_{n}", f"(hashtext(project) & {PARTS - 1}) = {n}") for n in range(PARTS)),
)
# The projects' parts by number: a project's part is ``hashtext(project) & (PARTS - 1)``.
PROJECT_PARTS = VECTOR_INDEXES[1:]
# The part of each of a list of names, as the server computes it (a text array parameter).
PART_OF_NAMES = f"SELECT n, hashtext(n) & {PARTS - 1} FROM unnest(%s::text[]) n"
# Whether every part has its index (the vector column may have its dimension without them).
ALL_INDEXED = (
    "(SELECT count(to_regclass(n)) FROM unnest(ARRAY["
    + ", ".join(f"'{part.name}'" for part in VECTOR_INDEXES)
    + f"]) n) = {len(VECTOR_INDEXES)}"
)
# The one index of schemas 12 to 18.
WHOLE = "memories_embedding"
# A rollback below this schema drops the vectors' index (schema 12's rollback; the graphmem of
# schema 11 builds its own at its first open): its steps before that one find no index to build
# again (``migrate``), where schema 19's rollback built the one index of schemas 12 to 18 in vain
# (minutes at a million memories, the table locked meanwhile).
INDEXED_SINCE = 12


def indexed_vector(dimension: int | str) -> str:
    """What each index holds (schema 12): the vector at half precision. A search orders by it to
    use an index; the cosines it returns are the stored vectors' own."""
    return f"embedding::halfvec({dimension})"


def create_index(part: Part, dimension: int | str) -> str:
    """The statement that builds ``part``'s index over vectors of ``dimension``."""
    return (
        f"CREATE INDEX IF NOT EXISTS {part.name} ON memories "
        f"USING hnsw (({indexed_vector(dimension)}) halfvec_cosine_ops) WHERE {part.where}"
    )


def drop_indexes() -> str:
    """The statement that drops every part's index, and the one index of schemas 12 to 18."""
    return "DROP INDEX IF EXISTS " + ", ".join([WHOLE, *(part.name for part in VECTOR_INDEXES)])


def create_whole(dimension: int | str) -> str:
    """The statement that builds the one index of schemas 12 to 18."""
    return f"CREATE INDEX {WHOLE} ON memories USING hnsw (({indexed_vector(dimension)}) halfvec_cosine_ops)"


def rebuilt(before: str, drop: str, creates: list[str]) -> str:
    """A migration that, when the vector column has its dimension and the index ``before``
    exists, drops ``drop`` and runs ``creates`` (each with ``%s`` for the dimension): in memory
    when the graphs fit (2 bytes a dimension and about 1 KB of neighbours a vector, at most 512
    MB, as ``postgres_embeddings.py`` sizes them), with no statement timeout (minutes at a million
    rows). A column with no dimension or no index yet is left to the next open, which builds
    them (``PostgresEmbeddings.set_dimension``). Schema 12's block is this one written out: a
    migration that ran keeps its text (``test_postgres_functions.py``)."""
    executes = "\n".join(
        "        EXECUTE format('{}', dims);".format(sql.replace("'", "''")) for sql in creates
    )
    return f"""
SET LOCAL statement_timeout = 0;
DO $migration$
DECLARE
    dims integer;
    wanted bigint;
BEGIN
    SELECT atttypmod INTO dims FROM pg_attribute
        WHERE attrelid = 'memories'::regclass AND attname = 'embedding';
    IF dims > 0 AND to_regclass('{before}') IS NOT NULL THEN
        {drop};
        wanted := least(524288, (SELECT count(*) FROM memories WHERE embedding IS NOT NULL)
            * (dims * 2 + 1024) / 1024);
        IF wanted > (SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem') THEN
            PERFORM set_config('maintenance_work_mem', wanted || 'kB', true);
        END IF;
{executes}
    END IF;
END
$migration$;
"""


# The HNSW index of the vectors built again at half precision (schema 12), once pgvector is known
# to have halfvec, when the column has its dimension and an index: in memory when its graph fits
# (what it needs, 2 bytes a dimension and about 1 KB of neighbours a vector, at most 512 MB, as
# postgres_embeddings.py builds it), with no statement timeout (minutes at a million rows).
HALF_INDEX_12 = """
SET LOCAL statement_timeout = 0;
DO $migration$
DECLARE
    dims integer;
    wanted bigint;
BEGIN
    IF (SELECT string_to_array(extversion, '.')::integer[] < ARRAY[0, 7] FROM pg_extension
        WHERE extname = 'vector') THEN
        RAISE EXCEPTION 'schema 12 needs pgvector 0.7 or newer (halfvec): '
            'ALTER EXTENSION vector UPDATE, then migrate';
    END IF;
    SELECT atttypmod INTO dims FROM pg_attribute
        WHERE attrelid = 'memories'::regclass AND attname = 'embedding';
    IF dims > 0 AND to_regclass('memories_embedding') IS NOT NULL THEN
        DROP INDEX memories_embedding;
        wanted := least(524288, (SELECT count(*) FROM memories WHERE embedding IS NOT NULL)
            * (dims * 2 + 1024) / 1024);
        IF wanted > (SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem') THEN
            PERFORM set_config('maintenance_work_mem', wanted || 'kB', true);
        END IF;
        EXECUTE format('CREATE INDEX memories_embedding ON memories '
            'USING hnsw ((embedding::halfvec(%s)) halfvec_cosine_ops)', dims);
    END IF;
END
$migration$;
"""
# Rolling schema 12 back drops the index: the graphmem of schema 11 builds its own (full precision)
# at its first open, as after an import that died; a rollback to 0 builds none in vain.
DROP_HALF_INDEX_12 = "DROP INDEX IF EXISTS memories_embedding;"


PARTS_19 = rebuilt(WHOLE, f"DROP INDEX {WHOLE}", [create_index(part, "%s") for part in VECTOR_INDEXES])
UNDO_PARTS_19 = rebuilt(GLOBAL.name, drop_indexes(), [create_whole("%s")])
