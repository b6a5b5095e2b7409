"""Finding, starting and stopping the daemon that owns a data dir.

A running daemon holds an exclusive ``flock`` on ``<data dir>/daemon.lock`` for its
whole life and describes itself in ``daemon.json`` (pid, url). The lock, not the pid,
says whether it is alive: the kernel drops it when the process dies, however it
dies, so a stale ``daemon.json`` is recognised and ignored; the holder writes its pid into
the lock file, so a ``daemon.json`` that names another pid is a killed daemon's, left while
its successor starts. Starting one takes a second lock (``daemon-start.lock``) so that two
clients starting at once end with one daemon. ``daemon.token`` holds the local secret every
client sends (mode 0600: a web page, or another user, cannot read it); it outlives the daemon,
so an MCP client configured with it keeps working across restarts.

Stdlib only: ``graphmem mcp`` imports this on its fast path.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import gc
import json
import os
import stat
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from graphmem.errors import ConflictError, InvalidInputError, StoreError, StoreLockedError

if TYPE_CHECKING:
    from graphmem.python_child import PythonChild

INFO_FILENAME = "daemon.json"
LOCK_FILENAME = "daemon.lock"
START_LOCK_FILENAME = "daemon-start.lock"
LOG_FILENAME = "daemon.log"
# A /health answer is a few hundred bytes: no more is read of one.
MAX_HEALTH_BYTES = 65536
TOKEN_FILENAME = "daemon.token"
# 32 random bytes, URL-safe base64: 43 characters.
TOKEN_BYTES = 32
# Only this user enters the data dir and reads what graphmem writes there: every memory is
# in it (graphmem.adapters.data_dir tightens an older store's folder and files).
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
# How often a client waiting for a daemon that is starting (it holds the lock, it has not
# published its address yet) looks again.
START_POLL_S = 0.05


@dataclass(frozen=True, slots=True)
class DaemonInfo:
    pid: int
    url: str  # base url, e.g. http://127.0.0.1:9824
    data_dir: str
    started_at: float
    version: str
    # The store it serves (``graphmem.locate.describe_store``); "" from a daemon of an older
    # graphmem, which is not checked.
    store: str = ""

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"


def _lock_path(data_dir: Path) -> Path:
    return data_dir / LOCK_FILENAME


def _private_opener(path: str, flags: int) -> int:
    """``open(..., opener=_private_opener)``: a file this creates is 0600 whatever the umask."""
    return os.open(path, flags, PRIVATE_FILE_MODE)


def make_data_dir(data_dir: Path) -> None:
    """Make ``data_dir`` (0700) for the daemon's lock, start lock or log, once it is known to be
    graphmem's: a folder holding files graphmem did not make (a home, a project) is a
    ``StoreError`` before any of them is written into it (``refuse_foreign``). What is no folder
    at all is left to ``mkdir``, whose ``OSError`` the callers report as before."""
    from graphmem.adapters.data_dir import refuse_foreign  # here: graphmem mcp imports stdlib only

    with contextlib.suppress(InvalidInputError):  # not a folder: mkdir below says so
        refuse_foreign(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)


def _try_lock(handle: IO[Any]) -> bool:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class ServeLock:
    """Held by the running daemon: one daemon per data dir."""

    def __init__(self, data_dir: Path) -> None:
        make_data_dir(data_dir)
        self._handle: IO[Any] | None = open(_lock_path(data_dir), "a+", opener=_private_opener)  # noqa: SIM115 - held for life
        self.data_dir = data_dir
        if not _try_lock(self._handle):
            self._handle.close()
            self._handle = None
            info = read_info(data_dir)
            where = f" (pid {info.pid}, {info.url})" if info else ""
            raise ConflictError(
                f"A graphmem daemon{where} already serves {data_dir}. Use it, or stop it with "
                "`graphmem stop`, or serve another store with --data-dir."
            )
        # Who holds the lock, for a client that finds daemon.json not written yet, or a crashed
        # daemon's: it is this daemon, starting (``lock_holder``).
        self._handle.truncate(0)
        self._handle.write(f"{os.getpid()}\n")
        self._handle.flush()

    def publish(self, info: DaemonInfo) -> None:
        path = self.data_dir / INFO_FILENAME
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8", opener=_private_opener) as out:
            out.write(json.dumps(asdict(info)))
        os.replace(tmp, path)

    def release(self) -> None:
        if self._handle is None:
            return
        with contextlib.suppress(OSError):
            (self.data_dir / INFO_FILENAME).unlink()
        self._handle.close()  # closing drops the flock
        self._handle = None


def read_token(data_dir: Path) -> str | None:
    """The local secret of ``data_dir``, or None when no daemon has made one yet."""
    try:
        token = (data_dir / TOKEN_FILENAME).read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return token or None


def _private(path: Path) -> bool:
    """A regular file of this user that no one else may read."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def ensure_token(data_dir: Path) -> str:
    """The local secret the daemon requires, made once (mode 0600) and kept across restarts.

    A token file others could read (or a symlink, or another user's file) is replaced by a
    new one: a secret that may have leaked protects nothing.
    """
    path = data_dir / TOKEN_FILENAME
    token = read_token(data_dir) if _private(path) else None
    if token is not None and len(token) >= TOKEN_BYTES:
        return token
    import secrets  # here: the CLI's way to a daemon never makes a token

    token = secrets.token_urlsafe(TOKEN_BYTES)
    tmp = data_dir / f".{TOKEN_FILENAME}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)  # O_TRUNC keeps the mode of a leftover file
            os.write(fd, f"{token}\n".encode("ascii"))
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise StoreError(f"Cannot write the daemon's token file {path}: {exc.strerror}.") from None
    return token


