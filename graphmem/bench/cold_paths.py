"""CLI benchmark: the cold paths a user meets, each a fresh ``graphmem`` process.

On a temporary data dir seeded with a few memories (through the CLI), it reports:

- **through a daemon**: ``graphmem recall`` end to end (process start, imports, the call
  over ``/rpc``, printing) while a daemon serves the store and has its model loaded;
- **one-shot**: ``graphmem recall`` with no daemon: the process opens the store, loads
  the model and answers;
- **first recall after start**: ``graphmem serve`` is launched and, as soon as it has
  published its address, ``graphmem recall "which linter" --json`` runs: its time,
  whether it found the stored "Use ruff for linting", and its ``semantic_ready``.

Each figure is the median of ``repeats`` runs, with the load average when it started.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from graphmem.bench.harness import graphmem_env
from graphmem.server.daemon_process import read_info

SEED = (
    ("directive", "Use ruff for linting"),
    ("decision", "We chose Kùzu over SQLite for the graph store: Cypher and FTS built in"),
    ("blocker", "CI is red on !123 until the flaky network test in tests/test_sync.py is fixed"),
    ("preference", "Prefer pnpm over npm in every project"),
    ("procedure", "Release with make release after the changelog is updated"),
)
QUERY = "which linter"
START_TIMEOUT_S = 120.0
READY_TIMEOUT_S = 300.0


@dataclass(frozen=True, slots=True)
class Timing:
    """One scenario: median seconds over the runs, and each run."""

    name: str
    median_s: float
    runs_s: list[float]
    load_average: float
    # CPU seconds (user + system) of the process: what the work costs whatever the load.
    median_cpu_s: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CliReport:
    timings: list[Timing]
    repeats: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _env(data_dir: Path) -> dict[str, str]:
    return graphmem_env(data_dir, user_settings=False, GRAPHMEM_INGEST__ENABLED="false")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _graphmem(data_dir: Path, *args: str, cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Seconds from launch to exit, and what it printed; its CPU seconds go to ``_cpu``."""
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-P", "-m", "graphmem", *args],
        env=_env(data_dir),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=READY_TIMEOUT_S,
        check=False,
    )
    took = time.perf_counter() - started
    _cpu.append(_children_cpu() - cpu)
    if done.returncode != 0:
        raise RuntimeError(f"graphmem {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return took, done


def _start_daemon(data_dir: Path, cwd: Path) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, "-P", "-m", "graphmem", "serve"],
        env=_env(data_dir),
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        info = read_info(data_dir)
        if info is not None and info.pid == process.pid:
            return process
        if process.poll() is not None:
            raise RuntimeError(f"graphmem serve exited with {process.returncode}")
        time.sleep(0.02)
    process.kill()
    raise RuntimeError("graphmem serve did not publish its address in time")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def _wait_semantic(data_dir: Path, cwd: Path) -> None:
    """Until the daemon's recall uses the model."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        _, done = _graphmem(data_dir, "recall", QUERY, "--json", cwd=cwd)
        if json.loads(done.stdout).get("semantic_ready"):
            return
        time.sleep(0.5)
    raise RuntimeError("the daemon's model did not load in time")


_cpu: list[float] = []  # CPU seconds of each `graphmem` process run, in order


def _timing(name: str, runs: list[float], cpu: list[float], load: float, **details: Any) -> Timing:
    return Timing(
        name, statistics.median(runs), [round(r, 3) for r in runs], load, statistics.median(cpu), details
    )


def run(repeats: int = 3) -> CliReport:
    with tempfile.TemporaryDirectory(prefix="graphmem-bench-cli-") as scratch:
        root = Path(scratch)
        data_dir = root / "data"
        cwd = root / "work"  # outside any repository
        cwd.mkdir()
        for category, text in SEED:
            _graphmem(data_dir, "remember", "-c", category, text, cwd=cwd)
        _graphmem(data_dir, "recall", QUERY, cwd=cwd)  # embeds the seed once

        load = os.getloadavg()[0]
        _cpu.clear()
        oneshot = [_graphmem(data_dir, "recall", QUERY, cwd=cwd)[0] for _ in range(repeats)]
        timings = [_timing("one-shot recall, no daemon", oneshot, _cpu[:], load)]

        first: list[float] = []
        first_cpu: list[float] = []
        found: list[bool] = []
        ready: list[bool] = []
        load = os.getloadavg()[0]
        for _ in range(repeats):
            daemon = _start_daemon(data_dir, cwd)
            try:
                took, done = _graphmem(data_dir, "recall", QUERY, "--json", cwd=cwd)
            finally:
                first_cpu.append(_cpu[-1])
                _stop(daemon)
            answer = json.loads(done.stdout)
            first.append(took)
            found.append(any(hit["text"] == SEED[0][1] for hit in answer["hits"]))
            ready.append(bool(answer.get("semantic_ready")))
        timings.append(
            _timing(
                "first recall right after daemon start",
                first,
                first_cpu,
                load,
                found=found,
                semantic_ready=ready,
            )
        )

        daemon = _start_daemon(data_dir, cwd)
        try:
            _wait_semantic(data_dir, cwd)
            load = os.getloadavg()[0]
            _cpu.clear()
            through = [_graphmem(data_dir, "recall", QUERY, cwd=cwd)[0] for _ in range(repeats)]
            through_cpu = _cpu[:]
            _cpu.clear()
            status = [_graphmem(data_dir, "status", cwd=cwd)[0] for _ in range(repeats)]
            status_cpu = _cpu[:]
        finally:
            _stop(daemon)
        timings.append(_timing("recall through a running daemon", through, through_cpu, load))
        timings.append(_timing("status through a running daemon", status, status_cpu, load))
    return CliReport(timings, repeats)


def format_report(report: CliReport) -> str:
    lines = [f"{'scenario':<40} {'median s':>9} {'cpu s':>6}  runs (s)                 load", "-" * 85]
    for timing in report.timings:
        runs = ", ".join(f"{r:.2f}" for r in timing.runs_s)
        lines.append(
            f"{timing.name:<40} {timing.median_s:>9.2f} {timing.median_cpu_s:>6.2f}  {runs:<24} "
            f"{timing.load_average:.2f}"
        )
        if timing.details:
            extra = ", ".join(f"{key}: {value}" for key, value in timing.details.items())
            lines.append(f"  {extra}")
    return "\n".join(lines)
