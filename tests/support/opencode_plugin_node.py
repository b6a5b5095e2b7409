"""graphmem's OpenCode plugin in a bare Node process, without OpenCode: a driver script loads
``graphmem/integrations/opencode/graphmem.js`` as OpenCode would and prints what its hooks did as
JSON (``run_plugin_in_node``); ``remember_over_rpc`` stores what the plugin should then find."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from support.daemons import http

REPO_ROOT = Path(__file__).resolve().parents[2]
PLUGIN_FILE = REPO_ROOT / "graphmem" / "integrations" / "opencode" / "graphmem.js"


def run_plugin_in_node(
    args: Sequence[str], data_dir: Path, project: Path, *, timeout_ms: int = 300, **env: str
) -> Any:
    """``node ARGS`` (a driver that loads the plugin as OpenCode would) in an environment of its own:
    graphmem's data dir ``data_dir``, HOME ``project``, the plugin's timeout ``timeout_ms`` and
    ``env``. Fails the test when it exits with an error; the JSON its last line prints."""
    node = shutil.which("node")
    assert node is not None, "the plugin tests need Node.js (>= 20)"
    variables = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(project),
        "GRAPHMEM_DATA_DIR": str(data_dir),
        "GRAPHMEM_PLUGIN_TIMEOUT_MS": str(timeout_ms),
        **env,
    }
    done = subprocess.run(
        [node, *args], env=variables, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().split("\n")[-1])  # JSON may hold U+2028, which splitlines splits at


def remember_over_rpc(url: str, project: Path, text: str, category: str) -> None:
    """Store a memory of ``project`` through the daemon at ``url`` (its ``/rpc``)."""
    body = {"method": "remember", "arguments": {"text": text, "category": category, "project": str(project)}}
    status, _, raw = http(
        "POST", f"{url}/rpc", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    assert status == 200, raw
