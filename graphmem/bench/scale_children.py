"""The fresh processes the scale benchmark (``graphmem.bench.scale``) starts and measures.

Each is a new Python on the benchmark's store (on a team's store, ``GRAPHMEM_STORE_URL`` names it)
and reports its own memory as a ``graphmem-bench NAME VALUE`` line on stderr:

- **cold recall** (``cold_recalls``): ``graphmem recall`` as the CLI runs it, started in the
  project's checkout (``make_checkout``) or in no repository: the seconds from its start to its
  answer, and its peak RSS.
- **serving** (``serving_rss_kb``): a process that opens the store and answers recalls: its RSS
  after them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from graphmem.settings import STORE_URL_VARIABLE

# Children report their own memory: a parent's resource.getrusage(RUSAGE_CHILDREN)
# counts the parent's pages, which a child shares until it execs. The cold child is the CLI as it
# is, its arguments the command's: it asks git for the project of the directory it is started in
# (``cold_recalls``), as any ``graphmem recall`` does. The serving child's first argument: the
# project its recalls ask for ("": none).
COLD_RECALL_SCRIPT = """
import sys
from graphmem.cli.main import main
sys.argv = ["graphmem", *sys.argv[1:]]
try:
    main()  # as the console script runs, the command's collector policy included
finally:
    peak = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
    print("graphmem-bench peak-rss-kb", peak, file=sys.stderr)
"""
SERVING_SCRIPT = """
import json, sys
from pathlib import Path
from graphmem.app import open_memory
from graphmem.settings import load_settings
memory = open_memory(load_settings(data_dir=Path(sys.argv[2])))
for text in json.loads(sys.argv[3]):
    memory.recall(text, project=sys.argv[1] or None)
rss = [l for l in open("/proc/self/status") if l.startswith("VmRSS:")][0].split()[1]
print("graphmem-bench rss-kb", rss, file=sys.stderr)
memory.close()
"""


def _child(
    script: str, *args: str, store_url: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, STORE_URL_VARIABLE: store_url} if store_url else None
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=False, env=env, cwd=cwd
    )
    if done.returncode != 0:
        raise RuntimeError(f"benchmark child failed: {done.stderr[-500:]}")
    return done


def _reported(stderr: str, name: str) -> float:
    for line in stderr.splitlines():
        if line.startswith(f"graphmem-bench {name} "):
            return float(line.split()[-1])
    raise RuntimeError(f"benchmark child did not report {name}: {stderr[-500:]}")


def cold_recalls(
    data_dir: Path, texts: Sequence[str], runs: int, store_url: str | None, cwd: Path
) -> tuple[list[float], list[float]]:
    """``runs`` first recalls, each from a new ``graphmem recall`` process started in ``cwd``, which
    asks for the project of that directory as any ``graphmem recall`` does (git's look-ups
    included): the seconds each took and each process's peak RSS in KB."""
    seconds, peaks_kb = [], []
    for i in range(runs):
        started = time.perf_counter()
        done = _child(
            COLD_RECALL_SCRIPT,
            "--data-dir",
            str(data_dir),
            "recall",
            "--json",
            texts[i % len(texts)],
            store_url=store_url,
            cwd=cwd,
        )
        seconds.append(time.perf_counter() - started)
        peaks_kb.append(_reported(done.stderr, "peak-rss-kb"))
    return seconds, peaks_kb


def serving_rss_kb(data_dir: Path, texts: Sequence[str], store_url: str | None, project: str | None) -> float:
    """The RSS in KB of a new process that opened the store at ``data_dir`` and answered a recall
    of each of ``texts``, each asking for ``project`` (None: for none)."""
    done = _child(SERVING_SCRIPT, project or "", str(data_dir), json.dumps(list(texts)), store_url=store_url)
    return _reported(done.stderr, "rss-kb")


# The checkout's one commit (so it is on its default branch) by a fixed author, with neither git's
# global nor its system config read: the same repository on any machine, one with no git identity
# included.
CHECKOUT_GIT = (
    "git",
    "-c",
    "user.name=graphmem bench",
    "-c",
    "user.email=bench@graphmem.invalid",
    "-c",
    "init.defaultBranch=main",
)
CHECKOUT_GIT_CONFIG = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def make_checkout(project: str) -> Path:
    """A git repository at ``project`` (a path, ``project_of``'s), with one commit: the checkout the
    cold recall processes run in. Only the first project is made one: every timed call asks for it,
    and the others are names only (``--projects 1000`` would make a thousand repositories that no
    call asks for).

    Raises ``RuntimeError`` when graphmem names the checkout otherwise than the memories are kept
    under. The CLI says nowhere which project it asked for (its JSON names each hit's project, but
    a recall that asked for another finds nothing, which one that asked for this may also answer),
    so this process checks the name graphmem resolves for the checkout, before anything is timed;
    tests/unit/bench/test_scale_projects.py pins that the cold process's CLI asks for the project
    of the directory it runs in."""
    from graphmem.adapters.git import git_env
    from graphmem.connect import resolve_project

    checkout = Path(project)
    checkout.mkdir(parents=True)
    env = {**git_env(), **CHECKOUT_GIT_CONFIG}
    for command in (
        ("init", "-q"),
        ("commit", "-q", "--allow-empty", "-m", "A project of graphmem bench scale"),
    ):
        subprocess.run([*CHECKOUT_GIT, *command], cwd=checkout, env=env, check=True)
    resolved = resolve_project(checkout)
    if resolved != project:
        raise RuntimeError(
            f"graphmem resolves the benchmark's checkout {checkout} to the project {resolved!r}, not "
            f"{project!r}, the name its memories are kept under: a cold recall run there would not ask "
            "for them. Is GIT_DIR or GIT_WORK_TREE set in this environment? Unset it and run again."
        )
    return checkout