def daemon_alive(data_dir: Path) -> bool:
    """True while some process holds the daemon lock of ``data_dir``."""
    path = _lock_path(data_dir)
    if not path.exists():
        return False
    with open(path, "a+", opener=_private_opener) as handle:
        if _try_lock(handle):
            fcntl.flock(handle, fcntl.LOCK_UN)
            return False
        return True


def lock_holder(data_dir: Path) -> int | None:
    """The pid of the daemon that holds the lock of ``data_dir`` (it writes it there once it has
    the lock, before it opens the store and publishes ``daemon.json``); None when no process holds
    the lock, or the holder wrote no pid (an older graphmem's daemon)."""
    if not daemon_alive(data_dir):
        return None
    return _written_holder(data_dir)


def _written_holder(data_dir: Path) -> int | None:
    """The pid written in the lock file, whether or not its writer still holds the lock."""
    try:
        text = _lock_path(data_dir).read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() and len(text) <= 10 else None


def read_info(data_dir: Path) -> DaemonInfo | None:
    try:
        raw = json.loads((data_dir / INFO_FILENAME).read_text("utf-8"))
        return DaemonInfo(**raw)
    except (OSError, ValueError, TypeError):
        return None


def find_daemon(data_dir: Path) -> DaemonInfo | None:
    """The daemon serving ``data_dir``, if one is alive and has published its own address: None
    while ``daemon.json`` is not written yet or is still the one a killed daemon left (it names
    another pid than the lock file), so that a client never takes a dead daemon's port, nor its
    pid (``stop_daemon`` signals it; the system may have given it to another process since), for
    the daemon starting in its place. A holder that wrote no pid (an older graphmem's daemon) is
    taken at its word."""
    if not daemon_alive(data_dir):
        return None
    info = read_info(data_dir)
    if info is None:
        return None
    holder = _written_holder(data_dir)
    return info if holder is None or holder == info.pid else None


def wait_for_daemon(data_dir: Path, timeout: float) -> DaemonInfo | None:
    """``find_daemon``'s daemon, waited for while a process holds the lock and has not published
    its address yet (a daemon opening its store; a killed one not gone yet): None once no process
    holds the lock. A ``StoreError`` that names the holder and says what to do when it has not
    published within ``timeout`` s."""
    return _waited(data_dir, time.monotonic() + timeout, timeout)


def _waited(data_dir: Path, deadline: float, timeout: float) -> DaemonInfo | None:
    """``wait_for_daemon`` until ``deadline``; ``timeout``: the wait the error names."""
    while (info := find_daemon(data_dir)) is None and daemon_alive(data_dir):
        if time.monotonic() >= deadline:
            raise StoreError(_not_published(data_dir, timeout))
        time.sleep(START_POLL_S)
    return info


