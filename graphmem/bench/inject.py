"""Inject benchmark: what the OpenCode plugin adds to each model call, measured at the daemon.

On a fresh data dir it imports ``memories`` synthetic memories (embedded), starts a
daemon, waits until the model has loaded, then sends ``calls`` ``/plugin/inject``
requests the way the plugin does — a new session every ``per_session`` messages (its
first call picks the boot context), a new message each call, a realistic system prompt
to check against — over one keep-alive HTTP connection. It reports the round trip the
plugin waits for (median, p95, max) and the daemon's own time per call.

With ``cache_turns`` it measures what the plugin costs the model provider's prompt cache
instead: it plays one scripted session of that many turns (a relevant question every other
turn, a fixed answer after each) three ways — plugin off, the old behaviour (one block at
the end of the system prompt, new every turn: ``/plugin/inject``) and the new one (boot
context in the system prompt once, recall in the newest user message: ``/plugin/boot``
and ``/plugin/turn``, the way the plugin calls them) — builds each model request as an
OpenAI-compatible client would, and reports the cacheable share: of each request's
tokens, the share that is an unchanged prefix of the previous request (what a prefix
cache can serve), averaged over the turns after the first; and the tokens injected per turn.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from graphmem.bench.harness import graphmem_env, percentile
from graphmem.bench.synthetic import synthetic_memories, synthetic_queries
from graphmem.core.text import estimate_tokens
from graphmem.server.daemon_process import find_daemon, stop_daemon

START_TIMEOUT_S = 180.0
# OpenCode's own system prompt with an AGENTS.md is some 10-40 kB; the daemon searches it.
SYSTEM_PROMPT_CHARS = 24_000


def _env(data_dir: Path) -> dict[str, str]:
    # The benchmark is the only client, and there are no OpenCode sessions to read here.
    return graphmem_env(data_dir, GRAPHMEM_RATE_LIMIT="0", GRAPHMEM_INGEST__ENABLED="false")


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


def _headers(data_dir: Path) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "X-Graphmem-Client": "bench-inject"}
    token = data_dir / "daemon.token"
    if token.is_file() and token.read_text("ascii").strip():
        headers["Authorization"] = f"Bearer {token.read_text('ascii').strip()}"
    return headers


def _system_prompt() -> str:
    line = "You are opencode, an interactive CLI tool that helps users with software engineering tasks. "
    return (line * (SYSTEM_PROMPT_CHARS // len(line) + 1))[:SYSTEM_PROMPT_CHARS]


def run(
    *,
    memories: int = 3000,
    calls: int = 300,
    per_session: int = 10,
    cache_turns: int = 0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Build the store, serve it, and time ``calls`` injections (or, with ``cache_turns``, measure
    the prompt cache over a session of that many turns); the report as a dict."""
    say = progress or (lambda message: None)
    with _served(memories, say) as (url, project, headers):
        load_before = os.getloadavg()[0]
        if cache_turns:
            report = _measure_cache(url, project, headers, turns=cache_turns)
        else:
            report = _measure(url, project, headers, calls=calls, per_session=per_session)
        # The machine is often shared: the load says how far the figures are its doing.
        report["load_average"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    report["memories"] = memories
    return report


@contextlib.contextmanager
def _served(memories: int, say: Callable[[str], None]) -> Iterator[tuple[str, str, dict[str, str]]]:
    """A daemon on a fresh store of ``memories`` synthetic memories: its URL, a project directory and
    the headers a client sends (with the daemon's local token when it has one)."""
    from graphmem.app import open_memory
    from graphmem.settings import load_settings

    with tempfile.TemporaryDirectory(prefix="graphmem-inject-") as scratch:
        work = Path(scratch)
        data_dir, project = work / "data", work / "project"
        project.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
        export = data_dir / "exports" / "memories.jsonl"  # where graphmem reads imports from
        export.parent.mkdir(parents=True)
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
            [sys.executable, "-P", "-m", "graphmem", "--data-dir", str(data_dir), "serve", "--port", "0"],
            env=_env(data_dir),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            url = _wait_loaded(data_dir)
            say(f"daemon ready at {url}")
            yield url, str(project), _headers(data_dir)
        finally:
            stop_daemon(data_dir)
            if daemon.poll() is None:
                daemon.kill()
            daemon.wait(10)
            log.close()


def _measure(
    url: str, project: str, headers: dict[str, str], *, calls: int, per_session: int
) -> dict[str, Any]:
    target = urlsplit(url)
    connection = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port, timeout=60)
    system = _system_prompt()
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
            "p95": percentile(round_trip, 0.95),
            "max": round(max(round_trip), 2),
        },
        "server_ms": {"median": round(statistics.median(server), 2), "p95": percentile(server, 0.95)},
        "first_call_of_session_ms": {
            "median": round(statistics.median(first_of_session), 2) if first_of_session else 0.0,
            "p95": percentile(first_of_session, 0.95),
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


# -- the prompt cache ----------------------------------------------------------------------------

ANSWER = (
    "Here is what I found. The module reads its settings once at start-up, validates them, and hands "
    "the connection pool to the request handlers; the retry policy lives next to the client. "
) * 4
OFF_TOPIC = ("Write a haiku about autumn leaves.", "Tell me a joke about penguins.", "Say hello in French.")
MODES = ("off", "old", "new")


class _Client:
    """One keep-alive connection to the daemon's plugin routes."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        target = urlsplit(url)
        self._connection = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port, timeout=60)
        self._headers = headers

    def post(self, route: str, body: dict[str, Any]) -> dict[str, Any]:
        self._connection.request("POST", route, json.dumps(body).encode(), self._headers)
        response = self._connection.getresponse()
        answer: dict[str, Any] = json.loads(response.read())
        if response.status != 200:
            raise RuntimeError(f"{route} answered {response.status}: {answer}")
        return answer

    def close(self) -> None:
        self._connection.close()


def _asks(turns: int) -> list[str]:
    """The user's messages: a question about the project every other turn, small talk between."""
    questions = iter(synthetic_queries(turns, seed=17))
    return [
        f"Can you look at {next(questions)}?" if i % 2 == 0 else OFF_TOPIC[i // 2 % 3] for i in range(turns)
    ]


def _user(text: str, block: str) -> dict[str, Any]:
    parts = [{"type": "text", "text": text}] + ([{"type": "text", "text": block}] if block else [])
    return {"role": "user", "content": parts}


def _session(client: _Client, project: str, mode: str, turns: int) -> tuple[list[str], list[int]]:
    """One scripted session in ``mode``: each request as sent (serialized), tokens injected per turn."""
    system = _system_prompt()
    session = f"ses_cache_{mode}"
    history: list[tuple[str, str]] = []  # (message id, text) of the user messages so far
    blocks: dict[str, str] = {}  # message id -> the block it carries (new mode)
    boot = ""
    requests: list[str] = []
    injected: list[int] = []
    for turn, ask in enumerate(_asks(turns)):
        message_id = f"msg_{mode}{turn:04d}"
        history.append((message_id, ask))
        system_parts, added = [system], 0
        if mode == "old":
            call = {"session_id": session, "message_id": message_id, "directory": project, "agent": "build"}
            block = client.post("/plugin/inject", {**call, "text": ask, "system": system})["block"]
            system_parts += [block] if block else []
            added = estimate_tokens(block) if block else 0
        elif mode == "new":
            listed = [{"id": i, "hash": hashlib.sha256(t.encode()).hexdigest()[:32]} for i, t in history]
            turn_call: dict[str, Any] = {"session_id": session, "directory": project, "messages": listed}
            answer = client.post(
                "/plugin/turn", {**turn_call, "agent": "build", "text": ask, "system": system}
            )
            blocks.update({i: b for i, b in answer["blocks"].items() if i not in blocks})
            added = estimate_tokens(blocks[message_id]) if message_id in blocks else 0
            if turn == 0:
                boot = client.post(
                    "/plugin/boot", {"session_id": session, "directory": project, "system": system}
                )["block"]
                added += estimate_tokens(boot) if boot else 0
            system_parts += [boot] if boot else []
        messages: list[dict[str, Any]] = [{"role": "system", "content": part} for part in system_parts]
        for i, (known, text) in enumerate(history):
            messages.append(_user(text, blocks.get(known, "")))
            if i < len(history) - 1:
                messages.append({"role": "assistant", "content": ANSWER})
        # The body's start as a provider reads it (left open: the next request continues it).
        requests.append('{"messages": [' + ", ".join(json.dumps(m, ensure_ascii=False) for m in messages))
        injected.append(added)
    return requests, injected


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    low, high = 0, n  # the longest equal prefix, by bisection (the strings are long)
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def cacheable_shares(requests: list[str]) -> list[float]:
    """For each request after the first, the share of it that is an unchanged prefix of the one before."""
    return [_common_prefix(before, now) / len(now) for before, now in itertools.pairwise(requests)]


def _measure_cache(url: str, project: str, headers: dict[str, str], *, turns: int) -> dict[str, Any]:
    client = _Client(url, headers)
    try:
        modes: dict[str, Any] = {}
        for mode in MODES:
            requests, injected = _session(client, project, mode, turns)
            shares = cacheable_shares(requests)
            modes[mode] = {
                "cacheable_share": round(100 * statistics.mean(shares), 1),
                "whole_previous_request_kept": sum(
                    now.startswith(before) for before, now in itertools.pairwise(requests)
                ),
                "request_tokens_last": estimate_tokens(requests[-1]),
                "injected_tokens_per_turn": injected,
                "injected_tokens_mean": round(statistics.mean(injected), 1),
                "injected_tokens_max": max(injected),
            }
    finally:
        client.close()
    return {"turns": turns, "modes": modes}


def format_cache_report(report: dict[str, Any]) -> str:
    lines = [
        f"prompt cache over one {report['turns']}-turn session on {report['memories']} memories",
        "cacheable: the share of each request that is an unchanged prefix of the one before (mean)",
        "whole kept: turns whose request starts with the whole previous request",
        f"{'plugin':<6} {'cacheable':>10} {'whole kept':>11} {'injected/turn':>14} {'max':>6}",
    ]
    for mode, figures in report["modes"].items():
        kept = f"{figures['whole_previous_request_kept']}/{report['turns'] - 1}"
        share = f"{figures['cacheable_share']}%"
        lines.append(
            f"{mode:<6} {share:>10} {kept:>11} {figures['injected_tokens_mean']:>14} "
            f"{figures['injected_tokens_max']:>6}"
        )
    new = report["modes"]["new"]["injected_tokens_per_turn"]
    lines.append(f"new, tokens injected per turn: {', '.join(str(n) for n in new)}")
    lines.append(
        f"load average (1 min) before / after: {report['load_average'][0]} / {report['load_average'][1]} "
        f"on {os.cpu_count()} cores"
    )
    return "\n".join(lines)
