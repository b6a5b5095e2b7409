"""The Claude Code hook command as Claude Code runs it (a process, the hook's JSON on stdin) beside a
real daemon, with hostile input: a 1 MB prompt, a session id with ``../``, a transcript outside
``~/.claude/projects``, a symlinked or cut transcript, the daemon's route called directly. Each is
bounded and confined: exit 0, nothing on stderr, one clear line in hooks.log (or the daemon's
answer, a 400 saying why), no traceback, and no memory lost or stored twice."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.claude_transcript import TranscriptWriter, text
from support.daemons import POLL_S, listed, stop_serving

from graphmem.integrations.hook_client import HookClient

pytestmark = pytest.mark.integration

VENV_BIN = Path(sys.executable).parent
DECISION = "We decided to keep the cart in Redis with a 24 hour expiry."
WAIT_S = 90.0


class SharedDaemon:
    """The module's daemon, its HOME and its data dir (one daemon for the module's tests: starting
    one is about 3 s of CPU); each test has a :class:`World` of its own in it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.data_dir = root / "data"
        (self.home / ".claude" / "projects").mkdir(parents=True)

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("GRAPHMEM_", "CLAUDE_"))}
        return {**keep, "HOME": str(self.home), "GRAPHMEM_DATA_DIR": str(self.data_dir),
                "GRAPHMEM_SERVER__PORT": "0", "GRAPHMEM_PLUGIN_TIMEOUT_MS": "10000"}  # fmt: skip

    def graphmem(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(VENV_BIN / "graphmem"), *args], cwd=self.root, env=self.env(),
                              capture_output=True, text=True, timeout=180)  # fmt: skip


class World:
    """One test's place beside the module's daemon: its own git project, session id and folder of
    transcripts, and the daemon's and hooks' logs from where the test started (what it wrote)."""

    def __init__(self, daemon: SharedDaemon, root: Path) -> None:
        self.daemon = daemon
        self.root = root
        self.home = daemon.home
        self.data_dir = daemon.data_dir
        self.project = root / "project"
        self.transcripts = self.home / ".claude" / "projects"
        self.slug = f"-{root.name}"  # this test's folder of transcripts
        self.session = str(uuid.uuid4())
        self.project.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(self.project)], check=True)
        self._hooks_from = self._size("hooks.log")
        self._daemon_from = self._size("daemon.log")

    def _size(self, name: str) -> int:
        path = self.data_dir / name
        return path.stat().st_size if path.exists() else 0

    def _since(self, name: str, start: int) -> str:
        path = self.data_dir / name
        if not path.exists():
            return ""
        with path.open("rb") as log:
            log.seek(start)
            return log.read().decode(errors="replace")

    def hook(self, event: str, given: dict[str, Any] | bytes) -> subprocess.CompletedProcess[bytes]:
        raw = given if isinstance(given, bytes) else json.dumps(given).encode()
        return subprocess.run(
            [sys.executable, "-P", "-m", "graphmem.integrations.claude_code", event], input=raw,
            cwd=self.project, env=self.daemon.env(), capture_output=True, timeout=120,
        )  # fmt: skip

    def hooks_log(self) -> str:
        return self._since("hooks.log", self._hooks_from)

    def daemon_log(self) -> str:
        return self._since("daemon.log", self._daemon_from)

    def learned(self) -> list[dict[str, Any]]:
        found = listed(self.data_dir, self.project, every_status=True, limit=50)
        return [m for m in found if m["source"] == "claude-code"]

    def given(self, **fields: Any) -> dict[str, Any]:
        return {"session_id": self.session, "cwd": str(self.project), **fields}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedDaemon]:
    running = SharedDaemon(tmp_path_factory.mktemp("claude-hooks"))
    started = running.graphmem("serve", "--detach")
    assert started.returncode == 0, started.stderr
    yield running
    stop_serving(running.data_dir)


@pytest.fixture
def world(daemon: SharedDaemon, tmp_path: Path) -> World:
    return World(daemon, tmp_path)


