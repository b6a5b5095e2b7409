"""The daemon and the stdio proxy, driven by FastMCP's own client over HTTP and stdio."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError
from support.daemons import (
    EARLY_SIGTERM,
    Daemon,
    http,
    read_info,
    rpc,
    sandbox_env,
    start_daemon,
    token_for,
    wait_healthy,
)
from support.hostile import rpc_call

from graphmem.server.manifest import MANIFEST_PATH

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    running = start_daemon(tmp_path_factory.mktemp("daemon") / "data")
    wait_healthy(running)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("proj")
    (root / "src").mkdir()
    (root / "src" / "refund.py").write_text("def refund() -> None: ...\n", "utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root.resolve()


def call(url: str, tool: str, **arguments: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with Client(url, auth=token_for(url)) as client:
            result = await client.call_tool(tool, arguments)
            assert result.structured_content is not None
            return result.structured_content

    return asyncio.run(go())


def call_error(url: str, tool: str, **arguments: Any) -> str:
    async def go() -> str:
        async with Client(url, auth=token_for(url)) as client:
            with pytest.raises(ToolError) as caught:
                await client.call_tool(tool, arguments)
            return str(caught.value)

    return asyncio.run(go())


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def test_every_memory_tool_over_http(daemon: Daemon, project: Path) -> None:
    url, where = daemon.mcp_url, str(project)
    kuzu = call(
        url,
        "remember",
        text="We chose Kùzu over SQLite for the graph store because it is "
        "embedded and speaks Cypher; see !12",
        category="decision",
        project=where,
    )
    assert kuzu["created"] and kuzu["memory"]["scope"] == "project"
    assert "!12" in kuzu["entities"]
    again = call(
        url,
        "remember",
        text="We chose Kùzu over SQLite for the graph store because it is "
        "embedded and speaks Cypher; see !12",
        category="decision",
        project=where,
    )
    assert not again["created"] and again["duplicate_of"] == kuzu["id"]
    rule = call(
        url,
        "remember",
        text="Never push directly to main; open a merge request",
        category="directive",
        project=where,
    )
    blocker = call(
        url, "remember", text="CI runners are out of disk space", category="blocker", project=where
    )

    found = call(url, "recall", query="which graph database did we pick", project=where)
    assert found["hits"][0]["id"] == kuzu["id"]
    assert found["hits"][0]["why"]["channels"]
    assert call(url, "recall", query="zebra migration patterns in the serengeti", project=where)["hits"] == []
    assert call(url, "recall", query="graph database")["hits"] == []  # a project memory, no project given

    context = call(url, "get_context", target="!12", project=where)
    assert context["entity"]["name"] == "!12"
    assert kuzu["id"] in context["markdown"] or "Kùzu" in context["markdown"]
    assert rule["memory"]["status"] == "proposed"  # an agent's directive waits for the user
    boot = call(url, "get_boot_context", project=where)
    assert "Never push directly to main" not in boot["markdown"]
    assert "CI runners are out of disk space — from an agent" in boot["markdown"]
    rpc_call(daemon, "confirm", memory_id=rule["id"])  # the user's CLI
    boot = call(url, "get_boot_context", project=where)
    assert "Never push directly to main" in boot["markdown"]

    resolved = call(url, "update_memory", id=blocker["id"], action="resolve")
    assert resolved["memory"]["status"] == "resolved"
    assert call(url, "update_memory", id=blocker["id"], action="unresolve")["memory"]["status"] == "active"
    edited = call(
        url,
        "update_memory",
        id=rule["id"],
        action="edit",
        text="Never push directly to main or release branches",
    )
    assert edited["memory"]["text"].endswith("release branches")
    newer = call(
        url,
        "remember",
        text="We moved the graph store to DuckDB for analytics",
        category="fact",
        project=where,
    )
    call(url, "update_memory", id=newer["id"], action="supersede", target_id=kuzu["id"])
    assert call(url, "recall", query="graph store Kùzu", project=where, history=True)["hits"]
    current = [h["id"] for h in call(url, "recall", query="graph store Kùzu", project=where)["hits"]]
    assert kuzu["id"] not in current
    call(url, "update_memory", id=newer["id"], action="unlink", target_id=kuzu["id"], link_kind="supersedes")
    assert kuzu["id"] in [
        h["id"] for h in call(url, "recall", query="graph store Kùzu", project=where)["hits"]
    ]
    archived = call(url, "update_memory", id=newer["id"], action="archive")
    assert archived["memory"]["status"] == "archived"

    assert "confirm=true" in call_error(url, "delete_memory", id=newer["id"])
    assert call(url, "delete_memory", id=newer["id"], confirm=True)["deleted"]["id"] == newer["id"]
    assert "No memory with id" in call_error(url, "update_memory", id=newer["id"], action="archive")


def test_export_and_import_round_trip_through_the_tools(
    daemon: Daemon, project: Path, tmp_path: Path
) -> None:
    url, where = daemon.mcp_url, str(project)
    call(url, "remember", text="The refund service retries three times", category="fact", project=where)
    exported = call(url, "export_memories", project=where)
    assert exported["memories"] >= 1
    assert all(json.loads(line) for line in exported["content"].splitlines())
    to_file = call(url, "export_memories", project=where, path="out.jsonl")  # into <data_dir>/exports/
    written = Path(to_file["path"]).read_text("utf-8").splitlines()
    assert written[1:] == exported["content"].splitlines()[1:]  # the header has the export time
    assert to_file["memories"] == exported["memories"]

    checked = call(url, "import_memories", content=exported["content"], dry_run=True)
    assert checked["dry_run"] and checked["memories_added"] == 0
    again = call(url, "import_memories", path="out.jsonl")
    assert again["memories_added"] == 0 and again["memories_skipped"] == exported["memories"]
    broken = exported["content"] + '{"type": "memory", "id": 5}\n'
    assert "line" in call_error(url, "import_memories", content=broken)
    assert "only inside" in call_error(url, "export_memories", path=str(tmp_path / "out.jsonl"))
    assert not (tmp_path / "out.jsonl").exists()


def test_sessions_claims_and_summaries(daemon: Daemon, project: Path) -> None:
    url, where = daemon.mcp_url, str(project)
    first = call(url, "session_start", agent="opencode/build", task="refund bug", project=where)["session"]
    second = call(url, "session_start", agent="opencode/plan", project=where)["session"]
    assert call(url, "claim_item", session_id=first["id"], item="!77")["claim"]["agent"] == "opencode/build"
    refused = call(url, "claim_item", session_id=second["id"], item="!77")
    assert refused["claim"] is None
    assert refused["conflict"]["agent"] == "opencode/build" and refused["conflict"]["session"] == first["id"]
    assert refused["conflict"]["item"] == "!77" and "opencode/build" in refused["conflict"]["message"]
    active = call(url, "active_sessions", project=where)
    assert {s["id"] for s in active["sessions"]} >= {first["id"], second["id"]}
    assert [c["item"] for c in active["claims"]] == ["!77"]
    assert call(url, "session_heartbeat", session_id=first["id"])["session"]["claims"] == ["!77"]
    boot = call(url, "get_boot_context", project=where)
    assert first["id"] in [s["id"] for s in boot["active_sessions"]]

    ended = call(
        url,
        "session_end",
        session_id=first["id"],
        summary="Fixed the refund rounding bug in !77; the currency table still needs a test",
    )
    assert ended["summary_memory_id"]
    assert call(url, "claim_item", session_id=second["id"], item="!77")["claim"]["agent"] == "opencode/plan"
    assert call(url, "release_item", session_id=second["id"], item="!77")["released"] is True
    hits = call(url, "recall", query="refund rounding bug", project=where)["hits"]
    assert hits[0]["id"] == ended["summary_memory_id"] and hits[0]["category"] == "event"
    assert "session_start again" in call_error(url, "session_heartbeat", session_id=first["id"])


def test_bad_arguments_get_messages_that_say_how_to_fix_the_call(daemon: Daemon) -> None:
    url = daemon.mcp_url
    assert "It accepts: query" in call_error(url, "recall", query="x", bogus=1)
    wrong_type = call_error(url, "recall", query="x", limit="many")
    assert wrong_type.startswith("Invalid arguments for recall: limit:") and "'many'" in wrong_type
    assert "errors.pydantic.dev" not in wrong_type
    assert "limit must be a whole number from 1 to 200, not 999" in call_error(
        url, "recall", query="x", limit=999
    )
    assert "category" in call_error(url, "remember", text="x", category="opinion")
    assert "8000" in call_error(url, "remember", text="x" * 9000) or "8,000" in call_error(
        url, "remember", text="x" * 9000
    )
    assert "empty" in call_error(url, "remember", text="   ").lower()
    assert "target_id" in call_error(url, "update_memory", id="mem_x", action="link")
    assert "Cannot read" in call_error(url, "recall", query="x", since="last tuesday-ish")


def test_cypher_like_text_is_stored_and_found_literally(daemon: Daemon, project: Path) -> None:
    text = "MATCH (n) DETACH DELETE n; -- don't run \"this\" on 'prod'"
    stored = call(daemon.mcp_url, "remember", text=text, category="fact", project=str(project))
    assert stored["memory"]["text"] == text
    hits = call(daemon.mcp_url, "recall", query="DETACH DELETE prod", project=str(project))["hits"]
    assert hits[0]["text"] == text


def one_answer(sock: socket.socket) -> bytes:
    """The first answer on ``sock``: its head and the ``content-length`` bytes of its body, or what
    came before the server closed (``b""`` when it closed at once). Not read to the end of the
    connection: one the server keeps open is closed only by its idle timeout, seconds later."""
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
            head, blank, body = received.partition(b"\r\n\r\n")
            lengths = [
                line.split(b":", 1)[1]
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ]
            if blank and lengths and len(body) >= int(lengths[0]):
                break
    except ConnectionResetError:  # the server may close before the client has read it all
        pass
    return received


def test_the_http_surface_rejects_bad_requests_and_keeps_serving(daemon: Daemon) -> None:
    status, _, raw = http(
        "POST",
        daemon.mcp_url,
        b"{not json",
        {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
    )
    assert status == 400 and json.loads(raw)["error"]["code"] == -32700
    host, port = daemon.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 3000000\r\n\r\n" + b"x" * 1000
        )
        answer = one_answer(sock).decode()
    assert answer == "" or answer.startswith("HTTP/1.1 413")
    assert "bytes" in answer or not answer.endswith("}")
    metrics = http("GET", f"{daemon.url}/metrics")[2].decode()
    assert 'graphmem_errors_total{kind="payload_too_large"} 1.0' in metrics
    status, body = rpc(daemon.mcp_url, "tools/call", {"name": "no_such_tool", "arguments": {}})
    assert status == 200 and ("error" in body or body["result"]["isError"])

    # a client that disconnects mid-request
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Content-Length: 5000\r\n\r\n{"jsonrpc": '
        )
    assert http("GET", f"{daemon.url}/health")[0] == 200
    assert call(daemon.mcp_url, "memory_status")["healthy"] is True


def test_health_stats_and_metrics(daemon: Daemon, project: Path) -> None:
    where = str(project)
    call(daemon.mcp_url, "remember", text="The metrics endpoint counts memories by category", project=where)
    call(daemon.mcp_url, "recall", query="anything at all")
    status, _, raw = http("GET", f"{daemon.url}/health")
    assert status == 200 and json.loads(raw)["status"] == "healthy"
    status, _, raw = http("GET", f"{daemon.url}/stats")
    stats = json.loads(raw)
    assert status == 200 and stats["model_loaded"] is True and stats["store_bytes"] > 0
    assert {"memories", "by_category", "embedding_backlog", "uptime_s", "active_sessions"} <= stats.keys()
    status, headers, raw = http("GET", f"{daemon.url}/metrics")
    metrics = raw.decode()
    assert status == 200 and headers["content-type"].startswith("text/plain")
    assert 'graphmem_tool_calls_total{outcome="ok",tool="recall"}' in metrics
    assert 'graphmem_tool_duration_seconds_bucket{le="0.05",tool="recall"}' in metrics
    assert "graphmem_embedding_backlog" in metrics and "graphmem_memories{" in metrics


def test_the_shipped_manifest_is_what_the_daemon_lists(daemon: Daemon) -> None:
    status, body = rpc(daemon.mcp_url, "tools/list")
    manifest = json.loads(MANIFEST_PATH.read_text("utf-8"))
    assert status == 200
    assert body["result"]["tools"] == manifest["tools"], "run: python -m graphmem.server.manifest"


def _stdio_client(data_dir: Path, cwd: Path) -> Client[StdioTransport]:
    """A client of a new ``graphmem mcp`` proxy, ended with the client's ``async with``: FastMCP
    keeps a stdio subprocess alive by default, and one still running when the transport is
    collected, during some later test, fails that test with a ResourceWarning."""
    env = sandbox_env(data_dir)
    transport = StdioTransport(
        sys.executable, ["-m", "graphmem", "mcp"], env=env, cwd=str(cwd), keep_alive=False
    )
    return Client(transport)


def test_stdio_proxy_starts_the_daemon_lists_tools_and_fills_in_the_project(
    tmp_path: Path, project: Path
) -> None:
    data_dir = tmp_path / "data"

    async def go() -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        async with _stdio_client(data_dir, project / "src") as client:
            names = [tool.name for tool in await client.list_tools()]
            stored = await client.call_tool(
                "remember", {"text": "Refunds are rounded half-even", "category": "fact"}
            )
            found = await client.call_tool("recall", {"query": "how are refunds rounded"})
            assert json.loads(text_of(found)) == found.structured_content  # JSON, never a repr
            return names, stored.structured_content or {}, found.structured_content or {}

    try:
        names, stored, found = asyncio.run(go())
        assert names == [tool["name"] for tool in json.loads(MANIFEST_PATH.read_text())["tools"]]
        assert stored["memory"]["project"] == str(project)
        assert found["hits"][0]["id"] == stored["id"]
        info = read_info(data_dir)
        assert info is not None  # the daemon outlives the client
    finally:
        subprocess.run([sys.executable, "-m", "graphmem", "stop"], env=sandbox_env(data_dir), check=False)


def test_the_proxy_restarts_a_killed_daemon_and_nothing_acknowledged_is_lost(
    tmp_path: Path, project: Path
) -> None:
    data_dir = tmp_path / "data"

    async def go() -> tuple[int, int, dict[str, Any]]:
        async with _stdio_client(data_dir, project) as client:
            stored = await client.call_tool("remember", {"text": "The staging DB is reset every Sunday"})
            first = read_info(data_dir)
            assert first is not None
            os.kill(first["pid"], signal.SIGKILL)
            found = await client.call_tool("recall", {"query": "when is staging reset"})
            second = read_info(data_dir)
            assert second is not None and found.structured_content is not None
            assert found.structured_content["hits"][0]["id"] == stored.structured_content["id"]  # type: ignore[index]
            return first["pid"], second["pid"], found.structured_content

    try:
        before, after, _ = asyncio.run(go())
        assert before != after
    finally:
        subprocess.run([sys.executable, "-m", "graphmem", "stop"], env=sandbox_env(data_dir), check=False)


def test_two_clients_starting_at_once_share_one_daemon(tmp_path: Path, project: Path) -> None:
    data_dir = tmp_path / "data"

    async def one(n: int) -> dict[str, Any]:
        async with _stdio_client(data_dir, project) as client:
            result = await client.call_tool("remember", {"text": f"Client {n} was here on the refund branch"})
            return result.structured_content or {}

    async def both() -> list[dict[str, Any]]:
        return list(await asyncio.gather(one(1), one(2)))

    try:
        results = asyncio.run(both())
        assert all(r["created"] for r in results)
        logs = (data_dir / "daemon.log").read_text("utf-8")
        assert logs.count("graphmem daemon: http") == 1
    finally:
        subprocess.run([sys.executable, "-m", "graphmem", "stop"], env=sandbox_env(data_dir), check=False)


def test_a_stale_daemon_file_is_ignored(tmp_path: Path, project: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "daemon.json").write_text(
        json.dumps(
            {
                "pid": 999999,
                "url": "http://127.0.0.1:9",
                "data_dir": str(data_dir),
                "started_at": 0,
                "version": "0",
            }
        )
    )
    (data_dir / "daemon.lock").write_text("")

    async def go() -> dict[str, Any]:
        async with _stdio_client(data_dir, project) as client:
            return (await client.call_tool("memory_status", {})).structured_content or {}

    try:
        assert asyncio.run(go())["data_dir"] == str(data_dir)
    finally:
        subprocess.run([sys.executable, "-m", "graphmem", "stop"], env=sandbox_env(data_dir), check=False)


def test_a_second_serve_on_the_same_data_dir_is_refused_and_the_first_keeps_running(daemon: Daemon) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "serve"],
        env=sandbox_env(daemon.data_dir),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "already serves" in done.stderr and str(daemon.process.pid) in done.stderr
    assert http("GET", f"{daemon.url}/health")[0] == 200


def test_a_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "graphmem", "serve", "--port", str(port)],
            env=sandbox_env(tmp_path / "data"),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode != 0 and f"Port {port}" in done.stderr and "in use" in done.stderr


def test_a_sigterm_before_the_server_has_started_stops_the_daemon_cleanly(tmp_path: Path) -> None:
    """A ``graphmem stop`` reads the daemon's address as soon as it is published, before the HTTP
    server has put its own handler in place: its SIGTERM then stops the daemon as it stops a
    serving one (its store closed, its address withdrawn), not lost (the daemon serving on until
    ``stop`` gave up and killed it) nor fatal on the spot."""
    data_dir = tmp_path / "data"
    done = subprocess.run(
        [sys.executable, *EARLY_SIGTERM, "serve"],
        env=sandbox_env(data_dir, GRAPHMEM_INGEST__ENABLED="false"),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    assert "graphmem daemon: http://" in done.stderr  # it had published its address
    assert read_info(data_dir) is None  # and withdrew it on the way out


def test_binding_beyond_loopback_needs_an_api_key(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "serve", "--host", "0.0.0.0"],
        env=sandbox_env(tmp_path / "data"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "GRAPHMEM_API_KEY" in done.stderr


def test_api_key_and_rate_limit(tmp_path: Path) -> None:
    guarded = start_daemon(tmp_path / "data", GRAPHMEM_API_KEY="s3cret-key", GRAPHMEM_RATE_LIMIT="5")
    try:
        assert rpc(guarded.mcp_url, "tools/list", token=False)[0] == 401
        assert rpc(guarded.mcp_url, "tools/list", Authorization="Bearer wrong")[0] == 401
        assert http("GET", f"{guarded.url}/health", token=False)[0] in (200, 503)  # health stays public
        auth = {"Authorization": "Bearer s3cret-key", "X-Graphmem-Client": "test"}
        statuses = [rpc(guarded.mcp_url, "tools/list", **auth)[0] for _ in range(6)]
        assert statuses == [200] * 5 + [429]
        status, headers, _ = http("GET", f"{guarded.url}/stats", headers=auth)
        assert status == 429 and int(headers["retry-after"]) >= 1
        # the limit keys on who authenticated, not on a header the client chooses
        other = {**auth, "X-Graphmem-Client": "another"}
        assert rpc(guarded.mcp_url, "tools/list", **other)[0] == 429
        assert rpc(guarded.mcp_url, "tools/list")[0] == 200  # the local token is another principal
        assert "s3cret-key" not in guarded.log.read_text("utf-8")
    finally:
        guarded.stop()


def graphmem_cli(data_dir: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphmem", *args],
        env=sandbox_env(data_dir),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_cli_works_through_a_running_daemon(daemon: Daemon, project: Path, tmp_path: Path) -> None:
    stored = graphmem_cli(
        daemon.data_dir, "remember", "-c", "procedure", "Release with make release after tagging", cwd=project
    )
    assert stored.returncode == 0, stored.stderr
    memory_id = stored.stdout.strip()
    found = graphmem_cli(daemon.data_dir, "recall", "--json", "how do we release", cwd=project)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["hits"][0]["id"] == memory_id
    over_mcp = call(daemon.mcp_url, "recall", query="how do we release", project=str(project))
    assert over_mcp["hits"][0]["id"] == memory_id  # one memory, whichever door

    missing = graphmem_cli(daemon.data_dir, "show", "mem_nope")  # the beginning of no id (prefixes work)
    assert missing.returncode == 3 and "No memory id starts with mem_nope" in missing.stderr
    unknown = graphmem_cli(daemon.data_dir, "show", "mem_0123456789abcdef")
    assert unknown.returncode == 3 and "No memory with id" in unknown.stderr
    out = tmp_path / "export.jsonl"
    assert graphmem_cli(daemon.data_dir, "export", "-o", str(out), cwd=project).returncode == 0
    checked = graphmem_cli(daemon.data_dir, "import", "--dry-run", str(out), cwd=project)
    assert checked.returncode == 0 and "already present" in checked.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text(out.read_text("utf-8") + "not json\n", "utf-8")
    refused = graphmem_cli(daemon.data_dir, "import", str(bad), cwd=project)
    assert refused.returncode == 2 and "line" in refused.stderr
    listed = graphmem_cli(daemon.data_dir, "archive", "--category", "procedure", "--dry-run", cwd=project)
    assert listed.returncode == 0 and memory_id in listed.stdout, listed.stderr  # the service's filter
    assert "would archive" in listed.stderr
    deleted = graphmem_cli(daemon.data_dir, "delete", "--yes", memory_id)
    assert deleted.returncode == 0, deleted.stderr
    assert graphmem_cli(daemon.data_dir, "show", memory_id).returncode == 3


def test_sessions_and_claims_from_the_cli_through_the_daemon(daemon: Daemon, project: Path) -> None:
    started = graphmem_cli(
        daemon.data_dir, "session", "start", "ci/nightly", "--task", "flaky test", cwd=project
    )
    assert started.returncode == 0, started.stderr
    session_id = started.stdout.strip()
    other = call(daemon.mcp_url, "session_start", agent="opencode/plan", project=str(project))["session"]
    assert call(daemon.mcp_url, "claim_item", session_id=other["id"], item="#9")["claim"]["item"] == "#9"

    mine = graphmem_cli(daemon.data_dir, "claim", session_id, "src/refund.py", cwd=project)
    taken = graphmem_cli(daemon.data_dir, "claim", session_id, "#9", cwd=project)
    active = graphmem_cli(daemon.data_dir, "session", "active", "--json", cwd=project)
    ended = graphmem_cli(
        daemon.data_dir, "session", "end", session_id, "--summary", "Nightly flake was a race in refund"
    )

    assert mine.returncode == 0 and "src/refund.py" in mine.stdout
    assert taken.returncode == 4 and "opencode/plan" in taken.stderr
    assert {s["id"] for s in json.loads(active.stdout)["sessions"]} >= {session_id, other["id"]}
    assert ended.returncode == 0 and "summary stored as mem_" in ended.stdout
    assert graphmem_cli(daemon.data_dir, "session", "heartbeat", session_id).returncode == 3
