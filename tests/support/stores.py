"""The stores the contract tests run against: Kùzu, the in-memory fake, and PostgreSQL.

``STORES`` maps each store's name to what opens a fresh one in a test: a copy in ``tmp_path``
of an empty Kùzu store made once per process (:class:`KuzuTemplates`), or an empty database of
the session's PostgreSQL server (``postgres_server`` in tests/conftest.py, ``support/postgres.py``)
with graphmem's schema already applied and a store of the test's dimension opened on it once: a
copy of a template made once per session, lent from the server's pool and emptied when the test
is done.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.ports import GraphStore

from .postgres import PostgresServer

MIGRATED = "graphmem_migrated"


def postgres_url(request: pytest.FixtureRequest, dimension: int | None = None) -> str:
    """An empty PostgreSQL database with graphmem's schema (``graphmem migrate`` applied); its URL.
    With ``dimension``, a store of that dimension was opened on it once (:func:`opened_template`).
    It is given back to the server's pool when ``request``'s test or fixture ends (after what it
    opened on it closed), emptied for the next test or dropped (``PostgresServer.give_back``)."""
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = server.lend_database(MIGRATED if dimension is None else opened_template(server, dimension))
    request.addfinalizer(lambda: server.give_back(url))
    return url


def opened_template(server: PostgresServer, dimension: int) -> str:
    """The template of the empty stores of ``dimension``: a copy of ``MIGRATED`` that a store of
    that dimension was opened on and closed, as :class:`KuzuTemplates` makes Kùzu's. A store's
    first open gives the vector column its dimension and builds its index, and giving the database
    back undid both: together 20 ms of the server's CPU a test and 4 of the test's. A store's
    first open is tested on ``MIGRATED``'s copies (``postgres_url`` without a dimension)."""

    def open_once(url: str) -> None:
        PostgresGraphStore(url, dimension=dimension).close()

    name = f"{MIGRATED}_{dimension}"
    if name not in server.templates:
        server.new_template(name, open_once, source=MIGRATED)
    return name


class KuzuTemplates:
    """New, empty Kùzu stores copied from one made once per dimension (the ``kuzu_templates``
    fixture, one per process): a copy skips the schema's statements, a fifth of a new store's
    CPU (some 190 stores a unit run, docs/testing.md). A store's own making is tested on stores
    made for the test (``test_kuzu_store.py``); the tests of migrations, crashes and reopening
    start from a copy, and ``fake_memory`` and ``real_memory`` open their service on one
    (:meth:`lay_out`)."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def new_store(self, data_dir: Path, dimension: int) -> KuzuGraphStore:
        """An empty store at ``data_dir`` (which must not exist), as a new one would be."""
        self.lay_out(data_dir, dimension)
        return KuzuGraphStore(data_dir, dimension=dimension)

    def lay_out(self, data_dir: Path, dimension: int) -> None:
        """The files of an empty store at ``data_dir`` (which must not exist), not opened: what
        ``graphmem.app.open_memory`` then opens finds the store a new one would be."""
        template = self._root / f"dimension-{dimension}"
        if not template.exists():
            KuzuGraphStore(template, dimension=dimension).close()
        shutil.copytree(template, data_dir, symlinks=True)


def new_kuzu(data_dir: Path, request: pytest.FixtureRequest, dimension: int) -> KuzuGraphStore:
    """A new, empty Kùzu store at ``data_dir``: a copy of the process's template (:class:`KuzuTemplates`)."""
    templates: KuzuTemplates = request.getfixturevalue("kuzu_templates")
    return templates.new_store(data_dir, dimension)


def writer_role(admin_url: str, name: str) -> str:
    """A login role with the writer grants of docs/team.md on the database at ``admin_url`` (a
    superuser's); its URL."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {name} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {name}")
        conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {name}")
        conn.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {name}")
    return admin_url.replace("postgres@", f"{name}@")


def opened_postgres(url: str, request: pytest.FixtureRequest, dimension: int) -> PostgresGraphStore:
    """The PostgreSQL store at ``url``, closed when the test ends."""
    store = PostgresGraphStore(url, dimension=dimension)
    request.addfinalizer(store.close)
    return store


def open_store(name: str, tmp_path: Path, request: pytest.FixtureRequest, dimension: int) -> GraphStore:
    """A fresh, empty store of kind ``name`` (a key of ``STORES``)."""
    return STORES[name](tmp_path, request, dimension)


STORES: dict[str, Callable[[Path, pytest.FixtureRequest, int], GraphStore]] = {
    "kuzu": lambda path, request, dim: new_kuzu(path / "data", request, dim),
    "memory": lambda path, _, dim: FakeGraphStore(dimension=dim),
    "postgres": lambda path, request, dim: PostgresGraphStore(postgres_url(request, dim), dimension=dim),
}
