"""The embedding model a store records (``graphmem.service.semantic.record_model``): at its first
open (``graphmem.app._check_model``) and at a reindex, the model and its dimension together."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.stores import postgres_url
from support.team import on_postgres

from graphmem import app
from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.app import open_memory
from graphmem.core.ports import GraphStore
from graphmem.settings import load_settings

DIMENSION = 256
MODEL = "hash-256"


def _read_by_another_once_the_model_is_written(
    store: GraphStore, other: GraphStore
) -> list[tuple[str | None, ...]]:
    """What ``other`` (a daemon on its own connection) reads of the model and its dimension at
    the moment ``store`` has written the model: filled in as ``store`` writes."""
    seen: list[tuple[str | None, ...]] = []
    record = store.set_meta

    def set_meta(key: str, value: str) -> None:
        record(key, value)
        if key == "embedding_model":
            seen.append((other.get_meta("embedding_model"), other.get_meta("embedding_dimension")))

    store.set_meta = set_meta  # type: ignore[method-assign]
    return seen


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
    seen = _read_by_another_once_the_model_is_written(first, second)

    app._check_model(first, "the team's store", MODEL, DIMENSION, enforce=True)

    assert seen == [(None, None)]
    assert (second.get_meta("embedding_model"), second.get_meta("embedding_dimension")) == (MODEL, "256")
    app._check_model(second, "the team's store", MODEL, DIMENSION, enforce=True)  # opens, refuses nothing


def test_a_daemon_opening_a_team_store_during_a_reindex_sees_the_old_model_or_the_new_never_half(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A reindex to another model wrote the new model, then its dimension: a daemon opening
    meanwhile read the new model with the old dimension."""
    url = postgres_url(request)
    on_postgres(url, tmp_path / "first", DIMENSION).close()  # the store records hash-256
    settings = load_settings(data_dir=tmp_path / "again", store={"url": url})
    memory = open_memory(settings, embedder=HashEmbedder(128), check_model=False)  # as reindex opens it
    request.addfinalizer(memory.close)
    other = PostgresGraphStore(url, dimension=128)
    request.addfinalizer(other.close)
    seen = _read_by_another_once_the_model_is_written(memory.store, other)

    memory.reindex()

    assert seen == [(MODEL, "256")]
    assert (other.get_meta("embedding_model"), other.get_meta("embedding_dimension")) == ("hash-128", "128")
