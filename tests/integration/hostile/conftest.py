"""One real daemon (real Kùzu, the bundled model) for the whole hostile-input suite, a git
project beside it with the traps a path can lead into, and a few seeded memories (global and
project, linked, a blocker) so that "nothing changed" means something. The suite runs twice:
on the embedded store, then with the daemon on a PostgreSQL store (docs/team.md).

The daemon gets a home folder of its own: a path like ``~/.bashrc`` that got through would
land there, where the suite looks for it, and never in the home of whoever runs the tests.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from platformdirs import user_cache_path
from support.daemons import Daemon, start_daemon, wait_healthy
from support.hostile import SECRET, Stage, assert_healthy, assert_no_internal_failures, rpc_call
from support.stores import postgres_url


@pytest.fixture(scope="package", params=["kuzu", "postgres"])
def stage(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stage]:
    """The daemon on the embedded Kùzu store, then on a PostgreSQL one (docs/team.md)."""
    store = {"GRAPHMEM_STORE_URL": postgres_url(request)} if request.param == "postgres" else {}
    root = tmp_path_factory.mktemp("hostile")
    home = (root / "home").resolve()
    (home / ".ssh").mkdir(parents=True)
    (home / ".bashrc").write_text(f"# {SECRET}\n", "utf-8")
    (home / ".ssh" / "authorized_keys").write_text(f"ssh-ed25519 AAAA {SECRET}\n", "utf-8")
    daemon = start_daemon(
        root / "data",
        GRAPHMEM_INGEST__ENABLED="false",
        GRAPHMEM_RATE_LIMIT="0",
        HOME=str(home),
        XDG_CACHE_HOME=str(user_cache_path().resolve()),  # the model file built once, not again
        **store,
    )
    try:
        wait_healthy(daemon)
        project = (root / "proj").resolve()
        (project / "src").mkdir(parents=True)
        (project / "src" / "refund.py").write_text("def refund() -> None: ...\n", "utf-8")
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
        outside = (root / "outside").resolve()
        outside.mkdir()
        (outside / "secret.json").write_text(f'{{"type": "memory", "text": "{SECRET}"}}\n', "utf-8")
        (project / "link-out").symlink_to(outside)
        (project / "secret-link.jsonl").symlink_to(outside / "secret.json")
        (project / "binary.jsonl").write_bytes(bytes(range(256)) * 64)
        (project / "latin1.jsonl").write_bytes('{"type": "memory", "text": "caf\xe9"}\n'.encode("latin-1"))
        fifo = project / "pipe.jsonl"
        os.mkfifo(fifo)
        seeded = {
            "decision": _remember(
                daemon, "We chose Kùzu for the graph store: embedded, Cypher", "decision", project
            ),
            "blocker": _remember(
                daemon, "CI runners are out of disk space on the shared pool", "blocker", project
            ),
            "global": _remember(daemon, "Prefer ruff over flake8 in every repository", "preference", None),
            "directive": _remember(
                daemon, "Never push directly to main; open a merge request", "directive", project
            ),
        }
        rpc_call(daemon, "link", source=seeded["decision"], target=seeded["global"], kind="related")
        yield Stage(daemon, project, outside, home, fifo, seeded, store)
        assert_healthy(daemon)
        assert_no_internal_failures(daemon)
    finally:
        daemon.stop()


def _remember(daemon: Daemon, text: str, category: str, project: Path | None) -> str:
    answer = rpc_call(
        daemon, "remember", text=text, category=category, project=str(project) if project else None
    )
    memory_id: str = answer["result"]["memory"]["id"]
    return memory_id
