"""How a client's hook command reaches the graphmem daemon's ``/plugin/*`` routes.

A hook runs inside the user's turn (Claude Code's, Codex's), so it must never block or break
it: ``HookClient.call`` always returns, within its deadline, either the daemon's JSON answer
or ``{}`` with one line in the hook log saying why (no daemon, too slow, refused, not the
daemon). It never raises.

- **Finding the daemon**: ``daemon.json`` in graphmem's data dir (``--data-dir``,
  ``GRAPHMEM_DATA_DIR``, the config file, the default: ``graphmem.locate``), as the CLI does.
- **Starting it when none runs**, the way the CLI and ``graphmem mcp`` do
  (``lifecycle.ensure_daemon``, under its start lock, so a hook and ``graphmem mcp`` starting
  at once end with one daemon), in a detached process: the daemon outlives the hook, and the
  hook waits for it only as long as its deadline allows. A call that finds no daemon yet
  answers ``{}``, and what it was for is lost (a session's boot context is asked once); the
  calls made once the daemon serves (a model load can take seconds) reach it.
- **Proving it is the daemon** before the token or a prompt goes out (``server/identity.py``):
  after a crash any program may hold the port ``daemon.json`` names.
- **Quiet after a failure**: a daemon that timed out or failed is left alone for
  ``BACKOFF_S`` (a stamp file in the data dir: each hook is a process of its own), so a
  stuck daemon costs one turn its memories, not every turn a deadline.
- **Patient with a daemon that is starting**: the daemon writes its pid into ``daemon.lock``
  once it holds it, and publishes ``daemon.json`` once its store is open. A lock held by a
  daemon that has not published yet (or whose ``daemon.json`` is a crashed one's), and a daemon
  that published less than ``DAEMON_WARMUP_S`` ago and does not answer yet, are a daemon
  starting: the call adds nothing, says so, and the next one tries again (no back-off).

Standard library and graphmem's stdlib-only modules: a hook starts on every user turn.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from graphmem.errors import GraphmemError
from graphmem.server import identity, loopback
from graphmem.server.daemon_process import DaemonInfo, find_daemon, lock_holder, read_token

log = logging.getLogger(__name__)

# After a daemon timed out or failed, hooks leave it alone this long (they answer {} at once).
BACKOFF_S = 30.0
BACKOFF_FILENAME = "hook-backoff"
# How long the detached starter waits for the daemon it starts (the CLI's default start timeout).
DAEMON_START_TIMEOUT_S = 60.0
# How often a call that started the daemon looks whether it serves yet.
START_POLL_S = 0.05
# A call's own deadline ends its wait for a starting daemon and its socket waits; past it by this
# much the hook stops waiting for the call at all.
JOIN_GRACE_S = 0.25
# The most of an answer read (a block is at most a few kB; a turn's blocks some tens).
MAX_ANSWER_BYTES = 4_000_000
# A daemon that published daemon.json less than this long ago and does not answer is taken to be
# starting (its server comes up after the store opened; a first request may load the model).
DAEMON_WARMUP_S = 30.0


class HookClient:
    """Calls the daemon of one data dir for a hook; every failure is ``{}`` and a log line."""

    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        start: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """``data_dir``: graphmem's data dir (default: the configured one). ``start``: start the
        daemon when none runs. ``env``: the environment of a daemon started here."""
        self._explicit = data_dir
        self._start = start
        self._env = env
        self._located: tuple[Path, str | None] | None = None
        # Set while a call waits on a daemon that is ours and starting: its timeout is no failure.
        self._starting: str | None = None

    def call(self, path: str, body: Mapping[str, Any], deadline_s: float) -> dict[str, Any]:
        """POST ``body`` (JSON) to the daemon's ``path``; its JSON object, or ``{}`` when there is
        no answer within ``deadline_s`` (or no daemon, or a refusal). Never raises."""
        result: dict[str, Any] = {}
        problem: list[str] = []

        def run() -> None:
            try:
                result.update(self._call(path, body, time.monotonic() + deadline_s))
            except _Quiet as exc:
                problem.append(str(exc))
            except Exception as exc:  # a hook never breaks the client's turn
                problem.append(f"{type(exc).__name__}: {exc}")

        worker = threading.Thread(target=run, name="graphmem-hook-call", daemon=True)
        worker.start()
        worker.join(max(deadline_s, 0.0) + JOIN_GRACE_S)
        if worker.is_alive() and self._starting is not None:
            log.warning("%s: %s, not answering within %.0f ms yet; added nothing", path, self._starting,
                        deadline_s * 1000)  # fmt: skip
            return {}
        if worker.is_alive():
            self._back_off()
            log.warning(
                "%s: no answer from the graphmem daemon within %.0f ms; added nothing",
                path,
                deadline_s * 1000,
            )
            return {}
        if problem:
            log.warning("%s: %s", path, problem[0])
            return {}
        return result

    # -- where and who --------------------------------------------------------------------------

    def data_dir(self) -> tuple[Path, str | None]:
        """The data dir and the API key, as the CLI reads them (``graphmem.locate``)."""
        if self._located is None:
            from graphmem.locate import locate

            location = locate(self._explicit)
            self._located = (location.data_dir.expanduser(), location.api_key)
        return self._located

    def _daemon(self, deadline: float) -> DaemonInfo:
        data_dir, _ = self.data_dir()
        info = find_daemon(data_dir)
        holder = lock_holder(data_dir)
        if info is None and holder is not None:  # find_daemon takes only the holder's own address
            raise _Quiet(
                f"the graphmem daemon (pid {holder}) is starting: it has not published its address "
                "yet; added nothing (calls made once it serves reach it)"
            )
        if info is not None:
            age = time.time() - info.started_at
            if holder == info.pid and 0 <= age < DAEMON_WARMUP_S:
                self._starting = f"the graphmem daemon (pid {info.pid}) started {age:.0f} s ago"
            return info
        if not self._start:
            raise _Quiet("no graphmem daemon is running")
        start_daemon(data_dir, self._env)
        while time.monotonic() < deadline:
            time.sleep(START_POLL_S)
            info = find_daemon(data_dir)
            if info is not None:
                return info
        raise _Quiet(
            "no graphmem daemon was running; started one, not serving yet: added nothing "
            "(calls made once it serves reach it)"
        )

    def _call(self, path: str, body: Mapping[str, Any], deadline: float) -> dict[str, Any]:
        data_dir, api_key = self.data_dir()
        if self._backing_off(data_dir):
            raise _Quiet(f"the graphmem daemon failed less than {BACKOFF_S:.0f} s ago; asked nothing")
        info = self._daemon(deadline)
        secret = read_token(data_dir) or api_key
        if not secret:
            raise _Quiet(f"no daemon.token in {data_dir} and no GRAPHMEM_API_KEY: sent nothing")
        target = urlsplit(info.url)
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {secret}"}
        left = max(deadline - time.monotonic(), 0.01)
        try:
            status, raw = loopback.post(
                target.hostname or "127.0.0.1",
                target.port or 80,
                path,
                json.dumps(body).encode(),
                headers,
                left,
                expected=loopback.Expected(secret, info.pid, info.url),
            )
        except (OSError, GraphmemError) as exc:  # refused, reset, timed out, or not the daemon
            silent = isinstance(exc, OSError | identity.Silent)
            if silent and self._starting is not None:  # ours, starting: no failure, no back-off
                raise _Quiet(
                    f"{self._starting} and does not answer yet ({_reason(exc)}); added nothing"
                ) from None
            self._back_off()
            if silent and lock_holder(data_dir) == info.pid:  # ours: its port is no other program's
                raise _Quiet(
                    f"the graphmem daemon (pid {info.pid}) at {info.url} did not answer ({_reason(exc)}); "
                    f"left alone for {BACKOFF_S:.0f} s"
                ) from None
            raise _Quiet(f"the graphmem daemon at {info.url} did not answer: {exc}") from None
        answer = _json_object(raw[:MAX_ANSWER_BYTES])
        if status >= 500:
            self._back_off()
        if status >= 300:
            raise _Quiet(f"the graphmem daemon answered HTTP {status}: {str(answer.get('error', ''))[:300]}")
        return answer

    # -- backing off ---------------------------------------------------------------------------

    def _back_off(self) -> None:
        try:
            data_dir, _ = self.data_dir()
            (data_dir / BACKOFF_FILENAME).write_text(f"{time.time()}\n", "ascii")
        except Exception:  # the stamp is a courtesy: never a reason to fail
            log.debug("could not write the hook backoff stamp", exc_info=True)

    @staticmethod
    def _backing_off(data_dir: Path) -> bool:
        try:
            stamped = float((data_dir / BACKOFF_FILENAME).read_text("ascii").strip())
        except (OSError, ValueError):
            return False
        return 0 <= time.time() - stamped < BACKOFF_S


def _reason(exc: BaseException) -> str:
    """What went wrong on the socket, in a few words (``timed out``, ``Connection refused``)."""
    if isinstance(exc, identity.Silent):
        found = str(exc).split("names (", 1)[-1].split(")", 1)[0]
        return found or "no answer"
    if isinstance(exc, TimeoutError):
        return "timed out"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


class _Quiet(Exception):
    """A call that ends with ``{}``: the reason goes to the log as one line."""


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def start_daemon(data_dir: Path, env: Mapping[str, str] | None = None) -> None:
    """Start the daemon of ``data_dir`` in a detached process that outlives the hook, through
    ``lifecycle.ensure_daemon`` (its start lock: one daemon however many start it at once).

    The hook runs in the agent's project: the starter is a ``graphmem.python_child`` (``-P``, in
    ``/``), so a ``graphmem/`` folder of the project is never imported in graphmem's place, and
    it is given the data dir made absolute (``absolute_data_dir``) before it leaves the project."""
    from graphmem.locate import absolute_data_dir
    from graphmem.python_child import python_child

    where = str(absolute_data_dir(data_dir, given_by="the hook's data dir"))
    child = python_child("graphmem.integrations.hook_client", where, env=env)
    subprocess.Popen(
        child.argv,
        cwd=child.cwd,
        env=child.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def _start_and_wait(data_dir: Path) -> int:
    """The detached starter: ``ensure_daemon``, then exit (0 once the daemon serves)."""
    from graphmem.server.daemon_process import ensure_daemon

    try:
        ensure_daemon(data_dir, timeout=DAEMON_START_TIMEOUT_S)
    except GraphmemError:
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover - run by start_daemon, tested through it
    sys.exit(_start_and_wait(Path(sys.argv[1])) if len(sys.argv) == 2 else 2)
