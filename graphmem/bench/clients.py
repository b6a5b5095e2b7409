"""Concurrent clients on one store: throughput and latency of a recall/remember mix.

``graphmem bench scale --clients N`` runs this on the store the scale benchmark built.
N clients start together (each has opened the store, loaded the model and recalled once),
then each calls recall and remember for :data:`CLIENT_RUN_S` seconds, one call after the
other: four recalls to one remember (agents look up more than they write), distinct texts
per client. The report: calls per second over all clients, p50/p95 per call kind, errors, and
the recalls' p50 apart by the call before them: with no daemon, the recall right after a
remember embeds what it wrote (``service/semantic.py``), the slowest quarter of the recalls, so
the recalls' p50 is about the other recalls' 67th percentile.

How a client is made depends on the store, to model what a team runs:

- **PostgreSQL**: each client is its own process with its own ``MemoryService`` and
  connection pool: N daemons (one per developer) sharing the database. Threads in one
  process would share one GIL and one pool, and measure this benchmark, not the store.
- **Kùzu**: one process may open the store (its file lock), so the clients are N threads
  calling one ``MemoryService``, as a daemon serves N agents.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graphmem.bench.scale import _percentile
from graphmem.bench.synthetic import synthetic_queries
from graphmem.settings import STORE_URL_VARIABLE

# Long enough for a few hundred calls at 16 clients on 2 cores, short enough to run 4 sizes.
CLIENT_RUN_S = 20.0
# Recalls per remember in each client's mix.
RECALLS_PER_REMEMBER = 4
# A child that has not loaded its model and recalled once by then is reported as failed.
CLIENT_START_TIMEOUT_S = 600.0
READY = "graphmem-bench client-ready"

# A client process: open the store, warm up, say ready, wait for "go" on stdin, run,
# write its calls as JSON to the file named.
CLIENT_SCRIPT = """
import sys
from graphmem.bench.clients import serve_child
serve_child(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
"""

# kind, milliseconds, error (None: it succeeded), whether the client's call before was a remember
Call = tuple[str, float, str | None, bool]


def client_calls(memory: Any, client: int, seconds: float) -> list[Call]:
    """One client's loop: the mix of recalls and remembers for ``seconds``, each timed."""
    rng = random.Random(client)
    queries = synthetic_queries(200, seed=1000 + client)
    calls: list[Call] = []
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        kind = "remember" if i % (RECALLS_PER_REMEMBER + 1) == RECALLS_PER_REMEMBER else "recall"
        text = queries[i % len(queries)]
        started = time.perf_counter()
        error = None
        try:
            if kind == "recall":
                memory.recall(text, limit=10)
            else:
                memory.remember(
                    f"Client {client} note {i}: {text} is owned by team {rng.randint(1, 40)}", category="fact"
                )
        except Exception as exc:  # a failed call is counted and reported, not fatal
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        after_remember = bool(calls) and calls[-1][0] == "remember"
        calls.append((kind, (time.perf_counter() - started) * 1000, error, after_remember))
        i += 1
    return calls


def serve_child(data_dir: str, client: int, seconds: float, out: str) -> None:
    """The body of one client process (``CLIENT_SCRIPT``); the store URL comes from the environment."""
    from graphmem.app import open_memory
    from graphmem.settings import load_settings

    memory = open_memory(load_settings(data_dir=Path(data_dir)))
    try:
        memory.load_model()
        memory.recall("warm up the connections and the model", limit=10)
        print(READY, flush=True)
        if sys.stdin.readline().strip() != "go":
            return
        calls = client_calls(memory, client, seconds)
    finally:
        memory.close()
    Path(out).write_text(json.dumps(calls), encoding="utf-8")


def _in_processes(clients: int, data_dir: Path, store_url: str, seconds: float) -> tuple[list[Call], float]:
    env = {**os.environ, STORE_URL_VARIABLE: store_url}
    with tempfile.TemporaryDirectory(prefix="graphmem-bench-clients-") as scratch:
        files = [
            (Path(scratch) / f"client-{n}.json", Path(scratch) / f"client-{n}.err") for n in range(clients)
        ]
        children = []
        for client, (out, err) in enumerate(files):
            with err.open("w") as errors:  # the child keeps its own copy of the descriptor
                children.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-c",
                            CLIENT_SCRIPT,
                            str(data_dir),
                            str(client),
                            str(seconds),
                            str(out),
                        ],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=errors,
                        text=True,
                        env=env,
                    )
                )
        try:
            for child, (_, err) in zip(children, files, strict=True):
                if _line_within(child, CLIENT_START_TIMEOUT_S).strip() != READY:
                    raise RuntimeError(f"a benchmark client did not start: {_tail(err)}")
            started = time.perf_counter()
            for child in children:
                assert child.stdin is not None
                child.stdin.write("go\n")
                child.stdin.close()
            for child, (_, err) in zip(children, files, strict=True):
                if child.wait(timeout=seconds + CLIENT_START_TIMEOUT_S) != 0:
                    raise RuntimeError(f"a benchmark client failed: {_tail(err)}")
            wall = time.perf_counter() - started
        finally:
            for child in children:
                if child.poll() is None:
                    child.kill()
                    child.wait()
                for pipe in (child.stdin, child.stdout):
                    if pipe is not None and not pipe.closed:
                        pipe.close()
        calls = [
            (str(k), float(ms), e, bool(a))
            for out, _ in files
            for k, ms, e, a in json.loads(out.read_text("utf-8"))
        ]
    return calls, wall


