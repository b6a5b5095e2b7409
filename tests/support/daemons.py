"""Real graphmem daemons and proxies for integration tests, each on its own data dir.

A daemon runs as ``python -m graphmem serve --port 0`` in a subprocess with a
sandboxed environment (no user config, no GRAPHMEM_* from the developer's shell);
tests talk to it over HTTP like any client. Like graphmem's own clients, ``http()`` and
``rpc()`` send the daemon's local token (``daemon.token`` in its data dir) to any daemon
found through ``read_info`` or ``start_daemon``, unless the caller passes its own
``Authorization`` header or ``token=False`` (to play a client that has none).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

START_TIMEOUT_S = 120.0
# How often a test looks again at what a daemon learned or started: a look through ``listed`` costs
# about 0.03 s of CPU, and a look a second left the test waiting half a second on average.
POLL_S = 0.25
# Daemon base url -> its local token, learnt from the data dir when the daemon is found.
_TOKENS: dict[str, str] = {}


def token_of(data_dir: Path) -> str | None:
    """The local secret the daemon of ``data_dir`` requires (None before one has run)."""
    try:
        return (data_dir / "daemon.token").read_text("ascii").strip() or None
    except OSError:
        return None


def token_for(url: str) -> str | None:
    """The token of the daemon serving ``url`` (for ``fastmcp.Client(url, auth=...)``)."""
    for base, token in _TOKENS.items():
        if url == base or url.startswith(base + "/"):
            return token
    return None


def auth_headers(url: str) -> dict[str, str]:
    """``Authorization`` for the daemon serving ``url``, when its token is known."""
    token = token_for(url)
    return {"Authorization": f"Bearer {token}"} if token else {}


def sandbox_env(data_dir: Path, **extra: str) -> dict[str, str]:
    dropped = ("GITLAB_TOKEN", "OPENCODE_DB")  # the developer's GitLab and OpenCode stay out of tests
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_") and k not in dropped}
    env["XDG_DATA_HOME"] = str(data_dir.parent / "xdg-data")  # no OpenCode database to ingest
    env["GRAPHMEM_CONFIG"] = str(data_dir.parent / "no-such-config.toml")
    env["GRAPHMEM_DATA_DIR"] = str(data_dir)
    env["GRAPHMEM_SERVER__PORT"] = "0"
    env.update(extra)
    return env


def graphmem_cli(data_dir: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``graphmem --data-dir DATA_DIR ARGS`` in the sandbox's environment (``cwd``: the project)."""
    return subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args],
        env=sandbox_env(data_dir),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def listed(
    data_dir: Path,
    project: Path | None = None,
    *,
    categories: tuple[str, ...] = (),
    every_status: bool = False,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """The memories ``graphmem --data-dir DATA_DIR list --json`` prints in ``project`` (its
    ``-c`` ``categories``, ``--status all`` with ``every_status``, ``--limit``), asked of the daemon
    serving ``data_dir`` from this process, as the CLI asks it, with the CLI's JSON view of each;
    ``[]`` while no daemon serves it. For a test that polls until the daemon learned something: a
    ``graphmem list`` process costs about 0.7 s of CPU a poll, this a few milliseconds."""
    from graphmem.connect import resolve_project
    from graphmem.core.models import Status
    from graphmem.core.timeparse import utc_now
    from graphmem.core.views import memory_view
    from graphmem.server.daemon_process import find_daemon
    from graphmem.server.remote import RemoteMemory

    daemon = find_daemon(data_dir)
    if daemon is None:
        return []
    memory = RemoteMemory(daemon, project=resolve_project(project) if project is not None else None)
    records = memory.list(
        categories=categories or None,
        statuses=set(Status) if every_status else {Status.ACTIVE},
        limit=limit,
    )
    now = utc_now()
    return [memory_view(record, now=now) for record in records]


def remembered(data_dir: Path, project: Path, text: str, *, category: str = "fact") -> str:
    """What ``graphmem --data-dir DATA_DIR remember -c CATEGORY TEXT`` run in ``project`` stores,
    asked of the daemon serving ``data_dir`` from this process as the CLI asks it (the same
    ``RemoteMemory.remember``, project and branch as the CLI resolves them): the new memory's id.
    For a test that stores its setup before what it is about: a ``graphmem remember`` process
    costs about 1 s of CPU, this a few milliseconds. The CLI's own ``remember`` keeps its tests."""
    from graphmem.connect import resolve_branch, resolve_project
    from graphmem.server.daemon_process import find_daemon
    from graphmem.server.remote import RemoteMemory

    daemon = find_daemon(data_dir)
    assert daemon is not None, f"no daemon serves {data_dir}"
    where = resolve_project(project)
    branch = resolve_branch(project) if where else None
    memory = RemoteMemory(daemon, project=where, branch=branch)
    result = memory.remember(text, category=category, project=where, branch=branch)
    return result.memory.id


def stop_serving(data_dir: Path) -> None:
    """Stop the daemon serving ``data_dir`` as ``graphmem --data-dir DATA_DIR stop`` does (the
    CLI's own ``stop_daemon``: SIGTERM, then wait until it has gone), from this process; nothing
    when none serves it, and a daemon that outlives the CLI's wait is left as the CLI leaves it.
    For a test's cleanup of a daemon it did not start itself (a ``serve --detach``, a client's
    proxy or hook): a ``graphmem stop`` process costs about 0.3 s of CPU, and seconds of wall
    time on a loaded machine. The CLI's own ``stop`` still ends the tests of a daemon's life
    (``test_daemon.py``)."""
    from graphmem.errors import GraphmemError
    from graphmem.server.daemon_process import stop_daemon

    with contextlib.suppress(GraphmemError):
        stop_daemon(data_dir)


@dataclass
class Daemon:
    process: subprocess.Popen[bytes]
    data_dir: Path
    url: str
    log: Path

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"

    @property
    def token(self) -> str:
        token = token_of(self.data_dir)
        assert token is not None, f"no daemon.token in {self.data_dir}"
        return token

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def read_info(data_dir: Path) -> dict[str, Any] | None:
    try:
        info: dict[str, Any] = json.loads((data_dir / "daemon.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    token = token_of(data_dir)
    if token is not None and isinstance(info.get("url"), str):
        _TOKENS[info["url"]] = token
    return info


def wait_for_info(data_dir: Path, pid: int | None = None, timeout: float = START_TIMEOUT_S) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = read_info(data_dir)
        if info is not None and (pid is None or info["pid"] == pid):
            return info
        time.sleep(0.05)
    raise AssertionError(f"no daemon published itself in {data_dir} within {timeout} s")


# What ``python`` runs to start a daemon: graphmem's CLI.
GRAPHMEM = ("-m", "graphmem")
# graphmem with a daemon whose deadlines for a client's request are seconds (short_deadlines.py).
SHORT_DEADLINES = (str(Path(__file__).with_name("short_deadlines.py")),)
# graphmem with a daemon that gets to a plugin's ingest request seconds after it arrived (slow_ingest.py).
SLOW_INGEST = (str(Path(__file__).with_name("slow_ingest.py")),)
# graphmem with a daemon whose vectors come from the hash embedder, not the model (hash_vectors.py).
HASH_VECTORS = (str(Path(__file__).with_name("hash_vectors.py")),)
# graphmem with a daemon whose workers try an unreachable store again each second (short_retries.py).
SHORT_RETRIES = (str(Path(__file__).with_name("short_retries.py")),)
# graphmem whose daemon signals itself SIGTERM right before its HTTP server starts (early_sigterm.py).
EARLY_SIGTERM = (str(Path(__file__).with_name("early_sigterm.py")),)


def start_daemon(
    data_dir: Path,
    *args: str,
    open_files: int | None = None,
    program: tuple[str, ...] = GRAPHMEM,
    **env: str,
) -> Daemon:
    """``open_files``: the daemon's soft limit of file descriptors (1,024 is a common default);
    ``program``: what ``python`` runs (``GRAPHMEM``, ``SHORT_DEADLINES``, ``SLOW_INGEST``,
    ``HASH_VECTORS`` or ``SHORT_RETRIES``)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir.parent / f"{data_dir.name}-serve.log"

    def limit_files() -> None:
        import resource

        assert open_files is not None  # only called then
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, hard))

    with open(log, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, *program, "serve", *args],
            env=sandbox_env(data_dir, **env),
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=limit_files if open_files is not None else None,
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"daemon exited with {process.returncode}: {log.read_text()}")
        info = read_info(data_dir)
        if info is not None and info["pid"] == process.pid:
            return Daemon(process, data_dir, info["url"], log)
        time.sleep(0.05)
    process.kill()
    raise AssertionError(f"daemon did not start: {log.read_text()}")


def http(
    method: str,
    url: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    *,
    token: bool = True,
) -> tuple[int, dict[str, str], bytes]:
    """One request; (status, headers, body). Sends the daemon's token unless ``token=False``."""
    headers = dict(headers or {})
    if token and not any(name.lower() == "authorization" for name in headers):
        headers.update(auth_headers(url))
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        with exc:  # its socket closed with it, as the answer's above
            return exc.code, dict(exc.headers), exc.read()


def rpc(
    url: str, method: str, params: dict[str, Any] | None = None, *, token: bool = True, **headers: str
) -> tuple[int, Any]:
    """One JSON-RPC request to the daemon's /mcp; (status, parsed body)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}).encode()
    status, _, raw = http(
        "POST",
        url,
        body,
        {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
        token=token,
    )
    return status, json.loads(raw) if raw else None


def wait_healthy(daemon: Daemon, timeout: float = START_TIMEOUT_S) -> dict[str, Any]:
    """Wait until /health says healthy (the model has loaded)."""
    deadline = time.monotonic() + timeout
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status, _, raw = http("GET", f"{daemon.url}/health")
        body = json.loads(raw)
        if status == 200:
            return body
        time.sleep(0.05)  # as start_daemon polls: the model's load ends when it ends
    raise AssertionError(f"daemon never became healthy: {body}")
