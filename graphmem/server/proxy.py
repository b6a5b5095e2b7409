"""``graphmem mcp``: the stdio MCP server a client launches, forwarding to the daemon.

It answers ``initialize`` and ``tools/list`` itself, from the tool manifest shipped in
the package, so the client sees the tools at once; meanwhile it finds the daemon of
the data dir or starts one. Tool calls are forwarded over HTTP, with the local token
of ``daemon.token`` read at each call (the daemon's MCP is stateless, so nothing is
lost when the daemon restarts), each worker on a connection it keeps open between calls
(``loopback.KeptAlive``, as ``RemoteMemory``'s: one the daemon closed while idle is replaced
without a word).

A call made at any moment after the daemon died (killed, crashed) is answered by the next one:
a daemon that refuses the connection, or takes it and says nothing to ``/identity``, was sent
nothing, so the proxy finds the daemon again (waiting while a killed one still holds its lock,
or one is starting) or starts one, and sends the call there, again and again until
``start_timeout`` has passed since the first failure. A call that went out and got no answer
(the daemon may have made it) is sent once more, never again. Past that, the call ends with a
tool error that says what happened and what to do: the proxy never hangs. Tools that take a
``project`` get the proxy's working directory when the caller leaves it out.

Only the standard library (and graphmem modules that import only it) is imported here: this
process starts with every client.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, BinaryIO, TextIO
from urllib.parse import urlsplit

from graphmem.errors import GraphmemError, StoreError
from graphmem.server import mcp_shape
from graphmem.server.daemon_process import (
    LOG_FILENAME,
    DaemonInfo,
    collect_as_long_running,
    ensure_daemon,
    find_daemon,
    read_token,
)
from graphmem.server.identity import NotTheDaemon, Silent
from graphmem.server.loopback import Expected, ThreadConnections

log = logging.getLogger(__name__)

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
CALL_TIMEOUT_S = 300.0
MAX_WORKERS = 8
# A client's longest line, by default: the daemon's largest request ([server] max_request_bytes).
MAX_LINE_BYTES = 2_000_000
# Between two tries at a daemon that refused a call and still holds its lock: killed, and not gone
# yet (the kernel frees its memory before it closes its files), or stopping.
RETRY_PAUSE_S = 0.05


def load_manifest() -> dict[str, Any]:
    """The tools (and instructions) as the daemon lists them, shipped with the package."""
    text = resources.files("graphmem.server").joinpath("manifest.json").read_text("utf-8")
    manifest: dict[str, Any] = json.loads(text)
    return manifest


def _result(message_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message_id, "result": result}


def _error(message_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message_id, "error": {"code": code, "message": message}}


def _tool_error(message_id: Any, message: str) -> dict[str, Any]:
    return _result(message_id, {"content": [{"type": "text", "text": message}], "isError": True})


class NoAnswerInTime(Exception):
    """No daemon answered within ``start_timeout`` of the first failure; the message is the
    tool error's, whole."""


class DaemonUnavailable(Exception):
    """The daemon could not be reached; ``sent_nothing``: this try sent nothing (the connection was
    refused), so trying again adds no call the daemon may have made."""

    def __init__(self, message: str, *, sent_nothing: bool = False) -> None:
        super().__init__(message)
        self.sent_nothing = sent_nothing


