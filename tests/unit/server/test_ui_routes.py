"""graphmem ui's routes: the page's files, signing in, the graph, context and status, and what a
session may reach. Hostile input (bad ids, huge bodies, wrong types) gets a clear 4xx, never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from graphmem.core.code import Definition, ParsedFile
from graphmem.core.codegraph import CodeScan, FileState, ProjectCode, symbol_key
from graphmem.core.keys import file_key
from graphmem.core.timeparse import utc_now
from graphmem.errors import StoreError
from graphmem.server.guard import Policy
from graphmem.server.http import build_app
from graphmem.server.runtime import Runtime
from graphmem.service.memory import MemoryService

TOKEN = "t" * 43
BASE = "http://127.0.0.1:9824"
JSON = {"Content-Type": "application/json"}
LOCAL = {**JSON, "Authorization": f"Bearer {TOKEN}"}
MAX_BYTES = 100_000


@pytest.fixture
def client(memory_service: MemoryService) -> Iterator[TestClient]:
    runtime = Runtime(
        memory_service,
        log_hint="stderr",
        resolve_project=lambda p: p,
        version="t",
    )
    policy = Policy.build(token=TOKEN, api_key=None, max_bytes=MAX_BYTES, rate_limit=0)
    with TestClient(build_app(runtime, policy), base_url=BASE, raise_server_exceptions=False) as running:
        yield running


def sign_in(client: TestClient) -> dict[str, str]:
    """The headers of the view's page once signed in: its session, its own Origin."""
    code = client.post("/ui/login", json={}, headers=LOCAL).json()["code"]
    answer = client.post("/ui/session", json={"code": code}, headers={**JSON, "Origin": BASE})
    assert answer.status_code == 200, answer.text
    return {**JSON, "Origin": BASE, "Authorization": f"Bearer {answer.json()['session']}"}


def error_of(response: Any) -> str:
    error = response.json()["error"]
    return str(error["message"] if isinstance(error, dict) else error)


# -- the page's files ---------------------------------------------------------------------


def test_the_page_is_served_with_a_strict_content_security_policy(client: TestClient) -> None:
    page = client.get("/ui/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy and "unsafe" not in policy
    assert "frame-ancestors 'none'" in policy and page.headers["x-content-type-options"] == "nosniff"
    assert '<script type="module" src="app.js">' in page.text and "<script>" not in page.text


@pytest.mark.parametrize("name", ["app.js", "api.js", "dom.js", "graph.js", "views.js"])
def test_each_module_is_javascript(client: TestClient, name: str) -> None:
    answer = client.get(f"/ui/{name}")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/javascript")


def test_the_bare_path_redirects_to_the_page(client: TestClient) -> None:
    answer = client.get("/ui", follow_redirects=False)
    assert answer.status_code == 308 and answer.headers["location"] == "/ui/"


@pytest.mark.parametrize(
    "path", ["/ui/nope.js", "/ui/..%2fhttp.py", "/ui/ui_routes.py", "/ui/%2e%2e", "/ui/" + "a" * 300 + ".js"]
)
def test_a_file_that_is_not_the_views_is_a_404(client: TestClient, path: str) -> None:
    answer = client.get(path)
    assert answer.status_code == 404 and "error" in answer.json()


# -- signing in ---------------------------------------------------------------------------


def test_a_sign_in_code_needs_the_local_token(client: TestClient) -> None:
    answer = client.post("/ui/login", json={}, headers=JSON)
    assert answer.status_code == 401 and "daemon.token" in error_of(answer)


def test_a_code_opens_a_session_once(client: TestClient) -> None:
    code = client.post("/ui/login", json={}, headers=LOCAL).json()["code"]
    headers = {**JSON, "Origin": BASE}
    assert client.post("/ui/session", json={"code": code}, headers=headers).status_code == 200
    again = client.post("/ui/session", json={"code": code}, headers=headers)
    assert again.status_code == 401 and "graphmem ui" in error_of(again)


@pytest.mark.parametrize("origin", [None, "http://127.0.0.1:8000", "http://localhost:9824", "null"])
def test_a_code_is_traded_only_by_the_views_own_origin(client: TestClient, origin: str | None) -> None:
    code = client.post("/ui/login", json={}, headers=LOCAL).json()["code"]
    headers = {**JSON, **({"Origin": origin} if origin else {})}
    answer = client.post("/ui/session", json={"code": code}, headers=headers)
    assert answer.status_code == 403
    # the refused request did not spend the code
    assert (
        client.post("/ui/session", json={"code": code}, headers={**JSON, "Origin": BASE}).status_code == 200
    )


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"{nope", "not JSON"),
        (b"[1]", "JSON object"),
        (b'{"code": 5}', '"code" must be text'),
        (b'{"code": "x", "admin": true}', "Unknown field"),
        (b'{"code": "' + b"x" * 2000 + b'"}', "over 1000"),
    ],
)
def test_a_bad_sign_in_body_is_a_400(client: TestClient, body: bytes, says: str) -> None:
    answer = client.post("/ui/session", content=body, headers={**JSON, "Origin": BASE})
    assert answer.status_code == 400 and says in error_of(answer)


