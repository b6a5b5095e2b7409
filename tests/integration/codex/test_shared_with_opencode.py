"""Two clients in one project share one daemon and one store: what a Codex session decided is
learned when it ends and reaches OpenCode's next session in the same project, with no tool call.

Both real clients (``@openai/codex@0.169.0``, ``opencode-ai@1.18.33``) run in one sandbox: the
same project directory, each with its model stand-in, both installed by ``graphmem install``
(the package's ``decided``, whose decision reaches Codex's next session too:
``test_memory_in_codex.py``).
"""

from __future__ import annotations

import json

import pytest
from support.codex import Decided
from support.fake_llm import Text

pytestmark = pytest.mark.integration


def test_what_a_codex_session_decided_reaches_opencodes_next_session(decided: Decided) -> None:
    decision = decided.decision
    assert decision["source"] == "codex"

    decided.llm.script(Text("Postgres 16."))
    decided.opencode.run_turn("Which database should the billing service use?", timeout=180)

    [request] = decided.llm.requests
    assert str(decision["id"]) in json.dumps(request)  # in OpenCode's prompt, with no tool call
