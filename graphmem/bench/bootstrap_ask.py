"""Bootstrap-then-ask benchmark: how soon a freshly bootstrapped repository answers.

A real daemon on a fresh temporary data dir; the repository is bootstrapped through the CLI
(as a user would), a person's memory is remembered right after, and then, for ``seconds``,
``graphmem context FILE`` and ``graphmem recall QUESTION`` are run one after the other as
separate CLI processes while the daemon embeds the bootstrap's memories. Each call is timed
end to end (process start to exit). Reports p50/p95/max per verb, how many answers were
marked ``semantic_ready: false``, the embedding backlog when asking began and when it
drained, and when the person's memory got its vector.
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
import urllib.request
from pathlib import Path
from typing import Any

from graphmem.server.daemon_process import read_token, spawn_detached, stop_daemon

SOURCE_SUFFIXES = frozenset({".py", ".js", ".ts", ".go", ".rs", ".java", ".rb", ".php", ".c", ".cpp"})
# Files asked about: the repository's largest source files (most to say about them).
FILES_ASKED = 5
# Questions an agent asks about any repository, plus one per file asked about.
QUESTIONS = (
    "how are errors reported to the user",
    "why was this behaviour changed",
    "which tests cover the parser",
    "what should I know before refactoring",
    "Prefer pnpm or npm?",
)
PERSON_MEMORY = "Prefer pnpm over npm in every project"
CALL_TIMEOUT_S = 120.0
STATS_EVERY_S = 2.0
DAEMON_START_S = 120.0


def _env(data_dir: Path) -> dict[str, str]:
    """What a CLI call sees: a user's environment with the default settings (no config file and
    no ``GRAPHMEM_*`` variable: the CLI then goes to the daemon without loading settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    env["GRAPHMEM_DATA_DIR"] = str(data_dir)
    env["GRAPHMEM_CONFIG"] = str(data_dir.parent / "no-config.toml")  # the user's config stays out
    env["XDG_DATA_HOME"] = str(data_dir.parent / "xdg")  # no OpenCode database to ingest
    return env


def _daemon_env(data_dir: Path) -> dict[str, str]:
    """What the benchmark's daemon runs with: ``_env`` and the settings of a daemon of its own."""
    env = _env(data_dir)
    env["GRAPHMEM_SERVER__PORT"] = "0"  # never collide with a user's daemon
    env["GRAPHMEM_RATE_LIMIT"] = "0"  # the benchmark is the only client
    return env


def source_files(repo: Path, count: int = FILES_ASKED) -> list[str]:
    """The ``count`` largest source files git tracks in ``repo``, as paths relative to it."""
    listed = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.decode("utf-8", "replace")
    sized = []
    for name in filter(None, listed.split("\0")):
        path = repo / name
        if path.suffix in SOURCE_SUFFIXES and path.is_file():
            sized.append((path.stat().st_size, name))
    return [name for _, name in sorted(sized, reverse=True)[:count]]


