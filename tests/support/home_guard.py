"""The guard that fails a test touching the developer's home (``tests/conftest.py`` installs it).

An audit hook (``sys.addaudithook``) sees every file this process opens or changes: a change
anywhere under the real home, or a read of its private parts (configuration, data, caches,
credentials), is recorded in ``TOUCHED_REAL_HOME``, and the test that did it fails. Child
processes get the test's own HOME and XDG folders from the environment instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

# The developer's home, read before any test changes HOME: no test may touch it (``_isolated_settings``).
REAL_HOME = Path(os.path.expanduser("~")).resolve()
REPOSITORY = Path(__file__).resolve().parents[2]
# The ONNX model files a test builds (derived from the packaged weights, made atomically): one
# folder for every test of every run, so that each daemon or CLI a test starts does not build
# them again; inside the repository's ignored .cache/, never in the developer's home.
SHARED_CACHE = REPOSITORY / ".cache" / "tests" / "xdg-cache"


def share_model_files(cache_home: Path) -> None:
    """Make ``cache_home/graphmem/models`` (an agent client's sandbox's ``$XDG_CACHE_HOME``) a link
    to ``SHARED_CACHE``'s: a daemon or CLI the client starts there finds the model files built (0.85
    to 1.6 s of CPU and 150 MB written each time otherwise); the sandbox's other caches stay its own."""
    shared = SHARED_CACHE / "graphmem" / "models"
    shared.mkdir(parents=True, exist_ok=True)
    models = cache_home / "graphmem" / "models"
    models.parent.mkdir(parents=True, exist_ok=True)
    models.symlink_to(shared, target_is_directory=True)


# What a test may not even read under the real home: where graphmem, OpenCode, git and the
# shell keep the developer's configuration, data and state.
PRIVATE_READS = (".config", ".local", ".cache", ".gitconfig", ".git-credentials", ".pgpass", ".netrc")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_CHANGES = frozenset(
    {"os.mkdir", "os.rename", "os.replace", "os.remove", "os.rmdir", "os.chmod", "os.chown", "os.symlink",
     "os.link", "os.truncate", "os.utime", "shutil.rmtree", "shutil.move", "shutil.copyfile"}
)  # fmt: skip
TOUCHED_REAL_HOME: list[str] = []


_REAL_HOME_TEXT = str(REAL_HOME) + os.sep
_EXEMPT = tuple(
    str(folder) + os.sep
    for folder in {REPOSITORY, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
)  # the repository, the virtualenv and the interpreter may live under the home


def _under_real_home(raw: object) -> str | None:
    """``raw`` as a normalised path when it is under the real home (and nothing exempt)."""
    if not isinstance(raw, str | bytes | os.PathLike):
        return None  # a file descriptor
    text = os.fsdecode(raw)
    if not os.path.isabs(text):
        text = os.path.join(os.getcwd(), text)
    text = os.path.normpath(text)
    if not (text + os.sep).startswith(_REAL_HOME_TEXT) or (text + os.sep).startswith(_EXEMPT):
        return None
    return text


def _home_audit(event: str, args: tuple[Any, ...]) -> None:
    """Record every change under the real home, and every read of its private parts."""
    if event == "open":
        path = _under_real_home(args[0])
        if path is None:
            return
        mode, flags = args[1], args[2] if len(args) > 2 else 0
        writes = (isinstance(flags, int) and flags & _WRITE_FLAGS) or (
            isinstance(mode, str) and any(c in mode for c in "wax+")
        )
        first = path[len(_REAL_HOME_TEXT) :].split(os.sep, 1)[0]
        if writes or first in PRIVATE_READS:
            TOUCHED_REAL_HOME.append(f"{'wrote' if writes else 'read'} {path}")
    elif event in _CHANGES:
        for raw in args[:2]:
            path = _under_real_home(raw)
            if path is not None:
                TOUCHED_REAL_HOME.append(f"{event} {path}")


def install() -> None:
    """Start recording (once per process)."""
    if not _INSTALLED:
        SHARED_CACHE.mkdir(parents=True, exist_ok=True)
        sys.addaudithook(_home_audit)
        _INSTALLED.append(True)


_INSTALLED: list[bool] = []
