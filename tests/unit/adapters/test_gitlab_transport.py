"""A dropped connection to GitLab is retried; what is retried and what it becomes when it is not
(``GitLabTransport._retry`` and ``_error``) are decided apart from the request loop."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests
import urllib3.exceptions
from requests.adapters import HTTPAdapter
from support.fake_gitlab import PROJECT, TOKEN, FakeGitLab

from graphmem.adapters.gitlab_transport import GitLabTransport
from graphmem.errors import GitLabUnavailableError

ISSUE = f"/projects/{PROJECT.replace('/', '%2F')}/issues/34"


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with FakeGitLab() as server:
        yield server


def drop_connections(monkeypatch: pytest.MonkeyPatch, times: int) -> None:
    """The next ``times`` requests lose their connection mid-answer (the server hung up)."""
    send = HTTPAdapter.send
    left = [times]

    def dropping(self: HTTPAdapter, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        if left[0] > 0:
            left[0] -= 1
            cause = urllib3.exceptions.ProtocolError(
                "Connection aborted.", ConnectionResetError(104, "reset")
            )
            raise requests.ConnectionError(cause, request=request)
        return send(self, request, **kwargs)

    monkeypatch.setattr(HTTPAdapter, "send", dropping)


def test_a_dropped_connection_is_retried_with_backoff(
    gitlab: FakeGitLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    sleeps: list[float] = []
    transport = GitLabTransport(gitlab.url, TOKEN, max_retries=2, sleep=sleeps.append)
    drop_connections(monkeypatch, times=1)
    issue = transport.get(ISSUE, "issue 34")
    assert issue["iid"] == 34
    assert sleeps == [0.5]


def test_a_connection_dropped_every_time_is_unavailable_after_the_retries(
    gitlab: FakeGitLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    sleeps: list[float] = []
    transport = GitLabTransport(gitlab.url, TOKEN, max_retries=2, sleep=sleeps.append)
    drop_connections(monkeypatch, times=10)
    with pytest.raises(GitLabUnavailableError, match=r"Cannot connect to GitLab .* for issue 34"):
        transport.get(ISSUE, "issue 34")
    assert sleeps == [0.5, 1.0]
