"""Hostile project names (docs/team.md, "One project, wherever it is checked out"): a repository
whose ``git config graphmem.project`` is unusable, whose remote carries a password, or whose name
reads like SQL, against the daemon on each store. An unusable name is a clear error that changes
nothing; a password never reaches the store; a name is data, never SQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.git_repo import git, new_repo
from support.hostile import Stage, assert_clear, assert_healthy, rpc_call, snapshot

pytestmark = pytest.mark.integration

PASSWORD = "glpat-HOSTILE-0042"


def store_of(request: pytest.FixtureRequest) -> str:
    return str(request.node.callspec.params["stage"])


def repository(stage: Stage, name: str) -> Path:
    return new_repo(stage.outside.parent / "repos" / name)


@pytest.mark.parametrize(
    "value", ["line\nbreak", "bell\x07", "x" * 201], ids=["newline", "control", "too-long"]
)
def test_an_unusable_project_name_is_a_clear_error_that_changes_nothing(
    value: str, stage: Stage, request: pytest.FixtureRequest
) -> None:
    checkout = repository(stage, f"bad-{request.node.callspec.id}")
    git(checkout, "config", "graphmem.project", value)
    before = snapshot(stage.daemon)
    answer = rpc_call(stage.daemon, "remember", text="Deploys go through the train", project=str(checkout))
    if store_of(request) == "kuzu":  # the embedded store names a project by its path alone
        assert answer["result"]["memory"]["project"] == str(checkout)
        rpc_call(stage.daemon, "delete", memory_id=answer["result"]["memory"]["id"])
    else:
        assert_clear(answer["error"]["message"])
        assert "graphmem.project" in answer["error"]["message"]
    assert snapshot(stage.daemon) == before
    assert_healthy(stage.daemon)


def test_a_password_in_the_remote_never_reaches_the_store(
    stage: Stage, request: pytest.FixtureRequest
) -> None:
    checkout = repository(stage, "with-password")
    git(
        checkout, "remote", "add", "origin", f"https://ci-bot:{PASSWORD}@GitLab.example.com:8443/shop/app.git"
    )
    answer = rpc_call(stage.daemon, "remember", text="The app ships on Tuesdays", project=str(checkout))
    stored = answer["result"]["memory"]
    expected = str(checkout) if store_of(request) == "kuzu" else "gitlab.example.com/shop/app"
    assert stored["project"] == expected
    exported = json.dumps(rpc_call(stage.daemon, "export"))
    assert PASSWORD not in exported and "ci-bot" not in exported
    rpc_call(stage.daemon, "delete", memory_id=stored["id"])
    assert_healthy(stage.daemon)


def test_a_project_name_that_reads_like_sql_is_only_a_name(
    stage: Stage, request: pytest.FixtureRequest
) -> None:
    checkout = repository(stage, "sql-name")
    name = "x'); DROP TABLE memories; --"
    git(checkout, "config", "graphmem.project", name)
    before = snapshot(stage.daemon)
    answer = rpc_call(stage.daemon, "remember", text="Schema changes need a migration", project=str(checkout))
    stored = answer["result"]["memory"]
    assert stored["project"] == (str(checkout) if store_of(request) == "kuzu" else name)
    listed = rpc_call(stage.daemon, "list", project=str(checkout))["result"]
    assert [m["id"] for m in listed][:1] == [stored["id"]]
    rpc_call(stage.daemon, "delete", memory_id=stored["id"])
    assert snapshot(stage.daemon) == before  # every other memory is still there
    assert_healthy(stage.daemon)
