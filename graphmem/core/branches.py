"""Branch-aware memory: which branch a memory belongs to, and who sees it.

A memory written on a project's checkout while it is on a branch other than the default
one carries that branch (``MemoryRecord.branch``). Recall on that branch sees it; on
other branches it is seen only when asked (``Visibility.all_branches`` or another
``branch``). When the branch's merge request merges its memories become project memories;
when the MR closes unmerged or the branch is deleted they are archived (see
``service/branches.py``).

A branch name is hostile input like any other: it comes from git (a repository anyone may
have cloned), GitLab (an MR's source branch) or a caller. It is held to git's own rules for
a branch name (``git check-ref-format --branch``) and a length, then every character but
letters, digits, marks and ``. _ - / + @ # = ,`` becomes ``_`` (``feat/<x>`` is kept as
``feat/_x_``): what graphmem keeps and shows can never carry a newline, a control
character, a space, a backtick or a tag into a prompt. The same name read from git and
from GitLab becomes the same key.

A project's code graph is its default branch's, as its project memories are the default
branch's truth: every checkout of the project reads the one graph, so once a bootstrap ran on the
default branch, one of a checkout on another branch is refused (``code_pass_refused``); until
then a branch's pass writes it and says so (``code_of_branch``, docs/code-graph.md "Branches").
"""

from __future__ import annotations

import unicodedata

from graphmem.errors import InvalidInputError

MAX_BRANCH_CHARS = 250  # git allows longer refs; no real branch name is this long
# What git refuses anywhere in a ref name (``git check-ref-format``), and a backtick: a
# branch shown in a prompt's context is written in backticks.
_FORBIDDEN = frozenset(" ~^:?*[\\`")
_KEPT_PUNCTUATION = frozenset("._-/+@#=,")
_SEPARATOR = "\x00"  # between a project and a branch in a place: neither may hold it


def branch_problem(name: str) -> str | None:
    """Why ``name`` is no branch name graphmem keeps (None when it is one)."""
    if not name:
        return "is empty"
    if len(name) > MAX_BRANCH_CHARS:
        return f"is over {MAX_BRANCH_CHARS} characters"
    if any(unicodedata.category(c)[0] in "CZ" for c in name):
        return "holds a space or a control character"
    if any(c in _FORBIDDEN for c in name):
        return "holds one of ~ ^ : ? * [ \\ `"
    if name.startswith(("-", "/")) or name.endswith(("/", ".", ".lock")) or name == "@":
        return "starts with - or /, or ends with /, . or .lock"
    if ".." in name or "//" in name or "@{" in name:
        return "holds .., // or @{"
    if any(part.startswith(".") for part in name.split("/")):
        return "has a part that starts with ."
    return None


def _kept(name: str) -> str:
    return "".join(c if c in _KEPT_PUNCTUATION or unicodedata.category(c)[0] in "LNM" else "_" for c in name)


def parse_branch(name: object) -> str | None:
    """A caller's branch name as graphmem keeps it (``InvalidInputError`` saying why it is
    none); None stays None."""
    if name is None:
        return None
    if not isinstance(name, str):
        raise InvalidInputError("branch must be a branch name such as feature/refunds.")
    problem = branch_problem(name)
    if problem is not None:
        raise InvalidInputError(
            f"branch {name[:80]!r} {problem}: give a git branch name such as feature/refunds."
        )
    return _kept(name)


def read_branch(name: str | None) -> str | None:
    """A branch name read from git or GitLab as graphmem keeps it, or None when it breaks
    git's rules (then it counts as no branch: the default branch's visibility)."""
    return _kept(name) if name and branch_problem(name) is None else None


def place(project: str | None, branch: str | None) -> str | None:
    """Where a memory lives for an index that filters by one key: its project, or its
    project and branch (a memory on a branch is always a project memory)."""
    if project is None or branch is None:
        return project
    return f"{project}{_SEPARATOR}{branch}"


def project_of(place_key: str) -> str:
    """The project of a place (``place``): itself, or the project of a branch's place."""
    return place_key.split(_SEPARATOR, 1)[0]


def places_on(place_key: str, project: str) -> bool:
    """Whether ``place_key`` is a branch place of ``project`` (any branch)."""
    return place_key.startswith(f"{project}{_SEPARATOR}")


def on_branch(branch: str) -> str:
    """How a memory on a branch is marked where it is shown."""
    return f"on branch {branch}"


def code_of_branch(branch: str, default: str) -> str:
    """What a bootstrap on ``branch`` says while no pass on the ``default`` branch has written
    the project's code graph: it holds the branch's code until one does (see the module doc)."""
    return (
        f"The code graph is branch {branch!r}'s until graphmem bootstrap runs in a checkout of "
        f"{default!r}; from then on it is {default!r}'s and a bootstrap on another branch is refused."
    )


def code_pass_refused(checkout: str, branch: str, default: str) -> str:
    """Why a bootstrap of ``checkout``, on ``branch`` and not the project's ``default`` branch,
    stores nothing, and what to do instead (see the module doc)."""
    return (
        f"{checkout} is on branch {branch!r}, and the project's code graph is its default branch's "
        f"({default!r}): every checkout of the project reads it, so a branch's code would replace "
        f"what the others see. Run graphmem bootstrap in a checkout of {default!r}; if "
        f"{branch!r} is the branch the project works from, make it the default: "
        f"git config graphmem.defaultBranch {branch}"
    )
