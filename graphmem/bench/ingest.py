"""Ingest benchmark: time per OpenCode session, from OpenCode's SQLite store into the graph.

Generates an OpenCode-1.18-shaped database of N realistic sessions (a dozen turns each:
decisions, preferences and blockers said by the user, shell runs that fail then succeed,
edits, patches, a large tool output) for a temporary git project, then on a fresh
temporary store ingests each session on its own (``session_id``, as the OpenCode plugin
does) and reports the median and p95 milliseconds per session, everything included:
reading, the rules, redaction, ``remember`` with its dedup and links, the summary. Then a
cursor run over the whole database with nothing new (the daemon's steady state).
"""

from __future__ import annotations

import json
import random
import sqlite3
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.settings import load_settings

T0_MS = 1_790_000_000_000
# OpenCode 1.18's tables, the columns the reader needs (and a few more, as OpenCode has them).
SCHEMA = """
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, slug text NOT NULL,
  directory text NOT NULL, title text NOT NULL, version text NOT NULL, time_created integer NOT NULL,
  time_updated integer NOT NULL);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
  time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
"""
_TOPICS = [
    "billing",
    "refunds",
    "search",
    "auth",
    "exports",
    "the scheduler",
    "webhooks",
    "caching",
    "imports",
]
_TOOLS = ["Postgres 16", "Redis", "Kùzu", "pytest", "ruff", "uv", "httpx", "pydantic", "Celery", "SQLite"]
_FILES = ["src/app.py", "src/billing/invoice.py", "src/search/index.py", "tests/test_app.py", "README.md"]


def _session_turns(rng: random.Random, project: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """(role, parts) of one realistic session."""
    topic, tool, other = rng.choice(_TOPICS), rng.choice(_TOOLS), rng.choice(_TOOLS)
    path = rng.choice(_FILES)
    ref = f"#{rng.randint(1, 900)}"

    def text(value: str) -> dict[str, Any]:
        return {"type": "text", "text": value}

    def bash(command: str, output: str, status: str = "completed") -> dict[str, Any]:
        state = {"status": status, "input": {"command": command}, "output": output}
        return {"type": "tool", "tool": "bash", "state": state}

    edit = {"type": "tool", "tool": "edit", "state": {"status": "completed", "output": "Edit applied.",
            "input": {"filePath": f"{project}/{path}", "oldString": "a", "newString": "b"}}}  # fmt: skip
    return [
        (
            "user",
            [
                text(
                    f"Let's work on {topic} ({ref}). "
                    f"We decided to use {tool} for {topic} because it is simpler."
                )
            ],
        ),
        ("assistant", [text(f"Understood, I'll look at {path} first."), edit]),
        ("user", [text(f"I prefer {other} over the old approach; always run the tests before committing.")]),
        (
            "assistant",
            [bash("pytest -q tests", "E   ModuleNotFoundError: No module named 'billing'\n1 failed")],
        ),
        ("assistant", [bash("pip install -e . && pytest -q tests", "42 passed in 3.1s")]),
        ("user", [text(f"The {topic} export is blocked by the missing API credentials from ops.")]),
        ("assistant", [bash("make build", "x" * 200_000), text("The build log is long but it passed.")]),
        ("assistant", [{"type": "patch", "files": [f"{project}/{path}", f"{project}/{rng.choice(_FILES)}"]}]),
        ("user", [text(f"Never push directly to main for {topic}. Thanks, that works.")]),
        ("assistant", [text("Done: tests pass and the change is ready for review.")]),
    ]


def build_database(path: Path, project: str, sessions: int, seed: int = 7) -> list[str]:
    """An OpenCode-shaped database of ``sessions`` sessions in ``project``; their ids."""
    rng = random.Random(seed)
    db = sqlite3.connect(path)
    db.executescript("PRAGMA journal_mode=WAL;" + SCHEMA)
    ids: list[str] = []
    clock = T0_MS
    for n in range(sessions):
        sid = f"ses_bench{n:06d}"
        ids.append(sid)
        start = clock
        for m, (role, parts) in enumerate(_session_turns(rng, project)):
            clock += 1_000
            mid = f"msg_{n:06d}_{m:03d}"
            data = {"role": role, "agent": "build", "time": {"created": clock, "completed": clock + 500}}
            db.execute(
                "INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, clock, clock, json.dumps(data))
            )
            for p, part in enumerate(parts):
                row = (f"prt_{n:06d}_{m:03d}_{p}", mid, sid, clock + p, clock + p, json.dumps(part))
                db.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", row)
        title = f"Session {n}"
        row2 = (sid, "global", None, "slug", project, title, "1.18.33", start, clock + 1_000)
        db.execute("INSERT INTO session VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row2)
        clock += 60_000
    db.commit()
    db.close()
    return ids


def run(*, sessions: int = 100, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="graphmem-ingest-") as scratch:
        root = Path(scratch)
        project = root / "project"
        (project / "src").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        project_path = str(project.resolve())
        db_path = root / "opencode.db"
        ids = build_database(db_path, project_path, sessions)
        # The model plays no part in ingest (memories are embedded later, off the write path).
        memory = open_memory(load_settings(data_dir=root / "data"), embedder=HashEmbedder(64))
        per_session: list[float] = []
        learned: Counter[str] = Counter()
        try:
            for sid in ids:
                started = time.perf_counter()
                report = memory.ingest_opencode(db_path=str(db_path), session_id=sid)
                per_session.append(time.perf_counter() - started)
                learned.update(report.memories)
                if progress is not None:
                    progress(1)
            started = time.perf_counter()
            steady = memory.ingest_opencode(db_path=str(db_path), since=None)
            steady_s = time.perf_counter() - started
        finally:
            memory.close()
    ordered = sorted(per_session)
    return {
        "sessions": sessions,
        "messages_per_session": len(_session_turns(random.Random(0), "/p")),
        "median_ms_per_session": round(statistics.median(ordered) * 1000, 1),
        "p95_ms_per_session": round(ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000, 1),
        "total_s": round(sum(per_session), 2),
        "memories": dict(learned),
        "steady_run_sessions_read": steady.sessions_read,
        "steady_run_ms_per_session": round(steady_s * 1000 / max(steady.sessions_read, 1), 2),
    }


def format_report(report: dict[str, Any]) -> str:
    learned = ", ".join(f"{k} {v}" for k, v in sorted(report["memories"].items()))
    return "\n".join(
        [
            f"ingest benchmark: {report['sessions']} sessions of {report['messages_per_session']} messages",
            f"per session   median {report['median_ms_per_session']} ms, "
            f"p95 {report['p95_ms_per_session']} ms "
            f"({report['total_s']} s in all)",
            f"learned       {learned}",
            f"nothing new   {report['steady_run_ms_per_session']} ms per session "
            f"({report['steady_run_sessions_read']} read by a cursor run)",
        ]
    )
