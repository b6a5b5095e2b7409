"""What people said outranks what the tools scraped: a bootstrapped history does not bury a decision.

A repository whose history has many commits about the same subject, all touching one
file, is bootstrapped (real Kùzu, the real model) next to the user's own decision.
Before hub damping and source priors the commits took the first places: each matches
the query's words and passes its score to every other through the much-touched file.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from graphmem.service.memory import MemoryService

pytestmark = pytest.mark.integration

DECISION = "We chose Kùzu over SQLite for the graph store: Cypher and FTS built in"
TASKS = [
    "lint fixes",
    "tune the buffer pool",
    "retry on lock errors",
    "faster bulk import",
    "close connections on exit",
    "schema migration for entities",
    "batch the FTS index rebuild",
    "log slow queries",
    "fix the vector index update",
    "read rows as arrow tables",
    "drop the unused label",
    "cache prepared statements",
    "count memories per project",
    "handle an empty database",
    "typing fixes",
    "split the row readers",
    "stop leaking cursors",
    "order results by id",
    "clearer lock error",
    "refactor the writes",
]


def _git(root: Path, *args: str, when: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ana Lopez",
        "GIT_AUTHOR_EMAIL": "ana@example.com",
        "GIT_COMMITTER_NAME": "Ana Lopez",
        "GIT_COMMITTER_EMAIL": "ana@example.com",
        "GIT_AUTHOR_DATE": when,
        "GIT_COMMITTER_DATE": when,
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(root.parent),
    }
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


@pytest.fixture
def busy_repo(tmp_path: Path) -> Path:
    """40 commits about the Kùzu store, every one touching ``src/store.py``."""
    root = tmp_path / "busy"
    (root / "src").mkdir(parents=True)
    store = root / "src" / "store.py"
    store.write_text("def open_store(path: str) -> None:\n    pass\n", "utf-8")
    (root / "README.md").write_text("# busy\n\nA store for notes.\n", "utf-8")
    _git(root, "init", "-q", when="2026-01-01T10:00:00Z")
    _git(root, "add", "-A", when="2026-01-01T10:00:00Z")
    _git(root, "commit", "-qm", "Initial import", when="2026-01-01T10:00:00Z")
    for n in range(40):
        store.write_text(store.read_text("utf-8") + f"\n# revision {n}\n", "utf-8")
        subject = f"Kùzu store: {TASKS[n % len(TASKS)]}" + (
            f" ({n // len(TASKS) + 1})" if n >= len(TASKS) else ""
        )
        _git(root, "commit", "-qam", subject, when=f"2026-02-{n % 28 + 1:02d}T{n % 12 + 8:02d}:00:00Z")
    return root.resolve()


@pytest.mark.parametrize("question", ["why kuzu", "why did we pick Kùzu for the graph store"])
def test_the_users_decision_comes_first_after_bootstrapping_a_busy_history(
    real_memory: MemoryService, busy_repo: Path, question: str
) -> None:
    project = str(busy_repo)
    decision = real_memory.remember(DECISION, category="decision", project=project).memory.id
    report = real_memory.bootstrap(busy_repo)
    assert report.commits == 41
    real_memory.embed_pending()

    hits = real_memory.recall(question, project=project).hits

    assert hits[0].memory.id == decision
    assert any(h.memory.source.startswith("git:") for h in hits[1:])  # the commits are still found


def test_a_commit_reached_through_the_busy_file_gains_little(
    real_memory: MemoryService, busy_repo: Path
) -> None:
    project = str(busy_repo)
    real_memory.bootstrap(busy_repo)
    real_memory.embed_pending()

    hits = real_memory.recall("kuzu store lint fixes", project=project).hits

    assert "Kùzu store: lint fixes." in hits[0].memory.text
    gains = [c.score for h in hits for c in h.channels if c.channel == "graph"]
    assert gains, "the commits share src/store.py: spreading reaches them"
    # 41 commits share the file, so an edge through it passes 1/log2(41) ≈ 0.19 of a base
    # score (at most 2 here: lexical + semantic), times 0.5 for one hop, plus 0.3 × 0.19² for two.
    assert max(gains) <= 2 * (0.5 * 0.19 + 0.3 * 0.19**2)
