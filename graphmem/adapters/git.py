"""What graphmem asks git: a directory's project root and its GitLab path."""

from __future__ import annotations

import re
import subprocess
from functools import lru_cache
from pathlib import Path

from graphmem.errors import InvalidInputError

GIT_TIMEOUT_S = 5.0

# git@host:group/sub/proj.git, ssh://git@host:22/group/proj.git, https://host/group/proj(.git)
_REMOTE_RE = re.compile(r"^(?:[a-z+]+://)?(?:[^@/]+@)?[^:/]+(?::\d+)?[:/](?P<path>.+?)(?:\.git)?/?$")


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@lru_cache(maxsize=64)
def project_root(path: Path) -> Path | None:
    """The git toplevel containing ``path``, or None outside a repository."""
    if not path.exists():
        raise InvalidInputError(f"Project path {path} does not exist: pass an existing directory.")
    directory = path if path.is_dir() else path.parent
    top = _git(directory, "rev-parse", "--show-toplevel")
    return Path(top).resolve() if top else None


@lru_cache(maxsize=64)
def gitlab_path(root: Path) -> str | None:
    """``group/sub/project`` from the ``origin`` remote of ``root``, if it has one."""
    url = _git(root, "config", "--get", "remote.origin.url")
    if not url:
        return None
    match = _REMOTE_RE.match(url)
    return match.group("path") if match else None


class GitToplevel:
    """The ``ProjectRoots`` port: a directory's project is its git toplevel."""

    def project_root(self, path: Path) -> Path | None:
        return project_root(path)
