"""A memory that holds terminal control sequences is shown on a terminal, never obeyed by it."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from support.daemons import graphmem_cli, sandbox_env

# A commit message, a file's name or a teammate's import may hold these: OSC 52 writes the
# clipboard, ESC [2J clears the screen, 0x9B is a CSI on its own.
HOSTILE = "fix \x1b]52;c;ZWNobyBwd25lZA==\x07 things \x1b[2J\x1b[H \x9b31m end"


def on_a_terminal(data_dir: Path, *args: str) -> bytes:
    """What ``graphmem ARGS`` writes to standard output when it is a terminal."""
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args],
        env=sandbox_env(data_dir), stdin=subprocess.DEVNULL, stdout=follower, stderr=subprocess.DEVNULL,
    ) as process:  # fmt: skip
        os.close(follower)
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end closed: the process has ended
                break
            if not chunk:
                break
            out += chunk
        process.wait(120)
    os.close(leader)
    return out


def test_a_memorys_control_sequences_are_shown_not_obeyed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    made = graphmem_cli(data, "remember", HOSTILE)
    assert made.returncode == 0, made.stderr
    memory_id = made.stdout.strip()

    shown = on_a_terminal(data, "show", memory_id)
    listed = on_a_terminal(data, "list")

    for out in (shown, listed):
        assert b"\x1b" not in out and b"\x07" not in out and "\x9b".encode() not in out
        assert "fix ␛]52;c;ZWNobyBwd25lZA==␇ things ␛[2J␛[H \\x9b31m end".encode() in out
    # A pipe gets the text as it is stored, and JSON escapes it: the same text either way.
    piped = graphmem_cli(data, "show", memory_id, "--json")
    assert json.loads(piped.stdout)["text"] == HOSTILE