@dataclass
class Proxy:
    """Forwards one client's MCP messages to the daemon of ``data_dir``."""

    data_dir: Path
    project: str | None
    version: str
    start_timeout: float
    api_key: str | None = None
    manifest: dict[str, Any] = field(default_factory=load_manifest)
    start: Callable[[Path, float], DaemonInfo] = lambda data_dir, timeout: ensure_daemon(
        data_dir, timeout=timeout
    )
    # Random per process, sent with every call: the daemon's sessions it starts belong to it.
    client_id: str = field(default_factory=lambda: os.urandom(16).hex(), init=False)
    _daemon: DaemonInfo | None = field(default=None, init=False)
    _daemon_lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    # Each worker thread's kept-alive connection to the daemon.
    _connections: ThreadConnections = field(
        default_factory=lambda: ThreadConnections(CALL_TIMEOUT_S), init=False
    )

    def __post_init__(self) -> None:
        self._takes_project = {
            tool["name"]
            for tool in self.manifest["tools"]
            if "project" in tool.get("inputSchema", {}).get("properties", {})
        }

    # -- the daemon -------------------------------------------------------------------

    def daemon(self, *, restart: bool = False, timeout: float | None = None) -> DaemonInfo:
        """The daemon the calls go to: the one that has published its address, or one started
        (``restart``: looked for again, the one known before did not answer); ``timeout``: how
        long a start may take (default: ``start_timeout``)."""
        with self._daemon_lock:
            if restart or self._daemon is None:
                found = None if restart else find_daemon(self.data_dir)
                wait = self.start_timeout if timeout is None else timeout
                self._daemon = found or self.start(self.data_dir, wait)
            return self._daemon

    def warm(self) -> None:
        """Find or start the daemon in the background, before the first call needs it."""

        def run() -> None:
            try:
                self.daemon()
            except GraphmemError as exc:
                log.error("%s", exc)

        threading.Thread(target=run, name="graphmem-daemon-start", daemon=True).start()

    def close(self) -> None:
        """Close the connections to the daemon (once no call is in flight)."""
        self._connections.close()

    def _post(self, info: DaemonInfo, body: bytes) -> tuple[int, bytes]:
        """``body`` to the daemon's ``/mcp`` on this worker's connection, which the daemon proves
        it holds when it opens (``loopback.KeptAlive``: one it closed while idle is replaced, a
        call it closed as the call went out is sent once more); the status and the answer."""
        target = urlsplit(info.url)
        secret = read_token(self.data_dir) or self.api_key  # the daemon's local secret, read each call
        if not secret:
            raise StoreError(
                f"No daemon.token in {self.data_dir} and no GRAPHMEM_API_KEY: nothing proves the daemon "
                f"at {info.url} is graphmem's, so nothing was sent."
            )
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "X-Graphmem-Client": self.client_id,  # owns the sessions this client starts
            "Authorization": f"Bearer {secret}",
        }
        connection = self._connections.own(target.hostname or "127.0.0.1", target.port or 80)
        try:
            with connection.post("/mcp", body, headers, Expected(secret, info.pid, info.url)) as answer:
                return answer.status, answer.read()
        except OSError as exc:  # the connection closed itself: the next call opens a new one
            # (``NotTheDaemon``, no OSError, goes up as it is: nothing was sent)
            raise DaemonUnavailable(str(exc), sent_nothing=isinstance(exc, ConnectionRefusedError)) from exc

    def forward(self, message: dict[str, Any]) -> dict[str, Any]:
        message_id = message.get("id")
        body = json.dumps(message).encode()
        try:
            status, raw = self._send(body)
        except NoAnswerInTime as exc:
            return _tool_error(message_id, str(exc))
        except (DaemonUnavailable, GraphmemError) as exc:
            return _tool_error(
                message_id,
                f"The graphmem daemon is unavailable ({exc}); see {self.data_dir / LOG_FILENAME}. "
                "Nothing was stored by this call.",
            )
        if status == 200:
            try:
                reply: dict[str, Any] = json.loads(raw)
            except ValueError:
                return _error(message_id, -32603, "The daemon sent a reply that is not JSON.")
            reply["id"] = message_id
            return reply
        try:
            detail = json.loads(raw).get("error", raw.decode(errors="replace"))
        except ValueError:
            detail = raw.decode(errors="replace")[:500]
        if isinstance(detail, dict):
            detail = detail.get("message", str(detail))
        if status == 429:
            return _tool_error(message_id, str(detail))  # says when to retry
        return _tool_error(message_id, f"The daemon refused the call (HTTP {status}): {detail}")

    def _send(self, body: bytes) -> tuple[int, bytes]:
        """``body`` posted to the daemon until one answers: again to the daemon found or started
        in its place while nothing was sent (refused, or silent to ``/identity``: gone, going, or
        another program at its address) and ``start_timeout`` has not passed since the first
        failure; once more after a failure that may have reached it. The status and the answer."""
        info = self.daemon()
        deadline: float | None = None
        sent_again = False
        while True:
            try:
                return self._post(info, body)
            except (DaemonUnavailable, NotTheDaemon) as exc:
                failure: DaemonUnavailable | NotTheDaemon = exc
            if deadline is None:
                # Gone, or another process at its address (a daemon started since, or a squatter):
                # find the daemon that holds the lock now, or start one.
                log.warning("the daemon did not answer (%s); finding or starting it again", failure)
                deadline = time.monotonic() + self.start_timeout
            if not _sent_nothing(failure):
                if sent_again:
                    raise failure
                sent_again = True
            left = deadline - time.monotonic()
            if left <= 0:
                raise NoAnswerInTime(self._no_answer(info, failure)) from failure
            found = self.daemon(restart=True, timeout=left)
            if found == info:  # the same daemon, still holding its lock: killed or stopping
                time.sleep(RETRY_PAUSE_S)
            info = found

    def _no_answer(self, info: DaemonInfo, failure: Exception) -> str:
        return (
            f"The graphmem daemon (pid {info.pid}) at {info.url} still did not answer "
            f"{self.start_timeout:.3g} s after it first failed ({failure}): it may be stopping, or be "
            "stuck. Nothing was stored by this call. Call again in a moment; if it still fails, run "
            f"`graphmem stop` (the next call starts a new daemon) and see {self.data_dir / LOG_FILENAME}."
        )

    # -- messages ---------------------------------------------------------------------

    def handle(self, message: Any) -> dict[str, Any] | None:
        """The reply to one client message (None for notifications)."""
        refused = mcp_shape.problem(message)  # the same words as /mcp over HTTP
        if refused is not None:
            return _error(mcp_shape.request_id(message), *refused)
        if "id" not in message:
            return None  # notifications (initialized, cancelled, ...) need no answer
        method = message["method"]
        message_id = message["id"]
        params = message.get("params") or {}
        if method == "initialize":
            asked = params.get("protocolVersion") if isinstance(params, dict) else None
            version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
            return _result(
                message_id,
                {
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": "graphmem", "version": self.version},
                    "instructions": self.manifest.get("instructions", ""),
                },
            )
        if method == "ping":
            return _result(message_id, {})
        if method == "tools/list":
            return _result(message_id, {"tools": self.manifest["tools"]})
        if method in ("resources/list", "resources/templates/list", "prompts/list"):
            key = {"resources/list": "resources", "prompts/list": "prompts"}.get(method, "resourceTemplates")
            return _result(message_id, {key: []})
        if method == "tools/call":
            arguments = params.get("arguments") or {}
            if params["name"] in self._takes_project and "project" not in arguments and self.project:
                arguments = {**arguments, "project": self.project}
            return self.forward({**message, "params": {**params, "arguments": arguments}})
        return _error(message_id, -32601, f"Method not found: {method}.")


