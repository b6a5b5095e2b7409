"""Real git repositories in a temporary directory, with no user or system git config."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# No user or system git config: a developer's hooks, signing or templates cannot interfere.
CLEAN_GIT = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Ana",
    "GIT_AUTHOR_EMAIL": "ana@example.com",
    "GIT_COMMITTER_NAME": "Ana",
    "GIT_COMMITTER_EMAIL": "ana@example.com",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **CLEAN_GIT}, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def new_repo(path: Path, *, default: str = "main") -> Path:
    """A repository at ``path`` on branch ``default`` with one commit."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", default)
    (path / "README.md").write_text("# shop\n", "utf-8")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "first")
    return path.resolve()


def commit(repo: Path, name: str, text: str = "change\n") -> None:
    (repo / name).write_text(text, "utf-8")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
