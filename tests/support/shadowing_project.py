"""A project that holds a hostile ``graphmem/`` package, as a cloned repository could: a
graphmem process started from it that imports the project's ``graphmem`` instead of the
installed one writes its pid and command line to ``marker`` and exits 0 at once.

For the tests of every place graphmem starts a Python process of its own
(``graphmem/python_child.py``): started from this project, none may import it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# An empty entry of PYTHONPATH is the current directory, ``python -P`` or not: a user's
# ``PYTHONPATH=$PYTHONPATH:/opt/lib`` with nothing set before gives one.
EMPTY_PYTHONPATH_ENTRY = os.pathsep


@dataclass(frozen=True, slots=True)
class ShadowingProject:
    root: Path
    marker: Path

    def imported_by(self) -> str:
        """What each process that imported the hostile package wrote (empty: none did)."""
        try:
            return self.marker.read_text("utf-8")
        except FileNotFoundError:
            return ""


def shadowing_project(tmp_path: Path) -> ShadowingProject:
    """``tmp_path/evil``: a git-less project with ``graphmem/__init__.py`` (and the subpackage a
    hook's module names) that marks ``tmp_path/PWNED`` when imported."""
    root = tmp_path / "evil"
    marker = tmp_path / "PWNED"
    (root / "graphmem" / "integrations").mkdir(parents=True)
    (root / "graphmem" / "__init__.py").write_text(
        "import os, sys\n"
        f"with open({str(marker)!r}, 'a', encoding='utf-8') as out:\n"
        "    out.write(f'{os.getpid()} {sys.argv!r}\\n')\n"
        "raise SystemExit(0)\n",
        "utf-8",
    )
    (root / "graphmem" / "integrations" / "__init__.py").write_text("", "utf-8")
    return ShadowingProject(root, marker)
