"""Drive the real OpenCode CLI, sandboxed and offline, against the scripted model of ``fake_llm``.

Install. :func:`ensure_opencode` installs ``opencode-ai@OPENCODE_VERSION`` with npm into
``<repo>/.cache/opencode-ai-<version>/`` (git-ignored; ``$OPENCODE_HARNESS_CACHE`` replaces
``<repo>/.cache``) once: later runs, and other pytest-xdist workers, reuse it. An exclusive
``fcntl`` lock on ``<cache>.lock`` serialises installers; npm installs into a temporary sibling
directory that is renamed into place only once the binary answers ``--version`` with the pinned
version (then a ``.installed`` stamp marks it), so an interrupted install never leaves a broken
cache. The package's postinstall script hard-links the platform binary (from the
``opencode-linux-x64`` optional dependency, or ``-baseline`` without AVX2) over a stub
``bin/opencode.exe``; if npm skipped install scripts we run ``postinstall.mjs`` ourselves.
No npm is an error (:class:`OpenCodeUnavailable`), never a skip.

Sandbox. :class:`OpenCodeSandbox` is one fresh OpenCode world under a temp directory:

- ``home/`` is ``HOME`` and holds the ``XDG_CONFIG_HOME`` / ``XDG_DATA_HOME`` (OpenCode's SQLite
  database, logs, snapshots) / ``XDG_CACHE_HOME`` / ``XDG_STATE_HOME`` directories, and ``tmp/``,
  OpenCode's ``TMPDIR``;
- ``project/`` is a ``git init``-ed directory with an ``opencode.json`` (:attr:`OpenCodeSandbox.config`,
  rewritten by :meth:`OpenCodeSandbox.write_config`) that defines the provider ``fake``
  (``"npm": "@ai-sdk/openai-compatible"``, ``baseURL`` = the :class:`~fake_llm.FakeLLM`) and
  selects ``fake/fake-model`` as ``model`` and ``small_model``.

OpenCode runs with the project as working directory **and** ``PWD`` (it takes its directory
from ``$PWD``, not from ``getcwd()``: a stale ``PWD`` makes it load the wrong project), with
``OPENCODE_*`` variables and provider API keys from the outer environment removed, and with
:data:`OFFLINE_ENV`:

- ``OPENCODE_DISABLE_MODELS_FETCH``, ``OPENCODE_DISABLE_AUTOUPDATE``, ``OPENCODE_DISABLE_SHARE``,
  ``OPENCODE_DISABLE_LSP_DOWNLOAD``: no models.dev, update, share or LSP downloads;
- ``OPENCODE_DISABLE_CLAUDE_CODE``: no ``~/.claude`` / ``CLAUDE.md`` fallbacks;
- ``npm_config_registry`` (a closed local port) and ``npm_config_offline``: on every start
  OpenCode installs ``@opencode-ai/plugin`` into each config directory in the background
  with its embedded npm client; offline that fails at once and only logs a warning
  (``background dependency install failed``). The ``@ai-sdk/openai-compatible`` provider itself
  is bundled in the binary: nothing is downloaded for it.
- ``NO_COLOR``: fewer ANSI escapes in the output (some remain; :func:`strip_ansi`).

Helpers: :meth:`OpenCodeSandbox.run_opencode` (any subcommand, always with a timeout and stdin
closed or fed), :meth:`OpenCodeSandbox.mcp_list` (the parsed ``opencode mcp list``) and
:meth:`OpenCodeSandbox.run_turn` (one ``opencode run`` turn with the prompt on stdin) and
:meth:`OpenCodeSandbox.sessions` (``opencode session list``).

Served. A user's multi-turn session is one OpenCode process (the TUI runs a server and sends it
each turn; the plugin is loaded once and keeps its state between turns). ``with sandbox.serve() as
server`` is that: one ``opencode serve`` in the sandbox's environment, on a free port behind a
password of its own, always stopped; :meth:`OpenCodeServer.run_turn` sends a turn with ``opencode
run --attach``; :meth:`OpenCodeServer.send_turn` sends the same turn from the test's own process,
as ``opencode run --attach`` sends it (the model gets the same requests, byte for byte), without
a client process of 1.5 to 2 s of CPU a turn; :meth:`OpenCodeServer.mcp_status` is the status
of each MCP server, as ``opencode mcp list`` and the TUI show it. A test whose point is a new
OpenCode process (a restart, the journal read by the next process, the daemon's state when a
process starts) uses :meth:`OpenCodeSandbox.run_turn`.

Quirks: ``opencode run "two words"`` sends the model ``"two words"`` *with* the quotes (each
argument that contains a space is quoted before the arguments are joined); :meth:`run_turn`
passes the prompt on stdin instead, which reaches the model verbatim. In ``run`` mode the
hidden ``title`` agent calls the model concurrently with the first turn of a new session.
When the model endpoint fails, OpenCode retries with backoff for over a minute before giving up,
so keep timeouts finite. A run takes ~4–6 s on 2 cores; ``mcp list`` ~3–4 s. A run is 9–10 CPU-s,
about 8 of them starting the project's instance (config, plugins, MCP servers); an attached turn
about 2 (the server starts the instance once, at its first request).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .fake_llm import MODEL_ID, FakeLLM
from .home_guard import share_model_files

OPENCODE_VERSION = "1.18.33"
OPENCODE_PACKAGE = f"opencode-ai@{OPENCODE_VERSION}"
REPO_ROOT = Path(__file__).resolve().parents[2]
# OPENCODE_HARNESS_CACHE moves the install (e.g. to a directory CI caches between jobs).
CACHE_DIR = (
    Path(os.environ.get("OPENCODE_HARNESS_CACHE") or REPO_ROOT / ".cache") / f"opencode-ai-{OPENCODE_VERSION}"
)
PROVIDER_ID = "fake"
MODEL = f"{PROVIDER_ID}/{MODEL_ID}"

OFFLINE_ENV: dict[str, str] = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    # OpenCode's background `npm install @opencode-ai/plugin` into its config dirs: fail fast, offline.
    "npm_config_registry": "http://127.0.0.1:9/",
    "npm_config_offline": "true",
    "npm_config_update_notifier": "false",
    "NO_COLOR": "1",
}
# Outer variables that would change what OpenCode does (auth, providers, config).
_DROPPED_ENV = re.compile(
    r"^(OPENCODE_.*|.*_API_KEY|AWS_.*|GOOGLE_.*|AZURE_.*|GITHUB_TOKEN|GH_TOKEN|npm_config_.*)$", re.IGNORECASE
)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
INSTALL_TIMEOUT = 600.0
DEFAULT_TIMEOUT = 90.0


class OpenCodeUnavailable(RuntimeError):
    """OpenCode cannot be installed here (no npm, install failed): the tests must fail, not skip."""


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


# -- install -------------------------------------------------------------------------------------


def opencode_binary(cache_dir: Path = CACHE_DIR) -> Path:
    """Where the installed binary lives in ``cache_dir`` (it may not exist yet)."""
    return cache_dir / "node_modules" / "opencode-ai" / "bin" / "opencode.exe"


def _version_of(binary: Path) -> str | None:
    try:
        done = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _npm_install(target: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise OpenCodeUnavailable(
            f"npm is not on PATH: the OpenCode integration tests need Node.js (>= 20) and npm to install "
            f"{OPENCODE_PACKAGE} into {target.parent}."
        )
    target.mkdir(parents=True)
    (target / "package.json").write_text('{"name": "graphmem-opencode-cache", "private": true}\n', "utf-8")
    cmd = [npm, "install", "--prefix", str(target), "--no-audit", "--no-fund", "--loglevel=error"]
    cmd.append(OPENCODE_PACKAGE)
    try:
        done = subprocess.run(
            cmd,
            cwd=target,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise OpenCodeUnavailable(f"`{' '.join(cmd)}` took over {INSTALL_TIMEOUT:.0f} s") from exc
    if done.returncode != 0:
        raise OpenCodeUnavailable(f"`{' '.join(cmd)}` failed ({done.returncode}):\n{done.stderr[-4000:]}")
    binary = opencode_binary(target)
    if _version_of(binary) != OPENCODE_VERSION:
        # npm skipped the install scripts: bin/opencode.exe is still the stub that says so.
        node = shutil.which("node") or "node"
        subprocess.run(
            [node, "postinstall.mjs"],
            cwd=binary.parent.parent,
            capture_output=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    version = _version_of(binary)
    if version != OPENCODE_VERSION:
        raise OpenCodeUnavailable(f"{binary} --version printed {version!r}, expected {OPENCODE_VERSION}")


def _stamp(cache_dir: Path) -> Path:
    return cache_dir / ".installed"


def _installed(cache_dir: Path) -> bool:
    stamp = _stamp(cache_dir)
    return (
        opencode_binary(cache_dir).is_file()
        and stamp.is_file()
        and stamp.read_text("utf-8").strip() == OPENCODE_VERSION
    )


def ensure_opencode(cache_dir: Path = CACHE_DIR) -> Path:
    """The path of the OpenCode binary, installing it into ``cache_dir`` first if needed.

    Safe to call from several processes at once (file lock); cheap when already installed (the
    ``.installed`` stamp, written once the binary answered ``--version``).
    """
    if not _installed(cache_dir):
        with _file_lock(cache_dir.with_name(cache_dir.name + ".lock")):
            if not _installed(cache_dir):  # else another process installed it while we waited
                staging = cache_dir.with_name(f"{cache_dir.name}.tmp-{os.getpid()}")
                shutil.rmtree(staging, ignore_errors=True)
                try:
                    _npm_install(staging)
                    _stamp(staging).write_text(OPENCODE_VERSION + "\n", "utf-8")
                    shutil.rmtree(cache_dir, ignore_errors=True)  # a broken or partial earlier install
                    staging.rename(cache_dir)
                finally:
                    shutil.rmtree(staging, ignore_errors=True)
    return opencode_binary(cache_dir)


# -- sandbox -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class McpServerStatus:
    """One server of ``opencode mcp list``."""

    name: str
    status: str  # "connected", "failed", "disabled", ...
    detail: str = ""  # the lines under it: the error of a failed server, the command of a local one


_MCP_LINE = re.compile(r"^[●\s]*[✓✗○⚠◌◐!]\s+(\S+)\s+(\S.*?)\s*$")


def parse_mcp_list(output: str) -> dict[str, McpServerStatus]:
    """The servers of ``opencode mcp list`` output, by name.

    OpenCode 1.18 prints ``●  ✓ stand connected``, ``●  ✗ name failed`` or ``●  ○ name disabled``,
    each followed by ``│``-prefixed lines (the error, then the command of a local server).
    """
    found: list[tuple[str, str, list[str]]] = []
    for raw in strip_ansi(output).splitlines():
        match = _MCP_LINE.match(raw)
        if match:
            found.append((match.group(1), match.group(2), []))
        elif found and raw.startswith("│") and raw.strip("│ "):
            found[-1][2].append(raw.strip("│ "))
    return {name: McpServerStatus(name, status, "\n".join(detail)) for name, status, detail in found}


@dataclass
class OpenCodeSandbox:
    """A fresh HOME and git project for OpenCode, wired to a :class:`FakeLLM`."""

    binary: Path
    root: Path
    llm: FakeLLM
    config: dict[str, Any] = field(default_factory=dict)
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def data_dir(self) -> Path:
        """``$XDG_DATA_HOME/opencode``: ``opencode.db``, ``log/``, ``snapshot/``."""
        return self.home / ".local" / "share" / "opencode"

    @property
    def db_path(self) -> Path:
        return self.data_dir / "opencode.db"

    @classmethod
    def create(cls, binary: Path, root: Path, llm: FakeLLM) -> OpenCodeSandbox:
        sandbox = cls(binary=binary, root=root, llm=llm)
        for sub in (".config", ".local/share", ".cache", ".local/state", "tmp"):
            (sandbox.home / sub).mkdir(parents=True, exist_ok=True)
        share_model_files(sandbox.home / ".cache")  # XDG_CACHE_HOME: the model files built once
        sandbox.project.mkdir(parents=True, exist_ok=True)
        git_env = {**os.environ, "HOME": str(sandbox.home), "GIT_CONFIG_NOSYSTEM": "1"}
        subprocess.run(["git", "init", "-q"], cwd=sandbox.project, env=git_env, check=True, timeout=30)
        sandbox.config = sandbox.base_config()
        sandbox.write_config()
        return sandbox

    def base_config(self) -> dict[str, Any]:
        """The ``opencode.json`` every sandbox starts with: the fake provider, selected."""
        return {
            "$schema": "https://opencode.ai/config.json",
            "provider": {
                PROVIDER_ID: {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Fake LLM (tests)",
                    "options": {"baseURL": self.llm.base_url, "apiKey": "fake-key"},
                    "models": {MODEL_ID: {"name": "Fake model", "tool_call": True}},
                }
            },
            "model": MODEL,
            "small_model": MODEL,
            "autoupdate": False,
            "share": "disabled",
        }

    def write_config(self, **updates: Any) -> Path:
        """Merge ``updates`` into the top level of :attr:`config` and (re)write ``opencode.json``."""
        self.config.update(updates)
        path = self.project / "opencode.json"
        path.write_text(json.dumps(self.config, indent=2) + "\n", "utf-8")
        return path

    def add_mcp(self, name: str, server: Mapping[str, Any]) -> None:
        """Configure one MCP server under ``"mcp": {name: server}``."""
        mcp = dict(self.config.get("mcp") or {})
        mcp[name] = dict(server)
        self.write_config(mcp=mcp)

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not _DROPPED_ENV.match(k)}
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            # OpenCode, a Bun binary, unpacks a native library of 5.6 MB into the temp dir at
            # every start and leaves it there: the sandbox's, removed with it.
            TMPDIR=str(self.home / "tmp"),
            PWD=str(self.project),
        )
        env.update(OFFLINE_ENV)
        env.update(self.extra_env)
        return env

    def run_opencode(
        self,
        args: Sequence[str],
        timeout: float = DEFAULT_TIMEOUT,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """``opencode <args>`` in the project; stdin is ``input`` (or closed); ``env`` added to :attr:`env`.

        OpenCode runs in its own process group; on timeout the whole group (OpenCode and the MCP
        servers it started) is killed and :class:`subprocess.TimeoutExpired` raised with the output.
        """
        cmd = [str(self.binary), *args]
        with subprocess.Popen(
            cmd,
            cwd=self.project,
            env={**self.env, **(env or {})},
            stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        ) as proc:
            try:
                stdout, stderr = proc.communicate(input, timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                stdout, stderr = proc.communicate()
                raise subprocess.TimeoutExpired(cmd, timeout, stdout, stderr) from None
        return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)

    def mcp_list(self, timeout: float = 60.0) -> dict[str, McpServerStatus]:
        """The MCP servers OpenCode reports, by name (``opencode mcp list``)."""
        done = self.run_opencode(["mcp", "list"], timeout=timeout)
        if done.returncode != 0:
            output = f"{done.stdout}\n{done.stderr}"
            raise AssertionError(f"opencode mcp list failed ({done.returncode}):\n{output}")
        return parse_mcp_list(done.stdout)

    def run_turn(
        self,
        prompt: str,
        *args: str,
        timeout: float = DEFAULT_TIMEOUT,
        check: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """One ``opencode run`` turn with ``prompt`` on stdin (verbatim to the model).

        ``args`` go after ``run`` (``--session ID``, ``--format json``, ...). With ``check`` a non-zero
        exit raises with OpenCode's output.
        """
        done = self.run_opencode(["run", *args], timeout=timeout, input=prompt, env=env)
        if check and done.returncode != 0:
            raise AssertionError(f"opencode run failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done

    @contextlib.contextmanager
    def serve(self, timeout: float = DEFAULT_TIMEOUT) -> Iterator[OpenCodeServer]:
        """One ``opencode serve`` of this sandbox for the turns of a session, as the TUI runs one
        OpenCode process whose plugin keeps its state from turn to turn; always stopped on leaving.

        It runs with :attr:`env` as it is now (what the plugin and the MCP servers read: change
        :attr:`extra_env` before, not after), on a free port of 127.0.0.1 behind a password of its
        own. An error that leaves the block carries the end of the server's output as a note.
        """
        server = OpenCodeServer.start(self, timeout)
        try:
            yield server
        except BaseException as exc:
            exc.add_note(f"opencode serve's output (the end):\n{server.output()[-4000:]}")
            raise
        finally:
            server.stop()

    def sessions(self, timeout: float = 60.0) -> list[dict[str, Any]]:
        """OpenCode's sessions (``opencode session list --format json``): id, title, directory, ..."""
        done = self.run_opencode(["session", "list", "--format", "json"], timeout=timeout)
        if done.returncode != 0:
            raise AssertionError(f"opencode session list failed ({done.returncode}):\n{done.stderr}")
        sessions: list[dict[str, Any]] = json.loads(done.stdout or "[]")
        return sessions

    def stored_sessions(self) -> list[dict[str, Any]]:
        """The sessions :meth:`sessions` lists (the top-level ones, newest first: id, title,
        directory), read from OpenCode's database rather than by starting OpenCode: a listing took
        4.6 to 5.9 s at load 8, this read under a millisecond. For a test that needs the id of
        the session its turns made; :meth:`sessions` keeps OpenCode's own listing for the harness's
        tests."""
        query = "SELECT id, title, directory FROM session WHERE parent_id IS NULL ORDER BY time_updated DESC"
        with contextlib.closing(sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True)) as db:
            rows = db.execute(query).fetchall()
        return [{"id": str(id_), "title": str(title), "directory": str(where)} for id_, title, where in rows]

    def stored_user_message_ids(self, session: str) -> list[str]:
        """The ids of ``session``'s user messages, oldest first, as ``opencode export SESSION``
        lists them, read from OpenCode's database (an export is an OpenCode process: about 2 s of CPU)."""
        query = (
            "SELECT id FROM message WHERE session_id = ? AND json_extract(data, '$.role') = 'user'"
            " ORDER BY time_created, id"
        )
        with contextlib.closing(sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True)) as db:
            return [str(id_) for (id_,) in db.execute(query, (session,)).fetchall()]


