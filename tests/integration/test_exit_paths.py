"""No CLI exit aborts: each error path of a one-shot ``recall``, run many times, never ends in
"terminate called" (exit 134), whatever the model's warm-up thread is doing at that moment.

``EXIT_PATH_RUNS`` (default 8) is the number of runs per path: 8 keep the test under a
minute on two loaded cores; ``EXIT_PATH_RUNS=200`` is the figure in docs/benchmarks.md.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support.daemons import sandbox_env
from support.home_guard import SHARED_CACHE

RUNS = int(os.environ.get("EXIT_PATH_RUNS", "8"))
ABORTED = (134, -signal.SIGABRT)
HUNG = -999  # no process exits so: what ``recall`` says of a process it had to kill after 120 s


def aborted(code: int, stderr: str) -> bool:
    """The process aborted, or never ended (``HUNG``)."""
    return code in (*ABORTED, HUNG) or "terminate called" in stderr or "Fatal Python error" in stderr


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ONNX model files, there before any run of the module: in the folder every test shares
    (``support/home_guard.py``), where an earlier test may have built them already."""
    data = tmp_path_factory.mktemp("warm") / "data"
    env = sandbox_env(data, XDG_CACHE_HOME=str(SHARED_CACHE))
    subprocess.run(
        [sys.executable, "-m", "graphmem", "recall", "warm"], env=env, capture_output=True, check=True
    )
    return SHARED_CACHE


def recall(
    data_dir: Path, cache: Path, config: Path, interrupt_after: float | None = None
) -> tuple[int, str]:
    env = sandbox_env(data_dir, XDG_CACHE_HOME=str(cache), GRAPHMEM_CONFIG=str(config))
    process = subprocess.Popen(
        [sys.executable, "-m", "graphmem", "recall", "which database"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if interrupt_after is not None:
        warming_up(process.pid)
        time.sleep(interrupt_after)
        process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:  # reaped here, so no later test's collection meets it
        process.kill()
        _, stderr = process.communicate()
        return HUNG, f"hung for 120 s: {stderr}"
    return process.returncode, stderr


def warming_up(pid: int, timeout: float = 120.0) -> None:
    """Wait until the process has begun loading the model: ONNX Runtime, which only the
    warm-up thread loads this early, is mapped into it (or the process has ended)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if "onnxruntime" in Path(f"/proc/{pid}/maps").read_text("utf-8", errors="replace"):
                return
        except OSError:
            return  # gone already
        time.sleep(0.01)


def run_many(one: Callable[[int], tuple[int, str]]) -> list[tuple[int, str]]:
    with ThreadPoolExecutor(2) as pool:  # two at a time: the machine's cores, and a load for each other
        return list(pool.map(one, range(RUNS)))


HOLD_STORE = "import kuzu, sys; db = kuzu.Database(sys.argv[1]); print('ok', flush=True); sys.stdin.read()"


@pytest.fixture
def locked_store(tmp_path: Path) -> Iterator[Path]:
    """A data dir whose Kùzu store another process (no daemon) holds open."""
    data = tmp_path / "data"
    data.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_STORE, str(data / "graph.kuzu")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline().strip() == "ok"
    yield data
    assert holder.stdin is not None
    holder.stdin.close()
    holder.stdout.close()
    holder.wait(30)


@pytest.mark.timeout(900)
def test_an_invalid_setting_never_aborts(tmp_path: Path, cache: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[recall]\nlimit = -5\n", "utf-8")

    results = run_many(lambda n: recall(tmp_path / f"data{n}", cache, config))

    assert [(code, err[-1500:]) for code, err in results if aborted(code, err)] == []
    assert {code for code, _ in results} == {9}


@pytest.mark.timeout(900)
def test_a_locked_store_never_aborts(locked_store: Path, tmp_path: Path, cache: Path) -> None:
    results = run_many(lambda n: recall(locked_store, cache, tmp_path / "no-config.toml"))

    assert [(code, err[-1500:]) for code, err in results if aborted(code, err)] == []
    assert {code for code, _ in results} == {6}, results[0][1]


@pytest.mark.timeout(900)
def test_a_missing_model_never_aborts(tmp_path: Path, cache: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[embedding]\nmodel = "{tmp_path / "no-such-model"}"\n', "utf-8")

    results = run_many(lambda n: recall(tmp_path / f"data{n}", cache, config))

    assert [(code, err[-1500:]) for code, err in results if aborted(code, err)] == []
    assert [(code, err) for code, err in results if code == 0 or "no-such-model" not in err] == []


@pytest.mark.timeout(900)
def test_ctrl_c_during_the_warm_up_never_aborts(tmp_path: Path, cache: Path) -> None:
    moments = random.Random(37)
    delays = [moments.uniform(0.0, 0.5) for _ in range(RUNS)]  # after the warm-up began: while it builds

    results = run_many(lambda n: recall(tmp_path / f"data{n}", cache, tmp_path / "no-config.toml", delays[n]))

    assert [(code, err[-1500:]) for code, err in results if aborted(code, err)] == []
    # Nor a notice of a Ctrl-C that landed in a finalizer (cli/interrupts.py).
    assert [err for _, err in results if "Traceback" in err or "Exception ignored" in err] == []