def test_a_form_post_or_a_huge_body_never_reaches_a_route(client: TestClient) -> None:
    form = client.post(
        "/ui/session", content=b"code=x", headers={"Origin": BASE, "Content-Type": "text/plain"}
    )
    assert form.status_code == 415
    huge = client.post("/ui/session", content=b"x" * (MAX_BYTES + 1), headers={**JSON, "Origin": BASE})
    assert huge.status_code == 413


# -- what a session reaches ---------------------------------------------------------------


def test_a_session_calls_the_service_verbs(client: TestClient, memory_service: MemoryService) -> None:
    page = sign_in(client)
    made = client.post("/rpc", json={"method": "remember", "arguments": {"text": "Use uv"}}, headers=page)
    memory_id = made.json()["result"]["memory"]["id"]
    edited = client.post(
        "/rpc",
        json={"method": "edit", "arguments": {"memory_id": memory_id, "text": "Use uv, not pip"}},
        headers=page,
    )
    assert edited.status_code == 200 and memory_service.show(memory_id).memory.text == "Use uv, not pip"
    assert [e.kind.value for e in memory_service.history(memory_id)] == ["edit"]


@pytest.mark.parametrize(("method", "status"), [("confirm", "active"), ("reject", "archived")])
def test_a_person_confirms_or_rejects_an_agents_proposal_in_the_page(
    client: TestClient, memory_service: MemoryService, method: str, status: str
) -> None:
    proposal = memory_service.remember(
        "Always squash merge", category="directive", project="/work/shop", source="mcp"
    ).memory
    answer = client.post(
        "/rpc", json={"method": method, "arguments": {"memory_id": proposal.id}}, headers=sign_in(client)
    )
    assert answer.status_code == 200 and answer.json()["result"]["status"] == status
    assert memory_service.show(proposal.id).memory.status.value == status


@pytest.mark.parametrize("origin", [None, "http://127.0.0.1:8000", "https://evil.example"])
def test_a_session_from_another_origin_is_refused(
    client: TestClient, memory_service: MemoryService, origin: str | None
) -> None:
    page = sign_in(client)
    headers = {k: v for k, v in page.items() if k != "Origin"} | ({"Origin": origin} if origin else {})
    answer = client.post("/rpc", json={"method": "remember", "arguments": {"text": "x"}}, headers=headers)
    assert answer.status_code == 403
    assert memory_service.list(limit=5) == []


@pytest.mark.parametrize(
    "method", ["export_dir", "bootstrap", "import_file", "ingest_opencode", "claim_item"]
)
def test_a_session_may_not_call_verbs_the_view_does_not_need(client: TestClient, method: str) -> None:
    args = {
        "export_dir": {"directory": "/tmp/x"},
        "bootstrap": {"path": "/"},
        "import_file": {"path": "/etc/passwd"},
        "ingest_opencode": {},
        "claim_item": {"session_id": "s", "item": "i"},
    }[method]
    answer = client.post("/rpc", json={"method": method, "arguments": args}, headers=sign_in(client))
    assert answer.status_code == 403 and "graphmem ui may not call" in error_of(answer)


