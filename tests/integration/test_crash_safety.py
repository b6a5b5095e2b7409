"""A killed import loses no acknowledged batch, leaves an openable store, and can be re-run."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.settings import load_settings

pytestmark = pytest.mark.integration

# The killed import's batches: a quarter of the shipped ``transfer.IMPORT_BATCH`` (4,096), so
# that its five batches, two acknowledged before the kill, hold a quarter of the memories.
BATCH = 1024
MEMORIES = 5_000

_IMPORT_SCRIPT = f"""
import sys
from pathlib import Path
from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.service import transfer
from graphmem.settings import load_settings

transfer.IMPORT_BATCH = {BATCH}
memory = open_memory(load_settings(data_dir=Path(sys.argv[1])), embedder=HashEmbedder(256))
done = 0

def progress(count):
    global done
    done += count
    print(done, flush=True)

memory.import_file(Path(sys.argv[2]), progress=progress)
memory.close()
print("DONE", flush=True)
"""


def write_export(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        header = {"type": "header", "format": "graphmem-export", "version": 1, "counts": {"memories": count}}
        out.write(json.dumps(header) + "\n")
        for i in range(count):
            line = {
                "type": "memory",
                "id": f"mem_{i:08d}",
                "text": f"Imported note {i}: service {i % 97} deploys from branch release-{i % 13}",
                "category": "fact",
                "scope": "global",
                "created_at": "2024-05-01T12:00:00+00:00",
            }
            out.write(json.dumps(line) + "\n")


def import_until_killed(data_dir: Path, export: Path, after: int) -> int:
    """Import in a child and SIGKILL it once it acknowledged ``after`` memories; returns the last count."""
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_IMPORT_SCRIPT), str(data_dir), str(export)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    acknowledged = 0
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if line.strip() == "DONE":
                break
            acknowledged = int(line)
            if acknowledged >= after:
                child.kill()
                break
    finally:
        child.kill()
        child.wait(timeout=60)
        errors = child.stderr.read()[-2000:] if child.stderr is not None else ""
        for pipe in (child.stdout, child.stderr):
            if pipe is not None:
                pipe.close()
    assert 0 < acknowledged < MEMORIES, f"the import was not interrupted: {errors}"
    return acknowledged


def test_a_killed_import_keeps_acknowledged_batches_and_completes_when_rerun(tmp_path: Path) -> None:
    export = tmp_path / "export.jsonl"
    write_export(export, MEMORIES)
    data_dir = tmp_path / "data"
    acknowledged = import_until_killed(data_dir, export, after=2 * BATCH)

    memory = open_memory(load_settings(data_dir=data_dir), embedder=HashEmbedder(256))
    try:
        assert memory.stats().total >= acknowledged
        summary = memory.import_file(export)
        assert summary.memories_added + summary.memories_skipped == MEMORIES
        stored = {record.id for record in memory.store.all_memories()}
        assert stored == {f"mem_{i:08d}" for i in range(MEMORIES)}
        assert memory.recall("service 42 deploys").hits
    finally:
        memory.close()


_REMEMBER_SCRIPT = """
import sys
from pathlib import Path
from graphmem.adapters import lexical_index
from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.settings import load_settings

lexical_index.COMMIT_DELAY = 3600  # nothing reaches the full-text index's files before the kill
memory = open_memory(load_settings(data_dir=Path(sys.argv[1])), embedder=HashEmbedder(256))
old = memory.remember("We deploy the billing service with Helm", category="decision", session="s1")
new = memory.remember(
    "We deploy the billing service with Kustomize now", category="decision", session="s1",
    supersedes=old.memory.id,
)
print(old.memory.id, new.memory.id, flush=True)
sys.stdin.read()  # killed here
"""


def test_what_remember_acknowledged_survives_a_kill_9(tmp_path: Path) -> None:
    """The new memory, the session's NEXT edge and the supersession are on disk when remember returns."""
    data_dir = tmp_path / "data"
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_REMEMBER_SCRIPT), str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline().split()
    finally:
        child.kill()
        child.wait(timeout=60)
        errors = child.stderr.read()[-2000:] if child.stderr is not None else ""
        for pipe in (child.stdin, child.stdout, child.stderr):
            if pipe is not None:
                pipe.close()
    assert len(line) == 2, f"the child did not acknowledge: {errors}"
    old, new = line

    memory = open_memory(load_settings(data_dir=data_dir), embedder=HashEmbedder(256))
    try:
        records = memory.store.get_memories([old, new])
        assert records[old].status.value == "superseded" and records[new].status.value == "active"
        assert [(link.source, link.target) for link in memory.store.links([new])] == [(new, old)]
        assert memory.store.next_pairs([old]) == [(old, new)]
        assert [hit.memory.id for hit in memory.recall("Kustomize").hits][:1] == [new]
    finally:
        memory.close()
