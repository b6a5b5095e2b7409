"""``run_bounded`` and what a process prints on its errors, with a real child process (a small
Python script in git's place): only their start is kept, none goes to a file, and a process that
never stops printing them neither blocks nor fills the disk.

Each script first writes to ``where`` whether its errors go to a regular file, and stops there if
they do: that way a ``run_bounded`` that writes them to a file fails these tests without filling
the disk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from graphmem.adapters.git import MAX_ERROR_BYTES, run_bounded

_WHERE = """
import os, stat, sys
with open(sys.argv[1], "w") as where:
    where.write("file" if stat.S_ISREG(os.fstat(2).st_mode) else "pipe")
if stat.S_ISREG(os.fstat(2).st_mode):
    sys.exit(0)
"""
# Numbered warnings, a thousand lines a write: the start kept is checked to the byte.
_WARNINGS = """
def warnings(first):
    return b"".join(b"warning: a hook says so, time %d\\n" % i for i in range(first, first + 1000))
"""


def warnings(count: int) -> bytes:
    return b"".join(b"warning: a hook says so, time %d\n" % i for i in range(count))


def run(
    tmp_path: Path, script: str, *, timeout_s: float = 60, max_bytes: int = 1000
) -> tuple[int, bytes, bytes]:
    args = [sys.executable, "-c", _WHERE + _WARNINGS + script, str(tmp_path / "where")]
    return run_bounded(args, tmp_path, timeout_s=timeout_s, max_bytes=max_bytes)


def test_the_start_of_many_errors_is_kept_the_rest_dropped_and_the_answer_read(tmp_path: Path) -> None:
    script = """
for first in range(0, 200_000, 1000):  # some 7 MB
    os.write(2, warnings(first))
print("done")
sys.exit(3)
"""
    status, output, errors = run(tmp_path, script)

    assert (tmp_path / "where").read_text() == "pipe"
    assert (status, output) == (3, b"done\n")  # many warnings do not make it fail
    assert errors == warnings(200_000)[:MAX_ERROR_BYTES]


def test_errors_without_end_are_dropped_and_output_past_max_bytes_stops_it(tmp_path: Path) -> None:
    script = """
first = 0
while True:
    os.write(2, warnings(first))
    os.write(1, b"x" * 100)
    first += 1000
"""
    status, output, errors = run(tmp_path, script, max_bytes=100_000)

    assert (tmp_path / "where").read_text() == "pipe"
    assert status != 0 and output == b"x" * 100_001
    assert errors == warnings(10_000)[:MAX_ERROR_BYTES]


def test_errors_without_end_and_no_answer_run_into_the_timeout(tmp_path: Path) -> None:
    script = """
first = 0
while True:
    os.write(2, warnings(first))
    first += 1000
"""
    with pytest.raises(subprocess.TimeoutExpired):
        run(tmp_path, script, timeout_s=0.5)

    assert (tmp_path / "where").read_text() == "pipe"


@pytest.mark.timeout(60)  # not a measure: were it held, it would be till the sleeper's end
def test_a_process_it_starts_that_holds_the_error_pipe_open_does_not_hold_it(tmp_path: Path) -> None:
    """A hook git runs may outlive git with git's errors as its own: what git said is returned,
    its errors read till the timeout at most (the file they went to before never waited)."""
    script = """
import subprocess
sleep = [sys.executable, "-c", "import time; time.sleep(3600)"]
sleeper = subprocess.Popen(sleep, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
with open(sys.argv[1] + ".pid", "w") as pid:
    pid.write(str(sleeper.pid))
os.write(2, b"warning: left a hook running\\n")
print("done")
"""
    try:
        status, output, errors = run(tmp_path, script, timeout_s=0.5)
    finally:
        os.kill(int((tmp_path / "where.pid").read_text()), signal.SIGKILL)  # the one it started

    assert (status, output, errors) == (0, b"done\n", b"warning: left a hook running\n")
