"""What an agent can make graphmem read and write through the MCP tools and /rpc: only
graphmem's folders, only regular files, errors that never quote a file; and bad paths or
projects get a clear error, never an internal one or a hang."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.git_repo import copied_repository
from support.tools_client import Tools

from graphmem.app import resolve_project
from graphmem.server import rpc
from graphmem.server.runtime import Runtime
from graphmem.server.tools import build_mcp
from graphmem.service.memory import MemoryService

SECRET = "TOPSECRET-4f9a1c0b7d2e"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return copied_repository(tmp_path / "shop", _shop)


def _shop(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main() -> None:\n    pass\n", "utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


@pytest.fixture
def daemon(memory_service: MemoryService) -> Iterator[Tools]:
    """The daemon's tools around the in-memory store: its service is confined like the daemon's
    (what may be read and written is the service's and the tools' business, not the store's).
    A tool that blocks fails the test at the client's deadline."""
    runtime = Runtime(
        memory_service,
        log_hint="stderr",
        resolve_project=resolve_project,
        version="t",
    )
    with Tools(build_mcp(runtime), runtime) as tools:
        yield tools


def ok(daemon: Tools, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    failed, text = daemon.call(tool, arguments)
    assert not failed, text
    data: dict[str, Any] = json.loads(text)
    return data


def refused(daemon: Tools, tool: str, arguments: dict[str, Any]) -> str:
    failed, text = daemon.call(tool, arguments)
    assert failed, text
    assert "failed inside" not in text, text  # an internal error, not a clear one
    return text


def remember(memory: MemoryService, root: Path) -> str:
    text = f"Deploys need the {SECRET} approval"
    return memory.remember(text, category="directive", project=str(root)).memory.id


# -- finding 1: no arbitrary file write -----------------------------------------------------------


def test_an_agent_cannot_write_a_file_outside_graphmems_folders(
    daemon: Tools, root: Path, tmp_path: Path
) -> None:
    remember(daemon.runtime.memory, root)
    bashrc = tmp_path / "home" / ".bashrc"
    bashrc.parent.mkdir()
    bashrc.write_text("alias ll='ls -l'\n", "utf-8")
    keys = tmp_path / "home" / ".ssh" / "authorized_keys"

    for arguments in (
        {"path": str(keys), "format": "markdown"},
        {"path": str(bashrc), "overwrite": True},
        {"path": str(root / "src" / "app.py"), "overwrite": True, "project": str(root)},
        {"path": str(root / ".graphmem" / ".." / "src" / "app.py"), "overwrite": True, "project": str(root)},
        {"path": str(tmp_path / "any"), "repository": True, "project": str(root)},
    ):
        message = refused(daemon, "export_memories", arguments)
        assert "only inside" in message

    assert bashrc.read_text("utf-8") == "alias ll='ls -l'\n"
    assert not keys.exists() and not (tmp_path / "any").exists()
    assert (root / "src" / "app.py").read_text("utf-8").startswith("def main")


def test_a_link_out_of_graphmems_folders_leads_nowhere(daemon: Tools, root: Path, tmp_path: Path) -> None:
    remember(daemon.runtime.memory, root)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / ".graphmem").symlink_to(outside)  # a cloned repository may carry such a link
    exports = Path(daemon.runtime.memory.data_dir) / "exports"
    exports.mkdir(parents=True)
    (exports / "out.jsonl").symlink_to(tmp_path / "victim.txt")

    refused(
        daemon, "export_memories", {"path": str(root / ".graphmem"), "repository": True, "project": str(root)}
    )
    refused(daemon, "export_memories", {"path": "out.jsonl", "overwrite": True})

    assert list(outside.iterdir()) == []
    assert not (tmp_path / "victim.txt").exists()


def test_an_agent_exports_into_the_export_folder_and_the_projects_graphmem_folder(
    daemon: Tools, root: Path
) -> None:
    remember(daemon.runtime.memory, root)

    by_name = ok(daemon, "export_memories", {"path": "team.jsonl", "project": str(root)})
    in_project = ok(
        daemon,
        "export_memories",
        {"path": str(root / ".graphmem" / "all.md"), "format": "markdown", "project": str(root)},
    )
    again = ok(daemon, "export_memories", {"path": "team.jsonl", "overwrite": True})
    shared = ok(
        daemon, "export_memories", {"path": str(root / ".graphmem"), "repository": True, "project": str(root)}
    )

    exports = (Path(daemon.runtime.memory.data_dir) / "exports").resolve()
    assert Path(by_name["path"]) == exports / "team.jsonl" == Path(again["path"])
    assert Path(in_project["path"]).read_text("utf-8").startswith("# Memories")
    assert sorted(Path(p).name for p in shared["written"]) == ["MEMORY.md", "memories.jsonl"]
    assert by_name["memories"] == 1


def test_an_agent_never_overwrites_a_file_graphmem_did_not_write(daemon: Tools, root: Path) -> None:
    exports = Path(daemon.runtime.memory.data_dir) / "exports"
    exports.mkdir(parents=True)
    (exports / "notes.txt").write_text("the user's own notes\n", "utf-8")

    message = refused(daemon, "export_memories", {"path": "notes.txt", "overwrite": True})
    ok(daemon, "export_memories", {"path": "mine.jsonl"})
    exists = refused(daemon, "export_memories", {"path": "mine.jsonl"})

    assert "did not write" in message
    assert "overwrite=true" in exists
    assert (exports / "notes.txt").read_text("utf-8") == "the user's own notes\n"


def test_export_onto_a_folder_is_a_clear_error(daemon: Tools, root: Path) -> None:
    (Path(daemon.runtime.memory.data_dir) / "exports" / "folder").mkdir(parents=True)

    message = refused(daemon, "export_memories", {"path": "folder", "overwrite": True})

    assert "is a folder" in message


@pytest.mark.parametrize("path", ["{exports}", "{root}/.graphmem", ".", ""])
def test_an_export_file_never_takes_the_place_of_graphmems_folders(
    daemon: Tools, root: Path, path: str
) -> None:
    """Found by the hostile suite: a file written at the export folder's own path blocked every
    later export, and import_memories(path="") then imported that file."""
    exports = Path(daemon.runtime.memory.data_dir).resolve() / "exports"
    given = path.format(exports=exports, root=root)

    message = refused(daemon, "export_memories", {"path": given, "project": str(root)})

    assert "give a file name" in message
    assert not exports.is_file() and not (root / ".graphmem").is_file()
    assert "path is empty" in refused(daemon, "import_memories", {"path": ""})


def test_the_rpc_verbs_are_confined_too(daemon: Tools, root: Path, tmp_path: Path) -> None:
    remember(daemon.runtime.memory, root)
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"type": SECRET}) + "\n", "utf-8")

    wrote = rpc.call(
        daemon.runtime.memory,
        {"method": "export_dir", "arguments": {"directory": str(tmp_path), "project": str(root)}},
    )
    read = rpc.call(
        daemon.runtime.memory, {"method": "import_file", "arguments": {"path": str(secret), "dry_run": True}}
    )
    inside = rpc.call(
        daemon.runtime.memory,
        {"method": "export_dir", "arguments": {"directory": str(root / ".graphmem"), "project": str(root)}},
    )

    assert wrote["error"]["type"] == "InvalidInputError" and "only inside" in wrote["error"]["message"]
    assert read["error"]["type"] == "InvalidInputError" and SECRET not in json.dumps(read)
    assert not (tmp_path / "memories.jsonl").exists()
    assert inside["result"]["memories"] == 1


