"""Real git repositories in a temporary directory, with no user or system git config."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
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


def fast_import(repo: Path, stream: list[str]) -> None:
    """Write into ``repo`` the commits ``git fast-import`` reads from ``stream``'s lines: a history
    of thousands of commits or files in one process, not one ``git commit`` each."""
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=repo,
        input="\n".join(stream) + "\n",
        text=True,
        check=True,
        env={**os.environ, **CLEAN_GIT},
    )


def new_repo(path: Path, *, default: str = "main") -> Path:
    """A repository at ``path`` on branch ``default`` with one commit (README.md): a copy of the
    one this process made first for ``default`` (:func:`_made_once`)."""
    path.mkdir(parents=True, exist_ok=True)
    shutil.copytree(_made_once(_first_commit, default), path, symlinks=True, dirs_exist_ok=True)
    return path.resolve()


def copied_repository(path: Path, make: Callable[..., None], *args: str) -> Path:
    """A repository at ``path`` (which must not exist) as ``make(root, *args)`` builds one in the
    empty folder ``root``: a copy of the one this process built first (:func:`_made_once`), its
    files written now (``shutil.copy``: fresh times, as if made here). ``make`` is a module's
    function, called once per process for each ``args``. Its resolved path."""
    shutil.copytree(_made_once(make, *args), path, symlinks=True, copy_function=shutil.copy)
    return path.resolve()


# The repositories copied, by what makes them: made once per process, where each test made its
# own (two or three git processes, 7-11 ms of CPU; the copy is 2-3 ms), each in a folder of its
# own that no test is given, removed when the process exits.
_MADE: dict[tuple[Callable[..., None], tuple[str, ...]], Path] = {}


def _made_once(make: Callable[..., None], *args: str) -> Path:
    """The repository ``make(root, *args)`` built, built on first use."""
    made = _MADE.get((make, args))
    if made is None:
        folder = Path(tempfile.mkdtemp(prefix="graphmem-git-", dir=os.environ.get(ROOT_VARIABLE)))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        made = folder / "repo"
        made.mkdir()
        make(made, *args)
        _MADE[make, args] = made
    return made


def _first_commit(root: Path, default: str) -> None:
    """What :func:`new_repo` copies: branch ``default`` with one commit (README.md)."""
    git(root, "init", "-q", "-b", default)
    (root / "README.md").write_text("# shop\n", "utf-8")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "first")


def commit(repo: Path, name: str, text: str = "change\n") -> None:
    (repo / name).write_text(text, "utf-8")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
