"""No write closes a cycle of ``supersedes`` links (each memory on it would hide the next): ``link``
refuses it, and so does an import, as it refuses a link from a memory to itself; a refusal stores
nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.memory_service import in_memory_service

from graphmem.errors import ConflictError, ImportFileError, InvalidInputError
from graphmem.service.memory import MemoryService


@pytest.fixture
def other(tmp_path: Path) -> Iterator[MemoryService]:
    """A second, empty store: where a file is imported."""
    memory = in_memory_service(tmp_path / "other")
    yield memory
    memory.close()


def stored(memory: MemoryService) -> tuple[object, ...]:
    """What a refusal must leave as it was: memories, links and history."""
    store = memory.store
    memories = sorted((m.id, m.status, m.valid_to, m.updated_at) for m in store.all_memories())
    links = sorted((x.source, x.target, x.kind) for x in store.links())
    events = sorted(e.id for e in store.all_events())
    return memories, links, events


def remember(memory: MemoryService, *texts: str) -> list[str]:
    return [memory.remember(text).memory.id for text in texts]


TEXTS = ("Use ruff for linting", "The staging db is read-only on Mondays", "Deploys wait for a green CI run")


def test_a_supersedes_link_back_to_the_memory_that_supersedes_it_is_refused(
    memory_service: MemoryService,
) -> None:
    a, b, _ = remember(memory_service, *TEXTS)
    memory_service.link(a, b, "supersedes")
    before = stored(memory_service)

    with pytest.raises(InvalidInputError) as refused:
        memory_service.link(b, a, "supersedes")

    assert f"{a} already supersedes {b}" in str(refused.value)
    assert f"graphmem unlink {a} {b} --kind supersedes" in str(refused.value)
    assert stored(memory_service) == before


def test_a_supersedes_link_that_closes_a_longer_chain_is_refused(memory_service: MemoryService) -> None:
    a, b, c = remember(memory_service, *TEXTS)
    memory_service.link(a, b, "supersedes")
    memory_service.link(b, c, "supersedes")
    before = stored(memory_service)

    with pytest.raises(InvalidInputError, match=f"{a} already supersedes {c} \\(through {b}\\)"):
        memory_service.link(c, a, "supersedes")

    assert stored(memory_service) == before


def test_after_a_refused_cycle_each_memory_is_still_recalled_or_superseded_as_before(
    memory_service: MemoryService,
) -> None:
    a, b, _ = remember(memory_service, *TEXTS)
    memory_service.link(a, b, "supersedes")

    with pytest.raises(InvalidInputError):
        memory_service.link(b, a, "supersedes")

    assert [hit.memory.id for hit in memory_service.recall("ruff linting").hits][:1] == [a]


def link_line(source: str, target: str, kind: str = "supersedes") -> str:
    return json.dumps({"type": "link", "source": source, "target": target, "kind": kind})


def memory_line(memory_id: str, text: str) -> str:
    return json.dumps(
        {"type": "memory", "id": memory_id, "text": text, "category": "fact", "scope": "global",
         "created_at": "2024-05-01T12:00:00+00:00"}
    )  # fmt: skip


def import_lines(memory: MemoryService, tmp_path: Path, *lines: str) -> ImportFileError:
    path = tmp_path / "links.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    with pytest.raises(ImportFileError) as refused:
        memory.import_file(path)
    return refused.value


def test_an_import_refuses_a_self_link_and_imports_nothing(other: MemoryService, tmp_path: Path) -> None:
    before = stored(other)

    refused = import_lines(other, tmp_path, memory_line("m1", "Use ruff for linting"), link_line("m1", "m1"))

    assert [number for number, _ in refused.problems] == [2]
    assert "same memory" in refused.problems[0][1]
    assert stored(other) == before


def test_an_import_refuses_a_supersedes_link_that_closes_a_cycle_with_the_store(
    memory_service: MemoryService, tmp_path: Path
) -> None:
    a, b, _ = remember(memory_service, *TEXTS)
    memory_service.link(a, b, "supersedes")
    before = stored(memory_service)

    refused = import_lines(memory_service, tmp_path, memory_line("m1", "Another note"), link_line(b, a))

    assert refused.problems == [
        (
            2,
            f"{a} already supersedes {b}, so {b} cannot supersede {a}: the cycle would hide every memory "
            "on it; drop one of these links",
        )
    ]
    assert stored(memory_service) == before


def test_an_import_refuses_a_cycle_of_supersedes_links_within_the_file(
    other: MemoryService, tmp_path: Path
) -> None:
    refused = import_lines(
        other,
        tmp_path,
        memory_line("m1", "Use ruff for linting"),
        memory_line("m2", "Use black for formatting"),
        memory_line("m3", "Use isort for imports"),
        link_line("m1", "m2"),
        link_line("m2", "m3"),
        link_line("m3", "m1"),
    )

    assert [number for number, _ in refused.problems] == [6]
    assert "m1 already supersedes m3 (through m2)" in refused.problems[0][1]
    assert other.store.all_memories() == [] and other.store.links() == []


def test_an_import_refuses_a_link_whose_ends_merge_into_one_stored_memory(
    memory_service: MemoryService, tmp_path: Path
) -> None:
    [here] = remember(memory_service, "Use ruff for linting")
    before = stored(memory_service)

    # m1 has the text of the stored memory: it lands on it, and so does its link to it.
    refused = import_lines(
        memory_service, tmp_path, memory_line("m1", "Use ruff for linting"), link_line("m1", here, "related")
    )

    assert [number for number, _ in refused.problems] == [2]
    assert stored(memory_service) == before


def test_a_link_with_two_unknown_ends_is_one_invalid_record(other: MemoryService, tmp_path: Path) -> None:
    refused = import_lines(
        other, tmp_path, memory_line("m1", "A note"), link_line("mem_x", "mem_y", "related")
    )

    assert refused.problems == [(2, "a link endpoint is not a memory in the file or store (source, target)")]
    assert "has 1 invalid record;" in str(refused)


def test_undoing_an_unlink_that_would_close_a_cycle_with_a_later_link_is_refused(
    memory_service: MemoryService,
) -> None:
    a, b, _ = remember(memory_service, *TEXTS)
    memory_service.link(a, b, "supersedes")
    memory_service.unlink(a, b, "supersedes")
    memory_service.link(b, a, "supersedes")
    unlinked = next(e for e in memory_service.store.all_events() if e.kind.value == "status")  # b restored
    before = stored(memory_service)

    with pytest.raises(ConflictError) as refused:
        memory_service.undo(unlinked.id)

    assert f"{b} already supersedes {a}" in str(refused.value)
    assert stored(memory_service) == before  # both memories stay visible
