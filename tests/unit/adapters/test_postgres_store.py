"""What only the PostgreSQL store does (the rest is the store contract, test_store_contract.py):
schema migrations up and back, refusing a schema it does not know, errors that name the server
but never the password, a read-only role, a lost connection, and many writers at once."""

from __future__ import annotations

import hashlib
import threading

import numpy as np
import psycopg
import pytest
from support.postgres import PostgresServer
from support.records import memory
from support.stores import opened_postgres, postgres_url

from graphmem.adapters.postgres_migrate import SCHEMA_VERSION, migrate
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.adapters.postgres_text import CANDIDATES_CAP
from graphmem.adapters.postgres_vector_parts import GLOBAL, PARTS, PROJECT_PARTS, WHOLE
from graphmem.core.models import Entity, EntityKind, Link, LinkKind, Scope, Status
from graphmem.core.ports import VectorQuery, Visibility
from graphmem.errors import InvalidInputError, StoreError, StoreMismatchError

DIM = 8
EVERYONE = Visibility(None, frozenset(Status))
TABLES = {"graphmem_meta", "memories", "entities", "about", "links", "next_links", "memory_events"}


def tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    return {row[0] for row in rows}


@pytest.fixture
def bare_url(postgres_server: PostgresServer) -> str:
    """A database with pgvector and no graphmem schema."""
    return postgres_server.new_database()


@pytest.fixture
def url(request: pytest.FixtureRequest) -> str:
    """A database with graphmem's schema."""
    return postgres_url(request)


@pytest.fixture
def store(url: str, request: pytest.FixtureRequest) -> PostgresGraphStore:
    return opened_postgres(url, request, DIM)


# -- migrations --------------------------------------------------------------------------


def test_migrate_applies_every_step_then_rolls_back_to_nothing(bare_url: str) -> None:
    report = migrate(bare_url)
    assert (report.before, report.after) == (0, SCHEMA_VERSION)
    assert [version for version, _, up in report.applied if up] == list(range(1, SCHEMA_VERSION + 1))
    assert tables(bare_url) >= TABLES
    assert migrate(bare_url).applied == ()  # nothing left to do

    back = migrate(bare_url, target=0)
    assert back.after == 0 and all(not up for _, _, up in back.applied)
    assert tables(bare_url) == {"graphmem_migrations"}
    assert migrate(bare_url).after == SCHEMA_VERSION  # and up again


def test_migrating_to_an_unknown_version_is_refused(bare_url: str) -> None:
    with pytest.raises(InvalidInputError, match="--to must be a schema version"):
        migrate(bare_url, target=SCHEMA_VERSION + 1)


