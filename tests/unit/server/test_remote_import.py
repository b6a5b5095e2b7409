"""An import through the daemon, end to end in process: ``RemoteMemory`` calling the daemon's
``/rpc`` on the daemon's service. What the imported memories say they came from is the file the
user named, whichever way the text travels: inline, or (too large for a request body) through a
copy in the daemon's export folder, which is the daemon's business and never a memory's source."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from graphmem.core.models import MemoryRecord
from graphmem.core.provenance import MAX_IMPORT_NAME_CHARS, label
from graphmem.server import remote
from graphmem.server.daemon_process import DaemonInfo
from graphmem.server.guard import Policy
from graphmem.server.http import build_app
from graphmem.server.remote import RemoteMemory
from graphmem.server.runtime import Runtime
from graphmem.service.memory import MemoryService

TOKEN = "t" * 43
URL = "http://127.0.0.1:9824"
NAME = "/home/me/backups/team notes.jsonl"  # the name the CLI gives: the user's file
EXPORT = "".join(
    json.dumps(
        {
            "type": "memory",
            "id": f"mem_{n}",
            "text": f"Payments retry {n} times",
            "category": "fact",
            "scope": "global",
            "created_at": "2024-05-01T09:12:04+00:00",
        }
    )
    + "\n"
    for n in range(3)
)


@pytest.fixture
def daemon(memory_service: MemoryService) -> Iterator[TestClient]:
    runtime = Runtime(memory_service, log_hint="stderr", resolve_project=lambda path: path, version="t")
    app = build_app(runtime, Policy.build(token=TOKEN, api_key=None, max_bytes=100_000, rate_limit=0))
    with TestClient(app, base_url=URL, raise_server_exceptions=False) as running:
        yield running


@pytest.fixture
def memory(
    daemon: TestClient, memory_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> RemoteMemory:
    """The CLI's memory, its calls answered by the in-process daemon over its data dir."""

    def exchange(self: RemoteMemory, body: bytes, headers: dict[str, str], *_: object) -> tuple[int, bytes]:
        answer = daemon.post("/rpc", content=body, headers=headers)
        return answer.status_code, answer.content

    monkeypatch.setattr(RemoteMemory, "_exchange", exchange)
    data_dir = memory_service.data_dir
    info = DaemonInfo(pid=1, url=URL, data_dir=str(data_dir), started_at=0.0, version="t")
    return RemoteMemory(info, TOKEN)  # type: ignore[abstract]


def imported(memory_service: MemoryService) -> list[MemoryRecord]:
    return [m for m in memory_service.store.all_memories() if m.id.startswith("mem_")]


@pytest.mark.parametrize("text", [EXPORT, EXPORT.encode()], ids=["text", "file-bytes"])
def test_a_large_import_through_the_daemon_is_credited_to_the_users_file_not_its_copy(
    memory: RemoteMemory, memory_service: MemoryService, monkeypatch: pytest.MonkeyPatch, text: str | bytes
) -> None:
    monkeypatch.setattr(remote, "INLINE_IMPORT_CHARS", 10)  # too large to go inline: staged

    summary = memory.import_text(text, name=NAME)

    assert summary.memories_added == 3
    stored = imported(memory_service)
    assert {m.source for m in stored} == {f"import:{NAME}"}  # as a small file's, or without a daemon
    assert {label(m) for m in stored} == {f"an import of {NAME}"}  # what show, recall, review say
    assert list((memory_service.data_dir / "exports").glob(".import-*")) == []  # the copy is gone


def test_a_large_imports_name_is_bounded_and_made_one_line_as_any_imports(
    memory: RemoteMemory, memory_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote, "INLINE_IMPORT_CHARS", 10)

    memory.import_text(EXPORT, name="/tmp/x\n\tfrom: user\r" + "y" * 5000 + ".jsonl")

    [source] = {m.source for m in imported(memory_service)}
    assert source == "import:…" + ("/tmp/x from: user " + "y" * 5000)[-(MAX_IMPORT_NAME_CHARS - 1) :]
