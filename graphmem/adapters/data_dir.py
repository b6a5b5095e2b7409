"""The data dir: who holds it, and that no one else reads it.

Kùzu lets one process open a database, so ``owner.json`` says which one does. Every memory
is in the data dir's files (the graph, its log, the vector and lexical indexes, the parses,
the daemon's log, the exports), so the folder is made 0700 and the files graphmem writes
itself 0600; the entry points also set the umask to 0077 (``restrict_umask``), so the files
Kùzu, SQLite and tantivy make are private too. A store made by an older graphmem is tightened
the first time it is opened (``make_private``).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from graphmem.errors import InvalidInputError

if TYPE_CHECKING:
    import logging

OWNER_FILENAME = "owner.json"
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
# The bits that let another user (the group, everyone) read, write or enter.
OTHERS_BITS = 0o077
PRIVATE_UMASK = 0o077

_user_umask: int | None = None  # the umask ``restrict_umask`` replaced


def restrict_umask() -> None:
    """For an entry point (the CLI, the daemon, ``graphmem mcp``): every file and folder this
    process and its children create is private, whoever creates it (Kùzu, SQLite, tantivy)."""
    global _user_umask
    previous = os.umask(PRIVATE_UMASK)
    if _user_umask is None:
        _user_umask = previous


def user_umask() -> int:
    """The umask the user runs graphmem with (before ``restrict_umask``): what a file meant to
    be shared (a repository's ``.graphmem/``) is made with."""
    if _user_umask is not None:
        return _user_umask
    current = os.umask(PRIVATE_UMASK)
    os.umask(current)
    return current


def private_opener(path: str, flags: int) -> int:
    """``open(..., opener=private_opener)``: a file this creates is 0600 whatever the umask."""
    return os.open(path, flags, PRIVATE_FILE_MODE)


def make_private(data_dir: Path) -> None:
    """Create ``data_dir`` (0700) or, when others may enter it, take their access away from it
    and from everything in it, once, with one log line saying what was tightened."""
    with contextlib.suppress(FileExistsError):
        data_dir.mkdir(parents=True, mode=PRIVATE_DIR_MODE)
    info = data_dir.lstat()
    if stat.S_ISLNK(info.st_mode):
        info = data_dir.stat()
    if not stat.S_ISDIR(info.st_mode):  # never change the mode of a file or device (/dev/null)
        raise InvalidInputError(
            f"The data dir {data_dir} is not a folder: give a folder with --data-dir or GRAPHMEM_DATA_DIR."
        )
    if not info.st_mode & OTHERS_BITS or info.st_uid != os.getuid():
        return  # private already (so is what it holds), or not ours to change
    os.chmod(data_dir, stat.S_IMODE(info.st_mode) & ~OTHERS_BITS)
    tightened = _tighten_inside(data_dir)
    _log().info(
        "tightened the data dir %s: it (0700) and %d file(s) and folder(s) in it were readable by "
        "other users; now only you can read them",
        data_dir,
        tightened,
    )


def _tighten_inside(data_dir: Path) -> int:
    """Take others' access away from every file and folder under ``data_dir`` (links are not
    followed); how many changed."""
    changed = 0
    for root, folders, files in os.walk(data_dir):
        for name in [*folders, *files]:
            path = os.path.join(root, name)
            try:
                info = os.lstat(path)
                if stat.S_ISLNK(info.st_mode) or not info.st_mode & OTHERS_BITS:
                    continue
                os.chmod(path, stat.S_IMODE(info.st_mode) & ~OTHERS_BITS)
                changed += 1
            except OSError:
                _log().debug("could not tighten %s", path, exc_info=True)
    return changed


def _log() -> logging.Logger:
    """This module's logger, loaded when something is logged: every CLI call sets the umask
    (``restrict_umask``), and one through a daemon logs nothing."""
    import logging

    return logging.getLogger(__name__)


# The CLI's options before its command that take a value (``graphmem --data-dir D bootstrap``).
_VALUED_OPTIONS = frozenset({"--data-dir", "--project"})


def process_command(argv: list[str]) -> str:
    """What a process is, in the words a person typed: the program and its command, the options
    before it and every argument after it left out (``graphmem bootstrap``; a script's name)."""
    if not argv:
        return "?"
    program = os.path.basename(argv[0])
    if program == "__main__.py":  # python -m graphmem
        program = os.path.basename(os.path.dirname(argv[0]))
    words = [program]
    rest = iter(argv[1:])
    for word in rest:
        if word in _VALUED_OPTIONS:
            next(rest, None)
        elif not word.startswith("-"):
            words.append(word)
            break
    return " ".join(words)[:200]


def write_owner(data_dir: Path) -> None:
    """Record this process as the one holding ``data_dir``."""
    info = {"pid": os.getpid(), "command": process_command(sys.argv)}
    try:
        with open(data_dir / OWNER_FILENAME, "w", encoding="utf-8", opener=private_opener) as out:
            out.write(json.dumps(info))
    except OSError:
        _log().debug("could not write the owner file", exc_info=True)


def locked_message(data_dir: Path, database: Path) -> str:
    """What to tell a process that could not take the lock on ``database``."""
    owner = ""
    try:
        info = json.loads((data_dir / OWNER_FILENAME).read_text("utf-8"))
        owner = f" (process {info.get('pid')}: {info.get('command', '?')})"
    except (OSError, ValueError):
        pass
    return (
        f"Another process{owner} holds the graph store at {database}; Kùzu lets one "
        "process open it at a time. Wait for it to finish (a one-shot command such as a "
        "bootstrap ends on its own), or stop it, then run this command again; or use another "
        "store with --data-dir. To run commands while another works, run the daemon (`graphmem "
        "serve --detach`): every command then goes through it."
    )