@pytest.mark.parametrize(("method", "path"), [("POST", "/mcp"), ("POST", "/plugin/inject"), ("GET", "/stats"),
                                              ("GET", "/metrics"), ("POST", "/ui/login")])  # fmt: skip
def test_a_session_reaches_only_the_views_routes(client: TestClient, method: str, path: str) -> None:
    answer = client.request(method, path, json={} if method == "POST" else None, headers=sign_in(client))
    assert answer.status_code == 403


def test_a_session_is_not_the_local_token(client: TestClient) -> None:
    page = sign_in(client)
    assert (
        client.post(
            "/rpc", json={"method": "stats"}, headers={**page, "Authorization": "Bearer nope"}
        ).status_code
        == 401
    )


def test_signing_out_ends_the_session(client: TestClient) -> None:
    page = sign_in(client)
    assert client.post("/ui/signout", json={}, headers=page).json() == {"signed_out": True}
    assert client.post("/rpc", json={"method": "stats"}, headers=page).status_code == 401


# -- graph, context, status ---------------------------------------------------------------


def test_the_graph_of_a_memory(client: TestClient, memory_service: MemoryService, git_project: str) -> None:
    memory = memory_service.remember("Fees live in src/app.py", project=git_project).memory
    answer = client.post("/ui/graph", json={"key": memory.id}, headers=sign_in(client))
    found = answer.json()["result"]
    assert found["center"]["key"] == memory.id
    assert "src/app.py" in {node["label"] for node in found["nodes"]}


def test_the_graph_of_a_target_it_names(
    client: TestClient, memory_service: MemoryService, git_project: str
) -> None:
    memory_service.remember("Fees live in src/app.py", project=git_project)
    answer = client.post(
        "/ui/graph", json={"target": "src/app.py", "project": git_project}, headers=sign_in(client)
    )
    assert answer.json()["result"]["center"]["label"] == "src/app.py"


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({}, 400, 'Send "key"'),
        ({"key": ""}, 400, 'Send "key"'),
        ({"key": 12}, 400, '"key" must be text'),
        ({"key": ["mem_x"]}, 400, '"key" must be text'),
        ({"key": "mem_x", "limit": "9"}, 400, '"limit" must be a whole number'),
        ({"key": "mem_x", "limit": True}, 400, '"limit" must be a whole number'),
        ({"key": "mem_x", "limit": 10**9}, 400, "limit must be between"),
        ({"key": "mem_x", "limit": 0}, 400, "limit must be between"),
        ({"key": "k" * 5000}, 400, "over 1000"),
        ({"key": "mem_\u0000"}, 400, "memory id"),
        ({"target": "nothing-known-here"}, 400, "names no MR"),
        ({"key": "mem_0000000000000000"}, 200, "No memory"),
        ({"key": "MergeRequest:a/b!1"}, 200, "No entity"),
    ],
)
def test_a_bad_graph_request_says_what_to_send(
    client: TestClient, body: dict[str, Any], status: int, says: str
) -> None:
    answer = client.post("/ui/graph", json=body, headers=sign_in(client))
    assert answer.status_code == status and says in error_of(answer)


def test_context_hands_the_bundle_and_its_markdown(
    client: TestClient, memory_service: MemoryService, git_project: str
) -> None:
    memory_service.remember("Fees live in src/app.py", project=git_project)
    body = {"target": "src/app.py", "project": git_project, "max_tokens": 500}
    answer = client.post("/ui/context", json=body, headers=sign_in(client))
    bundle = answer.json()["result"]
    assert "Fees live in src/app.py" in bundle["markdown"] and bundle["max_tokens"] == 500


