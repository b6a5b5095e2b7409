"""The data dir: who holds it, and that no one else reads it.

Kùzu lets one process open a database, so ``owner.json`` says which one does. Every memory
is in the data dir's files (the graph, its log, the vector and lexical indexes, the parses,
the daemon's log, the exports), so the folder is made 0700 and the files graphmem writes
itself 0600; the entry points also set the umask to 0077 (``restrict_umask``), so the files
Kùzu, SQLite and tantivy make are private too. A store made by an older graphmem is tightened
the first time it is opened (``make_private``).

graphmem changes the mode of nothing but its own: the data dir, and the files and folders it
names (``STORE_NAMES``). A folder that holds anything else (a home, a project, ``/``) is
refused before anything is written into it (``refuse_foreign``): made private, its owner's
files would be hidden from everyone they shared them with, and the store would be mixed with
them. Links are never followed, and nothing on another file system (a mount) is changed.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from graphmem.errors import InvalidInputError, StoreError

if TYPE_CHECKING:
    import logging

OWNER_FILENAME = "owner.json"
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
# The bits that let another user (the group, everyone) read, write or enter.
OTHERS_BITS = 0o077
PRIVATE_UMASK = 0o077

# Every name graphmem gives a file or folder at the top of a data dir, now or in an earlier
# version: what has another name is not graphmem's, and ``make_private`` neither changes it nor
# opens a folder holding it. Each is named again by the module that writes it; the test
# (tests/unit/adapters/test_data_dir_names.py) holds each of those constants to this list.
STORE_NAMES = frozenset(
    {
        "graph.kuzu",  # adapters/kuzu_store.py DB_DIRNAME
        "graph.vectors",  # adapters/kuzu_vectors.py VECTOR_LOG
        "parses.sqlite3",  # adapters/parse_store.py PARSES_FILE
        "lexical.tantivy",  # adapters/lexical_index.py DIRNAME
        "vectors",  # adapters/vector_files.py DIRNAME
        "team-text",  # adapters/postgres_lexical.py DIRNAME: a team daemon's full-text indexes
        OWNER_FILENAME,
        "daemon.json",  # server/daemon_process.py INFO_FILENAME ...
        "daemon.tmp",  # ... daemon.json being written (``with_suffix(".tmp")``)
        "daemon.lock",  # LOCK_FILENAME
        "daemon-start.lock",  # START_LOCK_FILENAME
        "daemon.log",  # LOG_FILENAME
        "daemon.token",  # TOKEN_FILENAME
        "exports",  # service/file_access.py EXPORTS_FOLDER
        "ui-sign-in.html",  # cli/server.py SIGN_IN_PAGE
        "hooks.log",  # integrations/hook_command.py LOG_FILENAME
        "hook-journal",  # integrations/hook_journal.py JOURNAL_FOLDER
        "hook-backoff",  # integrations/hook_client.py BACKOFF_FILENAME
        "plugin-journal",  # the OpenCode plugin's journal (integrations/opencode/graphmem.js)
        "codex-hook",  # the Codex hook's state folder and log, before the hooks shared hooks.log
        "codex-hook.log",
    }
)
# The files other files sit beside, named after them by what writes them: Kùzu's log and
# temporary files (graph.kuzu.wal), SQLite's (parses.sqlite3-wal, -shm, -journal), the vector
# log's index of records and rewrites (graph.vectors.ids, .new, .moving), a rotated log
# (daemon.log.1). Only these: ``vectors.csv`` or ``exports.zip`` are a person's.
_WITH_SIDECARS = (
    "graph.kuzu",
    "graph.vectors",
    "parses.sqlite3",
    "daemon.log",
    "hooks.log",
    "codex-hook.log",
)
# What an operating system or a file system leaves in any folder it shows or mounts, holding
# no one's work (Finder's .DS_Store, AppleDouble ._ files, Windows' Thumbs.db, KDE's .directory,
# mkfs's lost+found, NFS's and FUSE's files of a deleted file still open): it does not make a
# folder someone's, so a store is not refused for it; and it is not graphmem's, so it is never
# changed.
_LITTER = frozenset({".DS_Store", ".localized", ".directory", "Thumbs.db", "desktop.ini", "lost+found"})
_LITTER_PREFIXES = ("._", ".nfs", ".fuse_hidden")
# Foreign names an error shows: enough to recognise the folder.
_SHOWN_FOREIGN = 3

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
    """Create ``data_dir`` (0700). One that exists must be graphmem's (``refuse_foreign``); when
    others may enter it, take their access away from it and from graphmem's files and folders in
    it, once, with one log line saying what was tightened."""
    with contextlib.suppress(FileExistsError):
        data_dir.mkdir(parents=True, mode=PRIVATE_DIR_MODE)
    folder = _open_folder(data_dir)
    try:
        names = _names(folder)
        _refuse_foreign(data_dir, names)
        info = os.fstat(folder)  # the folder opened, whatever a link or a rename does meanwhile
        if not info.st_mode & OTHERS_BITS or info.st_uid != os.getuid():
            return  # private already (so is what it holds), or not ours to change
        os.fchmod(folder, stat.S_IMODE(info.st_mode) & ~OTHERS_BITS)
        tightened = sum(_tighten(folder, name, info.st_dev) for name in names if is_graphmem_name(name))
    finally:
        os.close(folder)
    _log().info(
        "tightened the data dir %s: it (0700) and %d file(s) and folder(s) in it were readable by "
        "other users; now only you can read them",
        data_dir,
        tightened,
    )


def refuse_foreign(data_dir: Path) -> None:
    """Raise ``StoreError`` when ``data_dir`` holds a file or folder graphmem did not make
    (``is_graphmem_name``): a home, a project or ``/`` given as the data dir. One that does not
    exist yet, is empty or holds only graphmem's passes. For who writes into the data dir before
    the store opens it (``make_private``), such as the daemon's log."""
    try:
        folder = _open_folder(data_dir)
    except FileNotFoundError:
        return  # graphmem makes it, empty
    try:
        names = _names(folder)
    finally:
        os.close(folder)
    _refuse_foreign(data_dir, names)


