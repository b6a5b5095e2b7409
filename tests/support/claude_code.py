"""Drive the real Claude Code CLI, sandboxed and offline, against ``fake_anthropic``'s stand-in.

Install. :func:`ensure_claude_code` installs ``@anthropic-ai/claude-code@CLAUDE_CODE_VERSION`` with
npm into ``<repo>/.cache/claude-code-<version>/`` (git-ignored; ``$CLAUDE_CODE_HARNESS_CACHE``
replaces ``<repo>/.cache``) once (``npm_client.ensure_installed``: locked, staged, checked by the
binary's ``--version``, stamped). The package is a
native binary per platform (the ``@anthropic-ai/claude-code-linux-x64`` optional dependency,
~370 MB); npm may skip its postinstall script, so the binary is taken from the platform package.
No npm is an error (``npm_client.ClientUnavailable``), never a skip.

Sandbox. :class:`ClaudeCodeSandbox` is one fresh world under a temp directory: ``home/`` is
``HOME`` (Claude Code's ``~/.claude`` and ``~/.claude.json``, the transcripts under
``~/.claude/projects``), ``project/`` a ``git init``-ed directory, ``data/`` graphmem's data dir
(``GRAPHMEM_DATA_DIR``). Of the sandbox's caches, only graphmem's model files
(``$XDG_CACHE_HOME/graphmem/models``, derived from the packaged weights) are a link to the folder
every test shares (``home_guard.SHARED_CACHE``): no sandbox's daemon builds them again (1.6 s of
CPU and 150 MB written each time). Claude Code runs ``claude -p PROMPT`` in the project (the
turns of one session in one process: :meth:`ClaudeCodeSandbox.run_session`) with
:data:`OFFLINE_ENV` (no telemetry, update or other traffic), ``ANTHROPIC_BASE_URL`` at the
stand-in and a fake key, the outer ``ANTHROPIC_*`` / ``CLAUDE_*`` variables and API keys removed,
and ``ENABLE_TOOL_SEARCH=false``: MCP tools are then sent in the request's ``tools`` once their
server connected (with tool search on, ``claude -p`` names them in a reminder only if the server
connected before the first request, which a loaded machine makes a race).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .daemons import remembered, stop_serving
from .fake_anthropic import FakeAnthropic
from .home_guard import share_model_files
from .npm_client import ClientUnavailable, ensure_installed, run_in_group, version_of
from .session_scenario import BOOT_DIRECTIVE, FACTS, TURNS

CLAUDE_CODE_VERSION = "2.1.328"
CLAUDE_CODE_PACKAGE = f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}"
MODEL = "claude-sonnet-4-5"
REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = REPO_ROOT / ".venv" / "bin"
CACHE_DIR = (
    Path(os.environ.get("CLAUDE_CODE_HARNESS_CACHE") or REPO_ROOT / ".cache")
    / f"claude-code-{CLAUDE_CODE_VERSION}"
)
DEFAULT_TIMEOUT = 180.0
OFFLINE_ENV: dict[str, str] = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "ENABLE_TOOL_SEARCH": "false",
    "NO_COLOR": "1",
    # Each hook's call to the daemon may wait this long on a loaded test machine (default 300 ms).
    "GRAPHMEM_PLUGIN_TIMEOUT_MS": "10000",
}
_DROPPED_ENV = re.compile(
    r"^(ANTHROPIC_.*|CLAUDE_.*|.*_API_KEY|GRAPHMEM_.*|AWS_.*|GOOGLE_.*)$", re.IGNORECASE
)


def claude_binary(cache_dir: Path = CACHE_DIR) -> Path:
    return cache_dir / "node_modules" / "@anthropic-ai" / "claude-code-linux-x64" / "claude"


def _check(directory: Path) -> None:
    printed = version_of(claude_binary(directory))
    if printed is None or printed.split(" ", 1)[0] != CLAUDE_CODE_VERSION:
        raise ClientUnavailable(f"{claude_binary(directory)} --version printed {printed!r}")


def ensure_claude_code(cache_dir: Path = CACHE_DIR) -> Path:
    """The Claude Code binary, installed into ``cache_dir`` first if needed (safe across processes)."""
    ensure_installed(CLAUDE_CODE_PACKAGE, CLAUDE_CODE_VERSION, cache_dir, _check)
    return claude_binary(cache_dir)


# -- what a request holds ------------------------------------------------------------------------


def without_cache_marks(value: Any) -> Any:
    """``value`` without ``cache_control``: a breakpoint marks where a cached prefix ends and moves
    to the newest block on every request; it is not content, and the cache ignores it."""
    if isinstance(value, dict):
        return {k: without_cache_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_marks(v) for v in value]
    return value


def prompt_prefix(body: dict[str, Any]) -> list[str]:
    """The request in the order the provider caches it (tools, system, then each message), one
    canonical JSON text per piece."""
    pieces = [json.dumps(without_cache_marks(body.get("tools", [])), sort_keys=True)]
    pieces.append(json.dumps(without_cache_marks(body.get("system", [])), sort_keys=True))
    pieces += [json.dumps(without_cache_marks(m), sort_keys=True) for m in body.get("messages", [])]
    return pieces


def common_prefix_chars(earlier: dict[str, Any], later: dict[str, Any]) -> int:
    """How many characters of ``later``'s canonical prefix ``earlier`` already sent."""
    a, b = "".join(prompt_prefix(earlier)), "".join(prompt_prefix(later))
    size = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        size += 1
    return size


