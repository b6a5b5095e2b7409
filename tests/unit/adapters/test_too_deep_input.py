"""What another program wrote (a session store, a model's answer, GitLab's answer, a model's
files), nested deeper than Python's JSON parser recurses or holding a time UTC cannot hold, is
read as any other unreadable value, never raised as a bare RecursionError or OverflowError."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from requests.adapters import HTTPAdapter
from support.fake_llm import FakeLLM

from graphmem.adapters import opencode_sessions
from graphmem.adapters.client_sessions import from_ms, line_time
from graphmem.adapters.embedders import _load_onnx
from graphmem.adapters.gitlab_transport import (
    DEFAULT_RETRY_AFTER_S,
    MAX_RETRY_AFTER_S,
    GitLabTransport,
    _retry_after,
)
from graphmem.adapters.llm_extractor import LLMExtractionError, LLMExtractor
from graphmem.core.sessions import SessionMessage, SessionPart, Transcript
from graphmem.errors import EmbedderError, GitLabUnavailableError

DEEP = "[" * 3000  # deeper than json.loads recurses: it raised RecursionError
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_an_opencode_tool_input_and_patch_list_nested_too_deep_read_as_empty() -> None:
    assert opencode_sessions._json_object(DEEP) == {}
    assert opencode_sessions._file_list(DEEP) == ()


def test_a_session_line_time_utc_cannot_hold_is_no_time() -> None:
    assert line_time("9999-12-31T23:59:59-14:00") is None
    assert line_time("0001-01-01T00:00:00+14:00") is None


@pytest.mark.parametrize("ms", [10**15, 10**20, -(10**20)])
def test_a_session_row_time_past_what_a_date_holds_is_no_time(ms: int) -> None:
    assert from_ms(ms) == datetime(1970, 1, 1, tzinfo=UTC)


def test_a_model_answer_nested_too_deep_is_an_extraction_error() -> None:
    transcript = Transcript(
        "ses_1",
        "/tmp/p",
        "Title",
        NOW,
        NOW,
        (SessionMessage("msg_0", "user", NOW, (SessionPart("p", "text", text="hi"),)),),
    )
    with FakeLLM() as llm:
        llm.script('{"memories": ' + DEEP + "}")  # strict JSON, then its {...}: both too deep
        extractor = LLMExtractor(model="fake-model", base_url=llm.base_url, api_key="sk-test-key")
        with pytest.raises(LLMExtractionError, match="JSON"):
            extractor.extract(transcript)


def test_a_gitlab_error_answer_nested_too_deep_is_malformed_json(monkeypatch: pytest.MonkeyPatch) -> None:
    def answering(self: HTTPAdapter, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        response = requests.Response()
        response.status_code, response.reason, response.url = 404, "Not Found", str(request.url)
        response.headers["Content-Type"] = "application/json"
        response._content = DEEP.encode()
        response.request = request
        return response

    monkeypatch.setattr(HTTPAdapter, "send", answering)
    transport = GitLabTransport("http://127.0.0.1:9", "token", max_retries=0, sleep=lambda s: None)
    with pytest.raises(GitLabUnavailableError, match=r"malformed JSON\. Check that \[gitlab\] url"):
        transport.get("/projects/1/issues/34", "issue 34")


@pytest.mark.parametrize(
    ("retry_after", "reset", "wait_s"),
    [
        ("1e300", None, MAX_RETRY_AFTER_S),
        ("inf", None, MAX_RETRY_AFTER_S),
        ("nan", None, DEFAULT_RETRY_AFTER_S),
        pytest.param(None, "9" * 400, MAX_RETRY_AFTER_S, id="reset-400-digits"),
    ],
)
def test_a_retry_after_past_a_day_waits_a_day_so_the_wait_fits_a_date(
    retry_after: str | None, reset: str | None, wait_s: float
) -> None:
    assert _retry_after(retry_after, reset) == wait_s
    datetime.now(UTC) + timedelta(seconds=_retry_after(retry_after, reset))  # what the enricher waits until


def test_embedding_model_files_nested_too_deep_are_an_embedder_error(tmp_path: Path) -> None:
    (tmp_path / "sentence_bert_config.json").write_text(DEEP, "utf-8")
    with pytest.raises(EmbedderError, match="Could not read the embedding model's files"):
        _load_onnx(str(tmp_path), str(tmp_path / "cache"))
