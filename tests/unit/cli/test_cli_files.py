"""The CLI reads and writes the files the user names, with clear one-line errors (never a
traceback); and every mutating command's answer is true."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support.git_repo import copied_repository

from graphmem.cli import main

Invoke = Callable[..., Result]


def _shop(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main() -> None:\n    pass\n", "utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copied_repository(tmp_path / "shop", _shop)


@pytest.fixture
def invoke(tmp_path: Path, project: Path, in_memory_cli: object) -> Invoke:
    """``graphmem ARGS`` in the project, on the data dir's in-memory store (conftest.py)."""
    runner = CliRunner()

    def run(*args: str) -> Result:
        return runner.invoke(
            main.cli, ["--data-dir", str(tmp_path / "data"), "--project", str(project), *args]
        )

    return run


def clear_error(result: Result) -> str:
    """The one-line error of a failed command (no traceback)."""
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines, "no message"
    return result.output


def remember(invoke: Invoke, text: str, category: str = "fact") -> str:
    result = invoke("remember", "-c", category, text)
    assert result.exit_code == 0, result.output
    return result.stdout.strip().splitlines()[0]


# -- the user's files: anywhere, with clear errors ------------------------------------------------


@pytest.mark.parametrize("target", ["/nonexistent/dir/x.jsonl", "/dev/full"])
def test_an_export_that_cannot_be_written_says_why(invoke: Invoke, target: str) -> None:
    if target == "/dev/full" and not Path(target).exists():
        pytest.skip("no /dev/full here")
    remember(invoke, "Deploys go out on Tuesdays")

    message = clear_error(invoke("export", "-o", target))

    assert f"Cannot write {target}" in message


def test_an_export_onto_a_folder_is_a_usage_error(invoke: Invoke, tmp_path: Path) -> None:
    assert "is a directory" in clear_error(invoke("export", "-o", str(tmp_path)))


def test_the_user_exports_and_imports_anywhere(invoke: Invoke, tmp_path: Path) -> None:
    remember(invoke, "Deploys go out on Tuesdays")
    target = tmp_path / "elsewhere" / "memories.jsonl"
    target.parent.mkdir()

    exported = invoke("export", "-o", str(target))
    imported = invoke("import", str(target))
    shared = invoke("export", "--project", "--to", str(tmp_path / "share"))

    assert exported.exit_code == 0 and imported.exit_code == 0, exported.output + imported.output
    assert "1 already present" in imported.output
    assert shared.exit_code == 0 and (tmp_path / "share" / "MEMORY.md").exists()


def test_a_fifo_or_a_device_is_refused_at_once(invoke: Invoke, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")

    for path in (str(tmp_path / "pipe"), "/dev/zero"):
        assert "not a regular file" in clear_error(invoke("import", path))


def test_an_import_error_names_the_line_not_its_text(invoke: Invoke, tmp_path: Path) -> None:
    secret = "TOPSECRET-77aa"
    file = tmp_path / "creds.json"
    file.write_text(json.dumps({"type": secret}) + "\n" + f"token={secret}\n", "utf-8")

    message = clear_error(invoke("import", "--dry-run", str(file)))

    assert secret not in message and "line 1" in message and "line 2" in message


@pytest.mark.parametrize(
    "target", ["a" * 30, "g/" * 1000 + "!1", "src/" + "b" * 300, "/" + "c/" * 150, "d" * 300 + "/x.py"]
)
def test_a_long_context_target_is_answered(invoke: Invoke, target: str) -> None:
    result = invoke("context", target)

    assert result.exit_code == 0, result.output
    assert result.exception is None


# -- true acknowledgements --------------------------------------------------------------------------


def snapshot(tmp_path: Path) -> tuple[object, ...]:
    assert main.SERVICE_FACTORY is not None  # conftest.py's: the data dir's in-memory store
    memory = main.SERVICE_FACTORY(tmp_path / "data")
    try:
        memories = sorted(
            (m.id, m.text, m.category.value, m.status.value) for m in memory.store.all_memories()
        )
        links = sorted(
            (x.source, x.target, x.kind.value) for x in memory.store.links([m[0] for m in memories])
        )
    finally:
        memory.close()
    return tuple(memories), tuple(links)


COMMANDS = [
    ("edit", "{id}", "The staging deploy fails on migration 42"),
    ("edit", "{id}", "--category", "fact"),
    ("archive", "{id}"),
    ("resolve", "{id}"),
    ("delete", "--yes", "{id}"),
    ("link", "{id}", "{other}"),
]


@pytest.mark.parametrize("shape", ["{id}", " {id}", "{id} ", "{id}x", "mem_0000000000000000"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_a_commands_success_changed_the_store_and_its_failure_did_not(
    invoke: Invoke, tmp_path: Path, command: tuple[str, ...], shape: str
) -> None:
    blocker = remember(invoke, "The staging deploy fails on migrations", "blocker")
    other = remember(invoke, "Migrations run in one transaction each")
    given = shape.format(id=blocker)
    before = snapshot(tmp_path)

    result = invoke(*[part.format(id=given, other=other) for part in command])

    after = snapshot(tmp_path)
    if result.exit_code == 0:
        assert after != before, f"{command} answered success but changed nothing: {result.output}"
    else:
        assert after == before, f"{command} failed but changed the store: {result.output}"
        clear_error(result)
