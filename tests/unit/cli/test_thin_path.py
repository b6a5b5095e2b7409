"""A CLI call through a running daemon loads neither the store, pyarrow, numpy, a model
runtime, the MCP server, the Memory service, pydantic nor the full settings, nor the result
types of other verbs than its own: it only forwards the call (structural, no timing)."""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from support.imports import RECALL_GROUP, Report, command_imports, imported, recall_without_a_daemon
from support.local_server import POLL_S

from graphmem.server import identity

HEAVY = (
    "kuzu",
    "pyarrow",
    "numpy",
    "torch",
    "onnxruntime",
    "fastmcp",
    "sentence_transformers",
    "tree_sitter",
    "pydantic",
    "pydantic_core",
    "pydantic_settings",
    "ssl",  # through http.client: the CLI posts to the daemon on a plain socket
    "email",
)
# graphmem's own modules that pull in the above, or are not needed to forward a call: the
# recall plans (the daemon recalls), logging (a call logs nothing without -v) and the TOML
# parser (there is no config file).
HEAVY_OWN = (
    "graphmem.service.memory",
    "graphmem.settings",
    "graphmem.app",
    "graphmem.server.rpc",
    "graphmem.core.fusion",
    "logging",
    "tomllib",
)
# The modules of verbs' result types beyond the memories' own (``graphmem.core.models``): a
# call loads its own verb's only.
RESULT_TYPES = {
    "recall": "graphmem.service.results",
    "get_context": "graphmem.core.bundle",
    "enrich": "graphmem.core.enrichment",
    "session_start": "graphmem.service.coordination",
}
TOKEN = "t" * 43
RESULTS: dict[str, Any] = {
    "recall": {
        "query": "which linter",
        "plan": "hybrid",
        "hits": [],
        "took_ms": 1.0,
        "semantic_ready": False,
    },
    "get_context": {
        "target": "src/app.py",
        "entity": None,
        "groups": {},
        "related": [],
        "max_tokens": 1500,
        "tokens": 0,
        "omitted": 0,
        "generated_at": "2026-01-01T00:00:00+00:00",
    },
    "list": [],
}


class _Daemon(BaseHTTPRequestHandler):
    """Answers ``/rpc`` as a daemon would, and remembers what it was asked."""

    calls: ClassVar[list[dict[str, Any]]] = []
    protocol_version = "HTTP/1.1"  # a client proves the daemon on the connection its call then takes

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/identity":
            answer: Any = identity.answer(TOKEN, None, body["nonce"], self.server.server_address[1])
        else:
            self.calls.append(body)
            answer = {"result": RESULTS[body["method"]]}
        raw = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Path]:
    """A data dir held as a live daemon holds it, served by a stand-in for ``/rpc``."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Daemon)
    # Asked to stop, it stops within POLL_S, not serve_forever's default 0.5 s
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True)
    thread.start()
    info = {"pid": os.getpid(), "url": f"http://127.0.0.1:{server.server_port}", "data_dir": str(data_dir)}
    (data_dir / "daemon.json").write_text(json.dumps({**info, "started_at": 0.0, "version": "0.1.0"}))
    (data_dir / "daemon.token").write_text(TOKEN + "\n", "ascii")
    _Daemon.calls = []
    try:
        with open(data_dir / "daemon.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield data_dir
    finally:
        server.shutdown()
        server.server_close()


def _through_daemon(daemon: Path, tmp_path: Path, argv: list[str], method: str) -> Any:
    """Run ``graphmem ARGV --json`` through the stand-in daemon; check it loaded nothing of
    the above nor another verb's result types, and called ``method``; its printed answer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    env.update(GRAPHMEM_DATA_DIR=str(daemon), GRAPHMEM_CONFIG=str(tmp_path / "none.toml"))
    others = {module for verb, module in RESULT_TYPES.items() if verb != method}

    report, done = command_imports([*argv, "--json"], {*HEAVY, *HEAVY_OWN, *others}, cwd=tmp_path, env=env)

    assert report["exit"] in (0, None), done.stderr
    assert [call["method"] for call in _Daemon.calls] == [method]
    assert report["loaded"] == []
    return json.loads(done.stdout)


def test_a_recall_through_the_daemon_imports_no_heavy_library(daemon: Path, tmp_path: Path) -> None:
    answer = _through_daemon(daemon, tmp_path, ["recall", "which linter"], "recall")

    assert answer["semantic_ready"] is False  # the daemon's answer, printed


def test_a_context_through_the_daemon_imports_no_heavy_library(daemon: Path, tmp_path: Path) -> None:
    answer = _through_daemon(daemon, tmp_path, ["context", "src/app.py"], "get_context")

    assert answer["target"] == "src/app.py"


def test_a_list_through_the_daemon_imports_no_heavy_library(daemon: Path, tmp_path: Path) -> None:
    answer = _through_daemon(daemon, tmp_path, ["list"], "list")

    assert answer == {"memories": []}


# What a recall in graphmem's own process (no daemon) must not load either: it opens the store
# and recalls, but parses no code (tree-sitter, the parser), installs nothing into a client
# (the Codex and OpenCode config editors, and the difflib they and a misspelt setting need),
# serves no MCP and runs the bundled model on ONNX Runtime, not torch.
NOT_LOCAL = (
    "difflib",
    "tree_sitter",
    "tree_sitter_language_pack",
    "graphmem.adapters.code_parser",
    "graphmem.adapters.parse_pool",
    "graphmem.adapters.codex_config",
    "graphmem.adapters.opencode_config",
    "fastmcp",
    "torch",
    "sentence_transformers",
)


@pytest.fixture
def recall_here(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """``graphmem recall "which linter" --json`` without a daemon, in a new checkout of branch
    ``feature/x``: its report (exit code, modules loaded, reads of Python source, threads that
    asked git) and the finished process, from one run for the tests below and test_app.py's
    (``support/imports.py``)."""
    return recall_without_a_daemon(tmp_path_factory)


@pytest.mark.xdist_group(RECALL_GROUP)
def test_a_recall_without_a_daemon_loads_no_parser_nor_client_config(recall_here: Report) -> None:
    report, done = recall_here

    assert report["exit"] in (0, None), done.stderr
    assert json.loads(done.stdout)["hits"] == []  # recalled in this process: no daemon holds the dir
    assert imported(report["modules"], NOT_LOCAL) == []


# What a recall without a daemon must not do either: parse Python source. pydantic read the
# source of each settings class for its fields' docstrings (``use_attribute_docstrings``) at
# every start; ``graphmem.settings.descriptions`` reads them when the reference is generated.
@pytest.mark.xdist_group(RECALL_GROUP)
def test_a_recall_without_a_daemon_parses_no_python_source(recall_here: Report) -> None:
    report, done = recall_here

    assert done.returncode == 0, done.stderr
    assert report["parsed"] == 0


# Nor wait for git after the store is open: the project and branch of the checkout (two to four
# ``git`` processes) are read in a thread of their own while the model loads and the store opens.
@pytest.mark.xdist_group(RECALL_GROUP)
def test_a_recall_without_a_daemon_asks_git_beside_opening_the_store(recall_here: Report) -> None:
    report, done = recall_here

    assert done.returncode == 0, done.stderr
    asked = report["git"]
    assert asked and "MainThread" not in asked
    assert json.loads(done.stdout)["hits"] == []
