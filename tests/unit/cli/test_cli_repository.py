"""``graphmem export --project --to DIR`` and ``graphmem import DIR``, run in process on real stores."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support.git_repo import copied_repository
from support.stores import KuzuTemplates

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.cli import main
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

Invoke = Callable[..., Result]


def checkout(parent: Path) -> Path:
    return copied_repository(parent / "shop", _shop)


def _shop(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main() -> None:\n    pass\n", "utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


@pytest.fixture
def invoke(monkeypatch: pytest.MonkeyPatch, kuzu_templates: KuzuTemplates) -> Invoke:
    """Runs ``graphmem --data-dir DATA --project WHERE ARGS``; a data dir's first command finds an
    empty store's files there, as ``open_memory`` makes them (``KuzuTemplates.lay_out``)."""

    def factory(data_dir: Path | None, *, check_model: bool = True) -> MemoryService:
        if data_dir is not None and not data_dir.exists():
            kuzu_templates.lay_out(data_dir, 256)
        return open_memory(
            load_settings(data_dir=data_dir), embedder=HashEmbedder(256), check_model=check_model
        )

    monkeypatch.setattr(main, "SERVICE_FACTORY", factory)
    runner = CliRunner()

    def run(*args: str, data: Path, where: Path) -> Result:
        return runner.invoke(main.cli, ["--data-dir", str(data), "--project", str(where), *args])

    return run


def ok(result: Result) -> Result:
    assert result.exit_code == 0, result.output
    return result


def test_alice_exports_and_bob_imports_into_his_checkout(invoke: Invoke, tmp_path: Path) -> None:
    alice, bob = checkout(tmp_path / "alice"), checkout(tmp_path / "bob")
    a, b = tmp_path / "alice-data", tmp_path / "bob-data"
    ok(invoke("remember", "-c", "decision", "Keep src/app.py free of I/O", data=a, where=alice))

    exported = ok(invoke("export", "--project", "--to", str(alice / ".graphmem"), data=a, where=alice))
    imported = ok(invoke("import", str(alice / ".graphmem"), data=b, where=bob))

    assert "wrote memories.jsonl, MEMORY.md" in exported.stderr
    assert imported.stdout.startswith("imported 1 memory (0 already present)")
    listed = json.loads(ok(invoke("list", "--json", data=b, where=bob)).stdout)
    assert [m["project"] for m in listed["memories"]] == [str(bob)]


def test_a_second_export_reports_the_files_unchanged(invoke: Invoke, tmp_path: Path) -> None:
    root = checkout(tmp_path)
    data = tmp_path / "data"
    ok(invoke("remember", "-c", "decision", "Keep src/app.py free of I/O", data=data, where=root))
    ok(invoke("export", "--to", str(root / ".graphmem"), data=data, where=root))

    again = ok(invoke("export", "--to", str(root / ".graphmem"), data=data, where=root))

    assert "memories.jsonl, MEMORY.md unchanged" in again.stderr


def test_export_project_to_stdout_is_project_relative(invoke: Invoke, tmp_path: Path) -> None:
    root = checkout(tmp_path)
    data = tmp_path / "data"
    ok(invoke("remember", "-c", "decision", "Keep src/app.py free of I/O", data=data, where=root))

    result = ok(invoke("export", "--project", data=data, where=root))

    assert str(root) not in result.stdout
    assert '"key": "File:.::src/app.py"' in result.stdout


def test_export_refusing_to_drop_memories_exits_4(invoke: Invoke, tmp_path: Path) -> None:
    alice, bob = checkout(tmp_path / "alice"), checkout(tmp_path / "bob")
    ok(invoke("remember", "-c", "decision", "Alice's decision", data=tmp_path / "a", where=alice))
    ok(invoke("export", "--to", str(bob / ".graphmem"), data=tmp_path / "a", where=alice))

    refused = invoke("export", "--to", str(bob / ".graphmem"), data=tmp_path / "b", where=bob)
    forced = invoke("export", "--to", str(bob / ".graphmem"), "--force", data=tmp_path / "b", where=bob)

    assert refused.exit_code == 4
    # in the CLI's terms, naming the folder to import (relative to the project's root)
    assert "error: .graphmem/memories.jsonl holds 1 memory" in refused.stderr, refused.stderr
    assert "run `graphmem import .graphmem/` first" in refused.stderr
    assert "or export with --force to drop them" in refused.stderr
    assert forced.exit_code == 0


@pytest.mark.parametrize(
    "args",
    [
        ["--all-projects", "--project"],
        ["--to", "out", "-o", "kept.jsonl"],
        ["--force"],
    ],
)
def test_conflicting_export_options_are_usage_errors(
    invoke: Invoke, tmp_path: Path, args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    root = checkout(tmp_path)
    kept = Path("kept.jsonl")
    kept.write_text("mine\n", "utf-8")

    result = invoke("export", *args, data=tmp_path / "data", where=root)

    assert result.exit_code == 2
    assert not Path("out").exists()
    assert kept.read_text("utf-8") == "mine\n"


def test_export_project_outside_a_repository_says_what_to_do(invoke: Invoke, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()

    result = invoke("export", "--to", str(tmp_path / "out"), data=tmp_path / "data", where=plain)

    assert result.exit_code == 2
    assert "needs a project" in result.stderr


def test_import_of_a_folder_without_an_export_exits_2(invoke: Invoke, tmp_path: Path) -> None:
    root = checkout(tmp_path)

    result = invoke("import", str(root), data=tmp_path / "data", where=root)

    assert result.exit_code == 2
    assert "no memories.jsonl" in result.stderr


LEDGER = "def void_entry(entry):\n    return -entry.amount\n"


def test_a_bootstrap_after_importing_a_memory_about_a_symbol_takes_the_symbol_over(
    invoke: Invoke, tmp_path: Path
) -> None:
    alice, bob = checkout(tmp_path / "alice"), checkout(tmp_path / "bob")
    for root in (alice, bob):
        (root / "src" / "ledger.py").write_text(LEDGER, "utf-8")
    a, b = tmp_path / "alice-data", tmp_path / "bob-data"
    ok(invoke("bootstrap", "--history", "0", data=a, where=alice))
    note = "void_entry() in src/ledger.py reverses a posting, never deletes it"
    ok(invoke("remember", "-c", "decision", note, data=a, where=alice))
    ok(invoke("export", "--project", "--to", str(alice / ".graphmem"), data=a, where=alice))
    ok(invoke("import", str(alice / ".graphmem"), data=b, where=bob))

    first = invoke("bootstrap", "--history", "0", data=b, where=bob)
    again = invoke("bootstrap", "--history", "0", data=b, where=bob)

    assert (first.exit_code, again.exit_code) == (0, 0), first.output + again.output
    assert "2 files indexed (0 parsed, 2 unchanged), 0 removed" in again.output  # both the code graph's now
    [memory] = json.loads(ok(invoke("list", "--json", data=b, where=bob)).stdout)["memories"]
    shown = json.loads(ok(invoke("show", memory["id"], "--json", data=b, where=bob)).stdout)
    assert [(e["key"], e["title"]) for e in shown["entities"]] == [
        (f"File:{bob}::src/ledger.py", ""),
        (f"Symbol:{bob}::src/ledger.py::void_entry", "def void_entry(entry)"),
    ]
    assert shown["stale"] is None  # first seen by Bob's scan: not a changed body
    context = json.loads(ok(invoke("context", "src/ledger.py", "--json", data=b, where=bob)).stdout)
    assert context["code"]["Defines (1)"] == ["- function `void_entry` L1–2: def void_entry(entry)"]
