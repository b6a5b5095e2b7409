"""A stand-in MCP stdio server for the OpenCode harness tests: one tool, ``echo``.

Run as ``python tests/support/stand_mcp.py``; OpenCode starts it from ``opencode.json``
(``"mcp": {"stand": {"type": "local", "command": [python, this file]}}``) and offers the tool to
the model as ``stand_echo``.
"""

from __future__ import annotations

from fastmcp import FastMCP

mcp = FastMCP("stand")


@mcp.tool
def echo(text: str) -> dict[str, str]:
    """Return the text it was given, as ``{"echo": text}``."""
    return {"echo": text}


if __name__ == "__main__":
    mcp.run(show_banner=False)