def wait_for(check: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(POLL_S)
    raise AssertionError(f"timed out waiting for {what}")


def ingested_so_far(world: World) -> None:
    """Returns once the daemon ran every ingest queued before: its queue runs them one at a time,
    in order, so those are done when one more session queued now is in the daemon's log."""
    last = str(uuid.uuid4())
    transcript = TranscriptWriter(world.transcripts, last, str(world.project), slug=world.slug)
    transcript.user("Thanks, that is all.")
    quiet(world.hook("stop", world.given(session_id=last, transcript_path=str(transcript.path))))
    wait_for(lambda: f"plugin ingest session={last}" in world.daemon_log(), "the ingests queued before")


def quiet(done: subprocess.CompletedProcess[bytes]) -> None:
    assert done.returncode == 0 and done.stderr == b"", done.stderr.decode(errors="replace")


def test_a_one_megabyte_prompt_is_answered_within_bounds(world: World) -> None:
    done = world.hook("user-prompt-submit", world.given(prompt="staging database " * 60_000, prompt_id="p-1"))
    quiet(done)
    assert done.stdout == b"" or "hookSpecificOutput" in json.loads(done.stdout)
    assert "Traceback" not in world.hooks_log()


def test_a_session_id_with_dot_dot_adds_nothing_and_says_why(world: World) -> None:
    done = world.hook("user-prompt-submit", world.given(session_id="../../../tmp/evil", prompt="hi"))
    quiet(done)
    assert done.stdout == b""
    assert "session_id '../../../tmp/evil' is not an id" in world.hooks_log()
    assert not any(p.name.startswith("evil") for p in (*world.root.rglob("*"), *world.daemon.root.rglob("*")))


def test_a_transcript_outside_claude_codes_sessions_is_never_read(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    elsewhere = TranscriptWriter(world.root / "elsewhere", world.session, str(world.project))
    elsewhere.user(DECISION)
    quiet(world.hook("stop", world.given(transcript_path=str(elsewhere.path))))
    assert "outside Claude Code's sessions" in world.hooks_log()
    # The daemon's route is hostile input too: called directly, it refuses the file at once (a 400
    # saying why, never queued), and reads nothing outside.
    body = {"client": "claude-code", "session_id": world.session, "transcript_path": str(elsewhere.path)}
    with caplog.at_level(logging.WARNING, logger="graphmem.integrations.hook_client"):
        assert HookClient(world.data_dir, start=False).call("/plugin/ingest", body, 10.0) == {}
    assert "answered HTTP 400" in caplog.text and "outside Claude Code's sessions" in caplog.text
    ingested_so_far(world)
    assert world.learned() == []


def test_a_symlinked_transcript_is_never_read(world: World) -> None:
    secret = TranscriptWriter(world.root / "secret", world.session, str(world.project))
    secret.user(DECISION)
    link = world.transcripts / world.slug / f"{world.session}.jsonl"
    link.parent.mkdir(parents=True)
    os.symlink(secret.path, link)
    quiet(world.hook("session-end", world.given(transcript_path=str(link), reason="other")))
    assert "is a symlink" in world.hooks_log()
    assert world.learned() == []


def test_a_cut_transcript_is_learned_once_and_its_cut_line_later(world: World) -> None:
    session = TranscriptWriter(world.transcripts, world.session, str(world.project), slug=world.slug)
    session.user(DECISION)
    session.assistant(text("Done."))
    with session.path.open("a") as out:
        out.write('{"type": "user", "message": {"role": "user", "content": "We decided to drop the')
    for event in ("stop", "stop", "session-end"):  # Claude Code fires these after each turn and at exit
        quiet(world.hook(event, world.given(transcript_path=str(session.path))))
    wait_for(lambda: any(m["category"] == "decision" for m in world.learned()), "the session's decision")
    ingested_so_far(world)  # the queued repeats have run
    decisions = [m for m in world.learned() if m["category"] == "decision"]
    assert [m["text"] for m in decisions] == [DECISION]
    assert decisions[0]["session"] == world.session
    assert "Traceback" not in world.daemon_log() + world.hooks_log()
