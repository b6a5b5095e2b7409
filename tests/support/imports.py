"""Which modules a ``graphmem`` command imports: run it in a fresh interpreter and report."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

PROGRAM = """
import json, subprocess, sys, threading
threads = []
run = subprocess.run
def recorded(args, *rest, **kwargs):
    if args[0] == "git":
        threads.append(threading.current_thread().name)
    return run(args, *rest, **kwargs)
subprocess.run = recorded
from graphmem.cli.main import main
watched = set(json.loads(sys.argv[1]))
sys.argv = ["graphmem", *json.loads(sys.argv[2])]
code = 0
try:
    main()
except SystemExit as exit:
    code = exit.code
loaded = sorted(m for m in sys.modules if m in watched or m.split(".")[0] in watched)
print(json.dumps({"exit": code, "loaded": loaded, "git": threads}), file=sys.stderr)
"""


def command_imports(
    argv: Sequence[str], watched: Collection[str], *, cwd: Path, env: Mapping[str, str]
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """Run ``graphmem ARGV`` in a new interpreter; the report says its exit code, which of
    ``watched`` (top-level packages, or modules by their full name) it imported and the names of
    the threads that ran ``git`` (``"git"``)."""
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, json.dumps(sorted(watched)), json.dumps(list(argv))],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report: dict[str, Any] = json.loads(done.stderr.strip().splitlines()[-1])
    return report, done
