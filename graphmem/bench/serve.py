"""Serve benchmark: the daemon and the stdio proxy, driven like MCP clients drive them.

Reports, on fresh data dirs:

- how long ``graphmem mcp`` takes from launch to a tools/list answer when no daemon
  runs yet (the client's view of a cold start), median of several launches;
- the proxy's overhead: p50 of a call through ``graphmem mcp`` minus p50 of the same
  call over direct HTTP to the daemon;
- ``clients`` concurrent proxies, each making ``calls`` mixed calls (remember, recall,
  get_context, update_memory, sessions and claims), counting errors and lock
  failures, with recall p50/p95 under that load.
"""

from __future__ import annotations

import http.client
import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from graphmem.bench.harness import graphmem_env, percentile
from graphmem.bench.synthetic import synthetic_memories, synthetic_queries
from graphmem.server.daemon_process import find_daemon, stop_daemon

INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "graphmem-bench", "version": "1"},
}


class StdioClient:
    """A minimal MCP client over a ``graphmem mcp`` process (one request at a time)."""

    def __init__(self, data_dir: Path, cwd: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-P", "-m", "graphmem", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=graphmem_env(data_dir, GRAPHMEM_RATE_LIMIT="0"),  # the benchmark is the only client
            cwd=cwd,
            text=True,
            bufsize=1,
        )
        self._next = 0

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next += 1
        stdin: IO[str] = self.process.stdin  # type: ignore[assignment]
        stdout: IO[str] = self.process.stdout  # type: ignore[assignment]
        stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params or {}})
        )
        stdin.write("\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            raise RuntimeError("graphmem mcp exited")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


class HttpClient:
    """Direct calls to the daemon's /mcp over one keep-alive connection."""

    def __init__(self, url: str) -> None:
        target = urlsplit(url)
        self.connection = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port, timeout=60)

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": tool, "arguments": arguments}}).encode()  # fmt: skip
        self.connection.request("POST", "/mcp", body, {"Content-Type": "application/json",
                                "Accept": "application/json, text/event-stream"})  # fmt: skip
        response = self.connection.getresponse()
        reply: dict[str, Any] = json.loads(response.read())
        return reply


def _failed(reply: dict[str, Any]) -> str | None:
    if "error" in reply:
        return str(reply["error"].get("message"))
    if reply.get("result", {}).get("isError"):
        return "".join(block.get("text", "") for block in reply["result"].get("content", []))
    return None


def cold_listing(runs: int, work: Path) -> list[float]:
    """Seconds from launching ``graphmem mcp`` (no daemon running) to its tools/list answer."""
    times = []
    for run in range(runs):
        data_dir = work / f"cold-{run}"
        started = time.perf_counter()
        client = StdioClient(data_dir, work)
        client.request("initialize", INIT)
        listed = client.request("tools/list")
        times.append(time.perf_counter() - started)
        assert listed["result"]["tools"], listed
        client.call("memory_status")  # waits for the daemon it started, so it can be stopped
        client.close()
        stop_daemon(data_dir)
    return times


def proxy_overhead(data_dir: Path, work: Path, calls: int) -> dict[str, float]:
    client = StdioClient(data_dir, work)
    client.request("initialize", INIT)
    for text in synthetic_queries(20):
        client.call("remember", text=f"Note: {text}", category="fact")
    info = find_daemon(data_dir)
    assert info is not None
    direct = HttpClient(info.url)
    via_proxy, via_http = [], []
    for _ in range(calls):  # alternate, so both see the same machine load
        started = time.perf_counter()
        client.call("active_sessions")
        via_proxy.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        direct.call("active_sessions")
        via_http.append((time.perf_counter() - started) * 1000)
    client.close()
    proxy_p50, http_p50 = statistics.median(via_proxy), statistics.median(via_http)
    return {"proxy_p50": round(proxy_p50, 2), "http_p50": round(http_p50, 2),
            "overhead_p50": round(proxy_p50 - http_p50, 2)}  # fmt: skip


def load(data_dir: Path, work: Path, clients: int, calls: int, seed: int = 5) -> dict[str, Any]:
    """``clients`` proxies × ``calls`` mixed calls at once."""
    texts = [str(m["text"]) for m in synthetic_memories(clients * calls, seed=seed)]
    queries = synthetic_queries(200, seed=seed)
    recall_ms: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def drive(n: int) -> None:
        rng = random.Random(seed + n)
        client = StdioClient(data_dir, work)
        client.request("initialize", INIT)
        session = client.call("session_start", agent=f"bench-{n}")["result"]["structuredContent"]["session"]
        mine: list[str] = []
        for i in range(calls):
            roll = rng.random()
            started = time.perf_counter()
            if roll < 0.35:
                reply = client.call("remember", text=texts[n * calls + i], category="fact")
                if not _failed(reply):
                    mine.append(reply["result"]["structuredContent"]["id"])
            elif roll < 0.8:
                reply = client.call("recall", query=rng.choice(queries))
                with lock:
                    recall_ms.append((time.perf_counter() - started) * 1000)
            elif roll < 0.88:
                reply = client.call("get_context", target=rng.choice(queries))
            elif roll < 0.94 and mine:
                reply = client.call("update_memory", id=rng.choice(mine), action="archive")
            elif roll < 0.97:
                reply = client.call("claim_item", session_id=session["id"], item=f"!{rng.randint(1, 50)}")
                if reply.get("result", {}).get("isError"):
                    reply = {"result": {}}  # another client holds it: expected, not an error
            else:
                reply = client.call("session_heartbeat", session_id=session["id"])
            failure = _failed(reply)
            if failure:
                with lock:
                    errors.append(failure)
        client.call("session_end", session_id=session["id"])
        client.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=drive, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return {
        "clients": clients,
        "calls_per_client": calls,
        "seconds": round(elapsed, 1),
        "calls_per_s": round(clients * calls / elapsed, 1),
        "errors": len(errors),
        "lock_failures": sum("lock" in e.lower() for e in errors),
        "first_errors": errors[:5],
        "recall_ms": {"p50": percentile(recall_ms, 0.5), "p95": percentile(recall_ms, 0.95)},
    }


def run(
    *, cold_runs: int = 5, overhead_calls: int = 300, clients: int = 4, calls: int = 500
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="graphmem-serve-") as scratch:
        work = Path(scratch)
        cold = cold_listing(cold_runs, work)
        data_dir = work / "shared"
        try:
            overhead = proxy_overhead(data_dir, work, overhead_calls)
            under_load = load(data_dir, work, clients, calls)
        finally:
            stop_daemon(data_dir)
    return {
        "tools_listed_cold_s": {"median": round(statistics.median(cold), 3), "max": round(max(cold), 3)},
        "proxy": overhead,
        "load": under_load,
    }


def format_report(report: dict[str, Any]) -> str:
    load_ = report["load"]
    return "\n".join(
        [
            f"tools listed after a cold `graphmem mcp`: {report['tools_listed_cold_s']['median']} s median "
            f"(max {report['tools_listed_cold_s']['max']} s)",
            f"proxy overhead p50: {report['proxy']['overhead_p50']} ms "
            f"(stdio {report['proxy']['proxy_p50']} ms, direct HTTP {report['proxy']['http_p50']} ms)",
            f"load: {load_['clients']} clients × {load_['calls_per_client']} calls "
            f"in {load_['seconds']} s ({load_['calls_per_s']} calls/s), "
            f"{load_['errors']} errors, {load_['lock_failures']} lock failures",
            f"recall under load: p50 {load_['recall_ms']['p50']} ms, p95 {load_['recall_ms']['p95']} ms",
        ]
    )
