"""A client's hook command as a process (Claude Code's, Codex's): what runs around each hook's own
answer, the same for every client, so a hook module keeps only its events.

- ``run_hook``: the command, ``python -P -m graphmem.integrations.<hook> [EVENT] [--data-dir DIR]``
  (a client that names the event on the command line gives EVENT, Claude Code; Codex names it on
  stdin; any other argument is ignored): its files private (``restrict_umask``), the daemon
  reached through one ``HookClient``, then ``run_command``: its log in graphmem's data dir, the
  hook's answer on stdout, exit 0.
- ``log_to_file``: the hooks' one-line log, ``hooks.log`` in graphmem's data dir (rotated at 1 MB),
  each line naming the client; never the terminal.
- ``AnswerGuard``: an answer to one event never raises: bad input (``HookInputError``) is a
  warning saying what is wrong, any other failure an exception with its traceback, each one line
  (and its traceback) in the hook's log, and the hook adds nothing.
- ``turned_off``: ``GRAPHMEM_PLUGIN=off`` in the client's environment.

Standard library and graphmem's stdlib-only modules: a hook starts on every user turn.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem.adapters.data_dir import refuse_foreign, restrict_umask
from graphmem.integrations.hook_client import HookClient
from graphmem.integrations.hook_input import HookInputError

if TYPE_CHECKING:
    from types import TracebackType

LOG_FILENAME = "hooks.log"
LOG_MAX_BYTES = 1_000_000
OFF = frozenset({"off", "0", "false", "no"})


def turned_off() -> bool:
    """Whether ``GRAPHMEM_PLUGIN`` in the client's environment turns the hooks off."""
    return str(os.environ.get("GRAPHMEM_PLUGIN", "")).lower() in OFF


class AnswerGuard:
    """``with AnswerGuard(log, event):`` around a hook's answer to one event, followed by
    ``return ""``: whatever the block raises (an ``Exception``; not what ends the process) is
    logged naming ``event`` (the block may set it once it has read it) and the hook adds nothing.
    The hook never breaks the client's turn."""

    def __init__(self, log: logging.Logger, event: str = "?") -> None:
        self.log = log
        self.event = event

    def __enter__(self) -> AnswerGuard:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool:
        if isinstance(error, HookInputError):
            self.log.warning("%s: %s; added nothing", self.event, error)
        elif isinstance(error, Exception):
            self.log.error("%s failed; added nothing", self.event, exc_info=error)
        else:
            return False
        return True


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


def run_command(client: str, data_dir: Callable[[], tuple[Path, Any]], answer: Callable[[Path], str]) -> int:
    """A hook command's process: its log in graphmem's data dir (``data_dir()``, as the CLI finds
    it; a config that cannot be read, or a data dir that holds files graphmem did not make, is one
    line on stderr and no answer: nothing is written there), then what ``answer`` gives for that
    data dir printed on stdout, when anything. Always 0: the client's turn goes on."""
    try:
        folder = data_dir()[0]
        refuse_foreign(folder)  # a folder that is not graphmem's gets no log, journal or back-off
        log_to_file(folder, client)
    except Exception as exc:  # an unreadable config, a data dir not graphmem's: the turn goes on bare
        print(f"graphmem hook {client}: {exc}", file=sys.stderr)
        return 0
    text = answer(folder)
    if text:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    return 0


def run_hook(
    client: str, prog: str, argv: list[str] | None, answer: Callable[[HookClient, str, Path], str]
) -> int:
    """The hook command ``prog`` of ``client`` (see the module's docstring) with the arguments
    ``argv`` (the process's when None): what ``answer(daemon, event, data_dir)`` gives is printed
    (``event``: the command line's, "" when it names none). Always 0 (``run_command``)."""
    import argparse

    parser = argparse.ArgumentParser(prog=prog, add_help=False)
    parser.add_argument("event", nargs="?", default="")
    parser.add_argument("--data-dir", type=Path, default=None)
    known, _ = parser.parse_known_args(argv)
    restrict_umask()  # hooks.log and the journal are private, as every file of the data dir
    daemon = HookClient(known.data_dir)
    return run_command(client, daemon.data_dir, lambda data_dir: answer(daemon, known.event, data_dir))
