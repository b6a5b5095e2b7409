"""The README's code runs as printed: every shell line a test can run, and the Python
quickstart with no daemon and beside a running one, in a git project with a GitLab remote."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.daemons import sandbox_env, start_daemon, wait_healthy

README = Path(__file__).resolve().parents[2] / "README.md"
CLICK_BUNDLE = Path(__file__).resolve().parents[3] / "shared" / "data" / "repos" / "click.bundle"
BLOCK_RE = re.compile(r"^```(\w+)\n(.*?)^```", re.DOTALL | re.MULTILINE)
# Shell lines no test can run here, each with why.
SKIPPED = {
    "make run": "sets up the venv and runs the daemon for good",
    "make test": "runs the whole test suite",
    "source .venv/bin/activate": "the tests already run in the venv (its bin/ is on PATH)",
    "graphmem install": "edits the user's agent client config",
}
# A placeholder the reader fills in: the id the blocker's `remember` printed.
PLACEHOLDER = "mem_…"
BLOCKER = "CI is red on !123"
TIMEOUT_S = 300


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK_RE.findall(README.read_text("utf-8")) if lang == language]


def shell_lines() -> list[str]:
    lines = [line.strip() for body in blocks("sh") for line in body.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def _skipped(line: str) -> bool:
    return any(line.startswith(prefix) for prefix in SKIPPED)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main() -> None:\n    print('hello')\n", "utf-8")
    (root / "README.md").write_text("# shop\n", "utf-8")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run(
        [*git, "remote", "add", "origin", "git@gitlab.example.com:acme/shop.git"], cwd=root, check=True
    )
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "Start the shop"], cwd=root, check=True)
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    variables = sandbox_env(tmp_path / "data")
    variables["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{variables.get('PATH', '')}"
    return variables


def run_shell(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    assert done.returncode == 0, f"{line!r} exited {done.returncode}: {done.stderr}"
    return done


def run_python(code: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def run_cli_quickstart(root: Path, env: dict[str, str]) -> tuple[dict[str, str], str]:
    """Every shell line a test can run, in order, in ``root``: what each printed, and the
    blocker's id (the reader copies it from `remember`'s output into `resolve`)."""
    outputs: dict[str, str] = {}
    blocker_id = ""
    for line in shell_lines():
        if _skipped(line):
            continue
        done = run_shell(line.replace(PLACEHOLDER, blocker_id), root, env)
        outputs[line] = done.stdout
        if BLOCKER in line:
            blocker_id = done.stdout.strip()
    return outputs, blocker_id


def test_the_readme_has_the_blocks_these_tests_run() -> None:
    assert len(blocks("python")) == 1
    lines = shell_lines()
    assert any(line.startswith("graphmem remember") for line in lines)
    assert [line for line in lines if PLACEHOLDER in line] == [
        f"graphmem resolve {PLACEHOLDER}          # the blocker is gone"
    ]
    assert {prefix for prefix in SKIPPED if any(line.startswith(prefix) for line in lines)} == set(SKIPPED)


def test_every_shell_line_runs_as_printed(project: Path, env: dict[str, str]) -> None:
    outputs, blocker_id = run_cli_quickstart(project, env)
    assert re.fullmatch(r"mem_[0-9a-f]{16}", blocker_id)
    assert "We chose Kùzu over SQLite" in outputs['graphmem recall "why kuzu"']
    assert BLOCKER in outputs["graphmem context '!123'"]
    assert "src/payments/refund.py is not in the graph" in outputs["graphmem context src/payments/refund.py"]
    assert blocker_id in outputs["graphmem list --category blocker"]
    assert (project / "memories.jsonl").is_file()
    assert (project / ".graphmem" / "memories.jsonl").is_file()


@pytest.fixture
def seeded(project: Path, env: dict[str, str]) -> Iterator[Path]:
    """The project after the CLI quickstart's first line about !123."""
    line = next(line for line in shell_lines() if BLOCKER in line)
    run_shell(line, project, env)
    yield project


def _python_quickstart_finds_the_blocker(project: Path, env: dict[str, str]) -> None:
    printed = run_python(blocks("python")[0], project, env)
    assert "Prefer pnpm over npm in every project" in printed  # recall("which package manager")
    assert "## Memory: !123" in printed
    assert BLOCKER in printed  # get_context("!123") finds what `graphmem context '!123'` finds


def test_the_python_quickstart_with_no_daemon(seeded: Path, env: dict[str, str]) -> None:
    _python_quickstart_finds_the_blocker(seeded, env)


def test_the_python_quickstart_beside_a_running_daemon(
    seeded: Path, env: dict[str, str], tmp_path: Path
) -> None:
    daemon = start_daemon(tmp_path / "data")
    try:
        wait_healthy(daemon)  # the README's recall("which package manager") needs the model
        _python_quickstart_finds_the_blocker(seeded, env)
    finally:
        daemon.stop()


@pytest.mark.skipif(not CLICK_BUNDLE.exists(), reason="needs ../shared/data/repos/click.bundle")
def test_the_quickstarts_in_order_on_a_real_repository_show_the_readers_own_memory_first(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """Run in a checkout of click as a new user would, bootstrap included (its 79 files, docs and
    500 commits about packaging, options and types), each quickstart's own memory comes first:
    the scraped commits and docs facts answer "which package manager" no better than the
    person's preference does."""
    root = tmp_path / "click"
    subprocess.run(["git", "clone", "-q", str(CLICK_BUNDLE), str(root)], check=True, capture_output=True)
    outputs, _ = run_cli_quickstart(root, env)
    assert outputs['graphmem recall "why kuzu"'].startswith("1. [decision] We chose Kùzu over SQLite")
    bootstrap = next(out for line, out in outputs.items() if line.startswith("graphmem bootstrap"))
    assert "1,984 symbols" in bootstrap  # the bootstrap ran on the whole checkout

    printed = run_python(blocks("python")[0], root, env).splitlines()

    assert printed[0].startswith("Prefer pnpm over npm in every project ")
    assert not any(line.startswith("Commit ") for line in printed[:2]), printed[:5]
