"""The Codex harness itself: the pinned client installs, runs headless and reaches the stand-in."""

from __future__ import annotations

import pytest
from support.codex import CodexSandbox
from support.fake_llm import Text
from support.fake_responses import FakeResponses, texts

pytestmark = pytest.mark.integration


def test_codex_exec_sends_the_prompt_to_the_stand_in_and_prints_its_answer(
    codex: CodexSandbox, fake_model: FakeResponses
) -> None:
    fake_model.script(Text("Hello from the stand-in."))

    run = codex.exec("Say hello.")

    assert "Hello from the stand-in." in run.stdout
    [request] = fake_model.requests
    assert request["model"] == "fake-model" and request["stream"] is True
    assert texts(request, "user")[-1] == "Say hello."
    assert codex.session_file(run.session_id).is_file()
