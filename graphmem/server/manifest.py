"""The tool manifest ``graphmem mcp`` lists without waiting for the daemon.

Regenerate it after changing a tool (a test fails until you do)::

    python -m graphmem.server.manifest
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, cast

from graphmem.server.metrics import Metrics
from graphmem.server.runtime import Runtime

MANIFEST_PATH = Path(__file__).with_name("manifest.json")


class _ListingOnly:
    """Enough of a Runtime to build the tools and list them (never called)."""

    memory = None
    log_hint = "daemon.log"
    version = "0"  # the server's, which ``initialize`` reports: the manifest holds no serverInfo
    metrics = Metrics()

    def written(self) -> None:  # pragma: no cover - tools are never called here
        pass


def tool_manifest() -> dict[str, Any]:
    from graphmem.server.tools import INSTRUCTIONS, build_mcp

    mcp = build_mcp(cast(Runtime, _ListingOnly()))
    tools = asyncio.run(mcp.list_tools())
    return {
        "instructions": INSTRUCTIONS,
        "tools": [
            tool.to_mcp_tool().model_dump(by_alias=True, exclude_none=True, mode="json") for tool in tools
        ],
    }


def render() -> str:
    return json.dumps(tool_manifest(), indent=1, ensure_ascii=False, sort_keys=True) + "\n"


if __name__ == "__main__":
    MANIFEST_PATH.write_text(render(), "utf-8")
    print(f"wrote {MANIFEST_PATH}")
