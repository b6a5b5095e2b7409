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

Two shared names on GitHub, GitLab or Bitbucket that differ only in the case of ASCII letters
(``github.com/Acme/Shop`` and ``github.com/acme/shop``) are one project (``project_key``): those
forges resolve a path so; on another git server case tells two repositories apart. A store
that already keeps the project under one spelling keeps it so: the name a checkout gives is
bound to that spelling, never rewritten to a new one (``stored_spelling``).
"""

from __future__ import annotations

import re
import string
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
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
# A-Z to a-z and nothing else: str.lower() and casefold() also map the Kelvin sign to k and
# (casefold) the long s to s, which would make a name no forge has equal an ASCII one.
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
# Forges whose repository paths are case-insensitive (``project_key``), and the starts of the
# names self-hosted ones are usually given (gitlab.example.com, github.example.com).
CASELESS_HOSTS = frozenset({"github.com", "gitlab.com", "bitbucket.org"})
CASELESS_PREFIXES = ("gitlab.", "github.", "bitbucket.")


# Forges other than GitLab, by how their hosts' names start (github.com, github.example.com for
# GitHub Enterprise, bitbucket.org): a ref (#12, !12) in a repository there is that forge's, which
# graphmem does not enrich. Any other host may be a self-hosted GitLab, whatever its name.
OTHER_FORGES = {"github.": "GitHub", "bitbucket.": "Bitbucket"}


@dataclass(frozen=True, slots=True)
class ForeignRemote:
    """A repository's ``origin`` on a forge other than GitLab (``foreign_remote``)."""

    forge: str  # "GitHub"
    name: str  # host/group/repo, as ``remote_name`` gives it

    @property
    def path(self) -> str:
        """``group/repo``: the namespace the repository's own refs (#12) resolve in."""
        return self.name.partition("/")[2]

    @property
    def why(self) -> str:
        """Why graphmem does not ask GitLab about the repository's refs (one sentence, no stop)."""
        return (
            f"{self.name} is a {self.forge} repository, and graphmem enriches GitLab's merge "
            "requests, issues and epics only"
        )


def foreign_remote(name: str | None) -> ForeignRemote | None:
    """The remote ``name`` (``remote_name``'s ``host/group/repo``) when its host is a forge other
    than GitLab (``OTHER_FORGES``); None for any other, or none."""
    host = (name or "").partition("/")[0]
    forge = next((forge for start, forge in OTHER_FORGES.items() if host.startswith(start)), None)
    return ForeignRemote(forge, name) if forge is not None and name else None


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


def project_key(name: str) -> str:
    """What every spelling of one shared project name has in common: on a forge that resolves
    a repository's path whatever its case (``CASELESS_HOSTS``: GitHub, GitLab and Bitbucket,
    and a host named after one, as self-hosted GitLab, GitHub Enterprise and Bitbucket Server
    usually are), the name with its ASCII letters lower-cased, every other character as it is;
    any other name as it is. A plain git server (over SSH, Gerrit, cgit) may hold two
    repositories whose names differ only in case: they stay two projects, and their memories
    are never joined (``graphmem.project`` names a project explicitly, and exactly). Their paths
    are ASCII; no forge makes ``ſhop`` (a long s) or ``\u212aitchen`` (the Kelvin sign) the same
    as ``shop`` or ``kitchen``, so neither is folded."""
    host = name.partition("/")[0].translate(_ASCII_LOWER)
    if host in CASELESS_HOSTS or host.startswith(CASELESS_PREFIXES):
        return name.translate(_ASCII_LOWER)
    return name


@dataclass(frozen=True, slots=True)
class Spelling:
    """The name a team's store keeps a checkout's project under (``stored_spelling``)."""

    name: str
    # Other spellings of the same project the store keeps memories under (a project split in
    # two before names were compared so, or two first writers at the same moment): their
    # memories belong under ``name``. (A code graph under another spelling follows ``name`` at
    # the next bootstrap: service/renamed_code.py.)
    others: tuple[str, ...] = ()


def stored_spelling(name: str, memories: Mapping[str, datetime], code: Collection[str] = ()) -> Spelling:
    """How a team's store names the project a checkout calls ``name`` (a shared name), given
    the projects it keeps memories under with when each got its first (``GraphStore.projects``)
    and those it keeps a code graph of (``CodeGraph.projects``): of the spellings of ``name``
    (equal by ``project_key``), the one whose first memory is the oldest (ties: the first in
    code-point order), else the first in code-point order of those with only code, else
    ``name`` itself. Every checkout, whichever asks first, binds to the same one. A checkout's
    path is never a spelling of a shared name."""
    key = project_key(name)

    def spells(stored: str) -> bool:
        return not is_checkout_path(stored) and project_key(stored) == key

    remembered = [spelled for _, spelled in sorted((w, s) for s, w in memories.items() if spells(s))]
    coded = sorted(s for s in code if spells(s) and s not in memories)
    first = next(iter(remembered or coded), name)
    return Spelling(first, tuple(s for s in remembered if s != first))
