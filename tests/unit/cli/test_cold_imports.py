"""What a command that builds the Memory service in its own process (a one-shot ``recall``,
``remember`` or ``list`` without a daemon, ``graphmem mcp``) does not import until it is used:
export and import (the export format's pydantic models, an import's reading, checks and plan),
the session-extraction rules, the injection check of an agent's text, the plugin's injector and
a bootstrap's readers of docs and manifests: together about 100 ms of CPU of every cold start
(docs/benchmarks.md, "CLI: the cold paths"). Structural, no timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# Loaded by the first export or import (``TransferFiles`` builds ``Transfer`` then).
TRANSFER = (
    "graphmem.core.export_format",
    "graphmem.service.transfer",
    "graphmem.service.transfer_read",
    "graphmem.service.transfer_plan",
    "graphmem.service.transfer_checks",
    "graphmem.service.transfer_overwrite",
    "graphmem.service.repository_export",
)
# Loaded by an ingest's rules (``Ingester._extract``), by the check of an agent's or a session's
# text for instructions (a person's remember has none), by the daemon's plugin routes and by a
# bootstrap's listing and reading of a repository's docs and manifests.
ELSEWHERE = (
    "graphmem.core.extraction",
    "graphmem.core.shell_runs",
    "graphmem.core.trust",
    "graphmem.service.injection",
    "graphmem.core.injection",
    "graphmem.core.project_facts",
    "graphmem.core.doc_facts",
    "graphmem.core.manifest_facts",
)

# One interpreter: the service opened as a one-shot command opens it (hash vectors: the model
# is not the point), a person's remember, a recall and a list; then an export and its import, which
# load what they need.
PROGRAM = """
import io, json, sys
from pathlib import Path
from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
watched = json.loads(sys.argv[2])
def loaded():
    return sorted(name for name in watched if name in sys.modules)
memory = open_memory(data_dir=Path(sys.argv[1]), embedder=HashEmbedder())
memory.remember("Use ruff for linting", project="cold")
hits = memory.recall("which linter", project="cold").hits
listed = memory.list(project="cold")
before = loaded()
out = io.StringIO()
memory.export(out, project="cold")
exported = memory.import_text(out.getvalue(), project="cold", dry_run=True)
print(json.dumps({
    "hits": len(hits), "listed": len(listed), "before": before, "after": loaded(),
    "imported": exported.records,
}))
memory.close()
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What the program above printed, run in a new interpreter with its own home and data dir
    and no config file."""
    home = tmp_path_factory.mktemp("cold")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRAPHMEM_", "GIT_"))}
    env.update(HOME=str(home), GRAPHMEM_DATA_DIR=str(home / "data"), GRAPHMEM_CONFIG=str(home / "none.toml"))
    watched = json.dumps([*TRANSFER, *ELSEWHERE])
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(home / "data"), watched],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_building_the_service_and_reading_loads_no_transfer_extraction_nor_injector(
    report: dict[str, Any],
) -> None:
    assert (report["hits"], report["listed"]) == (1, 1)  # the remember, recall and list ran
    assert report["before"] == []


def test_the_first_export_loads_transfer_and_its_import_works(report: dict[str, Any]) -> None:
    assert report["imported"] == 1
    assert set(TRANSFER) <= set(report["after"])  # the names watched above are transfer's modules


def test_the_transfer_modules_named_here_exist() -> None:
    root = Path(__file__).resolve().parents[3]
    for name in (*TRANSFER, *ELSEWHERE):
        assert (root / (name.replace(".", "/") + ".py")).is_file(), name
