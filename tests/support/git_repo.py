"""Real git repositories in a temporary directory, with no user or system git config."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from support.temp_root import ROOT_VARIABLE

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
    """A repository at ``path`` on branch ``default`` with one commit (README.md): a copy of the
    one this process made first for ``default`` (:func:`_template`)."""
    path.mkdir(parents=True, exist_ok=True)
    shutil.copytree(_template(default), path, symlinks=True, dirs_exist_ok=True)
    return path.resolve()


# The repositories new_repo copies, by default branch: made once per process, where each test
# made its own (three git processes, 11 ms of CPU; the copy is 3 ms), in a folder of their own
# that no test is given, removed when the process exits.
_TEMPLATES: dict[str, Path] = {}


def _template(default: str) -> Path:
    """The repository :func:`new_repo` copies for branch ``default``, made on first use."""
    made = _TEMPLATES.get(default)
    if made is None:
        folder = Path(tempfile.mkdtemp(prefix="graphmem-git-", dir=os.environ.get(ROOT_VARIABLE)))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        made = _TEMPLATES[default] = folder / "repo"
        made.mkdir()
        git(made, "init", "-q", "-b", default)
        (made / "README.md").write_text("# shop\n", "utf-8")
        git(made, "add", "README.md")
        git(made, "commit", "-q", "-m", "first")
    return made


def commit(repo: Path, name: str, text: str = "change\n") -> None:
    (repo / name).write_text(text, "utf-8")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
