"""A real daemon for a benchmark's clients to share: ``graphmem serve`` in a process of its own.

``graphmem bench scale --http-clients N`` times N client processes calling one daemon over HTTP,
as a developer's agents share theirs (``graphmem.bench.clients``). The daemon is the product's
own: ``graphmem --data-dir <folder> serve --port 0``, on the benchmark's folder, never the
user's, on a free loopback port, the store named by ``GRAPHMEM_STORE_URL`` or the folder's
embedded one. It ingests no agent sessions (this machine's are not the benchmark's mix) and
limits no client's rate (the benchmark's clients call as fast as they can, which
``[server] rate_limit`` would refuse).

It is ready once it serves and says (``/stats``) its model is loaded and, on a team's store, its
full-text index answers (``full_text``: ``"index"``); ``check_full_text`` asks again after the
timed calls, and the run fails if the database's search answers then, as ``scale.TextSearch``
fails a client of its own. A daemon that exits or is not ready in time fails the run with the
tail of its log; at the end it is stopped as ``graphmem stop`` stops one (SIGTERM), and waited for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from graphmem.server.daemon_process import DaemonInfo, find_daemon, read_token
from graphmem.settings import STORE_URL_VARIABLE

# Long enough for the model to load and, on a team's store, the index copy to catch up on a busy
# machine (as a client process's own daemon: ``clients.CLIENT_START_TIMEOUT_S``).
START_TIMEOUT_S = 600.0
# A daemon closes its store (and saves its full-text index) in a second or two.
STOP_TIMEOUT_S = 60.0
POLL_S = 0.1
STATS_TIMEOUT_S = 60.0
PROGRAM = (sys.executable, "-P", "-m", "graphmem")


@dataclass(frozen=True, slots=True)
class Serving:
    """A daemon that is ready: where it serves, and what it said when it was."""

    info: DaemonInfo
    ready_s: float  # from its launch to ready
    full_text: str | None  # ``/stats``' ``full_text`` then: None on the embedded store


def serving_env(store_url: str | None) -> dict[str, str]:
    """The daemon's environment: this one's (its config), on the store given (none: the
    folder's embedded one, whatever this shell names), no ingest, no rate limit."""
    env = {k: v for k, v in os.environ.items() if k not in (STORE_URL_VARIABLE, "GRAPHMEM_DATA_DIR")}
    if store_url:
        env[STORE_URL_VARIABLE] = store_url
    env["GRAPHMEM_INGEST__ENABLED"] = "false"
    env["GRAPHMEM_RATE_LIMIT"] = "0"
    return env


@contextmanager
def serving(
    folder: Path, store_url: str | None, log: Path, program: Sequence[str] = PROGRAM
) -> Iterator[Serving]:
    """``graphmem serve`` on ``folder`` (``program``: the command before ``--data-dir``; a test's
    gives a daemon with the hash embedder), its output in ``log``, once it is ready; stopped at
    the end. Raises ``RuntimeError`` with the log's tail when it exits or is not ready in time."""
    launched = time.perf_counter()
    with log.open("ab") as out:  # the child keeps its own copy of the descriptor
        process = subprocess.Popen(
            [*program, "--data-dir", str(folder), "serve", "--port", "0"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            env=serving_env(store_url),
        )
    try:
        info = _ready(process, folder, log)
        full_text = stats(info)["full_text"]
        ready_s = round(time.perf_counter() - launched, 2)
        yield Serving(info, ready_s, None if full_text is None else str(full_text))
    finally:
        _stop(process, log)


def stats(info: DaemonInfo) -> dict[str, object]:
    """The daemon's ``/stats``, asked with its data folder's token as any local client does."""
    request = urllib.request.Request(
        f"{info.url}/stats", headers={"Authorization": f"Bearer {read_token(Path(info.data_dir))}"}
    )
    with urllib.request.urlopen(request, timeout=STATS_TIMEOUT_S) as answer:
        found: dict[str, object] = json.loads(answer.read())
    return found


def check_full_text(info: DaemonInfo) -> None:
    """After the timed calls: on a team's store, the daemon's index still answers its searches."""
    if stats(info)["full_text"] == "database":
        raise RuntimeError(
            "The full-text index beside the daemon did not answer at the end of the timed calls, the "
            "database's search did (a catch-up too large to apply in a search: see its log): the "
            "figures would not be the daemon's."
        )


def _ready(process: subprocess.Popen[bytes], folder: Path, log: Path) -> DaemonInfo:
    """The daemon's address once it serves with its model loaded and (a team's store) its index
    current."""
    deadline = time.monotonic() + START_TIMEOUT_S
    info = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"The benchmark's daemon exited with code {process.returncode}: {tail(log)}")
        if info is None:
            found = find_daemon(folder)
            info = found if found is not None and found.pid == process.pid else None
        if info is not None:
            state = stats(info)
            if state["model_loaded"] and state["full_text"] != "database":
                return info
        time.sleep(POLL_S)
    raise RuntimeError(f"The benchmark's daemon was not ready within {START_TIMEOUT_S:.0f} s: {tail(log)}")


def _stop(process: subprocess.Popen[bytes], log: Path) -> None:
    """SIGTERM, as ``graphmem stop`` sends, and wait for it to exit; killed if it does not."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise RuntimeError(
            f"The benchmark's daemon did not stop within {STOP_TIMEOUT_S:.0f} s and was killed: {tail(log)}"
        ) from None


def tail(path: Path) -> str:
    """The end of a log, for an error message."""
    try:
        text = path.read_text("utf-8", errors="replace").strip()
    except OSError:
        return "(no log)"
    return text[-500:] or "(it printed nothing)"