def check_daemon_store(info: DaemonInfo, asked: str) -> None:
    """Raise ``StoreLockedError`` when the daemon ``info`` serves another store than ``asked``
    (``graphmem.locate.describe_store`` of the caller's settings): a call never goes silently
    to another store than its settings name (say ``GRAPHMEM_STORE_URL`` set, and a daemon on
    the same data dir serving the embedded store)."""
    if info.store and info.store != asked:
        raise StoreLockedError(
            f"The graphmem daemon (pid {info.pid}, {info.url}) on {info.data_dir} serves {info.store}, but "
            f"your settings ask for {asked}. Stop it with `graphmem stop` (the next call starts one on "
            "your store), or give your store another data dir (--data-dir or GRAPHMEM_DATA_DIR)."
        )


class NoAnswer(enum.Enum):
    """Why ``health`` read no answer from a daemon."""

    GONE = "nothing answers on its port"  # refused, or the connection dropped: it does not serve
    SILENT = "no answer in time"  # it took the connection and said nothing: busy (starting, loading) or hung


def health(info: DaemonInfo, timeout: float) -> list[str] | NoAnswer:
    """Why the daemon is not healthy, as ``/health`` says (empty: it is), or why it gave no
    answer; a program on its port that is no daemon is one reason: its answer cannot be read."""
    import http.client  # here: the CLI's way to a daemon never asks /health
    import urllib.error
    import urllib.request

    try:
        try:
            with urllib.request.urlopen(f"{info.url}/health", timeout=timeout) as answer:
                raw = answer.read(MAX_HEALTH_BYTES)
        except urllib.error.HTTPError as exc:  # a 503: up, but unhealthy
            with exc:  # the error holds the connection: closed now, not when it is collected
                raw = exc.read(MAX_HEALTH_BYTES)
    except http.client.HTTPException:  # not HTTP that answered (say ssh on a port reused)
        raw = b""
    except (OSError, ValueError) as exc:
        # urllib wraps what the socket raised while connecting; a read times out as itself.
        return NoAnswer.SILENT if isinstance(getattr(exc, "reason", exc), TimeoutError) else NoAnswer.GONE
    try:
        reasons = json.loads(raw).get("reasons")
    except (ValueError, AttributeError, RecursionError):  # not a daemon's answer
        reasons = None
    if not isinstance(reasons, list):
        return ["its /health answer cannot be read"]
    return [str(reason) for reason in reasons]


@contextlib.contextmanager
def _start_lock(data_dir: Path) -> Iterator[None]:
    make_data_dir(data_dir)
    with open(data_dir / START_LOCK_FILENAME, "a+", opener=_private_opener) as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def serve_command(data_dir: Path, *flags: str, env: Mapping[str, str] | None = None) -> PythonChild:
    """``graphmem --data-dir DATA_DIR serve FLAGS`` as a child process (``graphmem.python_child``:
    never a project's ``graphmem/`` in place of graphmem's, in ``/``), with ``env`` (default: this
    process's). The data dir is made absolute first (``absolute_data_dir``): the child reads it
    from ``/``, not from this process's directory."""
    # here: graphmem mcp imports the standard library only until it starts a daemon
    from graphmem.locate import absolute_data_dir
    from graphmem.python_child import python_child

    where = str(absolute_data_dir(data_dir, given_by="--data-dir"))
    return python_child("graphmem", "--data-dir", where, "serve", *flags, env=env)


def spawn_detached(
    data_dir: Path, *, timeout: float, env: Mapping[str, str] | None = None, port_fallback: bool = False
) -> DaemonInfo:
    """Start a daemon in a session of its own, logging to daemon.log, and wait until it serves.

    Used by ``graphmem serve --detach``: that launcher then exits, so the daemon is
    no descendant of whoever ran it (OpenCode kills its MCP servers' process trees).
    """
    log_path = data_dir / LOG_FILENAME
    make_data_dir(data_dir)
    with open(log_path, "ab", opener=_private_opener) as log:
        flags = ["--detached-child", *(["--port-fallback"] if port_fallback else [])]
        child = serve_command(data_dir, *flags, env=env)
        process = subprocess.Popen(
            child.argv,
            cwd=child.cwd,
            env=child.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = find_daemon(data_dir)
        if info is not None and info.pid == process.pid:
            return info
        code = process.poll()
        if code is not None:
            raise StoreError(
                f"The graphmem daemon exited with code {code} while starting: {_last_line(log_path)}"
            )
        time.sleep(0.02)
    raise StoreError(f"The graphmem daemon did not start within {timeout:.0f} s; see {log_path}.")


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text("utf-8", errors="replace").splitlines() if line.strip()]
    except OSError:
        return f"see {path}"
    return f"{lines[-1]} (log: {path})" if lines else f"see {path}"


