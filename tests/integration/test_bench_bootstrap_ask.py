"""``graphmem bench bootstrap --then-ask`` runs end to end on a small repository: a real daemon
bootstraps it, then context and recall calls are timed (figures reported, not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.daemons import sandbox_env
from support.git_repo import commit, git, new_repo


@pytest.mark.integration
def test_then_ask_times_context_and_recall_after_a_bootstrap(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "shop")
    commit(repo, "cart.py", "def total(items):\n    return sum(i.price for i in items)\n")
    commit(repo, "pay.py", "from cart import total\n\n\ndef charge(items):\n    return total(items)\n")
    git(repo, "commit", "-q", "--allow-empty", "-m", "Retry payments twice before failing")

    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "bench", "bootstrap", str(repo), "--then-ask",
         "--ask-seconds", "3", "--history", "10", "--json"],
        env=sandbox_env(tmp_path / "unused"),  # the bench makes its own data dir and daemon
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["context"]["calls"] >= 1 and report["recall"]["calls"] >= 1
    assert set(report["files"]) == {"cart.py", "pay.py"}
    assert {"p50_s", "p95_s", "max_s"} <= set(report["recall"])
    assert set(report["cli_cpu_p50_s"]) == {"context", "recall"}  # each CLI process's CPU, p50
    assert len(report["load_average"]) == 3
    assert not (tmp_path / "unused").exists()
