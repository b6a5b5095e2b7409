"""Branch-aware memory from the CLI, in a real git repository: remember on a branch, recall on it
and on main (--all-branches, --branch), the mark, history and undo of a branch's promotion."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support.git_repo import git, new_repo

from graphmem.cli import main

Invoke = Callable[..., Result]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return new_repo(tmp_path / "shop")


@pytest.fixture
def invoke(tmp_path: Path, in_memory_cli: object, repo: Path) -> Invoke:
    runner = CliRunner()

    def run(*args: str, where: Path = repo) -> Result:
        result = runner.invoke(
            main.cli, ["--data-dir", str(tmp_path / "data"), "--project", str(where), *args]
        )
        return result

    return run


def test_a_memory_remembered_on_a_branch_is_recalled_there_only(invoke: Invoke, repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "feature/fees")
    memory_id = invoke("remember", "-c", "decision", "Refunds keep the card fee").stdout.strip()

    on_branch = invoke("recall", "card fee refunds")
    git(repo, "switch", "-q", "main")
    on_main = invoke("recall", "card fee refunds")
    every = invoke("recall", "card fee refunds", "--all-branches")
    named = invoke("recall", "card fee refunds", "--branch", "feature/fees", "--json")

    assert memory_id in on_branch.stdout and "on branch feature/fees" in on_branch.stdout
    assert memory_id not in on_main.stdout
    assert memory_id in every.stdout and "on branch feature/fees" in every.stdout
    [hit] = json.loads(named.stdout)["hits"]
    assert (hit["id"], hit["branch"]) == (memory_id, "feature/fees")


def test_show_and_list_mark_the_branch(invoke: Invoke, repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "fix/überweisung")
    memory_id = invoke("remember", "Transfers round down").stdout.strip()
    git(repo, "switch", "-q", "main")

    assert "on branch fix/überweisung" in invoke("show", memory_id).stdout
    assert "on branch fix/überweisung" in invoke("list").stdout
    assert json.loads(invoke("show", memory_id, "--json").stdout)["branch"] == "fix/überweisung"


def test_on_a_detached_head_a_memory_carries_no_branch(invoke: Invoke, repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "feature/x")
    git(repo, "checkout", "-q", "--detach")
    memory_id = invoke("remember", "Refunds keep the card fee").stdout.strip()

    assert json.loads(invoke("show", memory_id, "--json").stdout)["branch"] is None


def test_context_and_boot_see_the_checkouts_branch(invoke: Invoke, repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "feature/fees")
    memory_id = invoke("remember", "-c", "directive", "Always keep the card fee on refunds").stdout.strip()

    assert memory_id in invoke("boot").stdout
    assert memory_id in invoke("context", "card fee refunds").stdout
    git(repo, "switch", "-q", "main")
    assert memory_id not in invoke("boot").stdout
    assert memory_id not in invoke("context", "card fee refunds").stdout


def test_a_bad_branch_name_is_a_usage_error_with_the_fix(invoke: Invoke) -> None:
    result = invoke("recall", "refunds", "--branch", "a..b")

    assert result.exit_code == 2
    assert "give a git branch name" in result.stderr


def test_undo_of_a_promotion_puts_the_memory_back_on_its_branch(invoke: Invoke, repo: Path) -> None:
    git(repo, "branch", "feature/gone")
    git(repo, "switch", "-q", "-c", "feature/fees")
    memory_id = invoke("remember", "Refunds keep the card fee").stdout.strip()
    git(repo, "switch", "-q", "main")
    git(repo, "branch", "-D", "feature/fees")
    invoke("bootstrap", "--history", "0")  # checks the project's branches

    lines = invoke("history", memory_id).stdout.splitlines()
    event_id = lines[0].split()[0]
    undone = invoke("undo", event_id)

    assert "rule branch-deleted" in lines[0] and "branch feature/fees → none" in lines[0]
    assert lines[1] == f"    branch feature/fees no longer exists in {repo}"
    assert undone.stdout == (
        f"undid {event_id} on {memory_id}: status archived → active; branch none → feature/fees\n"
    )
