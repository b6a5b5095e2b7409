"""Where OpenCode's database is, and whether it is a file graphmem may open to read.

``find_database`` names it (the path given, else ``OPENCODE_DB``, else the XDG data dir);
``check_database`` refuses what is no regular file, saying why, before SQLite opens it
(``opencode_sessions.py`` reads it).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from graphmem.core.text import escape_undecodable
from graphmem.errors import NoSessionStoreError, SessionStoreError

__all__ = ["DEFAULT_ORIGIN", "check_database", "find_database"]

SHOWN_PATH_CHARS = 300  # of a database's path, in an error: a /rpc caller's or the plugin's
DEFAULT_ORIGIN = "the default location"
# What a path that is no regular file is, in words.
_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a named pipe", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}  # fmt: skip


def find_database(explicit: str | Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Where OpenCode's database is: ``explicit``, else ``OPENCODE_DB``, else the XDG data dir.

    Raises:
        SessionStoreError: it is no regular file graphmem may look up (``check_database``; nothing
            is created).
    """
    env = os.environ if env is None else env
    if explicit:
        path, origin = Path(explicit).expanduser(), "the path given"
    elif env.get("OPENCODE_DB"):
        path, origin = Path(env["OPENCODE_DB"]).expanduser(), "OPENCODE_DB"
    else:
        data_home = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local" / "share")
        path, origin = Path(data_home).expanduser() / "opencode" / "opencode.db", DEFAULT_ORIGIN
    check_database(path, origin)
    return path


def check_database(path: Path, origin: str = "the path given") -> None:
    """``SessionStoreError`` unless ``path`` (its symlinks followed) is a regular file, saying why:
    missing, no regular file (a folder, a FIFO whose open would wait forever, ``/dev/zero``), or a
    lookup the system refuses (a symlink loop, a name too long, no permission, a NUL) -- never an
    ``OSError``, which a daemon would answer with a 500 and the command line with a traceback.
    ``origin`` says where the path came from (a missing one at ``DEFAULT_ORIGIN`` is
    ``NoSessionStoreError``: OpenCode has not run here)."""
    shown = escape_undecodable(str(path), SHOWN_PATH_CHARS)
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        # Nothing at the default location just means OpenCode has not run here; a path the
        # user gave that leads nowhere is a mistake to report.
        error = NoSessionStoreError if origin == DEFAULT_ORIGIN else SessionStoreError
        raise error(
            f"No OpenCode database at {shown} ({origin}): it is not an existing file. Run OpenCode once, or "
            "point to its database with --db PATH, OPENCODE_DB or [ingest] opencode_db (`opencode db path` "
            "prints it)."
        ) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL, which no path holds
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SessionStoreError(
            f"Cannot look up OpenCode's database {shown} ({origin}): {reason}. Point to the database "
            "itself (`opencode db path` prints it)."
        ) from None
    if not stat.S_ISREG(mode):
        raise SessionStoreError(
            f"{shown} ({origin}) is {_KINDS.get(stat.S_IFMT(mode), 'something else')}, not a regular "
            "file: OpenCode's database is one. Point to it (`opencode db path` prints it)."
        )
