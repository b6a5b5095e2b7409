"""The daemon's ``/stats`` (and ``memory_status``) says who a team's store knows the daemon as,
as ``graphmem stats --json`` does: the login role, whether it may write, whether it sees every
global memory; ``null`` on a store without a login."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.stores import postgres_url, writer_role

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.app import open_memory
from graphmem.cli.present import stats_json
from graphmem.server.guard import Policy
from graphmem.server.http import build_app
from graphmem.server.runtime import Runtime
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

TOKEN = "t" * 43
DIMENSION = 64


def stats_route(memory: MemoryService) -> dict[str, Any]:
    runtime = Runtime(memory, log_hint="stderr", resolve_project=lambda p: p, version="t")
    app = build_app(runtime, Policy.build(token=TOKEN, api_key=None, max_bytes=100_000, rate_limit=0))
    with TestClient(app, base_url="http://127.0.0.1:9824") as client:
        response = client.get("/stats", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    found: dict[str, Any] = response.json()
    return found


def test_stats_on_a_team_store_names_the_role_the_daemon_logs_in_with(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    admin_url = postgres_url(request)
    PostgresGraphStore(admin_url, dimension=DIMENSION).close()  # the owner sizes the vector column
    name = "carol_" + admin_url.rsplit("/", 1)[1]
    settings = load_settings(data_dir=tmp_path, store={"url": writer_role(admin_url, name)})
    memory = open_memory(settings, embedder=HashEmbedder(DIMENSION))
    try:
        assert memory.coordinator is not None  # a team's store keeps sessions and claims
        role = stats_route(memory.serving(memory.coordinator))["role"]  # as serve_memory serves it
        assert role == {"name": name, "writes": True, "sees_all": False}
        assert role == stats_json(memory.stats())["role"]
    finally:
        memory.close()


def test_stats_on_a_store_without_a_login_has_no_role(memory_service: MemoryService) -> None:
    found = stats_route(memory_service)
    assert "role" in found and found["role"] is None
