"""Who holds a data dir: Kùzu lets one process open a database, so say which one does."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

log = logging.getLogger(__name__)

OWNER_FILENAME = "owner.json"


def write_owner(data_dir: Path) -> None:
    """Record this process as the one holding ``data_dir``."""
    info = {"pid": os.getpid(), "command": " ".join(os.path.basename(a) for a in sys.argv[:2])}
    try:
        (data_dir / OWNER_FILENAME).write_text(json.dumps(info), "utf-8")
    except OSError:
        log.debug("could not write the owner file", exc_info=True)


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
        "process open it at a time. Stop that process, or run this command through "
        "it, or use another store with --data-dir."
    )
