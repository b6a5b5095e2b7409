"""What a project is called in a store a team shares: the same name on every member's machine.

On the embedded store a project is named by where its repository is checked out (an absolute
path), as it always was. A team's store (PostgreSQL, docs/team.md) needs a name that does not
depend on the checkout's path, or two members with the repository in different folders would
be two projects: there a project is named, first found first,

1. by ``git config graphmem.project`` in the repository (an explicit name, see
   ``project_override``);
2. by its ``origin`` remote, normalised (``remote_name``): ``git@gitlab.com:group/repo.git``,
   ``ssh://git@gitlab.com:22/group/repo``, ``https://user:token@gitlab.com/group/repo.git``
   are all ``gitlab.com/group/repo``;
3. else by its checkout path, as on the embedded store.
"""

from __future__ import annotations

import re
from pathlib import Path

from graphmem.errors import InvalidInputError

# The git setting that names a repository's project explicitly (beside graphmem.defaultBranch).
PROJECT_CONFIG = "graphmem.project"
MAX_PROJECT_NAME = 200  # characters: a host and a group path, never a document
_URL = re.compile(
    r"^(?P<scheme>[a-z][a-z0-9+.-]*)://(?:[^@/]*@)?(?P<host>[^/:?#]+)(?::\d*)?(?P<path>/[^?#]*)?"
)
_SCP = re.compile(r"^(?:[^@/:]+@)?(?P<host>[^/:]+):(?P<path>(?!/)[^?#]*)$")  # user@host:group/repo
_NAME = re.compile(r"^[^\x00-\x1f\x7f]+$")


def remote_name(url: str) -> str | None:
    """``host/group/repo`` for a remote's URL (ssh, scp-like, http(s), git), without user,
    password, port or ``.git``; the host lower-cased, the path as written. None for a local
    remote (a path, ``file://``) or anything else that names no host."""
    url = url.strip()
    if not url or len(url) > 2048 or not _NAME.match(url):
        return None
    found = _URL.match(url)
    if found is not None and found["scheme"] == "file":
        return None
    found = found or _SCP.match(url)
    if found is None:
        return None
    path = (found["path"] or "").strip("/")
    path = path.removesuffix(".git").strip("/")
    segments = [s for s in path.split("/") if s]
    if not segments or any(s in (".", "..") for s in segments):
        return None
    name = f"{found['host'].lower()}/{'/'.join(segments)}"
    return name if len(name) <= MAX_PROJECT_NAME else None


def project_override(value: str, where: str) -> str:
    """The project name ``git config graphmem.project`` gives (``value``), checked; ``where``
    names the repository in the error."""
    name = value.strip()
    if not name or len(name) > MAX_PROJECT_NAME or not _NAME.match(name):
        raise InvalidInputError(
            f"`git config {PROJECT_CONFIG}` in {where} is {value[:80]!r}: set it to a name of 1 to "
            f"{MAX_PROJECT_NAME} printable characters (e.g. gitlab.com/group/repo), or unset it."
        )
    return name


def checkout_path(project: str) -> Path | None:
    """The checkout a project named by its path is at; None for a shared name."""
    return Path(project) if is_checkout_path(project) else None


def is_checkout_path(project: str) -> bool:
    """Whether a project name is a checkout's path (the embedded store's names, and a team
    store's for a repository without a remote or a name)."""
    return project.startswith("/")