_LISTENING = re.compile(r"opencode server listening on (http://\S+)")
# What `opencode run` gives a session it creates (and so what the model is offered): no questions
# to a user who is not there, no plan mode.
RUN_PERMISSIONS = tuple(
    {"permission": name, "action": "deny", "pattern": "*"} for name in ("question", "plan_enter", "plan_exit")
)
SERVER_STOP_TIMEOUT = 10.0
SERVER_STARTS = 3  # tries at a free port (another process may take it before OpenCode binds it)


class _PortTaken(AssertionError):
    """``opencode serve`` exited with ``ServeError``: its port was taken before it could bind it."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class OpenCodeServer:
    """A running ``opencode serve`` (:meth:`OpenCodeSandbox.serve`): one instance for all its turns."""

    sandbox: OpenCodeSandbox
    process: subprocess.Popen[bytes]
    log: Path  # the server's stdout and stderr (``--print-logs``)
    password: str  # OPENCODE_SERVER_PASSWORD: no other program on the machine drives it
    url: str = ""

    @classmethod
    def start(cls, sandbox: OpenCodeSandbox, timeout: float = DEFAULT_TIMEOUT) -> OpenCodeServer:
        """Started and listening on a free port of 127.0.0.1 (with ``--port 0`` OpenCode takes 4096
        when it is free: the default port of the developer's own server)."""
        password = secrets.token_urlsafe(24)
        attempt = 0
        while True:
            attempt += 1
            server = cls._spawn(sandbox, password)
            try:
                server.url = server._listening(timeout)
                return server
            except _PortTaken:
                server.stop()
                if attempt == SERVER_STARTS:
                    raise
            except BaseException:
                server.stop()
                raise

    @classmethod
    def _spawn(cls, sandbox: OpenCodeSandbox, password: str) -> OpenCodeServer:
        log = sandbox.root / f"serve-{len(list(sandbox.root.glob('serve-*.log'))) + 1}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(sandbox.binary), "serve", "--port", str(_free_port()), "--print-logs"],
                cwd=sandbox.project,
                env={**sandbox.env, "OPENCODE_SERVER_PASSWORD": password},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return cls(sandbox, process, log, password)

    def _listening(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            output = self.output()
            match = _LISTENING.search(output)
            if match:
                return match.group(1)
            if self.process.poll() is not None:
                kind = _PortTaken if "ServeError" in output else AssertionError
                raise kind(f"opencode serve exited ({self.process.returncode}):\n{output[-4000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"opencode serve not listening in {timeout:.0f} s:\n{output[-4000:]}")
            time.sleep(0.05)

    def output(self) -> str:
        """What the server printed so far (its log lines included)."""
        return self.log.read_text("utf-8", errors="replace")

    def instances(self) -> int:
        """How many OpenCode instances (a project's config, plugins and MCP servers) it created."""
        return self.output().count('message="creating instance"')

    def run_turn(
        self, prompt: str, *args: str, timeout: float = DEFAULT_TIMEOUT, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """One turn sent to the server by ``opencode run --attach`` (see :meth:`OpenCodeSandbox.run_turn`)."""
        env = {"OPENCODE_SERVER_PASSWORD": self.password}
        return self.sandbox.run_turn(
            prompt, "--attach", self.url, *args, timeout=timeout, check=check, env=env
        )

    def request(self, method: str, path: str, body: Any = None, timeout: float = DEFAULT_TIMEOUT) -> Any:
        """One request to the server's HTTP API, as its clients (the TUI, ``opencode run --attach``)
        send them: behind its password, in the sandbox's project. The answer's JSON; an error
        status raises with the answer."""
        secret = base64.b64encode(f"opencode:{self.password}".encode()).decode()
        request = urllib.request.Request(
            self.url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={
                "Authorization": f"Basic {secret}",
                "Content-Type": "application/json",
                "x-opencode-directory": str(self.sandbox.project),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            with exc:
                answer = exc.read().decode("utf-8", errors="replace")
            raise AssertionError(f"opencode serve answered {method} {path}: {exc.code} {answer}") from None
        return json.loads(raw) if raw else None

    def send_turn(
        self, prompt: str, session: str = "", timeout: float = DEFAULT_TIMEOUT, check: bool = True
    ) -> tuple[str, dict[str, Any]]:
        """One turn sent to the server from this process, as ``opencode run --attach`` sends it:
        into ``session``, else a new session with the permissions ``opencode run`` gives one, the
        prompt as one text part, answered once the turn has ended. The session's id and the
        assistant's message (``info``, ``parts``). The model gets the same requests as from
        :meth:`run_turn`, byte for byte, without a client process (1.5 to 2 s of CPU a turn). With
        ``check`` a turn that ended in an error raises with it."""
        if not session:
            session = str(self.request("POST", "/session", {"permission": list(RUN_PERMISSIONS)})["id"])
        reply: dict[str, Any] = self.request(
            "POST", f"/session/{session}/message", {"parts": [{"type": "text", "text": prompt}]}, timeout
        )
        if check and reply.get("info", {}).get("error"):
            raise AssertionError(f"the turn ended in an error: {reply['info']['error']}")
        return session, reply

    def mcp_status(self, timeout: float = DEFAULT_TIMEOUT) -> dict[str, dict[str, Any]]:
        """Each MCP server's status in the project's instance, by name (``{"status": "connected"}``,
        or ``"failed"`` with its ``error``): what ``opencode mcp list`` prints, without a process."""
        status: dict[str, dict[str, Any]] = self.request("GET", "/mcp", timeout=timeout)
        return status

    def stop(self) -> None:
        """SIGTERM to the server's process group (its MCP servers too), SIGKILL if it lingers."""
        if self.process.poll() is not None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(SERVER_STOP_TIMEOUT)
                return
