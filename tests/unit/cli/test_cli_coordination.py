"""session, claim and release: they need the daemon's coordinator (through a real daemon in
tests/integration/test_daemon.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support.stores import KuzuTemplates

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.cli import main
from graphmem.service.coordination import Coordinator
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

Invoke = Callable[..., Result]  # the ``invoke`` fixture of conftest.py


def test_without_a_daemon_the_commands_say_to_start_it(invoke: Invoke) -> None:
    result = invoke("session", "start", "ci/nightly")

    assert result.exit_code == 2
    assert "graphmem serve" in result.stderr and "Traceback" not in result.output


def served_with(coordinator: Coordinator, templates: KuzuTemplates) -> Callable[..., MemoryService]:
    """The CLI's service factory: each command opens the data dir's store anew, served with
    ``coordinator``; the first finds an empty store's files there, as ``open_memory`` makes them
    (``KuzuTemplates.lay_out``)."""

    def factory(data_dir: Path | None, *, check_model: bool = True) -> MemoryService:
        if data_dir is not None and not data_dir.exists():
            templates.lay_out(data_dir, 256)
        memory = open_memory(load_settings(data_dir=data_dir), embedder=HashEmbedder(256))
        return memory.serving(coordinator)

    return factory


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kuzu_templates: KuzuTemplates) -> Invoke:
    """Each call opens the store anew, with one coordinator for all, as a daemon holds it."""
    coordinator = Coordinator(lambda: datetime(2026, 5, 1, 9, 0, tzinfo=UTC))

    monkeypatch.setattr(main, "SERVICE_FACTORY", served_with(coordinator, kuzu_templates))
    runner = CliRunner()
    return lambda *args: runner.invoke(main.cli, ["--data-dir", str(tmp_path / "data"), *args])


def test_a_session_claims_releases_and_ends_with_a_summary(shared: Invoke) -> None:
    session_id = shared("session", "start", "ci/nightly", "--task", "flaky test").stdout.strip()
    other = shared("session", "start", "opencode/plan").stdout.strip()

    claimed = shared("claim", session_id, "!12")
    taken = shared("claim", other, "!12")
    active = json.loads(shared("session", "active", "--json").stdout)
    released = shared("release", session_id, "!12")
    not_held = shared("release", session_id, "!12")
    ended = shared("session", "end", session_id, "--summary", "The flaky test was a race in refund")

    assert claimed.exit_code == 0 and claimed.stdout.startswith("!12 · ci/nightly")
    assert taken.exit_code == 4 and "claimed by ci/nightly" in taken.stderr
    assert [c["item"] for c in active["claims"]] == ["!12"]
    assert released.stdout.strip() == "released !12" and not_held.exit_code == 1
    assert not_held.stderr.startswith("error: ") and "nothing was released" in not_held.stderr
    memory_id = ended.stdout.split()[-1]
    assert ended.stdout.startswith(f"ended {session_id}")
    assert "race in refund" in shared("show", memory_id).stdout
    assert "No live session" in shared("session", "heartbeat", session_id).stderr


def test_an_agents_session_is_ended_or_its_claim_released_only_with_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kuzu_templates: KuzuTemplates
) -> None:
    coordinator = Coordinator(lambda: datetime(2026, 5, 1, 9, 0, tzinfo=UTC))

    monkeypatch.setattr(main, "SERVICE_FACTORY", served_with(coordinator, kuzu_templates))
    runner = CliRunner()

    def cli(*args: str) -> Result:
        return runner.invoke(main.cli, ["--data-dir", str(tmp_path / "data"), *args])

    own = cli("session", "start", "alice").stdout.strip()
    # What an MCP client's session is: owned by that client, not by the person at the CLI.
    agents = coordinator.start("opencode/plan", None, owner="mcp:0123456789abcdef")
    coordinator.claim(agents.id, "!7")

    refused_release = cli("release", agents.id, "!7")
    refused_end = cli("session", "end", agents.id)
    forced_release = cli("release", agents.id, "!7", "--force")
    forced_end = cli("session", "end", agents.id, "--force")
    own_end = cli("session", "end", own)

    assert refused_release.exit_code == 4 and "started by another client" in refused_release.stderr
    assert refused_end.exit_code == 4 and f"graphmem session end {agents.id} --force" in refused_end.stderr
    assert "Traceback" not in refused_end.output
    assert forced_release.stdout.strip() == "released !7"
    assert forced_end.exit_code == 0 and forced_end.stdout.strip() == f"ended {agents.id}"
    assert own_end.exit_code == 0  # a person's own session needs no --force


def test_session_overrides_lists_what_a_person_forced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kuzu_templates: KuzuTemplates
) -> None:
    coordinator = Coordinator(lambda: datetime(2026, 5, 1, 9, 0, tzinfo=UTC))

    monkeypatch.setattr(main, "SERVICE_FACTORY", served_with(coordinator, kuzu_templates))
    runner = CliRunner()

    def cli(*args: str) -> Result:
        return runner.invoke(main.cli, ["--data-dir", str(tmp_path / "data"), *args])

    agents = coordinator.start("opencode/plan", None, owner="mcp:0123456789abcdef")
    coordinator.claim(agents.id, "!7")
    none_yet = cli("session", "overrides")
    cli("release", agents.id, "!7", "--force")

    listed = cli("session", "overrides")
    as_json = json.loads(cli("session", "overrides", "--json").stdout)

    assert none_yet.stdout.strip() == "No session was ended, and no claim released, by force."
    assert listed.stdout == f"2026-05-01 09:00:00 UTC · a person released !7 of {agents.id} (opencode/plan)\n"
    assert as_json["overrides"] == [
        {
            "at": "2026-05-01T09:00:00+00:00", "act": "release", "session": agents.id,
            "agent": "opencode/plan", "item": "!7", "holder": None, "person": None,
        }
    ]  # fmt: skip