def _refuse_foreign(data_dir: Path, names: list[str]) -> None:
    foreign = sorted(name for name in names if not is_graphmem_name(name) and not _is_litter(name))
    if not foreign:
        return
    shown = ", ".join(repr(name) for name in foreign[:_SHOWN_FOREIGN])
    if len(foreign) > _SHOWN_FOREIGN:
        shown += f" and {len(foreign) - _SHOWN_FOREIGN} more"
    raise StoreError(
        f"The data dir {data_dir} holds files graphmem did not make ({shown}), so it is not "
        "graphmem's: graphmem would make the folder private to you (hiding it from anyone you "
        "share it with) and mix its store with them, so it leaves it as it is. Give graphmem a new "
        "or empty folder of its own with --data-dir, GRAPHMEM_DATA_DIR or data_dir in the config "
        "file, or unset them for the default; if this folder is graphmem's, move those files out."
    )


def is_graphmem_name(name: str) -> bool:
    """Whether graphmem makes a file or folder called ``name`` at the top of a data dir: one of
    ``STORE_NAMES``, a file beside one (``graph.kuzu.wal``, ``daemon.log.1``), or one being
    written under a hidden name (``.daemon.token.4242.tmp``, ``.ui-sign-in.html.4242.partial``)."""
    if name in STORE_NAMES:
        return True
    if name.startswith(".") and any(name.startswith(f".{known}.") for known in STORE_NAMES):
        return True
    return any(name.startswith((f"{known}.", f"{known}-")) for known in _WITH_SIDECARS)


def _is_litter(name: str) -> bool:
    return name in _LITTER or name.startswith(_LITTER_PREFIXES)


def _open_folder(data_dir: Path) -> int:
    """``data_dir`` opened as a folder (a link to one is the folder it names: a data dir moved to
    another disk); ``InvalidInputError`` for anything else, whose mode is never changed."""
    try:
        return os.open(data_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC)
    except NotADirectoryError:  # a file or a device (/dev/null)
        raise InvalidInputError(
            f"The data dir {data_dir} is not a folder: give a folder with --data-dir or GRAPHMEM_DATA_DIR."
        ) from None


def _names(folder: int) -> list[str]:
    with os.scandir(folder) as entries:
        return [entry.name for entry in entries]


def _tighten(parent: int, name: str, device: int) -> int:
    """Take others' access away from graphmem's file or folder ``name`` in the folder ``parent``
    and from everything under it: never through a link, never on another file system (``device``
    is the data dir's), never what another user owns. How many changed."""
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        if stat.S_ISREG(info.st_mode):
            return int(_tighten_file(parent, name, device))
        if not stat.S_ISDIR(info.st_mode) or info.st_dev != device:
            return 0  # a link, a socket, a mount
        changed = 0
        for _root, folders, files, here in os.fwalk(name, dir_fd=parent, follow_symlinks=False):
            changed += _tighten_open(here, device)
            folders[:] = [sub for sub in folders if _subfolder(here, sub, device)]  # no link, no mount
            changed += sum(_tighten_file(here, file, device) for file in files)
    except OSError:
        _log().debug("could not tighten %s", name, exc_info=True)
        return 0
    return changed


def _subfolder(folder: int, name: str, device: int) -> bool:
    """Whether ``name`` in ``folder`` is a folder (not a link to one) on the file system ``device``."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_dev == device


def _tighten_file(folder: int, name: str, device: int) -> bool:
    """Tighten the regular file ``name`` of ``folder``, opened without following a link (and not
    a FIFO or a device that took its place), so the mode changed is the file's."""
    try:
        handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except OSError:  # a link (ELOOP), gone, or not readable
        _log().debug("could not tighten %s", name, exc_info=True)
        return False
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return False
        return _tighten_open(handle, device)
    finally:
        os.close(handle)


def _tighten_open(handle: int, device: int) -> bool:
    """Take others' access away from the open file or folder ``handle`` when it is this user's
    and on the data dir's file system; whether it changed."""
    info = os.fstat(handle)
    if not info.st_mode & OTHERS_BITS or info.st_uid != os.getuid() or info.st_dev != device:
        return False
    try:
        os.fchmod(handle, stat.S_IMODE(info.st_mode) & ~OTHERS_BITS)
    except OSError:
        _log().debug("could not tighten a file of the data dir", exc_info=True)
        return False
    return True


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
