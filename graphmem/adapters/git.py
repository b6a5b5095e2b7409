"""What graphmem asks git: a directory's project and branch, a project's branches, its GitLab path.

The project of a directory is its repository's main checkout: every worktree of one
repository (``git worktree add``) is one project, so they share one memory. The branch of a
directory is read from its own checkout, each call (it changes under a running daemon).
How git is run on a repository graphmem reads (its history, its diffs) is here too:
``git_env`` and ``run_bounded``.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import IO, TypeVar

from graphmem.core.branches import read_branch
from graphmem.core.projects import (
    PROJECT_CONFIG,
    is_checkout_path,
    project_key,
    project_override,
    remote_name,
)
from graphmem.errors import InvalidInputError

GIT_TIMEOUT_S = 5.0
MAX_ANSWER_BYTES = 64 * 1024  # of what git says of a checkout (a path, a setting, a few refs)
# Of a repository's list of branches (``local_branches``): some 100,000 of them; a repository of
# millions says nothing instead.
MAX_BRANCH_LIST_BYTES = 8 * 1024 * 1024
MAX_ERROR_BYTES = 64 * 1024  # of what git says went wrong: its first line is what is logged
ERROR_CHUNK_BYTES = 64 * 1024  # read from git's error pipe at once (a pipe's buffer on Linux)
DEFAULT_BRANCH_TTL_S = 60.0  # how long a project's default branch is taken as read
PROJECT_NAME_TTL_S = 60.0  # and a checkout's project name and origin remote (git config)
_T = TypeVar("_T")
# A repository's own setting for its default branch, before origin/HEAD, main and master.
DEFAULT_BRANCH_CONFIG = "graphmem.defaultBranch"

# Set when git runs hooks or is run from inside another repository's commands: they would point
# git at that repository (or its objects, or stop its search) instead of the one graphmem names.
GIT_LOCATION_VARIABLES = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_COMMON_DIR",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        "GIT_CEILING_DIRECTORIES",
    }
)

# git@host:group/sub/proj.git, ssh://git@host:22/group/proj.git, https://host/group/proj(.git)
_REMOTE_RE = re.compile(r"^(?:[a-z+]+://)?(?:[^@/]+@)?[^:/]+(?::\d+)?[:/](?P<path>.+?)(?:\.git)?/?$")
_HEADS = "refs/heads/"
_REMOTES = "refs/remotes/"
_ORIGIN = "refs/remotes/origin/"


def git_env() -> dict[str, str]:
    """The environment to run git in on a repository graphmem names (blame, log): this process's
    without ``GIT_LOCATION_VARIABLES``, in the C locale (English messages, told apart by their words)."""
    env = {name: value for name, value in os.environ.items() if name not in GIT_LOCATION_VARIABLES}
    env["LC_ALL"] = "C"
    return env


def run_bounded(
    args: list[str],
    cwd: Path,
    *,
    timeout_s: float,
    max_bytes: int,
    stdin: bytes = b"",
    env: Mapping[str, str] | None = None,
) -> tuple[int, bytes, bytes]:
    """Run ``args`` (git and its arguments) in ``cwd`` in ``git_env`` (with ``env`` added), given
    ``stdin`` (nothing else: never this process's own input): its exit status, its output up to
    one byte past ``max_bytes`` (where it is stopped: a repository of a few kilobytes can make
    ``git log`` print gigabytes) and the first ``MAX_ERROR_BYTES`` of its errors (the rest is read
    and dropped: git goes on, the timeout bounds it). Raises ``subprocess.TimeoutExpired`` when it
    runs over ``timeout_s``, ``OSError`` when it cannot run."""
    expired = threading.Event()
    deadline = time.monotonic() + timeout_s
    # The input goes to a file: a pipe left unwritten while the output is read could fill and hold
    # git. The errors go to a pipe read by a thread (``_ErrorStart``): a file would grow for as long
    # as git, or a hook or setting of the repository, prints warnings.
    with tempfile.TemporaryFile() as given:
        given.write(stdin)
        given.seek(0)
        process = subprocess.Popen(
            args,
            cwd=cwd,
            env=git_env() | dict(env or {}),
            stdin=given,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert process.stdout is not None and process.stderr is not None
        errors = _ErrorStart(process.stderr)

        def stop() -> None:
            expired.set()
            process.kill()

        timer = threading.Timer(timeout_s, stop)
        timer.start()
        try:
            output = process.stdout.read(max_bytes + 1)
            if len(output) > max_bytes:
                process.kill()  # what it would print next is not read
        finally:
            process.stdout.close()
            status = process.wait()
            timer.cancel()
            said = errors.kept(max(0.0, deadline - time.monotonic()))
        if expired.is_set():
            raise subprocess.TimeoutExpired(args, timeout_s)
        return status, output, said


class _ErrorStart:
    """A process's error pipe, read to its end by a thread that keeps its first ``MAX_ERROR_BYTES``
    and drops the rest: the process never waits to write an error, and what it prints past them
    takes no memory and no disk."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self._pipe = pipe
        self._start = bytearray()
        self._lock = threading.Lock()
        self._left = threading.Event()  # no one waits for the rest: stop at the next chunk
        self._thread = threading.Thread(target=self._read, name="git-errors", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            while not self._left.is_set():
                chunk = os.read(self._pipe.fileno(), ERROR_CHUNK_BYTES)
                if not chunk:
                    break
                with self._lock:
                    self._start += chunk[: MAX_ERROR_BYTES - len(self._start)]
        finally:
            self._pipe.close()  # a process still writing to it gets EPIPE

    def kept(self, wait_s: float) -> bytes:
        """The start of the errors once the pipe ends, or once ``wait_s`` passed: a process git
        started (a hook) may outlive it and hold the pipe open; then it is read no further."""
        self._thread.join(wait_s)
        self._left.set()
        with self._lock:
            return bytes(self._start)


def _git(cwd: Path, *args: str, max_bytes: int = MAX_ANSWER_BYTES) -> str | None:
    """What ``git args`` prints in ``cwd`` (``run_bounded``), stripped; None when it fails, takes
    over ``GIT_TIMEOUT_S``, prints over ``max_bytes`` or prints what is not UTF-8."""
    try:
        status, output, _ = run_bounded(["git", *args], cwd, timeout_s=GIT_TIMEOUT_S, max_bytes=max_bytes)
    except (OSError, subprocess.TimeoutExpired, ValueError):  # ValueError: a NUL in the path
        return None
    if len(output) > max_bytes:
        import logging  # here: the CLI's light path loads no logging (tests/unit/cli/test_thin_path.py)

        logging.getLogger(__name__).info(
            "git %s in %s printed over %d bytes: not read", args[0], cwd, max_bytes
        )
        return None
    if status != 0:
        return None
    try:
        return output.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None


def _directory(path: Path) -> Path:
    if not path.exists():
        raise InvalidInputError(f"Project path {path} does not exist: pass an existing directory.")
    return path if path.is_dir() else path.parent


@lru_cache(maxsize=64)
def project_root(path: Path) -> Path | None:
    """The project containing ``path``: its repository's main checkout (the same for every
    worktree of it), or its own toplevel when the repository has no main checkout (a bare
    repository's worktrees, a submodule); None outside a repository."""
    directory = _directory(path)
    found = _git(directory, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir")
    if found is None:  # a git older than 2.31, or no repository
        own = _git(directory, "rev-parse", "--show-toplevel")
        return Path(own).resolve() if own else None
    lines = found.splitlines()
    if len(lines) != 2:
        return None
    top, common = Path(lines[0]), Path(lines[1])
    if common.name == ".git" and (common.parent / ".git").is_dir():
        return common.parent.resolve()
    return top.resolve()


def checkout_root(path: Path) -> Path | None:
    """The toplevel of the checkout containing ``path``: a worktree's own (where its files and
    its tools' config are), unlike ``project_root``; None outside a repository."""
    top = _git(_directory(path), "rev-parse", "--show-toplevel")
    return Path(top).resolve() if top else None


def current_branch(path: Path) -> str | None:
    """The branch the checkout at ``path`` is on, when it is not its project's default branch
    (``default_branch``): None on the default branch, on a detached HEAD, outside a repository,
    or for a name graphmem does not keep (``core.branches.read_branch``)."""
    found = off_default_branch(path)
    return found[0] if found is not None else None


def off_default_branch(path: Path) -> tuple[str, str] | None:
    """``current_branch`` and the project's default branch it is not, both as graphmem keeps a
    branch name (``core.branches.read_branch``); None when ``current_branch`` is."""
    directory = _directory(path)
    head = _git(directory, "symbolic-ref", "-q", "HEAD")
    if not head or not head.startswith(_HEADS):
        return None  # detached, or no repository
    branch = head.removeprefix(_HEADS)
    root = project_root(path)
    default = default_branch(root) if root is not None else None
    if default is None or branch == default:
        return None  # the default branch, or none known: then no memory carries a branch
    kept = read_branch(branch)
    return (kept, read_branch(default) or "the default branch") if kept is not None else None


_defaults: dict[Path, tuple[float, str | None]] = {}
_defaults_lock = threading.Lock()


def default_branch(root: Path) -> str | None:
    """The default branch of the repository at ``root``: ``git config graphmem.defaultBranch``,
    else the branch ``origin/HEAD`` points to, else ``main``, else ``master`` (when the
    repository has one); None when none of these exists (then no memory carries a branch)."""
    now = time.monotonic()
    with _defaults_lock:
        cached = _defaults.get(root)
    if cached is not None and now - cached[0] < DEFAULT_BRANCH_TTL_S:
        return cached[1]
    found = _git(root, "config", "--get", DEFAULT_BRANCH_CONFIG) or None
    if found is None:
        refs = _git(root, "for-each-ref", "--format=%(refname) %(symref)", "refs/remotes/origin/HEAD",
                    f"{_HEADS}main", f"{_HEADS}master") or ""  # fmt: skip
        names = dict(line.partition(" ")[::2] for line in refs.splitlines())
        origin = names.get("refs/remotes/origin/HEAD", "")
        if origin.startswith(_ORIGIN):
            found = origin.removeprefix(_ORIGIN)
        else:
            found = next((b for b in ("main", "master") if f"{_HEADS}{b}" in names), None)
    with _defaults_lock:
        _defaults[root] = (now, found)
    return found


def local_branches(project: str) -> frozenset[str] | None:
    """The branches of ``project``'s repository: its local ones and those it knows on its
    remotes (``origin/feature/x`` counts as ``feature/x``: a branch deleted here but still
    pushed is not gone); None when git cannot say, or lists more than ``MAX_BRANCH_LIST_BYTES``."""
    directory = Path(project)
    if not directory.is_dir():
        return None
    listed = _git(
        directory, "for-each-ref", "--format=%(refname)", _HEADS, _REMOTES, max_bytes=MAX_BRANCH_LIST_BYTES
    )
    if listed is None:
        return None
    names = set()
    for line in listed.splitlines():
        if line.startswith(_HEADS):
            names.add(line.removeprefix(_HEADS))
        elif line.startswith(_REMOTES) and not line.endswith("/HEAD"):
            names.add(line.removeprefix(_REMOTES).partition("/")[2])  # past the remote's name
    return frozenset(names - {""})


@lru_cache(maxsize=64)
def gitlab_path(root: Path) -> str | None:
    """``group/sub/project`` from the ``origin`` remote of ``root``, if it has one."""
    url = _git(root, "config", "--get", "remote.origin.url")
    if not url:
        return None
    match = _REMOTE_RE.match(url)
    return match.group("path") if match else None


def shared_project_name(root: Path) -> str | None:
    """The name the repository at ``root`` gives its project in a team's store
    (``core.projects``): ``git config graphmem.project``, else its ``origin`` remote's; None
    when it has neither (then its path names it)."""
    override = _git(root, "config", "--get", PROJECT_CONFIG)
    if override:
        return project_override(override, str(root))
    return origin_name(root)


def origin_name(root: Path) -> str | None:
    """The ``origin`` remote of the repository at ``root`` as ``host/group/repo``
    (``core.projects.remote_name``); None when it has none, or a local one."""
    url = _git(root, "config", "--get", "remote.origin.url")
    return remote_name(url) if url else None


class GitToplevel:
    """The ``ProjectRoots`` port: a directory's project is its repository's main checkout,
    named by its path, or on a team's store (``shared``) by ``shared_project_name``. Which
    checkout each name was last seen at is kept, for what reads the checkout's files, under its
    ``project_key``: the store may keep the project under another spelling of the name."""

    def __init__(self, *, shared: bool = False) -> None:
        self.shared = shared
        self._checkouts: dict[str, Path] = {}  # project_key(name) -> checkout
        self._names: dict[Path, tuple[float, str]] = {}  # root -> (when read, name)
        self._origins: dict[Path, tuple[float, str | None]] = {}  # root -> (when read, origin)
        self._lock = threading.Lock()

    def project_root(self, path: Path) -> Path | None:
        return project_root(path)

    def project_name(self, root: Path) -> str:
        name = self._kept(self._names, root, self._name_of)
        with self._lock:
            self._checkouts[project_key(name)] = root
        return name

    def origin(self, root: Path) -> str | None:
        """``origin_name`` of the checkout at ``root``: a context showing many refs asks it of
        each, on the user's path."""
        return self._kept(self._origins, root, origin_name)

    def _name_of(self, root: Path) -> str:
        return (shared_project_name(root) if self.shared else None) or str(root)

    def _kept(self, cache: dict[Path, tuple[float, _T]], root: Path, read: Callable[[Path], _T]) -> _T:
        """What ``read`` says of ``root``, read again once ``PROJECT_NAME_TTL_S`` has passed."""
        now = time.monotonic()
        with self._lock:
            cached = cache.get(root)
        if cached is not None and now - cached[0] < PROJECT_NAME_TTL_S:
            return cached[1]
        found = read(root)
        with self._lock:
            cache[root] = (now, found)
        return found

    def checkout(self, project: str) -> Path | None:
        if is_checkout_path(project):
            return Path(project)
        with self._lock:
            return self._checkouts.get(project_key(project))

    def local_branches(self, project: str) -> frozenset[str] | None:
        root = self.checkout(project)
        return local_branches(str(root)) if root is not None else None

    def branch(self, root: Path) -> tuple[str, str] | None:
        return off_default_branch(root)
