"""What every client's hook command shares besides reaching the daemon (``hook_client``) and
reading its input (``hook_input``): its deadlines, its log, its answer and its journal of prompts.

- ``deadline``: a call's deadline, or the one ``GRAPHMEM_PLUGIN_TIMEOUT_MS`` (50-10000) in the
  client's environment sets.
- ``log_to_file``: the hooks' one-line log, ``hooks.log`` in graphmem's data dir (rotated at 1 MB),
  each line naming the client; never the terminal.
- ``context``: the answer that gives the client a memory block as ``additionalContext`` (Claude
  Code and Codex read the same shape).
- ``Journal``: the prompts of one session the daemon was told of (their ids and text hashes), in
  a file per client and session (``hook-journal/<client>/<session>.json``, 0600 in a 0700 folder,
  written to a temporary file and renamed): each hook is a process of its own, and the daemon
  leaves out of a turn what an earlier turn's block already showed only when it hears of those
  turns.

Standard library only: a hook starts on every user turn.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger("graphmem.integrations.hook_journal")

LOG_FILENAME = "hooks.log"
LOG_MAX_BYTES = 1_000_000
JOURNAL_FOLDER = "hook-journal"
# Prompts of a session whose id and hash are kept (the daemon hears of the newest ones).
MAX_JOURNAL_MESSAGES = 200
BLOCK_OPEN = '<memory source="graphmem">'
OFF = frozenset({"off", "0", "false", "no"})


def deadline(default_s: float) -> float:
    """``default_s``, or what ``GRAPHMEM_PLUGIN_TIMEOUT_MS`` (50-10000 ms) asks for."""
    asked = os.environ.get("GRAPHMEM_PLUGIN_TIMEOUT_MS", "")
    try:
        value = int(asked)
    except ValueError:
        return default_s
    return value / 1000 if 50 <= value <= 10_000 else default_s


def turned_off() -> bool:
    """Whether ``GRAPHMEM_PLUGIN`` in the client's environment turns the hooks off."""
    return str(os.environ.get("GRAPHMEM_PLUGIN", "")).lower() in OFF


def context(event: str, block: Any) -> str:
    """The hook's answer carrying ``block`` as additional context ("" when it is not graphmem's block)."""
    if not isinstance(block, str) or not block.startswith(BLOCK_OPEN):
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": block}})


def log_to_file(data_dir: Path, client: str) -> None:
    """Log to ``hooks.log`` in the data dir. A data dir that cannot be written leaves the hooks
    without a log, never broken."""
    from logging.handlers import RotatingFileHandler

    with contextlib.suppress(OSError):
        data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        handler = RotatingFileHandler(data_dir / LOG_FILENAME, maxBytes=LOG_MAX_BYTES, backupCount=1)
        handler.setFormatter(
            logging.Formatter(f"%(asctime)s %(levelname)s graphmem hook {client} %(message)s")
        )
        root = logging.getLogger("graphmem")
        root.addHandler(handler)
        root.setLevel(logging.INFO)


class Journal:
    """The prompts of one session of ``client`` the daemon was told of (see the module's docstring)."""

    def __init__(self, data_dir: Path, client: str, session: str) -> None:
        self._folder = data_dir / JOURNAL_FOLDER / client
        self._file = self._folder / f"{session}.json"

    @property
    def path(self) -> Path:
        return self._file

    def messages(self) -> list[dict[str, Any]]:
        try:
            saved = json.loads(self._file.read_text("utf-8"))
        except (OSError, ValueError):
            return []
        rows = saved.get("messages") if isinstance(saved, dict) else None
        if not isinstance(rows, list):
            return []
        kept = [
            r for r in rows if isinstance(r, list) and len(r) == 3 and all(isinstance(x, str) for x in r[:2])
        ]
        return [{"id": r[0], "hash": r[1], "bare": bool(r[2])} for r in kept[-MAX_JOURNAL_MESSAGES:]]

    def add(self, ident: str, digest: str, *, bare: bool) -> None:
        rows = [[m["id"], m["hash"], m["bare"]] for m in self.messages() if m["id"] != ident]
        rows = [*rows, [ident, digest, bare]][-MAX_JOURNAL_MESSAGES:]
        try:
            self._folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            partial = self._folder / f".{self._file.stem}.{os.getpid()}.tmp"
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"v": 1, "messages": rows}, out)
            os.replace(partial, self._file)
        except OSError as exc:
            log.warning("could not keep the prompt journal %s: %s", self._file, exc.strerror or exc)