def texts_of(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [str(b.get("text", "")) for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def tool_names(body: dict[str, Any]) -> list[str]:
    return [str(t.get("name")) for t in body.get("tools") or []]


# -- the sandbox ---------------------------------------------------------------------------------


@dataclass
class ClaudeCodeSandbox:
    """A fresh HOME, git project and graphmem data dir for Claude Code, wired to a stand-in."""

    binary: Path
    root: Path
    api: FakeAnthropic
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def transcripts(self) -> Path:
        return self.home / ".claude" / "projects"

    @classmethod
    def create(cls, binary: Path, root: Path, api: FakeAnthropic) -> ClaudeCodeSandbox:
        box = cls(binary, root, api)
        for folder in (box.home / ".claude", box.project, box.root / "tmp"):
            folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", "-b", "main", str(box.project)], check=True)
        share_model_files(box.home / ".cache")
        return box

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not _DROPPED_ENV.match(k)}
        env.update(OFFLINE_ENV)
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            TMPDIR=str(self.root / "tmp"),
            PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
            ANTHROPIC_BASE_URL=self.api.url,
            ANTHROPIC_API_KEY="sk-ant-test-0000",
            GRAPHMEM_DATA_DIR=str(self.data_dir),
            GRAPHMEM_SERVER__PORT="0",  # a free port: tests run beside other daemons
            PWD=str(self.project),
        )
        env.update(self.extra_env)
        return env

    def graphmem(self, *args: str, timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
        """``graphmem ARGS`` in the project, in the sandbox's environment."""
        return subprocess.run(
            [str(VENV_BIN / "graphmem"), *args], cwd=self.project, env=self.env(), capture_output=True,
            text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def run_turn(self, prompt: str, *, resume: bool = False, timeout: float = DEFAULT_TIMEOUT) -> str:
        """One ``claude -p PROMPT`` (``--continue`` with ``resume``): its stdout. A failure or a
        timeout raises with the output (its process group is killed on timeout)."""
        args = [str(self.binary), "-p", prompt, "--model", MODEL, *(["--continue"] if resume else [])]
        try:
            done = run_in_group(args, cwd=self.project, env=self.env(), timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(
                f"claude -p timed out after {timeout:.0f} s:\n{exc.stdout}\n{exc.stderr}"
            ) from None
        if done.returncode != 0:
            raise AssertionError(
                f"claude -p exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            )
        return done.stdout

    def run_session(
        self, prompts: Sequence[str], *, resume: bool = False, timeout: float = DEFAULT_TIMEOUT
    ) -> list[str]:
        """The turns of ``prompts`` in one ``claude -p`` process, as an interactive session runs
        them (``--input-format stream-json``: each prompt a user message, sent once the turn
        before it has its result, as a user types the next one); ``resume`` continues the
        project's newest session (``--continue``), as a user who reopens it. Each turn's answer,
        in order. A failed turn, an exit other than 0 or ``timeout`` seconds for the whole session
        raises with the output (the process group is killed). One process instead of one per turn:
        starting ``claude`` is about 1.5 s of CPU."""
        args = [str(self.binary), "-p", "--input-format", "stream-json", "--output-format", "stream-json",
                "--verbose", "--model", MODEL, *(["--continue"] if resume else [])]  # fmt: skip
        with (self.root / "tmp" / "claude-stderr.txt").open("w+") as stderr:
            with subprocess.Popen(
                args, cwd=self.project, env=self.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=stderr, text=True, start_new_session=True,
            ) as process:  # fmt: skip
                events, reader = _lines_of(process)
                deadline = time.monotonic() + timeout
                answers: list[str] = []
                seen: list[str] = []
                try:
                    assert process.stdin is not None
                    for prompt in prompts:
                        user = {"type": "user", "message": {"role": "user", "content": prompt}}
                        process.stdin.write(json.dumps(user) + "\n")
                        process.stdin.flush()
                        result = _next_result(events, deadline, seen)
                        if result.get("is_error") or result.get("subtype") != "success":
                            raise AssertionError(f"turn {len(answers) + 1} failed: {result}")
                        answers.append(str(result.get("result", "")))
                    process.stdin.close()
                    process.wait(max(deadline - time.monotonic(), 1.0))
                    reader.join(max(deadline - time.monotonic(), 1.0))
                except BaseException as failure:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
                    reader.join(10)
                    stderr.seek(0)
                    failure.add_note(
                        f"claude -p (a session):\n{''.join(seen)[-2000:]}\n{stderr.read()[-2000:]}"
                    )
                    raise
            if process.returncode != 0:
                stderr.seek(0)
                raise AssertionError(f"claude -p exited {process.returncode}:\n{stderr.read()[-2000:]}")
        return answers

    def hooks_log(self) -> str:
        path = self.data_dir / "hooks.log"
        return path.read_text() if path.exists() else ""

    def stop_daemon(self) -> None:
        """Stop the daemon the sandbox's hooks or ``serve --detach`` started, as ``graphmem stop``
        does (from this process: no CLI process per sandbox)."""
        stop_serving(self.data_dir)


@contextlib.contextmanager
def sandbox(binary: Path, root: Path) -> Iterator[ClaudeCodeSandbox]:
    """A sandbox with its stand-in running; the daemon it started is stopped at the end."""
    with FakeAnthropic() as api:
        box = ClaudeCodeSandbox.create(binary, root, api)
        try:
            yield box
        finally:
            box.stop_daemon()


@dataclass(frozen=True)
class PlayedScenario:
    """The session of ``support.session_scenario`` as the stand-in recorded it."""

    requests: list[dict[str, Any]]  # each request's body
    hooks_log: str  # graphmem's hooks.log after the session ("" with graphmem off)


def play_scenario(claude: ClaudeCodeSandbox, *, graphmem: bool) -> PlayedScenario:
    """The session every client's prompt-cache test plays (``support.session_scenario``: six
    turns, a fact relevant on turns 1, 3 and 5, small talk between), the first three turns in one
    ``claude -p`` process, the last three in a new one that continues the session
    (``--continue``). With ``graphmem``: ``graphmem install claude-code``, a daemon started as
    the CLI starts one (``serve --detach``), the user's directive and the three facts stored
    through it first; off, graphmem is not installed, so nothing reads a store (none is written)."""
    if graphmem:
        done = claude.graphmem("install", "claude-code")
        assert done.returncode == 0, done.stderr
        started = claude.graphmem("serve", "--detach")
        assert started.returncode == 0, started.stderr
        for text, category in ((BOOT_DIRECTIVE, "directive"), *((fact, "fact") for fact in FACTS)):
            remembered(claude.data_dir, claude.project, text, category=category)  # as the CLI stores them
    claude.api.script(*(f"Answer {index}." for index in range(len(TURNS))))
    prompts = [prompt for prompt, _ in TURNS]
    claude.run_session(prompts[:3])  # one process, as an interactive session runs them
    claude.run_session(prompts[3:], resume=True)  # a new process continues it
    return PlayedScenario(list(claude.api.requests), claude.hooks_log())


def _lines_of(process: subprocess.Popen[str]) -> tuple[queue.Queue[str | None], threading.Thread]:
    """The process's stdout, line by line (None at its end), and the thread that reads it, so
    that the session can wait for a line with a deadline."""
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return lines, reader


def _next_result(events: queue.Queue[str | None], deadline: float, seen: list[str]) -> dict[str, Any]:
    """The next ``result`` event of a stream-json session (the end of a turn)."""
    while True:
        try:
            line = events.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            raise AssertionError("claude -p (a session) timed out") from None
        if line is None:
            raise AssertionError("claude -p ended before the turn's result")
        seen.append(line)
        try:
            event = json.loads(line)
        except ValueError:
            continue  # not an event (the result is one)
        if isinstance(event, dict) and event.get("type") == "result":
            return event
