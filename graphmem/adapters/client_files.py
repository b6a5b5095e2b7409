"""Which of an agent client's files graphmem may read or write.

A hook (or the daemon's ``/plugin/ingest``) names a session's file: Claude Code's transcript,
Codex's session file. The name comes from input graphmem does not control, so the file is read
only when the path is absolute, has no NUL, is a regular file and not a symlink, and resolves
inside one of the client's own folders (``confined_file``), and opened only while it still is a
regular file, not a symlink (``open_session_file``). Each client's adapter checks what its file is
named.

``graphmem install`` (and uninstall, doctor) reads and rewrites a client's config files and
AGENTS.md (``read_client_file``). A project may be a repository just cloned, which graphmem does
not trust: a file of it (or a folder on its way, such as ``.opencode/``) whose symlinks resolve
outside the project is refused before it is read, so a repository cannot make graphmem edit the
user's ``~/.bashrc`` or quote ``/etc/passwd`` in an error. The user's own (global) files are
followed wherever they link: people keep dotfiles in a repository and link them into
``~/.config``. No such file is read past ``MAX_CLIENT_FILE_BYTES`` (a file a client writes itself
may have a bound of its own: Claude Code's ``~/.claude.json``). An ``uninstall`` that cannot read
one of a client's files still removes graphmem from the others (``PartlyPlanned``). It removes the
project's client folder it leaves empty (``remove_if_empty``), never one holding anything, and
never the user's own (``~/.claude``, ``$CODEX_HOME``): nothing records whether install made it,
and it is the client's home (its sessions, its login), which the client made or will make.

A client may write its file while graphmem plans its edit: Claude Code rewrites ``~/.claude.json``
(its state, up to 100 MB, a second or two to edit) whenever it likes, and a running client saves
its settings when the user changes one. So the text ``read_client_file`` returns (``ClientText``)
carries the ``stamp`` of the file it was read from, and ``check_unchanged`` refuses the write
(``ChangedMeanwhile``, nothing overwritten) unless the file still is that one, right before the
atomic rename (or the unlink) that replaces it: what is left is the gap between that check and the
rename (under a millisecond). The stamp (device, inode, size, mtime and ctime in ns: one ``stat``)
costs the same for any size, and a client that replaces its file by a rename gives it a new inode
whatever the clock; a file of at most ``MAX_CLIENT_FILE_BYTES`` is also read again and
compared with the text, which a coarse mtime (one clock tick) could not tell apart from an
in-place write of the same size. A 100 MB state file is not: reading it again would take as long
as the gap the check closes. A file absent when read and present now has changed too.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from graphmem.errors import IntegrationError, SessionStoreError
from graphmem.regular_files import NotRegularFile, open_regular, read_regular

if TYPE_CHECKING:
    from graphmem.adapters.opencode_config import FileChange

SHOWN_CHARS = 300  # of a refused path, in an error
# Clients' configs and AGENTS.md files are kilobytes; 1 MiB is generous for any written by hand
# and bounds what a hostile file costs to read and edit (a 100 MB one once took 12 GB of memory).
MAX_CLIENT_FILE_BYTES = 1024 * 1024
_MIB = 1024 * 1024


# What identifies a file's content without reading it: device, inode, size, mtime and ctime (ns).
Stamp = tuple[int, int, int, int, int]


class ClientText(str):
    """A client file's text as ``read_client_file`` read it, with the ``stamp`` of that file (taken on
    the descriptor it was read from): ``check_unchanged`` compares it before the file is replaced."""

    stamp: Stamp

    def __new__(cls, text: str, stamp: Stamp) -> ClientText:
        made = super().__new__(cls, text)
        made.stamp = stamp
        return made


class ChangedMeanwhile(IntegrationError):
    """A client's file is no longer the one its plan was made from: the client (or the user) wrote
    it after graphmem read it. It is left as it is (exit 10)."""


class PartlyPlanned(IntegrationError):
    """An uninstall that could not read (or edit) one of a client's files: ``changes`` remove
    graphmem from the others, which the CLI applies before it shows the message (exit 10), so
    that one unreadable file does not keep graphmem in every other."""

    def __init__(self, message: str, changes: Sequence[FileChange]) -> None:
        super().__init__(message)
        self.changes = list(changes)


def reinstall_fix(client: str, project: Path | None) -> str:
    """What ``graphmem doctor`` tells the user to run for a scope whose install is outdated,
    incomplete or broken: install ``client`` (its subcommand) again, into the same scope
    (``--global`` for the user's own files, ``project`` None)."""
    scope = "" if project is not None else " --global"
    return f"run `graphmem install {client}{scope}` again"


def confined_file(
    path: str, roots: Sequence[Path], *, what: str, outside: str, check_name: Callable[[Path], None]
) -> Path:
    """``path`` resolved, when graphmem may read it; else ``SessionStoreError`` saying why.

    ``what`` names the file in errors ("The transcript"); ``outside`` ends the error for a file
    outside ``roots`` (which folders those are and how to change them); ``check_name`` raises
    ``SessionStoreError`` for a file not named as the client names its session's file.
    """
    shown = path[:SHOWN_CHARS]
    given = Path(path)
    if "\x00" in path or not given.is_absolute():
        raise SessionStoreError(f"{what} {shown!r} is not absolute: send the client's own path.")
    check_name(given)
    try:
        info = os.lstat(given)
        # realpath, not Path.resolve: a symlink loop is an OSError, not a RuntimeError (Python 3.11).
        resolved = Path(os.path.realpath(given, strict=True))
        inside = any(resolved.is_relative_to(os.path.realpath(root.expanduser())) for root in roots)
    except OSError as exc:
        raise SessionStoreError(f"Cannot read {what.lower()} {shown}: {exc.strerror or exc}.") from None
    if stat.S_ISLNK(info.st_mode):
        raise SessionStoreError(f"{what} {shown} is a symlink: graphmem reads only the client's own files.")
    if not stat.S_ISREG(info.st_mode):
        raise SessionStoreError(f"{what} {shown} is not a regular file.")
    if not inside:
        raise SessionStoreError(f"{what} {shown} is outside {outside}")
    return resolved


def open_session_file(path: Path, *, what: str) -> BinaryIO:
    """``path`` (a file ``confined_file`` allowed) opened to read, when it still is a regular file and
    no symlink: it may have been replaced since, by a FIFO whose read would wait forever, a folder or a
    link out of the client's folders. ``what`` names it in the ``SessionStoreError`` otherwise."""
    try:
        return open_regular(path, follow_links=False)
    except NotRegularFile:
        raise SessionStoreError(f"{what[:1].upper()}{what[1:]} {path} is not a regular file.") from None
    except OSError as exc:
        raise SessionStoreError(f"Cannot read {what} {path}: {exc.strerror or exc}.") from None


def read_client_file(
    path: Path, project: Path | None = None, *, most: int = MAX_CLIENT_FILE_BYTES
) -> str | None:
    """The text of a client's config or AGENTS.md, line endings as they are (a ``ClientText``, which
    ``check_unchanged`` knows the file by); None when absent.

    ``project``: the folder a project's install is confined to (``check_in_project``); None for the
    user's own files. A file that is not a regular file, is over ``most`` bytes or is not UTF-8 is
    refused with ``IntegrationError``.
    """
    check_in_project(path, project)
    try:
        with open_regular(path) as handle:
            stamp = _stamp(os.fstat(handle.fileno()))  # before the read: a write during it shows
            data = handle.read(most + 1)
    except (FileNotFoundError, NotADirectoryError):  # a missing folder is created on write
        return None
    except NotRegularFile:
        raise IntegrationError(
            f"{path} is not a regular file: move it away and run the command again; nothing was changed."
        ) from None
    except OSError as exc:
        raise IntegrationError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    if len(data) > most:
        raise IntegrationError(
            f"{path} is over {most / _MIB:g} MiB, far more than an agent "
            "client's config or AGENTS.md holds, so graphmem does not edit it: check that it is the "
            "file you mean and make it smaller; nothing was changed."
        )
    try:
        return ClientText(data.decode("utf-8"), stamp)
    except UnicodeDecodeError as exc:
        raise IntegrationError(
            f"{path} is not UTF-8 text (byte {exc.start}); save it as UTF-8 and run the command again."
        ) from None


def check_unchanged(path: Path, before: str | None, done: Sequence[Path] = ()) -> None:
    """``ChangedMeanwhile`` unless ``path`` still is the file ``before`` was read from (None: absent
    then and now); ``done`` names the files already changed, for the message. A ``before`` that did
    not come from ``read_client_file`` (no stamp) is compared as text."""
    if _unchanged(path, before):
        return
    left = "nothing was changed" if not done else f"already changed: {', '.join(map(str, done))}"
    raise ChangedMeanwhile(
        f"{path} changed after graphmem read it: the client (or you) wrote it meanwhile, and graphmem "
        f"does not overwrite that. Run the command again (close the client first if it keeps writing "
        f"the file); {left}."
    )


def _unchanged(path: Path, before: str | None) -> bool:
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return before is None
    except OSError as exc:
        raise IntegrationError(f"Cannot read {path}: {exc.strerror or exc}; nothing was changed.") from None
    if before is None:
        return False
    if isinstance(before, ClientText):
        if _stamp(info) != before.stamp:
            return False
        if info.st_size > MAX_CLIENT_FILE_BYTES:
            return True  # the stamp alone: reading 100 MB again would widen the gap the check closes
    expected = before.encode("utf-8")
    if info.st_size != len(expected):
        return False
    try:
        return read_regular(path, len(expected)) == expected
    except OSError:  # replaced by a folder, a FIFO, or gone: not the file that was read
        return False


def _stamp(info: os.stat_result) -> Stamp:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def check_in_project(path: Path, project: Path | None) -> None:
    """``IntegrationError`` when ``path``, its symlinks and its folders' resolved, is outside
    ``project`` (a file that does not exist yet too: it would be created there); None allows any."""
    if project is None:
        return
    root = Path(os.path.realpath(project))
    # realpath, not Path.resolve: it follows a dangling link and does not raise on a loop.
    if Path(os.path.realpath(path)).is_relative_to(root):
        return
    link = _link_out(path, project, root)
    through = "" if link == path else f"; graphmem would write {path} through it"
    raise IntegrationError(
        f"{link} is a symlink to {os.path.realpath(link)}, outside the project {project}{through}. "
        "graphmem reads and writes a project's files only inside it: remove the link (a copy can take "
        "its place), or run the command with --global to use your own config instead; "
        "nothing was changed."
    )


def remove_if_empty(folder: Path, name: str, project: Path | None) -> None:
    """After uninstall: ``folder`` when it is the client's folder ``name`` (``.claude``,
    ``.codex``) right inside ``project`` (install makes it for its file when missing) and empty; with no
    ``project`` (the user's own scope) none. One with anything in it stays, the user's files with it."""
    if project is not None and folder.name == name and folder.parent == project:
        with contextlib.suppress(OSError):  # not empty, or not ours to remove
            folder.rmdir()


def _link_out(path: Path, project: Path, root: Path) -> Path:
    """The first link on the way from ``project`` to ``path`` that leads outside ``root``."""
    for step in [*reversed(path.parents), path]:
        inside = step != project and step.is_relative_to(project)
        if inside and step.is_symlink() and not Path(os.path.realpath(step)).is_relative_to(root):
            return step
    return path
