"""A ``graphmem mcp`` session as a client lives it, seen on the proxy's stderr (the client's log):
idle between calls while the daemon drops the idle connection, and a client gone before its
answer. Neither is worth a word there."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from support.daemons import POLL_S, Daemon, read_info, sandbox_env, start_daemon, wait_healthy

pytestmark = pytest.mark.integration

# /proc/net/tcp, where Linux lists this machine's IPv4 TCP connections.
TCP_TABLE = Path("/proc/net/tcp")
CLOSE_WAIT = "08"  # the state of a connection whose other end closed it, and this end not yet
# How long the daemon may take to drop an idle connection: uvicorn's keep-alive is 5 s.
DROP_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    running = start_daemon(tmp_path_factory.mktemp("daemon") / "data")
    wait_healthy(running)
    yield running
    running.stop()


def _proxy_pid(cwd: Path) -> int:
    """The ``graphmem mcp`` this test process started in ``cwd`` (its client's subprocess)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text("ascii").rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes().split(b"\0")
            where = (stat.parent / "cwd").resolve(strict=True)
        except (OSError, ValueError, IndexError):
            continue  # a process that ended meanwhile
        if (
            parent == os.getpid()
            and command[-4:-1] == [b"-m", b"graphmem", b"mcp"]
            and where == cwd.resolve()
        ):
            return int(stat.parent.name)
    raise AssertionError(f"no graphmem mcp started by this test in {cwd}")


def _dropped_by(port: int, pid: int) -> bool:
    """Whether a connection of process ``pid`` to ``port`` was closed by that end, not yet by ``pid``."""
    sockets = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # a descriptor closed meanwhile
            sockets.add(os.readlink(fd).removeprefix("socket:[").removesuffix("]"))
    for row in TCP_TABLE.read_text("ascii").splitlines()[1:]:
        fields = row.split()
        remote_port, state, inode = int(fields[2].rsplit(":", 1)[1], 16), fields[3], fields[9]
        if remote_port == port and state == CLOSE_WAIT and inode in sockets:
            return True
    return False


async def _until_dropped_by(port: int, pid: int) -> None:
    deadline = time.monotonic() + DROP_TIMEOUT_S
    while not _dropped_by(port, pid):
        assert time.monotonic() < deadline, f"the daemon on port {port} kept an idle connection open"
        await asyncio.sleep(POLL_S)


@pytest.mark.skipif(not TCP_TABLE.exists(), reason="no /proc/net/tcp to see the daemon drop a connection")
def test_a_call_after_the_daemon_dropped_the_idle_connection_is_answered_without_a_word(
    daemon: Daemon, tmp_path: Path
) -> None:
    stderr = tmp_path / "mcp-stderr.log"
    transport = StdioTransport(
        sys.executable,
        ["-m", "graphmem", "mcp"],
        env=sandbox_env(daemon.data_dir),
        cwd=str(tmp_path),
        keep_alive=False,
        log_file=stderr,
    )
    port = int(daemon.url.rsplit(":", 1)[1])

    async def go() -> list[Any]:
        async with Client(transport) as client:
            first = await client.call_tool("memory_status", {})
            await _until_dropped_by(port, _proxy_pid(tmp_path))  # its kept-alive connection, idle too long
            # The proxy's workers take calls in turn, each on its own connection: by the third
            # call after the idle, the worker whose connection the daemon dropped has had one.
            later = [await client.call_tool("memory_status", {}) for _ in range(3)]
            return [result.structured_content["data_dir"] for result in (first, *later)]

    assert asyncio.run(go()) == [str(daemon.data_dir)] * 4
    info = read_info(daemon.data_dir)
    assert info is not None and info["pid"] == daemon.process.pid  # the same daemon answered both
    assert stderr.read_text("utf-8") == ""


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def test_a_client_gone_before_its_answer_leaves_the_proxy_quiet(daemon: Daemon, tmp_path: Path) -> None:
    proxy = subprocess.Popen(
        [sys.executable, "-m", "graphmem", "mcp"],
        env=sandbox_env(daemon.data_dir),
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proxy.stdin is not None and proxy.stdout is not None and proxy.stderr is not None
    initialize = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    try:
        proxy.stdin.write(_line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize}))
        proxy.stdin.flush()
        assert json.loads(proxy.stdout.readline())["id"] == 1
        proxy.stdout.close()  # the client stops reading: the answer below has nowhere to go
        proxy.stdin.write(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        call = {"name": "memory_status", "arguments": {}}
        proxy.stdin.write(_line({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}))
        proxy.stdin.close()
        code = proxy.wait(120)
        stderr = proxy.stderr.read().decode()
    finally:
        if proxy.poll() is None:
            proxy.kill()
            proxy.wait(10)
        proxy.stderr.close()

    assert (code, stderr) == (0, "")
