"""What graphmem ui's browser tests share: a daemon to sign in to and call, and the pictures.

With ``GRAPHMEM_UI_SCREENSHOTS=docs/images`` the tests save the screenshots docs/ui.md shows
(``ui-*.png``), so the pictures are those of a passing run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.daemons import Daemon, http, sandbox_env

# Read at import: the tests' autouse fixture clears GRAPHMEM_* variables before each test runs.
SCREENSHOTS = os.environ.get("GRAPHMEM_UI_SCREENSHOTS")
NARROW = {"width": 360, "height": 740}
WIDE = {"width": 1280, "height": 860}


class World:
    """A daemon and the checkout (``shop``: its path) the view is signed in to."""

    def __init__(self, daemon: Daemon, shop: str) -> None:
        self.daemon = daemon
        self.shop = shop

    def call(self, method: str, **arguments: Any) -> Any:
        body = json.dumps({"method": method, "arguments": arguments}).encode()
        status, _, raw = http("POST", f"{self.daemon.url}/rpc", body, {"Content-Type": "application/json"})
        answer = json.loads(raw)
        assert status == 200 and "result" in answer, answer
        return answer["result"]

    def remember(self, text: str, **arguments: Any) -> str:
        memory_id: str = self.call("remember", text=text, project=self.shop, **arguments)["memory"]["id"]
        return memory_id

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "graphmem", *args],
            env=sandbox_env(self.daemon.data_dir),
            cwd=self.shop,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def sign_in_path(self) -> str:
        status, _, raw = http(
            "POST", f"{self.daemon.url}/ui/login", b"{}", {"Content-Type": "application/json"}
        )
        assert status == 200, raw
        path: str = json.loads(raw)["path"]
        return f"{path}&project={self.shop}"


def go(page: Any, fragment: str) -> None:
    page.evaluate("fragment => { location.hash = fragment; }", fragment)


def screenshot(page: Any, name: str) -> None:
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / f"ui-{name}.png"), full_page=False)
