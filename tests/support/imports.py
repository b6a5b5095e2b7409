"""Which modules a ``graphmem`` command imports: run it in a fresh interpreter and report."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

PROGRAM = """
import json, subprocess, sys, threading
parsed = []
if json.loads(sys.argv[2]):
    import inspect
    find = inspect.findsource  # what every read of an object's source goes through
    inspect.findsource = lambda *args, **kwargs: (parsed.append(1), find(*args, **kwargs))[1]
threads = []
class Recorded(subprocess.Popen):  # what subprocess.run and graphmem's bounded runs start
    def __init__(self, args, *rest, **kwargs):
        if args[0] == "git":
            threads.append(threading.current_thread().name)
        super().__init__(args, *rest, **kwargs)
subprocess.Popen = Recorded
from graphmem.cli.main import main
sys.argv = ["graphmem", *json.loads(sys.argv[1])]
code = 0
try:
    main()
except SystemExit as exit:
    code = exit.code
report = {"exit": code, "modules": sorted(sys.modules), "git": threads, "parsed": len(parsed)}
print(json.dumps(report), file=sys.stderr)
"""

Report = tuple[dict[str, Any], subprocess.CompletedProcess[str]]


def command_imports(
    argv: Sequence[str],
    watched: Collection[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    count_parses: bool = False,
) -> Report:
    """Run ``graphmem ARGV`` in a new interpreter; the report says its exit code, which of
    ``watched`` it imported (``"loaded"``, as :func:`imported` says; every module it imported:
    ``"modules"``), the names of the threads that ran ``git`` (``"git"``) and, with
    ``count_parses``, how many times it read Python source (``"parsed"``)."""
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, json.dumps(list(argv)), json.dumps(count_parses)],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report: dict[str, Any] = json.loads(done.stderr.strip().splitlines()[-1])
    report["loaded"] = imported(report["modules"], watched)
    return report, done


def imported(modules: Collection[str], watched: Collection[str]) -> list[str]:
    """The names of ``modules`` that ``watched`` names: a module by its full name, or a package
    (its top-level name) with all its modules."""
    names = set(watched)
    return sorted(m for m in modules if m in names or m.split(".")[0] in names)


# The tests that read the recall below share a pytest-xdist worker, which runs it once.
RECALL_GROUP = "recall-without-a-daemon"
_RECALLS: list[Report] = []


def recall_without_a_daemon(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """``graphmem recall "which linter" --json`` without a daemon, in a new checkout of branch
    ``feature/x``, with a home and data dir of its own and no config file or git settings of the
    caller's: its report (:func:`command_imports`, the reads of Python source counted) and the
    finished process. Run once per process for the tests that look at what a one-shot recall
    loads, parses and asks git (``xdist_group(RECALL_GROUP)``): a recall in a new interpreter,
    its model loaded, is 1.7 s of CPU. Each caller gets a copy of the report."""
    if not _RECALLS:
        home = tmp_path_factory.mktemp("recall-here")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GRAPHMEM_", "GIT_"))}
        env.update(
            HOME=str(home), GRAPHMEM_DATA_DIR=str(home / "data"), GRAPHMEM_CONFIG=str(home / "none.toml")
        )
        checkout = home / "checkout"
        subprocess.run(["git", "init", "-q", "-b", "feature/x", str(checkout)], env=env, check=True)
        argv = ["recall", "which linter", "--json"]
        _RECALLS.append(command_imports(argv, (), cwd=checkout, env=env, count_parses=True))
    report, done = _RECALLS[0]
    return copy.deepcopy(report), done
