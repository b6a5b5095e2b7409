"""The docs count the tools the daemon really lists."""

from __future__ import annotations

import re
from pathlib import Path

from graphmem.server.proxy import load_manifest

DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_daemon_docs_print_as_many_tools_as_the_manifest_lists() -> None:
    printed = re.findall(r"^(\d+) tools$", (DOCS / "daemon.md").read_text(encoding="utf-8"), re.MULTILINE)

    assert printed == [str(len(load_manifest()["tools"]))]


def test_no_doc_names_a_stale_tool_count() -> None:
    count = len(load_manifest()["tools"])
    stale = {
        (page.name, match)
        for page in DOCS.glob("*.md")
        for match in re.findall(r"\b(\d+) (?:MCP )?tools\b", page.read_text(encoding="utf-8"))
        if int(match) != count
    }

    assert stale == set()
