"""Whether the programs a client's config names for graphmem still run (for ``graphmem doctor``).

``graphmem install`` writes absolute paths: the ``graphmem`` script for the MCP server, this
virtualenv's Python for the hooks. A virtualenv moved, deleted or rebuilt without graphmem leaves
the client running a path that is gone: its MCP server fails to start and its hooks fail on every
turn (Claude Code and Codex show the hook's error, or say nothing). ``stale`` names each such
program and why, so doctor can say so with the fix (``graphmem install <client>`` again).

Nothing here writes or runs: it looks the paths up, reads a script's first line, and looks for
the hook's module in a virtualenv's site-packages.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

# What a script's first line is read of (a shebang is one short line).
MAX_SHEBANG_BYTES = 1024


def _program_problem(program: str) -> str:
    """Why ``program`` (an absolute path) cannot run, or "" when it can."""
    path = Path(program)
    if not path.is_absolute():
        return ""  # found on the client's PATH: nothing to check here
    if not path.exists():
        return f"{program} does not exist"
    if not path.is_file() or not os.access(path, os.X_OK):
        return f"{program} is not an executable file"
    try:
        with path.open("rb") as script:
            first = script.read(MAX_SHEBANG_BYTES).split(b"\n", 1)[0]
    except OSError as exc:
        return f"{program} cannot be read ({exc.strerror})"
    if first.startswith(b"#!"):
        words = first[2:].decode("utf-8", errors="replace").split()
        if words and words[0].startswith("/") and not Path(words[0]).exists():
            return f"{program} runs {words[0]}, which does not exist"
    return ""


def _module_problem(python: str, module: str) -> str:
    """Why ``python`` does not have ``module`` (graphmem's hook), or "" when it does or cannot be
    told without running it. Nothing a config names is run: a project's config is its
    repository's file, and a hook command of ``/proc/self/cwd/tools/python`` would run the
    checkout's own program. A virtualenv's Python (``<venv>/bin/python`` beside ``pyvenv.cfg``)
    has it when its site-packages hold the package or its distribution's metadata."""
    venv = Path(python).parent.parent
    if not (venv / "pyvenv.cfg").is_file():
        return ""
    top = module.split(".", 1)[0]
    for site in venv.glob("lib/python*/site-packages"):
        if (site / top).is_dir() or any(site.glob(f"{top}-*.dist-info")):
            return ""
    return f"{python} has no {module} (graphmem is not installed in {venv})"


def server_problems(command: Sequence[str]) -> list[str]:
    """What keeps an MCP server ``command`` (its words) from running."""
    if not command or not isinstance(command[0], str):
        return []
    found = _program_problem(command[0])
    return [f"the MCP server's {found}"] if found else []


def hook_problems(commands: Iterable[str], module: str) -> list[str]:
    """What keeps hook ``commands`` (shell lines running ``python -P -m module ...``) from running,
    each Python once."""
    problems: list[str] = []
    seen: set[str] = set()
    for command in commands:
        try:
            words = shlex.split(command)
        except ValueError:
            continue
        if not words or words[0] in seen:
            continue
        seen.add(words[0])
        found = _program_problem(words[0])
        if not found and module in words and Path(words[0]).is_absolute():
            found = _module_problem(words[0], module)
        if found:
            problems.append(f"the hooks' {found}")
    return problems
