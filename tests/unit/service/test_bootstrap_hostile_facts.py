"""bootstrap on a repository whose manifests and docs hold what no memory may: a NUL, a lone
surrogate (a JSON ``\\ud83d``), with the real file walker and the in-memory store.

Each became a fact's text: the surrogate failed the pass as it hashed the fact, the NUL failed
every pass after the file changed (an edit refuses a NUL). What each reader makes of such text
is tests/unit/core/test_project_facts.py. A file that is no text under a doc's name (a NUL near
its start, or mostly undecodable) gives no facts at all; a fact too long for an edit is cut.
"""

from __future__ import annotations

import logging
import random
from pathlib import Path

import pytest
from support.git_repo import git, new_repo

from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.core.skipped_files import BINARY_SNIFF_BYTES
from graphmem.service.memory import MemoryService


def from_file(store: FakeGraphStore, path: str) -> list[str]:
    return [m.text for m in store.all_memories() if m.source.startswith(f"bootstrap:{path}#")]


def write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).write_text(text, "utf-8")
    git(root, "add", *files)
    git(root, "commit", "-q", "-m", "change")


# Text enough that a NUL after it is one bad character of a text file, not a binary file's mark
PAST_THE_SNIFF = "Notes.\n" * (BINARY_SNIFF_BYTES // 7 + 1)


def test_facts_holding_a_nul_or_a_lone_surrogate_are_stored_and_updated_by_later_passes(
    memory_service: MemoryService, memory_store: FakeGraphStore, tmp_path: Path
) -> None:
    root = new_repo(tmp_path / "repo")
    rules = f"# Rules\n\n{PAST_THE_SNIFF}\n- Never push\x00 to main.\n"
    write(root, {"package.json": '{"name": "shop\\ud83d", "description": "a \\u0000 shop"}',
                 "AGENTS.md": rules})  # fmt: skip
    memory_service.bootstrap(root, history=0)
    write(root, {"package.json": '{"name": "shop\\ud83d", "description": "a \\u0000 store"}',
                 "AGENTS.md": rules + "- Always run make test.\n"})  # fmt: skip

    report = memory_service.bootstrap(root, history=0)

    assert report.facts_updated == 1 and report.facts_added == 1
    assert from_file(memory_store, "package.json") == [
        "The JavaScript package shop\ufffd: a \ufffd store (from package.json)."
    ]
    assert sorted(from_file(memory_store, "AGENTS.md")) == [
        "Directive from AGENTS.md: always run make test.",
        "Directive from AGENTS.md: never push\ufffd to main.",
    ]


def test_a_file_under_a_doc_or_manifest_name_that_is_no_text_gives_no_facts(
    memory_service: MemoryService,
    memory_store: FakeGraphStore,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A picture named README.md was one "description" of its bytes; go.mod of undecodable bytes
    # was the Go module "����"
    root = new_repo(tmp_path / "repo")
    noise = random.Random(7).randbytes(4_000)
    files = {
        "README.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + noise,
        "go.mod": b"module " + bytes(range(0x80, 0x100)) * 8 + b"\n\ngo 1.22\n",
        "package.json": b'{"name": "shop"}\x00' + noise,
        "AGENTS.md": b"\x7fELF\x02\x01\x01\x00" + noise,
        "docs/guide.md": "# Guide\n\n## Café au lait\n".encode("latin-1"),  # text, in Latin-1
    }
    (root / "docs").mkdir()
    for path, data in files.items():
        (root / path).write_bytes(data)
    git(root, "add", *files)
    git(root, "commit", "-q", "-m", "binaries")

    with caplog.at_level(logging.INFO, logger="graphmem.service.repository_docs"):
        memory_service.bootstrap(root, history=0)

    assert [m.text for m in memory_store.all_memories() if m.source.startswith("bootstrap:")] == [
        "docs/guide.md (Guide) covers: Caf\ufffd au lait."
    ]
    assert sum("'README.md'" in r.getMessage() and "not text" in r.getMessage() for r in caplog.records) == 1


def test_a_manifest_of_long_lists_is_read_again_by_later_passes(
    memory_service: MemoryService, memory_store: FakeGraphStore, tmp_path: Path
) -> None:
    # A fact of every test path and option was stored, and an edit refuses one over 8,000
    # characters: the pass after the file changed failed
    root = new_repo(tmp_path / "repo")
    paths = ", ".join(f'"tests/part{n}"' for n in range(3_000))
    write(root, {"pyproject.toml": f"[tool.pytest.ini_options]\ntestpaths = [{paths}]\n"})
    memory_service.bootstrap(root, history=0)
    write(root, {"pyproject.toml": f'[tool.pytest.ini_options]\ntestpaths = ["tests/a", {paths}]\n'})

    report = memory_service.bootstrap(root, history=0)

    assert report.facts_updated == 1
    (fact,) = from_file(memory_store, "pyproject.toml")
    assert fact.startswith("Tests run with pytest: tests in tests/a, tests/part0,")