def ensure_daemon(data_dir: Path, *, timeout: float, env: Mapping[str, str] | None = None) -> DaemonInfo:
    """The daemon of ``data_dir``, started if none runs (two callers at once start one), within
    ``timeout`` s.

    A process that holds the lock but has not published its address is a daemon starting (another
    client started it, maybe over the ``daemon.json`` a killed one left): it is waited for, never
    taken at the dead daemon's address, nor doubled by a second one that could not take the lock.
    One that dies before it publishes leaves the start to this call. A daemon that cannot be
    started, or does not publish in time, is a ``StoreError`` that says why and what to do."""
    deadline = time.monotonic() + timeout
    try:
        while True:
            info = _waited(data_dir, deadline, timeout)
            if info is not None:
                return info
            with _start_lock(data_dir):
                # another client may have started it meanwhile, or be starting it
                info = find_daemon(data_dir)
                if info is None and not daemon_alive(data_dir):
                    info = _launch(data_dir, max(deadline - time.monotonic(), 1.0), env)
            if info is not None:
                return info
    except OSError as exc:  # the data dir cannot hold the start lock, or the launcher cannot run
        why = f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)
        raise StoreError(
            f"Cannot start the graphmem daemon of {data_dir} ({why}). Check that the data dir is a "
            "folder you can write (--data-dir, GRAPHMEM_DATA_DIR)."
        ) from None


def _launch(data_dir: Path, timeout: float, env: Mapping[str, str] | None) -> DaemonInfo | None:
    """Run ``graphmem serve --detach`` (under the start lock): the daemon it started, or None when
    another process holds the lock instead, not published yet (waited for by the caller)."""
    child = serve_command(data_dir, "--detach", "--start-timeout", str(timeout), "--port-fallback", env=env)
    try:
        done = subprocess.run(
            child.argv,
            cwd=child.cwd,
            env=child.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout + 30,
        )
    except subprocess.TimeoutExpired:
        raise StoreError(
            f"The graphmem daemon did not start within {timeout:.0f} s; see {data_dir / LOG_FILENAME}."
        ) from None
    info = find_daemon(data_dir)
    if info is not None or daemon_alive(data_dir):
        return info
    if done.returncode == 0:
        problem = f"it exited as soon as it had started; see {data_dir / LOG_FILENAME}"
    else:
        problem = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no message"
    raise StoreError(f"Could not start the graphmem daemon: {problem}")


def _not_published(data_dir: Path, timeout: float) -> str:
    holder = lock_holder(data_dir)
    who = f"The graphmem daemon (pid {holder})" if holder is not None else "A process"
    stop = f"stop it (`kill {holder}`)" if holder is not None else "stop the process that holds it"
    return (
        f"{who} holds {_lock_path(data_dir)} but has not published its address (daemon.json) within "
        f"{timeout:.3g} s: it may still be opening the store, or be stuck. See "
        f"{data_dir / LOG_FILENAME}; if it does not come up, {stop} and call again."
    )


def stop_daemon(data_dir: Path, timeout: float = 15.0) -> DaemonInfo | None:
    """Ask the daemon of ``data_dir`` to stop (SIGTERM) and wait; None if none ran. One that is
    starting is waited for (``timeout``) and then stopped."""
    info = wait_for_daemon(data_dir, timeout)
    if info is None:
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(info.pid, 15)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not daemon_alive(data_dir):
            return info
        time.sleep(0.05)
    raise StoreError(f"The graphmem daemon (pid {info.pid}) did not stop within {timeout:.0f} s.")


# CPython's default thresholds of the cycle collector (``graphmem.cli.main`` raises them
# for a command, which keeps what it builds until it exits).
PYTHON_GC_THRESHOLDS = (700, 10, 10)


def collect_as_long_running() -> None:
    """For a process that serves until stopped (the daemon, ``graphmem mcp``), once it has
    started: what it built to start is kept for its life, so the collector need not go over
    it again (``gc.freeze``), and from here on it collects at Python's usual pace."""
    gc.freeze()
    gc.set_threshold(*PYTHON_GC_THRESHOLDS)