def test_two_processes_migrating_at_once_apply_each_step_once(bare_url: str) -> None:
    reports = []
    threads = [threading.Thread(target=lambda: reports.append(migrate(bare_url))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Each step once, by whichever process took its lock first (one may take the first steps,
    # another the rest).
    applied = sorted(version for r in reports for version, _, up in r.applied if up)
    assert applied == list(range(1, SCHEMA_VERSION + 1))
    assert {r.after for r in reports} == {SCHEMA_VERSION}


def test_a_database_without_the_schema_says_to_run_migrate(bare_url: str) -> None:
    with pytest.raises(StoreMismatchError, match="Run `graphmem migrate`"):
        PostgresGraphStore(bare_url, dimension=DIM)


def test_a_schema_newer_than_this_graphmem_is_refused(bare_url: str) -> None:
    migrate(bare_url)
    with psycopg.connect(bare_url) as conn:
        conn.execute("INSERT INTO graphmem_migrations (version, summary) VALUES (%s, 'future')", (99,))
    with pytest.raises(StoreMismatchError, match="newer than this graphmem"):
        PostgresGraphStore(bare_url, dimension=DIM)
    with pytest.raises(StoreMismatchError, match="Upgrade graphmem"):
        migrate(bare_url)


def _kept_apart(url: str) -> tuple[int, list[str] | None]:
    """Values the memories table keeps out of its rows (its TOAST table's chunks), and its options."""
    with psycopg.connect(url) as conn:
        toast, options = conn.execute(
            "SELECT reltoastrelid::regclass::text, reloptions FROM pg_class WHERE oid = 'memories'::regclass"
        ).fetchone() or ("", None)
        return int(conn.execute(f"SELECT count(*) FROM {toast}").fetchone()[0]), options  # type: ignore[index]


def test_a_memorys_vector_stays_in_its_row_and_rolling_back_schema_11_undoes_it(
    url: str, request: pytest.FixtureRequest
) -> None:
    # At 384 dimensions a memory's row is past PostgreSQL's 2 KB, and pgvector's storage moved
    # the vector out of it: each cosine a search returned read it back through the TOAST index.
    dimension = 384
    store = opened_postgres(url, request, dimension)
    text = " ".join(hashlib.sha256(str(i).encode()).hexdigest()[:12] for i in range(40))  # 520 bytes
    store.add_memories([memory("a", text)], np.ones((1, dimension), np.float32))
    assert _kept_apart(url) == (0, ["toast_tuple_target=8160"])
    assert store.vectors.cosine(np.ones(dimension, np.float32), ["a"]) == pytest.approx({"a": 1.0})
    store.close()

    assert migrate(url, target=10).after == 10
    assert _kept_apart(url)[1] is None
    with psycopg.connect(url) as conn:  # a row written under schema 10 has its vector apart
        conn.execute("UPDATE memories SET embedding = embedding + embedding WHERE id = 'a'")
    assert _kept_apart(url)[0] > 0


def _vector_indexes(url: str) -> dict[str, str]:
    """The HNSW indexes of the vectors by name: what each is over, with which operators, and
    which rows it holds."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT c.relname, pg_get_indexdef(c.oid) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = 'memories'::regclass AND c.relname LIKE 'memories_embedding%'"
        ).fetchall()
    return {str(name): str(definition).partition("USING hnsw ")[2] for name, definition in rows}


def _half(dimension: int, where: str | None = None) -> str:
    """An index's definition over the vectors at half precision, of the rows ``where`` says."""
    over = f"(((embedding)::halfvec({dimension})) halfvec_cosine_ops)"
    return over if where is None else f"{over} WHERE {where}"


PARTS_OF_8 = {
    GLOBAL.name: _half(DIM, "(project IS NULL)"),
    **{
        part.name: _half(DIM, f"((hashtext(project) & {PARTS - 1}) = {n})")
        for n, part in enumerate(PROJECT_PARTS)
    },
}


def test_schema_12_builds_a_stores_vector_index_again_at_half_precision_and_19_splits_it_into_parts(
    url: str, request: pytest.FixtureRequest
) -> None:
    vectors = np.eye(DIM, dtype=np.float32)
    store = opened_postgres(url, request, DIM)
    store.add_memories([memory(f"m{i}") for i in range(DIM)], vectors)
    store.close()
    assert _vector_indexes(url) == PARTS_OF_8
    assert migrate(url, target=18).after == 18  # rolling 19 back makes it one index again
    assert _vector_indexes(url) == {WHOLE: _half(DIM)}

    assert migrate(url, target=11).after == 11  # no index: schema 11's graphmem builds its own at open
    with psycopg.connect(url) as conn:
        conn.execute("CREATE INDEX memories_embedding ON memories USING hnsw (embedding vector_cosine_ops)")
    assert migrate(url, target=18).after == 18  # a schema-11 store's index, upgraded in place
    assert _vector_indexes(url) == {WHOLE: _half(DIM)}
    assert migrate(url).after == SCHEMA_VERSION  # then split
    assert _vector_indexes(url) == PARTS_OF_8
    store = opened_postgres(url, request, DIM)
    near = vectors[3] + 0.1
    found = store.vectors.nearest(VectorQuery(near, 3, project=None, statuses=frozenset({"active"})))
    assert found[0][0] == "m3"  # with the cosine of the stored vector, not of its half-precision copy
    assert found[0][1] == pytest.approx(float(np.dot(vectors[3], near) / np.linalg.norm(near)), abs=1e-6)


def test_schema_12_and_19_on_a_store_never_opened_leave_the_index_to_the_first_open(bare_url: str) -> None:
    migrate(bare_url)  # the column has no dimension yet: nothing to index
    assert _vector_indexes(bare_url) == {}
    PostgresGraphStore(bare_url, dimension=DIM).close()
    assert _vector_indexes(bare_url) == PARTS_OF_8


def test_a_rollback_past_schema_12_builds_no_vector_index_on_its_way(
    url: str, request: pytest.FixtureRequest
) -> None:
    # Schema 12's rollback drops the index: schema 19's, before it, built the one index of schemas
    # 12 to 18 over every vector for nothing (minutes at a million, the table locked meanwhile).
    store = opened_postgres(url, request, DIM)
    store.add_memories([memory(f"m{i}") for i in range(DIM)], np.eye(DIM, dtype=np.float32))
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:  # every index built from here, recorded
        conn.execute("CREATE TABLE built (name text)")
        conn.execute(
            "CREATE FUNCTION record_built() RETURNS event_trigger LANGUAGE plpgsql AS $$ DECLARE r record; "
            "BEGIN FOR r IN SELECT * FROM pg_event_trigger_ddl_commands() LOOP "
            "INSERT INTO built VALUES (r.object_identity); END LOOP; END $$"
        )
        conn.execute(
            "CREATE EVENT TRIGGER record_built ON ddl_command_end WHEN TAG IN ('CREATE INDEX') "
            "EXECUTE FUNCTION record_built()"
        )

    assert migrate(url, target=11).after == 11

    with psycopg.connect(url, autocommit=True) as conn:
        built = [str(row[0]) for row in conn.execute("SELECT name FROM built").fetchall()]
        conn.execute("DROP EVENT TRIGGER record_built")
    assert not [name for name in built if "memories_embedding" in name], built
    assert _vector_indexes(url) == {}
    assert migrate(url).after == SCHEMA_VERSION  # and up again: the first open builds the parts
    opened_postgres(url, request, DIM).close()
    assert _vector_indexes(url) == PARTS_OF_8


def test_vectors_of_another_dimension_are_refused_at_open(store: PostgresGraphStore, url: str) -> None:
    store.add_memories([memory("a")], np.ones((1, DIM), np.float32))
    with pytest.raises(StoreMismatchError, match="graphmem reindex"):
        PostgresGraphStore(url, dimension=DIM * 2)
    store.clear_embeddings(DIM * 2)  # what reindex does first: then the column takes the new size
    store.set_embeddings(["a"], np.ones((1, DIM * 2), np.float32))
    assert store.load_vectors().matrix.shape == (1, DIM * 2)


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("mysql://root:hunter2@db/graphmem", "must start with postgresql://"),
        ("postgresql://root:hunter2@127.0.0.1:1/graphmem", "Cannot connect to the PostgreSQL store"),
        ("postgresql://root:hunter2@[::1/graphmem", "cannot be read"),
    ],
)
def test_a_bad_or_unreachable_url_is_a_clear_error_without_the_password(url: str, said: str) -> None:
    with pytest.raises(StoreError, match=said) as raised:
        PostgresGraphStore(url, dimension=DIM)
    assert "hunter2" not in str(raised.value)


def test_an_unknown_role_is_a_clear_error_without_the_password(url: str) -> None:
    wrong = url.replace("postgres@", "nobody_here@")
    with pytest.raises(StoreError, match="Cannot connect") as raised:
        PostgresGraphStore(wrong, dimension=DIM, password="hunter2")
    assert "hunter2" not in str(raised.value) and "nobody_here" in str(raised.value)


def test_a_read_only_role_reads_and_is_told_it_may_not_write(
    url: str, request: pytest.FixtureRequest
) -> None:
    writer = PostgresGraphStore(url, dimension=DIM)
    request.addfinalizer(writer.close)
    # A project memory: a global one would be the writer's own (schema 6, test_team_scopes.py).
    train = memory("a", "the release train leaves on monday", scope=Scope.PROJECT, project="/p")
    writer.add_memories([train])
    with psycopg.connect(url, autocommit=True) as conn:
        # The read-only role of docs/team.md.
        conn.execute("CREATE ROLE graphmem_reader NOLOGIN")
        conn.execute("GRANT USAGE ON SCHEMA public TO graphmem_reader")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO graphmem_reader")
        conn.execute("CREATE ROLE bot LOGIN IN ROLE graphmem_reader")
    reader = PostgresGraphStore(url.replace("postgres@", "bot@"), dimension=DIM)
    request.addfinalizer(reader.close)
    assert [i for i, _ in reader.search_text("release", Visibility("/p"), 5)] == ["a"]
    with pytest.raises(StoreError, match="may not"):
        reader.add_memories([memory("b")])
    assert sum(writer.count_memories().values()) == 1
    # Nor may it move links through graphmem_move_about(), which could reach rows it cannot see.
    files = [Entity(f"File:/p::{name}", EntityKind.FILE, name, "/p") for name in ("a.py", "b.py")]
    writer.upsert_entities(files)
    writer.link_about([("a", files[0])])
    with pytest.raises(StoreError, match="may not"):
        reader.move_about(EntityKind.FILE, files[0].key, files[1].key)
    assert writer.memories_about([files[0].key, files[1].key]) == {files[0].key: ["a"]}


def test_a_connection_the_server_dropped_is_replaced_without_an_error(store: PostgresGraphStore) -> None:
    store.add_memories([memory("a")])
    with psycopg.connect(store.db._conninfo, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    assert list(store.get_memories(["a"])) == ["a"]  # the pool checks a connection before use


def test_a_rare_word_outranks_two_common_ones(store: PostgresGraphStore) -> None:
    store.add_memories([memory(f"c{i}", f"deploy the service, step {i}") for i in range(30)])
    store.add_memories([memory("rare", "kafka lag on the consumer")])
    hits = store.search_text("deploy service kafka", EVERYONE, 5)
    assert hits[0][0] == "rare"  # ts_rank counts the words matched, not how rare they are


def test_the_words_hits_come_with_their_cosines_to_a_vector_in_the_same_read(
    store: PostgresGraphStore,
) -> None:
    axes = np.eye(DIM, dtype=np.float32)
    texts = {"a": "kafka lag on the consumer", "b": "kafka topic retention", "c": "the kafka broker is down"}
    store.add_memories([memory(i, text) for i, text in texts.items()], axes[:3])
    store.add_memories([memory("none", "kafka without a vector yet")])
    vector = 0.6 * axes[0] + 0.8 * axes[1]

    hits, cosines = store.search_text_near(
        "kafka broker down", EVERYONE, 10, vector, phrase="kafka broker down"
    )

    alone = store.search_text("kafka broker down", EVERYONE, 10, phrase="kafka broker down")
    assert (list(hits), hits.exact) == (list(alone), alone.exact) and len(hits) == 4
    assert cosines == pytest.approx({"a": 0.6, "b": 0.8, "c": 0.0}, abs=1e-6)
    assert cosines == store.vectors.cosine(vector, [i for i, _ in hits])  # "none" has no vector


def test_a_large_store_reads_only_the_memories_holding_its_rarest_word(store: PostgresGraphStore) -> None:
    common = [memory(f"c{i:04d}", f"alpha gamma note {i}") for i in range(CANDIDATES_CAP + 500)]
    store.add_memories([*common, memory("all", "alpha gamma beta"), memory("b1", "beta delta")])
    store.db.run("ANALYZE memories")  # what autovacuum does after a bulk import
    store.text.forget_stats()

    _, _, chosen = store.text._plan(["alpha", "gamma", "beta"], [], 1)
    hits = store.search_text("alpha gamma beta", EVERYONE, 2)

    assert chosen == ["beta"]
    assert [i for i, _ in hits] == ["all", "b1"]


def test_a_write_on_a_connection_the_server_just_dropped_keeps_nothing_and_can_be_retried(
    store: PostgresGraphStore,
) -> None:
    store.add_memories([memory("a")])
    with psycopg.connect(store.db._conninfo, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    with pytest.raises(StoreError, match="Nothing of the interrupted call was kept"):
        store.add_memories([memory("b")])  # a connection in steady use is not checked first
    store.add_memories([memory("b")])
    assert sorted(store.get_memories(["a", "b"])) == ["a", "b"]


def test_a_closed_store_says_so(store: PostgresGraphStore) -> None:
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.get_memories(["a"])


# -- many writers -----------------------------------------------------------------------------

ISSUE = Entity("Issue:group/proj#4", EntityKind.ISSUE, "#4", None, "Flaky test")


def test_writers_on_separate_connections_lose_nothing_and_readers_never_see_half_a_write(
    url: str, request: pytest.FixtureRequest
) -> None:
    """Four stores (as four daemons would open them) each write 25 memories, each with its
    ABOUT edge and a RELATES link in one transaction, while a fifth reads: every memory it
    sees has its edge and its link, and at the end none is missing."""
    stores = [PostgresGraphStore(url, dimension=DIM) for _ in range(5)]
    for opened in stores:
        request.addfinalizer(opened.close)
    stores[0].add_memories([memory("root")])
    stores[0].upsert_entities([ISSUE])
    done = threading.Event()
    torn: list[str] = []
    failures: list[BaseException] = []

    def write(writer: PostgresGraphStore, prefix: str) -> None:
        try:
            for i in range(25):
                memory_id = f"{prefix}{i}"
                with writer.transaction():
                    writer.add_memories([memory(memory_id, f"zebra crossing note {prefix} {i}")])
                    writer.link_about([(memory_id, ISSUE)])
                    writer.add_links(
                        [Link(memory_id, "root", LinkKind.RELATED, memory(memory_id).created_at)]
                    )
        except BaseException as exc:
            failures.append(exc)

    def read(reader: PostgresGraphStore) -> None:
        while not done.is_set():
            seen = [i for i, _ in reader.search_text("zebra", EVERYONE, 200)]
            about = reader.about(seen)
            linked = {link.source for link in reader.links(seen)}
            torn.extend(i for i in seen if i not in about or i not in linked)

    writers = [threading.Thread(target=write, args=(s, p)) for s, p in zip(stores[:4], "abcd", strict=True)]
    reader = threading.Thread(target=read, args=(stores[4],))
    reader.start()
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    done.set()
    reader.join()

    assert not failures
    assert torn == []
    assert sum(stores[4].count_memories().values()) == 101
    assert len(stores[4].memories_about([ISSUE.key])[ISSUE.key]) == 100
    assert len(stores[4].links(["root"])) == 100


def test_two_writers_locking_in_opposite_orders_are_one_done_and_one_told_to_try_again(
    url: str, request: pytest.FixtureRequest
) -> None:
    one, other = PostgresGraphStore(url, dimension=DIM), PostgresGraphStore(url, dimension=DIM)
    request.addfinalizer(one.close)
    request.addfinalizer(other.close)
    keys = ["Issue:group/proj#1", "Issue:group/proj#2"]
    one.upsert_entities([Entity(key, EntityKind.ISSUE, key[-2:]) for key in keys])
    both_hold_one = threading.Barrier(2, timeout=30)
    outcomes: list[str] = []

    def lock(writer: PostgresGraphStore, order: list[str]) -> None:
        lock_sql = "SELECT key FROM entities WHERE key = %s FOR UPDATE"
        try:
            with writer.transaction():
                writer.db.rows(lock_sql, (order[0],))
                both_hold_one.wait()
                writer.db.rows(lock_sql, (order[1],))  # the database finds the deadlock
            outcomes.append("done")
        except StoreError as exc:
            outcomes.append(str(exc))

    threads = [
        threading.Thread(target=lock, args=(one, keys)),
        threading.Thread(target=lock, args=(other, keys[::-1])),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    told = [outcome for outcome in outcomes if outcome != "done"]
    assert len(told) == 1 and len(outcomes) == 2
    assert "met another writer's at the same moment" in told[0]
    assert "nothing of it was kept; try again" in told[0]


def test_a_connection_is_back_in_the_pool_when_a_call_returns(store: PostgresGraphStore) -> None:
    for _ in range(20):
        store.db.rows("SELECT 1")
        # Given back on this thread as the call returns: the next call takes it.
        opened, idle = store.db._pool.counts()
        assert opened == idle == 1


def test_a_connection_idle_past_the_limit_is_checked_before_use(
    store: PostgresGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphmem.adapters import postgres_pool

    checked: list[object] = []
    check = postgres_pool.check
    monkeypatch.setattr(postgres_pool, "check", lambda conn: checked.append(conn) or check(conn))
    store.db.rows("SELECT 1")
    assert checked == []  # in steady use: no round trip to check it
    monkeypatch.setattr(postgres_pool, "CHECK_IDLE_S", 0.0)
    store.db.rows("SELECT 1")
    assert len(checked) == 1
