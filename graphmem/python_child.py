"""How graphmem runs one of its own modules in a new Python process: the daemon (``graphmem
serve``), a hook's detached starter of it, a bootstrap's parse workers.

Such a process is started from wherever its parent runs, and that is often a project nobody
vetted: a hook and ``graphmem mcp`` run in the agent's working directory, a cloned repository.
``python -m`` puts the current directory first on ``sys.path``, so a ``graphmem/`` folder there
(or a ``tree_sitter.py``, a ``pydantic/``) would be imported instead of graphmem's own and run
with the user's rights. So every child graphmem starts (:func:`python_child`):

- runs ``python -P``: neither the current directory nor a script's is put on ``sys.path``
  (Python 3.11+, graphmem's floor, as its hooks run: docs/claude-code.md). Not ``-I``: that
  would also drop ``PYTHONPATH``, the ``PYTHON*`` settings and the user's site-packages, where a
  ``pip install --user graphmem`` lives;
- starts in :data:`CHILD_CWD` (``/``), not in its parent's directory: an empty or relative entry
  of ``PYTHONPATH`` (``PYTHONPATH=:/opt/lib``, a common slip) still names the current directory,
  ``-P`` or not; and the daemon, which serves every project, holds none of them as its working
  directory nor reads anything relative to the one that happened to start it;
- gets the same environment, with the locations graphmem reads from it made absolute from the
  parent's directory first (:data:`LOCATION_VARIABLES`), so that it reads the config file and
  the data dir its parent read. A caller makes the paths it passes as arguments absolute itself
  (``graphmem.locate.absolute_data_dir`` for a data dir).

Standard library only: ``graphmem mcp`` and every hook start the daemon through it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass

# Where a child starts: a directory every system has, and no project can put a file in.
CHILD_CWD = "/"
# The variables that name where graphmem's files are (``graphmem.locate``): a relative one is read
# from the current directory, which is the parent's for the parent and CHILD_CWD for the child.
LOCATION_VARIABLES = ("GRAPHMEM_CONFIG", "GRAPHMEM_DATA_DIR")


@dataclass(frozen=True, slots=True)
class PythonChild:
    """A graphmem module to run as a process, as ``subprocess`` takes it:
    ``Popen(child.argv, cwd=child.cwd, env=child.env, ...)``; each of the three is part of what
    keeps a project's files out of it (the module doc)."""

    argv: list[str]
    cwd: str
    env: dict[str, str]


def python_child(module: str, *args: str, env: Mapping[str, str] | None = None) -> PythonChild:
    """``python -P -m MODULE ARGS`` with this process's interpreter, in :data:`CHILD_CWD`, with
    ``env`` (default: this process's environment) as :func:`child_environment` makes it."""
    return PythonChild([sys.executable, "-P", "-m", module, *args], CHILD_CWD, child_environment(env))


def child_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's environment), with each of :data:`LOCATION_VARIABLES`
    (in any letter case, as graphmem's settings match them) that is relative made absolute from
    the current directory, as this process read it. A ``~`` is left to the child (it has the same
    ``HOME``); a value that cannot be made absolute (the current directory is gone) is passed as it
    is: the child cannot read it, as its parent could not."""
    made = dict(os.environ if env is None else env)
    for name, value in list(made.items()):
        if name.upper() not in LOCATION_VARIABLES or not value or os.path.isabs(os.path.expanduser(value)):
            continue
        try:
            made[name] = os.path.abspath(value)
        except OSError:  # the current directory is gone
            continue
    return made