def _sent_nothing(failure: Exception) -> bool:
    """Whether this try sent the call nowhere: refused, or no answer to ``/identity``."""
    return isinstance(failure, Silent) or (isinstance(failure, DaemonUnavailable) and failure.sent_nothing)


def lines_within(stdin: BinaryIO, most: int) -> Iterator[bytes | None]:
    """Each line of ``stdin``; None in place of one over ``most`` bytes, read to its end a bound
    at a time and dropped: a client's line without end never fills the memory."""
    while line := stdin.readline(most + 1):
        if len(line) <= most or line.endswith(b"\n"):
            yield line
            continue
        while line and not line.endswith(b"\n"):
            line = stdin.readline(most + 1)
        yield None


def run_stdio(proxy: Proxy, stdin: BinaryIO, stdout: TextIO, *, max_line_bytes: int = MAX_LINE_BYTES) -> None:
    """Serve newline-delimited JSON-RPC on stdin and stdout until stdin closes. A line that is
    not UTF-8 is a parse error for that line: its bytes are never replaced with U+FFFD and stored
    so; one over ``max_line_bytes`` (more than the daemon takes) is refused unread. A client that
    closed its end of stdout is gone: what was answered to it is dropped, and the proxy stops
    reading, without a word."""
    write_lock = threading.Lock()
    gone = threading.Event()

    def reply(answer: dict[str, Any] | None) -> None:
        if answer is None:
            return
        line = json.dumps(answer, ensure_ascii=False)
        with write_lock:
            if gone.is_set():
                return
            try:
                stdout.write(line + "\n")
                stdout.flush()
            except BrokenPipeError:
                log.debug("the client closed stdout; its answers are dropped")
                gone.set()

    def work(message: Any) -> None:
        try:
            reply(proxy.handle(message))
        except Exception:  # one bad call must not take the client's session down
            log.exception("proxy failed on a message")
            message_id = message.get("id") if isinstance(message, dict) else None
            reply(_error(message_id, -32603, "graphmem's proxy failed on this message; see its stderr."))

    proxy.warm()
    with (
        contextlib.closing(proxy),
        ThreadPoolExecutor(MAX_WORKERS, thread_name_prefix="graphmem-proxy") as pool,
    ):
        for raw in lines_within(stdin, max_line_bytes):
            if gone.is_set():
                break
            if raw is None:
                reply(_error(None, -32600, _too_long(max_line_bytes)))
                continue
            if not raw.strip():
                continue
            try:
                message = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                reply(_error(None, -32700, f"Parse error: {_not_utf8(raw, exc)}"))
                continue
            except (ValueError, RecursionError):  # RecursionError: nested too deep for the parser
                reply(_error(None, -32700, "Parse error: each line must be one JSON-RPC message."))
                continue
            if isinstance(message, dict) and message.get("method") in ("initialize", "tools/list", "ping"):
                reply(proxy.handle(message))  # answered in order, at once
            else:
                pool.submit(work, message)


def _too_long(most: int) -> str:
    return (
        f"Invalid request: the line is over {most:,} bytes, more than graphmem's daemon takes "
        "([server] max_request_bytes): send less in one call."
    )


def _not_utf8(raw: bytes, exc: UnicodeDecodeError) -> str:
    return (
        f"the line is not valid UTF-8: byte {exc.start} (0x{raw[exc.start]:02x}) starts no character "
        "there. Send each message as one line of UTF-8 JSON."
    )


def main(
    data_dir: Path,
    *,
    start_timeout: float,
    api_key: str | None,
    version: str,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> None:
    """Entry point of ``graphmem mcp``; ``max_line_bytes``: the daemon's largest request."""
    project = os.getcwd()
    proxy = Proxy(data_dir, project, version, start_timeout, api_key)
    collect_as_long_running()
    stdin = open(sys.stdin.fileno(), "rb", closefd=False)  # noqa: SIM115
    with contextlib.suppress(KeyboardInterrupt):  # the client stopped us: nothing to report
        run_stdio(proxy, stdin, sys.stdout, max_line_bytes=max_line_bytes)
