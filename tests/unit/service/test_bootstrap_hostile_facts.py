"""bootstrap on a repository whose manifests and docs hold what no memory may: a NUL, a lone
surrogate (a JSON ``\\ud83d``), with the real file walker and the in-memory store.

Each became a fact's text: the surrogate failed the pass as it hashed the fact, the NUL failed
every pass after the file changed (an edit refuses a NUL). What each reader makes of such text
is tests/unit/core/test_project_facts.py.
"""

from __future__ import annotations

from pathlib import Path

from support.git_repo import git, new_repo

from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.service.memory import MemoryService


def from_file(store: FakeGraphStore, path: str) -> list[str]:
    return [m.text for m in store.all_memories() if m.source.startswith(f"bootstrap:{path}#")]


def write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).write_text(text, "utf-8")
    git(root, "add", *files)
    git(root, "commit", "-q", "-m", "change")


def test_facts_holding_a_nul_or_a_lone_surrogate_are_stored_and_updated_by_later_passes(
    memory_service: MemoryService, memory_store: FakeGraphStore, tmp_path: Path
) -> None:
    root = new_repo(tmp_path / "repo")
    write(root, {"package.json": '{"name": "shop\\ud83d", "description": "a \\u0000 shop"}',
                 "AGENTS.md": "# Rules\n\n- Never push\x00 to main.\n"})  # fmt: skip
    memory_service.bootstrap(root, history=0)
    write(root, {"package.json": '{"name": "shop\\ud83d", "description": "a \\u0000 store"}',
                 "AGENTS.md": "# Rules\n\n- Never push\x00 to main.\n- Always run make test.\n"})  # fmt: skip

    report = memory_service.bootstrap(root, history=0)

    assert report.facts_updated == 1 and report.facts_added == 1
    assert from_file(memory_store, "package.json") == [
        "The JavaScript package shop\ufffd: a \ufffd store (from package.json)."
    ]
    assert sorted(from_file(memory_store, "AGENTS.md")) == [
        "Directive from AGENTS.md: always run make test.",
        "Directive from AGENTS.md: never push\ufffd to main.",
    ]
