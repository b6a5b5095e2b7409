"""A CPU-bound load beside a test: processes that only spin, as a laptop that is indexing or
building has (``with cpu_load(2): ...``). Stopped, however the block ends."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

SPIN = "while True:\n    pass\n"


@contextmanager
def cpu_load(processes: int = 2) -> Iterator[None]:
    """``processes`` busy processes for the length of the block."""
    spinning = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(processes)]
    try:
        yield
    finally:
        for process in spinning:
            process.kill()
        for process in spinning:
            process.wait(30)
