"""Drive the real Codex CLI, sandboxed and offline, against the Responses stand-in of ``fake_responses``.

Install. :func:`ensure_codex` installs ``@openai/codex@CODEX_VERSION`` with npm into
``<repo>/.cache/openai-codex-<version>/`` (``$CODEX_HARNESS_CACHE`` replaces ``<repo>/.cache``)
once, through ``support.npm_client`` (locked, staged, accepted once ``codex --version`` answers
the pinned version). The package's platform binary
comes from its optional dependency (``@openai/codex-linux-x64``); ``bin/codex.js`` runs it. No
npm is an error (:class:`CodexUnavailable`), never a skip.

Sandbox. :class:`CodexSandbox` is one fresh Codex world under a temp directory:

- ``home/`` is ``HOME``; ``codex-home/`` is ``CODEX_HOME``, whose ``config.toml`` selects the
  provider ``fake`` (``wire_api = "responses"``, ``base_url`` = the stand-in) and model
  ``fake-model``, and trusts the project (so Codex reads the project's ``.codex/config.toml``);
- ``project/`` is a ``git init``-ed directory.

Codex runs with ``OPENAI_*``/``CODEX_*`` variables of the outer environment removed. Quirks: Codex
runs a hook only once the user trusted it; the tests pass ``--dangerously-bypass-hook-trust`` (what
the user does by answering Codex's prompt). ``codex exec`` prints its session id on stderr
(``session id: ...``); :meth:`CodexSandbox.exec` returns it. A run takes ~1 s.

Sessions the tests share (``tests/integration/codex/conftest.py``): :func:`play_scenario` plays
the prompt-cache scenario (:class:`PlayedScenario` is what the stand-in recorded of it), and
:class:`Decided` is a session that decided something, :func:`learned_from` what graphmem learned.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .daemons import POLL_S, Daemon, listed
from .fake_llm import Text
from .fake_responses import MODEL_ID, FakeResponses
from .npm_client import ClientUnavailable, ensure_installed, run_in_group, version_of
from .session_scenario import TURNS

if TYPE_CHECKING:
    from .fake_llm import FakeLLM
    from .opencode import OpenCodeSandbox

CODEX_VERSION = "0.169.0"
CODEX_PACKAGE = f"@openai/codex@{CODEX_VERSION}"
REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = (
    Path(os.environ.get("CODEX_HARNESS_CACHE") or REPO_ROOT / ".cache") / f"openai-codex-{CODEX_VERSION}"
)
DEFAULT_TIMEOUT = 120.0
PROVIDER_ID = "fake"
_DROPPED_ENV = re.compile(r"^(OPENAI_.*|CODEX_.*|.*_API_KEY|npm_config_.*)$", re.IGNORECASE)
_SESSION_LINE = re.compile(r"^session id: ([0-9a-f-]{36})$", re.MULTILINE)
CodexUnavailable = ClientUnavailable
# `codex exec` sends its first request without waiting for an MCP server that is not required: on a
# busy machine graphmem's tools would be in some requests and not others (the tools open the prompt).
GRAPHMEM_REQUIRED = ("-c", "mcp_servers.graphmem.required=true")
# A model answer of about 200 tokens: what the stand-in answers each turn of the scenario.
SCENARIO_ANSWER = "Here is what I found. " + "The details follow in order, one step at a time. " * 16


def codex_binary(cache_dir: Path = CACHE_DIR) -> Path:
    return cache_dir / "node_modules" / ".bin" / "codex"


def _check(directory: Path) -> None:
    version = version_of(codex_binary(directory))
    if version != f"codex-cli {CODEX_VERSION}":
        raise ClientUnavailable(
            f"{codex_binary(directory)} --version printed {version!r}, expected {CODEX_VERSION}"
        )


def ensure_codex(cache_dir: Path = CACHE_DIR) -> Path:
    """The path of the Codex launcher, installing it into ``cache_dir`` first if needed."""
    ensure_installed(CODEX_PACKAGE, CODEX_VERSION, cache_dir, _check)
    return codex_binary(cache_dir)


@dataclass(frozen=True, slots=True)
class CodexRun:
    """One ``codex exec``: its output and the session (thread) id it printed."""

    returncode: int
    stdout: str
    stderr: str
    session_id: str


@dataclass
class CodexSandbox:
    """A fresh HOME, CODEX_HOME and git project for Codex, wired to a :class:`FakeResponses`."""

    binary: Path
    root: Path
    model: FakeResponses
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def codex_home(self) -> Path:
        return self.root / "codex-home"

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def sessions(self) -> Path:
        """Where Codex writes its session files (``sessions/YYYY/MM/DD/rollout-*.jsonl``)."""
        return self.codex_home / "sessions"

    @classmethod
    def create(cls, binary: Path, root: Path, model: FakeResponses) -> CodexSandbox:
        sandbox = cls(binary=binary, root=root, model=model)
        for directory in (sandbox.home, sandbox.codex_home, sandbox.project):
            directory.mkdir(parents=True, exist_ok=True)
        git_env = {**os.environ, "HOME": str(sandbox.home), "GIT_CONFIG_NOSYSTEM": "1"}
        subprocess.run(["git", "init", "-q"], cwd=sandbox.project, env=git_env, check=True, timeout=30)
        sandbox.write_user_config()
        return sandbox

    def write_user_config(self, extra: str = "") -> Path:
        """``$CODEX_HOME/config.toml``: the fake provider selected, the project trusted, ``extra`` after."""
        path = self.codex_home / "config.toml"
        path.write_text(
            f'model = "{MODEL_ID}"\n'
            f'model_provider = "{PROVIDER_ID}"\n\n'
            f"[model_providers.{PROVIDER_ID}]\n"
            'name = "Fake Responses (tests)"\n'
            f'base_url = "{self.model.base_url}"\n'
            'wire_api = "responses"\n\n'
            f'[projects."{self.project}"]\n'
            'trust_level = "trusted"\n' + extra,
            "utf-8",
        )
        return path

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not _DROPPED_ENV.match(k)}
        env.update(HOME=str(self.home), CODEX_HOME=str(self.codex_home), PWD=str(self.project), NO_COLOR="1")
        env.update(self.extra_env)
        return env

    def run_codex(
        self, args: Sequence[str], timeout: float = DEFAULT_TIMEOUT, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``codex <args>`` in the project, stdin ``input`` (or closed); on timeout its process
        group is killed."""
        return run_in_group(
            [str(self.binary), *args], cwd=self.project, env=self.env, timeout=timeout, input=input
        )

    def exec(
        self, prompt: str, *options: str, resume: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> CodexRun:
        """One headless turn (``codex exec``, or ``codex exec resume ID`` to continue a session);
        ``options`` go after ``exec`` (``-c key=value``, ...). The prompt goes on stdin (``-``):
        an argument is limited to 128 kB."""
        flags = ["--skip-git-repo-check", "--dangerously-bypass-hook-trust", *options]
        args = ["exec", *flags, "resume", resume, "-"] if resume else ["exec", *flags, "-"]
        done = self.run_codex(args, timeout=timeout, input=prompt)
        found = _SESSION_LINE.search(done.stderr) or _SESSION_LINE.search(done.stdout)
        if done.returncode != 0 or found is None:
            raise AssertionError(
                f"codex exec failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return CodexRun(done.returncode, done.stdout, done.stderr, found.group(1))

    def session_file(self, session_id: str) -> Path:
        [found] = self.sessions.rglob(f"rollout-*-{session_id}.jsonl")
        return found


def play_scenario(codex: CodexSandbox, *options: str) -> None:
    """The session of ``support.session_scenario`` in ``codex``: its six turns as one session
    (``codex exec``, then ``codex exec resume``), ``options`` given to each; the stand-in's
    script and records reset first, so that its ``requests`` and ``raw`` are the six turns'."""
    codex.model.reset(*(Text(f"{SCENARIO_ANSWER}({turn})") for turn in range(len(TURNS))))
    session = ""
    for ask, _ in TURNS:
        session = codex.exec(ask, *options, resume=session or None).session_id
    assert len(codex.model.raw) == len(TURNS)


@dataclass(frozen=True)
class PlayedScenario:
    """The scenario's session as the stand-in recorded it, with graphmem installed and serving."""

    requests: list[dict[str, Any]]  # each request's body, parsed
    raw: list[bytes]  # each request's body, as Codex sent it
    boot_id: str  # the user's directive (the boot context)
    facts: dict[int, str]  # turn (from 0) -> the fact recall should bring to it
    hooks_log: str  # graphmem's hooks.log after the session


def learned_from(daemon: Daemon, project: Path, session: str, timeout: float = 90.0) -> list[dict[str, Any]]:
    """What graphmem learned from the Codex session ``session`` in ``project`` (the memories of
    ``daemon`` that name it), once a decision is among them; an AssertionError, with the daemon's
    and the hooks' logs, when none is after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    learned: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        learned = [m for m in listed(daemon.data_dir, project) if m.get("session") == session]
        if any(m["category"] == "decision" for m in learned):
            return learned
        time.sleep(POLL_S)
    log = daemon.log.read_text("utf-8", errors="replace")[-3000:]
    hooks = daemon.data_dir / "hooks.log"
    hooks_log = hooks.read_text("utf-8") if hooks.exists() else ""
    raise AssertionError(f"graphmem learned nothing from session {session}: {learned}\n{log}\n{hooks_log}")


# What the Codex session of ``Decided`` says: a decision for graphmem to learn when it ends.
DECISION = "We decided to use Postgres 16 for billing because of logical replication."


@dataclass(frozen=True)
class Decided:
    """One project where Codex and OpenCode both have graphmem installed, one daemon for both,
    and a Codex session that said :data:`DECISION` and ended: what graphmem learned from it."""

    codex: CodexSandbox  # its model: ``codex.model``
    opencode: OpenCodeSandbox  # in the same project
    llm: FakeLLM  # OpenCode's model
    daemon: Daemon
    session: str  # the Codex session that decided
    learned: list[dict[str, Any]]  # what graphmem learned from it (a decision among it)

    @property
    def decision(self) -> dict[str, Any]:
        return next(m for m in self.learned if m["category"] == "decision")