# -- finding 2: no arbitrary file read, no disclosure ---------------------------------------------


def test_an_agent_cannot_read_a_file_outside_the_project(daemon: Tools, root: Path, tmp_path: Path) -> None:
    secret = tmp_path / "credentials.json"
    secret.write_text(json.dumps({"type": SECRET, "token": SECRET}) + "\n", "utf-8")

    message = refused(daemon, "import_memories", {"path": str(secret), "dry_run": True, "project": str(root)})

    assert SECRET not in message and "only inside" in message


def test_import_errors_name_the_line_and_never_quote_it(daemon: Tools, root: Path) -> None:
    (root / "config.json").write_text(
        "\n".join(
            [
                json.dumps({"type": SECRET}),
                json.dumps({"type": "memory", SECRET: 1}),
                json.dumps({"type": "entity", "key": f"File:{SECRET}", "kind": "Issue", "name": SECRET}),
                f"password={SECRET}",
            ]
        ),
        "utf-8",
    )

    message = refused(
        daemon, "import_memories", {"path": str(root / "config.json"), "dry_run": True, "project": str(root)}
    )
    inline = refused(daemon, "import_memories", {"content": json.dumps({"type": SECRET}), "dry_run": True})

    assert SECRET not in message and SECRET not in inline
    assert "line 1" in message and "line 4" in message


