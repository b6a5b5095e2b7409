"""A Ctrl-C ends a command even when it lands in a finalizer, and prints no interpreter notice."""

from __future__ import annotations

import subprocess
import sys

# Each script stands in for a command: ``interrupts.install()`` as ``graphmem``'s main calls it,
# then a finalizer that raises, as when SIGINT arrives while it runs.
SCRIPT = """
import sys, time
from graphmem.cli import interrupts
interrupts.install()

class Result:
    def __init__(self, raises):
        self.raises = raises
    def __del__(self):
        raise self.raises

def command():
    result = Result({raises})
    del result
    for _ in range({steps}):  # the command's own code, where the Ctrl-C asked again lands
        time.sleep(0.01)
    print("went on", flush=True)

{body}
"""

CATCH = """
try:
    command()
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


# A command run from a terminal's foreground starts with Ctrl-C at Python's default; the test
# runner may not have (a shell starts a background job with SIGINT ignored, and a child
# inherits that: then no Ctrl-C would ever be raised in it).
FOREGROUND = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"


def run(raises: str, body: str = CATCH, steps: int = 1) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", FOREGROUND + SCRIPT.format(raises=raises, body=body, steps=steps)],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip


def test_a_ctrl_c_inside_a_finalizer_ends_the_command_without_a_notice() -> None:
    done = run("KeyboardInterrupt", steps=3000)  # 30 s unless interrupted

    assert (done.stdout, done.stderr) == ("interrupted\n", "")


def test_after_a_ctrl_c_what_finalizers_raise_stays_off_the_terminal() -> None:
    body = """
try:
    raise KeyboardInterrupt  # as the handler raises it
except KeyboardInterrupt:
    interrupts._interrupted = True
command()
"""
    done = run("AttributeError('is_closed')", body)

    assert (done.stdout, done.stderr) == ("went on\n", "")


def test_without_a_ctrl_c_what_finalizers_raise_is_reported_as_python_does() -> None:
    done = run("AttributeError('is_closed')", "command()")

    assert done.stdout == "went on\n"
    assert "Exception ignored in" in done.stderr and "AttributeError: is_closed" in done.stderr


def test_a_command_started_with_ctrl_c_ignored_keeps_ignoring_it() -> None:
    body = """
import os, signal
print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN, flush=True)
"""
    script = "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)\n" + SCRIPT.format(
        raises="KeyboardInterrupt", body=body, steps=1
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=60
    )

    assert done.stdout == "True\n", done.stderr
