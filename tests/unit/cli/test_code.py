"""graphmem bootstrap in process on the in-memory store: what a re-scan says about code that moved."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.service.memory import MemoryService

Invoke = Callable[..., Result]  # the ``invoke`` fixture of conftest.py

ORDERS = (
    "def {name}(order):\n    total = sum(line.price for line in order.lines)\n    return total - order.paid\n"
)


def test_a_rescan_says_what_moved_and_how_many_memory_links_followed(invoke: Invoke, tmp_path: Path) -> None:
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    (work / "orders.py").write_text(ORDERS.format(name="balance"), "utf-8")
    assert invoke("bootstrap", str(work), "--history", "0").exit_code == 0
    assert invoke("remember", "-c", "decision", "`balance` never goes below zero").exit_code == 0
    (work / "orders.py").write_text(ORDERS.format(name="amount_due"), "utf-8")

    shown = invoke("bootstrap", str(work), "--history", "0")
    (work / "orders.py").write_text(ORDERS.format(name="still_due"), "utf-8")
    as_json = json.loads(invoke("bootstrap", str(work), "--history", "0", "--json").stdout)

    assert shown.exit_code == 0, shown.output
    assert "moved: 1 symbol, 0 files; 1 memory link followed them" in shown.stdout
    assert "  `balance` → `amount_due` in orders.py (renamed, same body): 1 memory moved" in shown.stdout
    assert (as_json["moved_symbols"], as_json["memories_moved"], as_json["ambiguous_moves"]) == (1, 1, 0)
    assert as_json["moves"] == [
        "`amount_due` → `still_due` in orders.py (renamed, same body): 1 memory moved"
    ]


def test_ctrl_c_during_a_bootstrap_says_what_is_kept_and_how_to_finish(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(self: MemoryService, *args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(MemoryService, "bootstrap", interrupted)

    result = invoke("bootstrap", str(tmp_path / "work"))

    assert result.exit_code == 130
    assert "bootstrap interrupted: what it stored is kept and answers" in result.stderr
    assert "run `graphmem bootstrap` again to finish" in result.stderr
    assert "Aborted" not in result.output


def committed_repository(work: Path, commits: int) -> None:
    git = ["git", "-c", "user.name=Ada", "-c", "user.email=ada@example.com", "-C", str(work)]
    subprocess.run([*git, "init", "-q"], check=True)
    for n in range(commits):
        (work / "orders.py").write_text(ORDERS.format(name=f"due_{n}"), "utf-8")
        subprocess.run([*git, "add", "orders.py"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", f"Rename the balance to due_{n}"], check=True)


def test_with_no_daemon_a_bootstrap_embeds_what_it_wrote_before_it_ends(
    invoke: Invoke, in_memory_cli: dict[Path, FakeGraphStore], tmp_path: Path
) -> None:
    committed_repository(tmp_path / "work", 3)

    result = invoke("bootstrap", str(tmp_path / "work"))

    assert result.exit_code == 0, result.output
    assert "3 commits" in result.stdout
    assert "vectors: 3 memories embedded in " in result.stdout
    assert "embedding 3 memories for search by meaning (Ctrl-C leaves them for later)" in result.stderr
    (store,) = in_memory_cli.values()
    assert store.count_memories() and store.count_pending_embeddings() == 0


def test_a_bootstrap_as_json_says_how_many_it_embedded(
    invoke: Invoke, in_memory_cli: dict[Path, FakeGraphStore], tmp_path: Path
) -> None:
    committed_repository(tmp_path / "work", 2)

    report = json.loads(invoke("bootstrap", str(tmp_path / "work"), "--json").stdout)

    assert (report["commits"], report["pending_vectors"], report["embedded"]) == (2, 2, 2)
    (store,) = in_memory_cli.values()
    assert store.count_pending_embeddings() == 0


def test_through_a_daemon_a_bootstrap_leaves_the_backlog_to_its_worker(
    invoke: Invoke, in_memory_cli: dict[Path, FakeGraphStore], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(MemoryService, "embeds_on_read", property(lambda self: False))
    committed_repository(tmp_path / "work", 2)

    result = invoke("bootstrap", str(tmp_path / "work"))

    assert result.exit_code == 0, result.output
    assert "vectors: the daemon embeds 2 memories in the background" in result.stdout
    (store,) = in_memory_cli.values()
    assert store.count_pending_embeddings() == 2


def test_ctrl_c_while_a_bootstrap_embeds_says_what_still_waits(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(self: MemoryService, progress: object = None) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(MemoryService, "embed_pending", interrupted)
    committed_repository(tmp_path / "work", 2)

    result = invoke("bootstrap", str(tmp_path / "work"))

    assert result.exit_code == 130
    assert "2 commits" in result.stdout  # the report came first
    assert "embedding interrupted: 2 memories still wait for their vector" in result.stderr
    assert "Aborted" not in result.output


def test_a_rescan_that_changed_nothing_says_no_calls_are_gone(invoke: Invoke, tmp_path: Path) -> None:
    committed_repository(tmp_path / "work", 1)
    assert invoke("bootstrap", str(tmp_path / "work"), "--history", "0").exit_code == 0

    again = invoke("bootstrap", str(tmp_path / "work"), "--history", "0")

    assert again.exit_code == 0, again.output
    assert "1 file indexed (0 parsed, 1 unchanged), 0 removed, 0 skipped" in again.stdout
    assert "symbols, their calls and imports unchanged since the last scan" in again.stdout
    assert "calls: none" not in again.stdout


def test_a_bootstrap_of_one_commit_says_one_commit(
    invoke: Invoke, in_memory_cli: dict[Path, FakeGraphStore], tmp_path: Path
) -> None:
    committed_repository(tmp_path / "work", 1)

    result = invoke("bootstrap", str(tmp_path / "work"))

    assert result.exit_code == 0, result.output
    assert "; 1 commit\n" in result.stdout
