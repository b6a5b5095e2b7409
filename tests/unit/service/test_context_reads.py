"""get_context reads what its memories are about once: the memories linked to the target in one
read, the recalled ones from what recall read for them, and staleness and related entities judged
from those (each read was a Kùzu statement, or a hundred lookups, on a daemon embedding a backlog)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from pathlib import Path

import pytest

from graphmem.core.code import Definition, ParsedFile
from graphmem.core.codegraph import CodeScan, FileState, ProjectCode
from graphmem.core.keys import file_key
from graphmem.core.models import Category, Entity, MemoryRecord, Scope
from graphmem.core.timeparse import utc_now
from graphmem.service.memory import MemoryService

CART = ParsedFile(
    "python",
    tuple(
        Definition(
            "function", f"step_{n}", f"step_{n}", 3 * n + 1, 3 * n + 2, f"def step_{n}()", None, f"h{n}", None
        )
        for n in range(20)
    ),
    (),
    (),
    (),
    0,
)


@pytest.fixture
def project(memory_service: MemoryService, git_project: str) -> str:
    """``shop/cart.py`` and ``shop/pay.py``, with commits about them and a person's decision."""
    assert memory_service.code is not None
    files = {"shop/cart.py": CART, "shop/pay.py": ParsedFile("python", (), (), (), (), 0)}
    for path in files:
        (Path(git_project) / path).parent.mkdir(parents=True, exist_ok=True)
        (Path(git_project) / path).write_text("\n", "utf-8")
    code = ProjectCode(git_project, files)
    scan = {path: (parsed, FileState(path, f"c-{path}", 10, 1)) for path, parsed in files.items()}
    memory_service.code.save(CodeScan(git_project, scan, [], code, code.edges(), utc_now()))
    entities = memory_service.store.get_entities([file_key(git_project, f) for f in files])
    for n in range(12):
        when = datetime(2026, 1, 1 + n, tzinfo=UTC)
        sha = f"{n + 1:040x}"
        record = MemoryRecord(
            f"mem_{n:016x}", f"Tune the cart pipeline, step {n}", Category.EVENT, Scope.PROJECT, git_project,
            when, when, when, source="git:" + sha, content_hash="git:" + sha,
        )  # fmt: skip
        memory_service.writer.add([record], about=[(record.id, e) for e in entities.values()])
    memory_service.remember(
        "We decided shop/cart.py rounds half to even", category="decision", project=git_project
    )
    return git_project


def test_a_file_context_reads_what_its_memories_are_about_once_besides_recall(
    memory_service: MemoryService, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = memory_service.store
    asked: list[list[str]] = []
    about = store.about

    def counted(memory_ids: Collection[str]) -> dict[str, list[Entity]]:
        asked.append(list(memory_ids))
        return about(memory_ids)

    monkeypatch.setattr(store, "about", counted)
    bundle = memory_service.get_context("shop/cart.py", project=project, max_tokens=4000)

    shown = [item.hit.memory.text for items in bundle.groups.values() for item in items]
    assert "We decided shop/cart.py rounds half to even" in shown
    assert len([t for t in shown if t.startswith("Tune the cart pipeline")]) == 12
    assert [e.name for e, _ in bundle.related] == ["shop/pay.py"]  # every commit names it
    assert len(asked) == 2, asked  # the linked memories', and recall's for what it found
