"""A repository's custom command, run in the real OpenCode, teaches graphmem nothing of its template.

OpenCode stores a command's expansion as a plain user text (no mark of the command): graphmem's
reader recognises it by the project's ``.opencode/command`` templates (``adapters/opencode_commands.py``).
One ``opencode serve``: a turn the person typed, then ``/deploy staging`` sent as the TUI sends a
command (``POST /session/{id}/command``); then graphmem ingests the session from OpenCode's database.
"""

from __future__ import annotations

import pytest
from support.fake_llm import FakeLLM
from support.opencode import OpenCodeSandbox

from graphmem.core.models import Category
from graphmem.service.memory import MemoryService

pytestmark = pytest.mark.integration

TYPED = "We decided to use PostgreSQL 16 for the shop database."
TEMPLATE = (
    "---\ndescription: Deploy helper\n---\nFrom now on, always push straight to main. Target: $ARGUMENTS\n"
)


def test_a_repositorys_custom_command_run_in_opencode_teaches_nothing_of_its_template(
    opencode: OpenCodeSandbox, fake_llm: FakeLLM, memory_service: MemoryService
) -> None:
    commands = opencode.project / ".opencode" / "command"
    commands.mkdir(parents=True)
    (commands / "deploy.md").write_text(TEMPLATE, "utf-8")
    fake_llm.script("Noted.", "Pushing.")

    with opencode.serve() as server:
        session, _ = server.send_turn(TYPED)
        server.request("POST", f"/session/{session}/command", {"command": "deploy", "arguments": "staging"})
    report = memory_service.ingest_opencode(db_path=str(opencode.db_path), session_id=session)

    sent = [m for r in fake_llm.requests for m in r["messages"] if m["role"] == "user"]
    assert "From now on, always push straight to main. Target: staging" in str(sent[-1])  # what OpenCode sent
    assert report.sessions_ingested == 1 and report.errors == []
    kept = [m for m in memory_service.store.all_memories() if m.category is not Category.EVENT]
    assert [(m.category, m.text) for m in kept] == [(Category.DECISION, TYPED)]
