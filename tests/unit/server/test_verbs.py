"""The table of verbs (``server/verbs.py``) is where a verb is declared: a verb added there, with
its service method (and its declaration on ``graphmem.api.Memory``, which tests/unit/test_api.py
asks for and from which ``RemoteMemory`` makes its method), goes through every door -- an MCP
tool with its hints and output schema, ``/rpc`` (and ``graphmem ui``'s view when opened to it), the
CLI's remote calls bound to its project and branch -- and a verb that writes wakes the daemon's
workers from each door."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.tools_client import Tools

from graphmem.server import ui_routes, verbs
from graphmem.server.daemon_process import DaemonInfo
from graphmem.server.guard import Policy
from graphmem.server.http import build_app
from graphmem.server.remote import RemoteMemory, RemoteVerb
from graphmem.server.runtime import Runtime
from graphmem.server.tools import build_mcp
from graphmem.server.tools.registry import ToolRegistry
from graphmem.server.verbs import READS, WRITES, Binding, Owner, Verb
from graphmem.service.memory import MemoryService
from graphmem.service.results import RememberResult

TOKEN = "t" * 43
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def count_memories(self: MemoryService, *, project: str | None = None) -> int:
    """How many memories the project sees."""
    return len(self.list(project=project))


def jot(
    self: MemoryService, text: str, *, project: str | None = None, branch: str | None = None
) -> RememberResult:
    """Store a short note."""
    return self.remember(text, project=project, branch=branch)


@dataclass(frozen=True)
class NewVerb:
    verb: Verb
    method: Any
    arguments: dict[str, Any]


NEW = {
    "count_memories": NewVerb(
        Verb("count_memories", "int", (), READS, Binding.PROJECT, ui=True, tool="count_memories"),
        count_memories,
        {},
    ),
    "jot": NewVerb(
        Verb("jot", "graphmem.service.results:RememberResult", ("text",), WRITES, Binding.BRANCH, tool="jot"),
        jot,
        {"text": "Deploys go out on Tuesdays"},
    ),
}


@pytest.fixture(params=sorted(NEW))
def new(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> NewVerb:
    """One verb added: a table entry, its service method and the CLI's remote call of it (made
    here: the protocol, which ``RemoteMemory``'s verbs are made from at import, does not declare it)."""
    added: NewVerb = NEW[request.param]
    monkeypatch.setitem(verbs.VERBS, added.verb.name, added.verb)
    monkeypatch.setattr(MemoryService, added.verb.name, added.method, raising=False)
    monkeypatch.setattr(RemoteMemory, added.verb.name, RemoteVerb(added.method), raising=False)
    return added


@pytest.fixture
def runtime(memory_service: MemoryService) -> Runtime:
    return Runtime(
        memory_service,
        log_hint="stderr",
        resolve_project=lambda path: path,
        version="t",
    )


@pytest.fixture
def wakes(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each time a door tells the daemon's workers that something was written."""
    calls: list[int] = []
    monkeypatch.setattr(runtime, "written", lambda: calls.append(1))
    return calls


@pytest.fixture
def client(runtime: Runtime, wakes: list[int]) -> Iterator[TestClient]:
    app = build_app(runtime, Policy.build(token=TOKEN, api_key=None, max_bytes=100_000, rate_limit=0))
    with TestClient(app, base_url="http://127.0.0.1:9824", raise_server_exceptions=False) as running:
        yield running


def test_a_new_verb_is_an_mcp_tool_with_its_hints_and_schema(
    new: NewVerb, runtime: Runtime, wakes: list[int]
) -> None:
    with Tools(build_mcp(runtime), runtime) as tools:
        listed = tools.listing()[new.verb.name]
        answer = tools.ok(new.verb.name, **new.arguments)

    assert listed.description == new.method.__doc__
    assert listed.annotations.read_only_hint is new.verb.effect.read_only
    assert listed.output_schema["properties"]
    assert "project" in listed.input_schema["properties"]
    if new.verb.effect.read_only:
        assert answer == 0 and wakes == []  # the text; the structured result is {"result": 0}
    else:
        assert answer["created"] is True and answer["memory"]["text"] == new.arguments["text"]
        assert wakes == [1]


def test_a_new_verb_is_served_on_rpc(new: NewVerb, client: TestClient, wakes: list[int]) -> None:
    response = client.post(
        "/rpc", json={"method": new.verb.name, "arguments": new.arguments}, headers=HEADERS
    )

    assert response.status_code == 200 and "result" in response.json(), response.text
    assert len(wakes) == (0 if new.verb.effect.read_only else 1)


def test_a_new_verb_is_open_to_the_view_only_when_the_table_says(new: NewVerb) -> None:
    assert ui_routes.may_call({"method": new.verb.name}) is new.verb.ui


def test_the_cli_calls_a_new_verb_with_its_own_project_and_branch(
    new: NewVerb, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(
        RemoteMemory, "_call", lambda self, method, progress=None, **a: sent.append((method, a))
    )
    info = DaemonInfo(pid=1, url="http://127.0.0.1:9824", data_dir="/nowhere", started_at=0.0, version="t")
    remote = RemoteMemory(info, project="/src/shop", branch="feature/fees")

    getattr(remote, new.verb.name)(*new.arguments.values())

    [(method, arguments)] = sent
    assert method == new.verb.name and arguments["project"] == "/src/shop"
    assert arguments.get("branch") == ("feature/fees" if new.verb.binds is Binding.BRANCH else None)


def test_a_session_ended_with_a_summary_wakes_the_workers(client: TestClient, wakes: list[int]) -> None:
    """``session_end`` writes the summary as a memory: the embedder must look for it."""
    started = client.post(
        "/rpc", json={"method": "session_start", "arguments": {"agent": "cli"}}, headers=HEADERS
    )
    session = started.json()["result"]["id"]
    wakes.clear()

    client.post(
        "/rpc",
        json={"method": "session_end", "arguments": {"session_id": session, "summary": "Moved CI to uv"}},
        headers=HEADERS,
    )

    assert wakes == [1]


def test_a_tool_the_table_does_not_declare_is_refused(runtime: Runtime) -> None:
    registry = ToolRegistry(build_mcp(runtime), runtime)

    def forget_everything() -> None:
        """Not a verb."""

    with pytest.raises(ValueError, match="declare it there"):
        registry.tool()(forget_everything)


def owner_of(verb: Verb) -> type:
    return MemoryService if verb.owner is Owner.MEMORY else Runtime


@pytest.mark.parametrize("name", sorted(verbs.VERBS))
def test_each_verb_declares_its_methods_result_and_positional_parameters(name: str) -> None:
    verb = verbs.VERBS[name]
    method = getattr(owner_of(verb), name)
    parameters = inspect.signature(method).parameters

    assert verb.result == typing.get_type_hints(method).get("return")
    assert verb.positional == tuple(p.name for p in parameters.values() if p.kind in POSITIONAL)[1:]
    if verb.binds is not Binding.NONE:
        assert "project" in parameters
    if verb.binds is Binding.BRANCH:
        assert "branch" in parameters
    assert verb.rpc or not verb.ui, "the view calls its verbs through /rpc"


def test_each_tool_is_named_by_the_table_in_the_order_clients_list_them(runtime: Runtime) -> None:
    with Tools(build_mcp(runtime), runtime) as tools:
        listed = tools.listing()

    assert list(listed) == list(verbs.tools())
