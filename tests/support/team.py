"""Two people on one team's PostgreSQL store (docs/team.md): Alice and Bob, each logged in as a
writer role of their own, each with the whole service of their own on one database.

``two_writers()`` gives both (a ``Team``), closed when done; a test that needs more than them
(a read-only role, a checkout both work in, the stores below the services) builds its team from
``writer_roles()`` and ``on_postgres()``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.app import open_memory
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

from .stores import postgres_url, writer_role


def role_of(url: str) -> str:
    """The login role of a store's URL (``postgresql://ROLE@host/database``)."""
    return url.split("//", 1)[1].split("@", 1)[0]


def person_role(admin_url: str, person: str) -> str:
    """The name of ``person``'s role on the database at ``admin_url``: roles are the cluster's,
    so each database has its own (``alice_graphmem_3``)."""
    return f"{person}_{admin_url.rsplit('/', 1)[1]}"


def writer_roles(admin_url: str, dimension: int) -> tuple[str, str]:
    """Alice's and Bob's writer roles on the team's database at ``admin_url`` (a superuser's);
    their URLs. The schema's owner first sizes the vector column, which a writer may not."""
    PostgresGraphStore(admin_url, dimension=dimension).close()
    return (
        writer_role(admin_url, person_role(admin_url, "alice")),
        writer_role(admin_url, person_role(admin_url, "bob")),
    )


def on_postgres(url: str, data_dir: Path, dimension: int) -> MemoryService:
    """The service of the person logged in by ``url``, with the hash embedder; ``data_dir`` holds
    what it keeps beside the store."""
    return open_memory(load_settings(data_dir=data_dir, store={"url": url}), embedder=HashEmbedder(dimension))


@dataclass
class Team:
    """Alice and Bob on one team's store: the administrator's URL, each one's, and their services."""

    admin_url: str
    alice_url: str
    bob_url: str
    alice: MemoryService
    bob: MemoryService

    def role(self, url: str) -> str:
        return role_of(url)


@contextmanager
def two_writers(request: pytest.FixtureRequest, tmp_path: Path, dimension: int) -> Iterator[Team]:
    """Alice and Bob on an empty team's database (``postgres_url``), each service with its data
    in ``tmp_path / "alice"`` or ``"bob"``; both services closed at the end."""
    admin_url = postgres_url(request)
    alice_url, bob_url = writer_roles(admin_url, dimension)
    alice = on_postgres(alice_url, tmp_path / "alice", dimension)
    bob = on_postgres(bob_url, tmp_path / "bob", dimension)
    try:
        yield Team(admin_url, alice_url, bob_url, alice, bob)
    finally:
        alice.close()
        bob.close()