def test_context_and_graph_never_answer_with_another_projects_file_of_that_path(
    client: TestClient, memory_service: MemoryService, git_project: str, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    (other / "lib").mkdir(parents=True)
    (other / "lib" / "only.py").write_text("x = 1\n", "utf-8")
    memory_service.remember("lib/only.py holds the only copy", project=str(other.resolve()))
    headers = sign_in(client)

    body = {"target": "lib/only.py", "project": git_project}
    bundle = client.post("/ui/context", json=body, headers=headers).json()["result"]
    graph = client.post("/ui/graph", json=body, headers=headers)

    assert bundle["found"] is False and bundle["entity"] is None
    assert "holds the only copy" not in bundle["markdown"]
    assert graph.status_code == 400 and "names no MR, issue, epic, file or symbol" in error_of(graph)


@pytest.mark.parametrize("route", ["/ui/context", "/ui/graph"])
@pytest.mark.parametrize(
    ("project", "says"),
    [("/src/sh\x00op", "NUL"), ("src/shop", "is relative"), ("/" + "a" * 5000, "is over")],
    ids=["nul", "relative", "overlong"],
)
def test_a_project_the_page_sends_is_checked_as_every_tool_checks_it(
    client: TestClient, route: str, project: str, says: str
) -> None:
    answer = client.post(route, json={"target": "src/app.py", "project": project}, headers=sign_in(client))

    assert answer.status_code == 400 and says in error_of(answer)


def test_the_page_s_project_is_resolved_as_every_tool_resolves_it(
    memory_service: MemoryService, git_project: str
) -> None:
    inside = str(Path(git_project) / "src")
    runtime = Runtime(  # the daemon resolves a folder to its checkout's toplevel (git)
        memory_service,
        log_hint="stderr",
        resolve_project=lambda p: git_project if p and p.startswith(git_project) else p,
        version="t",
    )
    policy = Policy.build(token=TOKEN, api_key=None, max_bytes=MAX_BYTES, rate_limit=0)
    memory_service.remember("Fees live in src/app.py", project=git_project)
    with TestClient(build_app(runtime, policy), base_url=BASE, raise_server_exceptions=False) as client:
        headers = sign_in(client)
        answers = {
            (route, project): client.post(
                route, json={"target": "src/app.py", "project": project}, headers=headers
            )
            for route in ("/ui/context", "/ui/graph")
            for project in (inside, git_project)
        }

    assert answers["/ui/context", inside].json()["result"]["found"] is True
    for route in ("/ui/context", "/ui/graph"):
        assert answers[route, inside].status_code == 200, answers[route, inside].text
        assert answers[route, inside].json() == answers[route, git_project].json()


# -- the graph of a target, as get_context reads it -----------------------------------------

CLICK_CORE = ParsedFile(
    "python",
    (
        Definition("class", "Context", "Context", 1, 20, "class Context", None, "h-ctx", None),
        Definition("method", "invoke", "Context.invoke", 5, 9, "def invoke(self)", None, "h-ci", "Context"),
        Definition("class", "Group", "Group", 22, 40, "class Group", None, "h-group", None),
        Definition("method", "invoke", "Group.invoke", 25, 30, "def invoke(self)", None, "h-gi", "Group"),
    ),
    (),
    (),
    (),
    0,
)  # fmt: skip


@pytest.fixture
def click_project(memory_service: MemoryService, git_project: str) -> str:
    """A checkout whose ``src/click/core.py`` (``class Context``, as in click) was parsed by hand,
    and a memory naming !12 and #4 (so both are in the graph)."""
    core = Path(git_project) / "src" / "click" / "core.py"
    core.parent.mkdir(parents=True)
    core.write_text("class Context:\n    pass\n", "utf-8")
    assert memory_service.code is not None
    code = ProjectCode(git_project, {"src/click/core.py": CLICK_CORE})
    state = FileState("src/click/core.py", "c1", 10, 1)
    memory_service.code.save(
        CodeScan(git_project, {"src/click/core.py": (CLICK_CORE, state)}, [], code, code.edges(), utc_now())
    )
    memory_service.remember("!12 fixed #4 by keeping the parent's settings", project=git_project)
    return git_project


@pytest.mark.parametrize(
    ("target", "kind", "named"),
    [
        ("Context", "Symbol", "Context"),  # a capitalised word: no word-mention, but a symbol
        ("src/click/core.py::Context", "Symbol", "Context"),
        ("Context.invoke", "Symbol", "Context.invoke"),
        ("src/click/core.py", "File", ""),
        ("src/click/core.py:5-9", "File", ""),  # lines of a file: the file, as get_context has it
        ("!12", "MergeRequest", "!12"),
        ("#4", "Issue", "#4"),
    ],
)
def test_the_graph_names_what_get_context_names(
    client: TestClient, click_project: str, target: str, kind: str, named: str
) -> None:
    headers, body = sign_in(client), {"target": target, "project": click_project}

    graph = client.post("/ui/graph", json=body, headers=headers)
    bundle = client.post("/ui/context", json=body, headers=headers).json()["result"]

    assert graph.status_code == 200, graph.text
    center = graph.json()["result"]["center"]
    assert center["kind"] == kind and center["key"] == bundle["entity"]["key"]
    core = "src/click/core.py"
    expected = {"Symbol": symbol_key(click_project, core, named), "File": file_key(click_project, core)}
    assert center["key"] == expected[kind] if kind in expected else center["label"] == named


def test_the_graph_of_a_memory_id_target(
    client: TestClient, memory_service: MemoryService, click_project: str
) -> None:
    [memory] = memory_service.list(project=click_project, limit=5)
    body = {"target": f" {memory.id} ", "project": click_project}
    found = client.post("/ui/graph", json=body, headers=sign_in(client)).json()["result"]
    assert found["center"]["key"] == memory.id


def test_a_graph_target_naming_several_symbols_lists_them(client: TestClient, click_project: str) -> None:
    body = {"target": "invoke", "project": click_project}
    answer = client.post("/ui/graph", json=body, headers=sign_in(client))
    assert answer.status_code == 400
    says = error_of(answer)
    assert "Context.invoke (src/click/core.py)" in says and "Group.invoke (src/click/core.py)" in says
    assert "path::symbol" in says


@pytest.mark.parametrize(
    ("target", "says"),
    [("src/click/core.py:0-3", "counted from 1"), ("src/click/core.py:1-900000", "ask for the file itself")],
)
def test_a_graph_target_of_bad_lines_says_how_to_write_them(
    client: TestClient, click_project: str, target: str, says: str
) -> None:
    body = {"target": target, "project": click_project}
    answer = client.post("/ui/graph", json=body, headers=sign_in(client))
    assert answer.status_code == 400 and says in error_of(answer), answer.text


@pytest.mark.parametrize(
    ("body", "says"), [({}, 'Send "target"'), ({"target": "x", "max_tokens": "many"}, "a whole number")]
)
def test_a_bad_context_request_is_a_400(client: TestClient, body: dict[str, Any], says: str) -> None:
    answer = client.post("/ui/context", json=body, headers=sign_in(client))
    assert answer.status_code == 400 and says in error_of(answer)


def test_status_brings_health_and_stats(client: TestClient, memory_service: MemoryService) -> None:
    memory_service.remember("Use uv")
    found = client.post("/ui/status", json={}, headers=sign_in(client)).json()["result"]
    assert found["stats"]["memories"] == 1 and found["health"]["status"] in ("healthy", "degraded")


# -- the home page ------------------------------------------------------------------------


def test_status_counts_the_project_beside_the_store(
    client: TestClient, memory_service: MemoryService, git_project: str
) -> None:
    memory_service.remember("Fees live in src/app.py", category="decision", project=git_project)
    memory_service.remember("Use uv", category="preference", scope="global")
    answer = client.post("/ui/status", json={"project": git_project}, headers=sign_in(client))
    project = answer.json()["result"]["project"]
    assert project["name"] == git_project and project["total"] == 1 and project["store_total"] == 2
    assert project["by_category"] == {"decision": 1}


def test_status_says_a_store_failure_instead_of_a_500(
    client: TestClient, memory_service: MemoryService, git_project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(*args: object, **kwargs: object) -> None:
        raise StoreError("The PostgreSQL server at db:5432 does not answer.")

    monkeypatch.setattr(memory_service.parts.home, "counts", failing)
    answer = client.post("/ui/status", json={"project": git_project}, headers=sign_in(client))

    assert answer.status_code == 200
    assert answer.json()["error"]["type"] == "StoreError"


def test_home_lists_what_needs_a_person(
    client: TestClient, memory_service: MemoryService, git_project: str
) -> None:
    from graphmem.core.events import Cause
    from graphmem.core.models import Status

    proposal = memory_service.remember(
        "Always squash merge", category="directive", source="mcp", project=git_project
    ).memory
    blocker = memory_service.remember(
        "Releases wait for the audit", category="blocker", project=git_project
    ).memory
    done = memory_service.remember("Blocked until !13 merges", category="blocker", project=git_project).memory
    memory_service.writer.set_status(
        done.id,
        Status.RESOLVED,
        allowed_from=(Status.ACTIVE,),
        cause=Cause("rule", "!13 merged", "mr-merged"),
    )
    learned = memory_service.remember(
        "The test suite needs Redis running", project=git_project, session="ses_1", source="opencode"
    ).memory
    memory_service.remember("Elsewhere: deploys on Fridays", project="/elsewhere")

    answer = client.post("/ui/home", json={"project": git_project}, headers=sign_in(client))

    home = answer.json()["result"]
    assert [i["memory"]["id"] for i in home["proposed"]["items"]] == [proposal.id]
    assert "agent" in home["proposed"]["items"][0]["memory"]["provenance"]
    assert [i["memory"]["id"] for i in home["blockers"]["items"]] == [blocker.id]
    [change] = home["forge"]["items"]
    assert change["memory"]["id"] == done.id and change["event"]["reason"] == "!13 merged"
    assert change["event"]["undone_by"] is None and change["event"]["id"]
    assert home["learned"][0]["session"] == "ses_1"
    assert [m["id"] for m in home["learned"][0]["memories"]] == [learned.id]
    assert home["counts"]["total"] == 4 and home["counts"]["store_total"] == 5
    assert home["counts"]["by_category"]["blocker"] == 2


def test_home_lists_memories_the_code_changed_under(
    client: TestClient, memory_service: MemoryService, git_project: str
) -> None:
    from unit.service.test_staleness import parsed, scan

    scan(memory_service, git_project, {"src/app.py": parsed("v1")})
    note = memory_service.remember(
        "main() must print the greeting before it returns", category="decision", project=git_project
    ).memory
    scan(memory_service, git_project, {"src/app.py": parsed("v2")})
    home = client.post("/ui/home", json={"project": git_project}, headers=sign_in(client)).json()["result"]
    [item] = home["stale"]["items"]
    assert item["memory"]["id"] == note.id and item["why"].startswith("possibly stale: main changed")


def test_home_only_reads(client: TestClient, memory_service: MemoryService, git_project: str) -> None:
    from datetime import UTC, datetime

    expired = memory_service.parts.rememberer.remember(
        "The freeze ends on Monday",
        category="blocker",
        project=git_project,
        expires_at=datetime(2020, 1, 1, tzinfo=UTC),
    ).memory
    store = memory_service.store
    before = (list(store.all_events()), store.get_memories([expired.id])[expired.id])
    answer = client.post("/ui/home", json={"project": git_project}, headers=sign_in(client))
    assert answer.status_code == 200
    assert (list(store.all_events()), store.get_memories([expired.id])[expired.id]) == before


@pytest.mark.parametrize(
    ("body", "says"),
    [(b"[]", "JSON object"), (b'{"project": 3}', '"project" must be text'),
     (b'{"project": "rel/ative"}', "relative"), (b'{"projects": "/x"}', "Unknown field")],
)  # fmt: skip
def test_a_bad_home_request_is_a_400(client: TestClient, body: bytes, says: str) -> None:
    answer = client.post("/ui/home", content=body, headers=sign_in(client))
    assert answer.status_code == 400 and says in error_of(answer)


def test_the_vendored_graph_library_is_the_pinned_cytoscape_with_its_licence(client: TestClient) -> None:
    from importlib import resources

    served = client.get("/ui/cytoscape.js")
    assert served.status_code == 200 and served.headers["content-type"].startswith("text/javascript")
    assert 'version="3.35.0"' in served.text and "eval(" not in served.text  # what docs/ui.md names
    licence = resources.files("graphmem.server").joinpath("ui", "cytoscape-LICENSE.txt").read_text("utf-8")
    assert "The Cytoscape Consortium" in licence and "Permission is hereby granted" in licence
