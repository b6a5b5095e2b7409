"""What a remember's vector costs a PostgreSQL store (``postgres_embeddings.py``,
``service/semantic.py``): with no daemon, the recall right after a remember reads the backlog
and writes the vector, two round trips more than a recall after a recall and nothing else; the
vector's commit does not wait for the server's disk, and every other write stays durable."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from support.records import memory
from support.stores import opened_postgres, postgres_url
from support.team import on_postgres

from graphmem.adapters import postgres_pool
from graphmem.adapters.postgres_liveness import WatchedConnection

DIMENSION = 64
QUESTION = "when are refunds retried"
# A pooled connection's own settings, once per connection (``PostgresConnection._apply``): made
# by whichever of a recall's two threads first takes a connection, not by what a recall asks.
SESSION_SETUP = "SELECT set_config(n, v,"


class RoundTrips:
    """Every round trip to the server (``WatchedConnection.wait``), named by the first words of
    its statement; a transaction's BEGIN and COMMIT, which have none, as ``command``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.names: list[str] = []
        self._sent = threading.local()
        wait, execute = WatchedConnection.wait, psycopg.Cursor.execute

        def named(cursor: psycopg.Cursor[Any], query: Any, params: Any = None, **kwargs: Any) -> Any:
            self._sent.name = " ".join(str(query).split()[:7])
            try:
                return execute(cursor, query, params, **kwargs)
            finally:
                self._sent.name = None

        def counted(conn: WatchedConnection, gen: Any, *args: Any, **kwargs: Any) -> Any:
            self.names.append(getattr(self._sent, "name", None) or "command")
            return wait(conn, gen, *args, **kwargs)

        monkeypatch.setattr(psycopg.Cursor, "execute", named)
        monkeypatch.setattr(WatchedConnection, "wait", counted)

    def during(self, call: Any) -> Counter[str]:
        """The round trips ``call()`` made, but a connection's own settings."""
        self.names.clear()
        call()
        return Counter(name for name in self.names if not name.startswith(SESSION_SETUP))


def test_a_recall_right_after_a_remember_only_reads_the_backlog_and_writes_the_vector(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_pool, "CHECK_IDLE_S", 3600.0)  # no idle check in a slow moment
    service = on_postgres(postgres_url(request), tmp_path / "data", DIMENSION)
    request.addfinalizer(service.close)
    service.remember("Refunds are retried nightly by the billing worker")
    for _ in range(3):  # the words counted, the connections made
        assert service.recall(QUESTION).hits
    trips = RoundTrips(monkeypatch)

    after_a_recall = trips.during(lambda: service.recall(QUESTION))
    service.remember("Office plants get water every Monday morning")  # no word of the question
    after_a_remember = trips.during(lambda: service.recall(QUESTION))

    assert service.store.count_pending_embeddings() == 0  # the recall embedded it
    assert sorted((after_a_remember - after_a_recall).elements()) == [
        "SELECT id, text FROM memories WHERE embedding",  # the backlog, the new memory in it
        "UPDATE memories SET embedding = %(e)s::vector WHERE",  # on its own: no BEGIN, no COMMIT
    ]
    assert after_a_recall - after_a_remember == Counter()


# What each write of a memory's row commits with, as the row is written; durably by default, as
# a team's server does (the tests' server does not: ``support/postgres.py``).
SEEN = """
DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = on', current_database()); END $$;
CREATE TABLE seen (n serial, id text, setting text);
CREATE FUNCTION seen() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    INSERT INTO seen (id, setting) VALUES (NEW.id, current_setting('synchronous_commit'));
    RETURN NEW;
END $$;
CREATE TRIGGER seen BEFORE UPDATE ON memories FOR EACH ROW EXECUTE FUNCTION seen();
"""


def test_a_vectors_own_commit_does_not_wait_for_the_disk_and_other_writes_still_do(
    request: pytest.FixtureRequest,
) -> None:
    url = postgres_url(request)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(SEEN)
    store = opened_postgres(url, request, DIMENSION)
    store.add_memories([memory("a", "alpha"), memory("b", "beta"), memory("c", "gamma")])
    vector = np.ones((1, DIMENSION), np.float32)

    store.set_embeddings(["a"], vector)  # its own statement
    store.set_embeddings(["b", "c"], np.repeat(vector, 2, axis=0))  # its own transaction
    with store.db.transaction():  # a caller's: the other writes in it stay durable
        store.set_embeddings(["a"], vector)
        store.update_memory("b", {"reinforced": 2})
    store.update_memory("c", {"reinforced": 3})  # the next write on the same connection

    seen = store.db.rows("SELECT id, setting FROM seen ORDER BY n")
    assert seen == [("a", "off"), ("b", "off"), ("c", "off"), ("a", "on"), ("b", "on"), ("c", "on")]
    assert store.db.rows("SHOW synchronous_commit") == [("on",)]
