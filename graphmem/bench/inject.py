"""Inject benchmark: what the OpenCode plugin adds to each model call, measured at the daemon.

On a fresh data dir it imports ``memories`` synthetic memories (embedded), starts a
daemon, waits until the model has loaded, then sends ``calls`` ``/plugin/inject``
requests the way the plugin does — a new session every ``per_session`` messages (its
first call picks the boot context), a new message each call, a realistic system prompt
to check against — over one keep-alive HTTP connection. It reports the round trip the
plugin waits for (median, p95, max) and the daemon's own time per call.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from graphmem.bench.scale import synthetic_memories, synthetic_queries
from graphmem.server.lifecycle import find_daemon, stop_daemon

START_TIMEOUT_S = 180.0
# OpenCode's own system prompt with an AGENTS.md is some 10-40 kB; the daemon searches it.
SYSTEM_PROMPT_CHARS = 24_000


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2) if ordered else 0.0


def _env(data_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["GRAPHMEM_DATA_DIR"] = str(data_dir)
    env["GRAPHMEM_SERVER__PORT"] = "0"  # never collide with a user's daemon
    env["GRAPHMEM_RATE_LIMIT"] = "0"  # the benchmark is the only client
    env["GRAPHMEM_INGEST__ENABLED"] = "false"  # no OpenCode sessions to read here
    return env


def _wait_loaded(data_dir: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        info = find_daemon(data_dir)
        if info is not None:
            try:
                with urllib.request.urlopen(f"{info.url}/health", timeout=5) as response:
                    if response.status == 200:
                        return info.url
            except OSError:
                pass
        time.sleep(0.2)
    raise RuntimeError(f"the daemon did not load its model within {START_TIMEOUT_S:.0f} s")


def _system_prompt() -> str:
    line = "You are opencode, an interactive CLI tool that helps users with software engineering tasks. "
    return (line * (SYSTEM_PROMPT_CHARS // len(line) + 1))[:SYSTEM_PROMPT_CHARS]


def run(
    *,
    memories: int = 3000,
    calls: int = 300,
    per_session: int = 10,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Build the store, serve it, and time ``calls`` injections; the report as a dict."""
    from graphmem.app import open_memory
    from graphmem.settings import load_settings

    say = progress or (lambda message: None)
    with tempfile.TemporaryDirectory(prefix="graphmem-inject-") as scratch:
        work = Path(scratch)
        data_dir, project = work / "data", work / "project"
        project.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
        export = work / "memories.jsonl"
        with export.open("w", encoding="utf-8") as out:
            for record in synthetic_memories(memories):
                out.write(json.dumps(record) + "\n")
        started = time.perf_counter()
        memory = open_memory(load_settings(data_dir=data_dir))
        try:
            memory.import_file(export)
        finally:
            memory.close()
        say(f"imported {memories} memories in {time.perf_counter() - started:.1f} s")

        log = (work / "serve.log").open("wb")
        daemon = subprocess.Popen(
            [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), "serve", "--port", "0"],
            env=_env(data_dir),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            url = _wait_loaded(data_dir)
            say(f"daemon ready at {url}")
            load_before = os.getloadavg()[0]
            report = _measure(url, str(project), calls=calls, per_session=per_session)
            # The machine is often shared: the load says how far the figures are its doing.
            report["load_average"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
        finally:
            stop_daemon(data_dir)
            if daemon.poll() is None:
                daemon.kill()
            daemon.wait(10)
            log.close()
    report["memories"] = memories
    return report


def _measure(url: str, project: str, *, calls: int, per_session: int) -> dict[str, Any]:
    target = urlsplit(url)
    connection = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port, timeout=60)
    system = _system_prompt()
    headers = {"Content-Type": "application/json", "X-Graphmem-Client": "bench-inject"}
    round_trip: list[float] = []
    server: list[float] = []
    first_of_session: list[float] = []
    blocks = 0
    for i, text in enumerate(synthetic_queries(calls + 5, seed=5)):
        body = {
            "session_id": f"ses_bench{i // per_session}",
            "message_id": f"msg_bench{i}",
            "directory": project,
            "agent": "build",
            "text": f"Can you look at {text}?",
            "system": system,
        }
        raw = json.dumps(body).encode()
        started = time.perf_counter()
        connection.request("POST", "/plugin/inject", raw, headers)
        response = connection.getresponse()
        answer = json.loads(response.read())
        took = (time.perf_counter() - started) * 1000
        if response.status != 200:
            raise RuntimeError(f"/plugin/inject answered {response.status}: {answer}")
        if i < 5:
            continue  # warm-up: first queries of a fresh process
        round_trip.append(took)
        server.append(float(answer["took_ms"]))
        if i % per_session == 0:
            first_of_session.append(took)
        blocks += bool(answer["block"])
    connection.close()
    return {
        "calls": len(round_trip),
        "per_session": per_session,
        "blocks": blocks,
        "round_trip_ms": {
            "median": round(statistics.median(round_trip), 2),
            "p95": _percentile(round_trip, 0.95),
            "max": round(max(round_trip), 2),
        },
        "server_ms": {"median": round(statistics.median(server), 2), "p95": _percentile(server, 0.95)},
        "first_call_of_session_ms": {
            "median": round(statistics.median(first_of_session), 2) if first_of_session else 0.0,
            "p95": _percentile(first_of_session, 0.95),
        },
    }


def format_report(report: dict[str, Any]) -> str:
    trip, server, first = report["round_trip_ms"], report["server_ms"], report["first_call_of_session_ms"]
    return "\n".join(
        [
            f"inject: {report['calls']} calls on {report['memories']} memories, "
            f"a new session every {report['per_session']} ({report['blocks']} got a block)",
            f"added per model call (HTTP round trip): median {trip['median']} ms, p95 {trip['p95']} ms, "
            f"max {trip['max']} ms",
            f"daemon time: median {server['median']} ms, p95 {server['p95']} ms",
            f"first call of a session (boot context): median {first['median']} ms, p95 {first['p95']} ms",
            f"load average (1 min) before / after: {report['load_average'][0]} / {report['load_average'][1]} "
            f"on {os.cpu_count()} cores",
        ]
    )
