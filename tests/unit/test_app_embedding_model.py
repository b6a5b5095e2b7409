"""The embedding model a new store records at its first open (``graphmem.app._check_model``)."""

from __future__ import annotations

import pytest
from support.stores import postgres_url

from graphmem import app
from graphmem.adapters.postgres_store import PostgresGraphStore

DIMENSION = 256
MODEL = "hash-256"


def test_a_daemon_opening_a_new_team_store_beside_another_never_sees_the_model_without_its_dimension(
    request: pytest.FixtureRequest,
) -> None:
    """Ten daemons started at once on a new store: one read the model another had just recorded,
    not yet its dimension, and refused the store as embedded with another model."""
    url = postgres_url(request, DIMENSION)
    first = PostgresGraphStore(url, dimension=DIMENSION)
    request.addfinalizer(first.close)
    second = PostgresGraphStore(url, dimension=DIMENSION)
    request.addfinalizer(second.close)
    seen: list[tuple[str | None, str | None]] = []
    record = first.set_meta

    def set_meta(key: str, value: str) -> None:
        record(key, value)
        if key == "embedding_model":  # the other daemon reads, on its own connection, right then
            seen.append((second.get_meta("embedding_model"), second.get_meta("embedding_dimension")))

    first.set_meta = set_meta  # type: ignore[method-assign]
    app._check_model(first, "the team's store", MODEL, DIMENSION, enforce=True)

    assert seen == [(None, None)]
    assert (second.get_meta("embedding_model"), second.get_meta("embedding_dimension")) == (MODEL, "256")
    app._check_model(second, "the team's store", MODEL, DIMENSION, enforce=True)  # opens, refuses nothing