class Bench:
    """The daemon of one data dir, driven through the CLI."""

    def __init__(self, repo: Path, data_dir: Path) -> None:
        self.repo = repo
        self.data_dir = data_dir
        self.env = _env(data_dir)
        self.url = ""
        self.cpu: dict[str, list[float]] = {}  # verb -> CPU seconds each of its CLI processes used

    def start(self) -> None:
        self.url = spawn_detached(self.data_dir, timeout=DAEMON_START_S, env=_daemon_env(self.data_dir)).url

    def cli(self, *args: str) -> tuple[float, str]:
        """Run ``graphmem ARGS`` in the repository; (seconds it took, its stdout). The CPU the
        process used (user and system, whatever the machine's load) goes to ``cpu``."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-P", "-m", "graphmem", *args],
            cwd=self.repo,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=CALL_TIMEOUT_S,
        )
        took = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        self.cpu.setdefault(args[0], []).append(used)
        if done.returncode != 0:
            raise RuntimeError(f"graphmem {' '.join(args)} failed: {done.stderr.strip()[-500:]}")
        return took, done.stdout

    def rpc(self, method: str, **arguments: Any) -> Any:
        request = urllib.request.Request(
            f"{self.url}/rpc",
            data=json.dumps({"method": method, "arguments": arguments}).encode(),
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {read_token(self.data_dir)}",
            },
        )
        with urllib.request.urlopen(request, timeout=CALL_TIMEOUT_S) as answer:
            body = json.loads(answer.read())
        if "error" in body:
            raise RuntimeError(f"{method}: {body['error']}")
        return body["result"]


def _summary(times: list[float]) -> dict[str, float | int]:
    if not times:
        return {"calls": 0}
    ordered = sorted(times)
    return {
        "calls": len(ordered),
        "p50_s": round(statistics.median(ordered), 3),
        "p95_s": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3),
        "max_s": round(ordered[-1], 3),
    }


def ask(bench: Bench, files: list[str], seconds: float) -> dict[str, Any]:
    """Alternate context and recall calls for ``seconds``; what each took and said."""
    questions = [*QUESTIONS, *(f"what should I know before changing {Path(f).stem}" for f in files)]
    person = bench.rpc("remember", text=PERSON_MEMORY, project=str(bench.repo))["memory"]["id"]
    started = time.perf_counter()
    backlog_start = int(bench.rpc("stats")["pending_embeddings"])
    context_s: list[tuple[float, float]] = []  # (seconds since asking began, seconds it took)
    recall_s: list[tuple[float, float]] = []
    not_ready = 0
    drained_at: float | None = None
    # 0: the daemon embedded it before remember answered
    person_at: float | None = 0.0 if bench.rpc("show", memory_id=person)["memory"]["embedded"] else None
    last_poll = 0.0
    turn = 0
    while time.perf_counter() - started < seconds:
        took, _ = bench.cli("context", files[turn % len(files)], "--json")
        context_s.append((time.perf_counter() - started, took))
        took, out = bench.cli("recall", questions[turn % len(questions)], "--json")
        recall_s.append((time.perf_counter() - started, took))
        not_ready += not json.loads(out).get("semantic_ready", True)
        turn += 1
        now = time.perf_counter() - started
        if now - last_poll >= STATS_EVERY_S and (drained_at is None or person_at is None):
            last_poll = now
            if person_at is None and bench.rpc("show", memory_id=person)["memory"]["embedded"]:
                person_at = now
            if drained_at is None and int(bench.rpc("stats")["pending_embeddings"]) == 0:
                drained_at = now
    return {
        "seconds": seconds,
        "files": files,
        "context": _summary([took for _, took in context_s]),
        "recall": _summary([took for _, took in recall_s]),
        # the same while the backlog was still being embedded, and once it had drained
        "while_embedding": {
            "context": _summary([took for at, took in context_s if drained_at is None or at <= drained_at]),
            "recall": _summary([took for at, took in recall_s if drained_at is None or at <= drained_at]),
        },
        "after_drained": {
            "context": _summary(
                [took for at, took in context_s if drained_at is not None and at > drained_at]
            ),
            "recall": _summary([took for at, took in recall_s if drained_at is not None and at > drained_at]),
        },
        # the CPU each CLI process used, p50: what the load multiplies into its wall time
        "cli_cpu_p50_s": {
            verb: round(statistics.median(bench.cpu[verb]), 3)
            for verb in ("context", "recall")
            if bench.cpu.get(verb)
        },
        "recall_semantic_not_ready": not_ready,
        "backlog_at_start": backlog_start,
        "backlog_drained_after_s": None if drained_at is None else round(drained_at, 1),
        "person_memory_embedded_after_s": None if person_at is None else round(person_at, 1),
    }


def run(path: Path, *, seconds: float = 60.0, history: int = 500) -> dict[str, Any]:
    """Bootstrap ``path`` through a fresh daemon, then ask for ``seconds`` (see the module doc)."""
    files = source_files(path)
    if not files:
        raise ValueError(f"{path} has no source file git tracks: nothing to ask about.")
    with tempfile.TemporaryDirectory(prefix="graphmem-then-ask-") as scratch:
        bench = Bench(path, Path(scratch) / "data")
        bench.start()
        try:
            took, _ = bench.cli("bootstrap", str(path), "--history", str(history), "--json")
            report = ask(bench, files, seconds)
        finally:
            stop_daemon(bench.data_dir)
    load = os.getloadavg()
    return {
        "path": str(path),
        "history": history,
        "bootstrap_s": round(took, 2),
        **report,
        "load_average": [round(x, 2) for x in load],
    }


def format_report(report: dict[str, Any]) -> str:
    def line(name: str, part: dict[str, Any] = report, label: str = "") -> str:
        found = part[name]
        if not found["calls"]:
            return f"{label or name:<8} no call"
        return (
            f"{label or name:<8} {found['calls']} calls: p50 {found['p50_s']} s, p95 {found['p95_s']} s, "
            f"max {found['max_s']} s"
        )

    drained = report["backlog_drained_after_s"]
    person = report["person_memory_embedded_after_s"]
    return "\n".join(
        [
            f"bootstrap then ask: {report['path']} (history {report['history']}, "
            f"bootstrap {report['bootstrap_s']} s)",
            f"asking for {report['seconds']:g} s, each call a CLI process, end to end:",
            line("context"),
            line("recall"),
            "while the daemon embedded:",
            line("context", report["while_embedding"], "  context"),
            line("recall", report["while_embedding"], "  recall"),
            "once the backlog had drained:",
            line("context", report["after_drained"], "  context"),
            line("recall", report["after_drained"], "  recall"),
            f"backlog  {report['backlog_at_start']:,} memories to embed when asking began; "
            + (f"drained after {drained} s" if drained is not None else "not drained by the end"),
            "person   their memory embedded "
            + (
                "before remember answered"
                if person == 0
                else f"after {person} s"
                if person is not None
                else "after the end (not yet)"
            )
            + f"; {report['recall_semantic_not_ready']} recall answers said semantic_ready: false",
            "cpu      each CLI process, p50: "
            + ", ".join(f"{verb} {cpu} s" for verb, cpu in report["cli_cpu_p50_s"].items()),
            "load     " + ", ".join(str(x) for x in report["load_average"]),
        ]
    )