def _tail(path: Path) -> str:
    return path.read_text("utf-8", errors="replace").strip()[-500:] or "(it printed nothing)"


def _line_within(child: subprocess.Popen[str], timeout: float) -> str:
    """The child's next line of output, or an error when it says nothing for ``timeout`` seconds."""
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(child.stdout.readline() if child.stdout else ""))
    reader.daemon = True
    reader.start()
    reader.join(timeout)
    if not got:
        raise RuntimeError(f"a benchmark client said nothing within {timeout:.0f} s")
    return got[0]


def _in_threads(clients: int, memory: Any, seconds: float) -> tuple[list[Call], float]:
    results: list[list[Call]] = [[] for _ in range(clients)]
    gate = threading.Barrier(clients + 1)

    def work(client: int) -> None:
        gate.wait()
        results[client] = client_calls(memory, client, seconds)

    threads = [threading.Thread(target=work, args=(client,)) for client in range(clients)]
    for thread in threads:
        thread.start()
    gate.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return [call for calls in results for call in calls], time.perf_counter() - started


def run(
    counts: list[int],
    data_dir: Path,
    *,
    store_url: str | None,
    open_memory: Callable[[], Any],
    seconds: float = CLIENT_RUN_S,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Each of ``counts`` clients in turn on the store; one report per count (see the module doc).

    ``open_memory``: opens the store (Kùzu: once, shared by the threads); the store at
    ``store_url`` is opened by each client process instead."""
    say = progress or (lambda message: None)
    reports = []
    for clients in counts:
        load = os.getloadavg()[0]
        if store_url:
            calls, wall = _in_processes(clients, data_dir, store_url, seconds)
        else:
            memory = open_memory()
            try:
                memory.load_model()
                memory.recall("warm up the model", limit=10)
                calls, wall = _in_threads(clients, memory, seconds)
            finally:
                memory.close()
        report = summarise(clients, calls, wall, load, "processes" if store_url else "threads")
        say(f"{clients} clients: {report['calls_per_s']} calls/s, {report['errors']} errors")
        reports.append(report)
    return reports


def summarise(clients: int, calls: list[Call], wall: float, load: float, mode: str) -> dict[str, Any]:
    """The report of one run: throughput, p50/p95 per kind (a recall's p50 also apart by the call
    before it), errors (and the first of them)."""
    by_kind: dict[str, dict[str, Any]] = {}
    for kind in ("recall", "remember"):
        ms = [took for k, took, error, _ in calls if k == kind and error is None]
        by_kind[kind] = {
            "calls": sum(1 for k, _, _, _ in calls if k == kind),
            "p50": _percentile(ms, 0.5) if ms else None,
            "p95": _percentile(ms, 0.95) if ms else None,
        }
    for after, name in ((False, "after_recall_p50"), (True, "after_remember_p50")):
        ms = [took for k, took, error, a in calls if k == "recall" and error is None and a is after]
        by_kind["recall"][name] = _percentile(ms, 0.5) if ms else None
    errors = [error for _, _, error, _ in calls if error is not None]
    return {
        "clients": clients,
        "mode": mode,
        "seconds": round(wall, 1),
        "calls": len(calls),
        "calls_per_s": round(len(calls) / wall, 1) if wall > 0 else 0.0,
        "recall_ms": by_kind["recall"],
        "remember_ms": by_kind["remember"],
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "load_average": round(load, 2),
    }


def format_lines(reports: list[dict[str, Any]]) -> list[str]:
    """The text report's lines, one per client count."""
    lines = []
    for r in reports:
        recall, remember = r["recall_ms"], r["remember_ms"]
        lines.append(
            f"{r['clients']:>2} clients ({r['mode']}) {r['calls_per_s']} calls/s over {r['seconds']} s: "
            f"recall p50 {recall['p50']} / p95 {recall['p95']} ms (p50 after a recall "
            f"{recall['after_recall_p50']}, after a remember {recall['after_remember_p50']}), "
            f"remember p50 {remember['p50']} / p95 {remember['p95']} ms, "
            f"{r['errors']} errors (load {r['load_average']})"
        )
        if r["first_error"]:
            lines.append(f"   first error: {r['first_error']}")
    return lines