def test_an_agent_imports_from_the_export_folder_and_the_project(daemon: Tools, root: Path) -> None:
    remember(daemon.runtime.memory, root)
    ok(daemon, "export_memories", {"path": "team.jsonl", "project": str(root)})
    ok(daemon, "export_memories", {"path": str(root / ".graphmem"), "repository": True, "project": str(root)})

    by_name = ok(daemon, "import_memories", {"path": "team.jsonl", "dry_run": True})
    folder = ok(
        daemon, "import_memories", {"path": str(root / ".graphmem"), "project": str(root), "dry_run": True}
    )

    assert by_name["memories_skipped"] == 1 and folder["memories_skipped"] == 1


# -- finding 5: bounded reads ---------------------------------------------------------------------


def test_a_fifo_a_device_or_a_huge_file_is_refused_at_once(
    daemon: Tools, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.mkfifo(root / "pipe.jsonl")  # nobody ever writes to it: reading it would block forever
    exports = Path(daemon.runtime.memory.data_dir) / "exports"
    exports.mkdir(parents=True)
    (exports / "zero").symlink_to("/dev/zero")
    monkeypatch.setattr("graphmem.service.file_access.MAX_IMPORT_BYTES", 1024 * 1024)
    monkeypatch.setattr("graphmem.service.transfer_files.MAX_IMPORT_BYTES", 1024 * 1024)
    (root / "big.jsonl").write_bytes(b"x" * (1024 * 1024 + 1))

    fifo = refused(daemon, "import_memories", {"path": str(root / "pipe.jsonl"), "project": str(root)})
    zero = refused(daemon, "import_memories", {"path": "zero"})
    big = refused(daemon, "import_memories", {"path": str(root / "big.jsonl"), "project": str(root)})

    assert "not a regular file" in fifo
    assert "only inside" in zero  # the link is followed, out of graphmem's folders
    assert "1 MiB limit" in big


# -- finding 6: bad projects and paths get clear errors -------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("recall", {"query": "deploys"}),
        ("remember", {"text": "Deploys go out on Tuesdays"}),
        ("get_boot_context", {}),
        ("get_context", {"target": "deploys"}),
        ("session_start", {"agent": "opencode"}),
        ("export_memories", {}),
    ],
)
@pytest.mark.parametrize("project", ["/tmp/sh\x00op", "/" + "a" * 300, "/a" * 2100])
def test_a_project_that_is_no_path_is_a_clear_error(
    daemon: Tools, tool: str, arguments: dict[str, Any], project: str
) -> None:
    message = refused(daemon, tool, {**arguments, "project": project})

    assert "project" in message


@pytest.mark.parametrize("path", ["/tmp/x\x00.jsonl", "/" + "b" * 300 + ".jsonl", "x" * 256])
def test_a_path_that_is_no_path_is_a_clear_error(daemon: Tools, path: str) -> None:
    assert "path" in refused(daemon, "export_memories", {"path": path})
    assert "path" in refused(daemon, "import_memories", {"path": path})


@pytest.mark.parametrize("target", ["a" * 30, "src/" + "b" * 300, "/" + "c/" * 150, "g/" * 999 + "!1"])
def test_a_long_context_target_gets_a_bundle(daemon: Tools, root: Path, target: str) -> None:
    bundle = ok(daemon, "get_context", {"target": target, "project": str(root)})

    assert bundle["entity"] is None or bundle["entity"]
