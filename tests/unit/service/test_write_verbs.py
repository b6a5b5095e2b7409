"""Which of the service's verbs are writes (``service/parts.py``: ``writes=True``, ``@writes``),
read against the table of verbs (``server/verbs.py``): a verb that stores memories under a
project runs as a write, so the memories still kept under the project's other names move to it
first (``ProjectNames.writing``). A verb the table says writes is declared a write, or named
here with why it stores nothing under a project; a new one fails until it is one or the other.
"""

from __future__ import annotations

import inspect

import pytest

from graphmem.server.verbs import TABLE, Owner
from graphmem.service.memory import MemoryService
from graphmem.service.parts import is_write

BY_ID = "changes a memory, or its links, by id where it is kept: it names no project"
# The verbs the table says write that store no memory under a project, and why.
NOT_UNDER_A_PROJECT: dict[str, str] = {
    **dict.fromkeys(
        ("archive", "restore", "resolve", "unresolve", "confirm", "reject", "widen", "link", "unlink"),
        BY_ID,
    ),
    "undo": BY_ID,
    "delete": BY_ID,
    "export_file": "writes a file; the store it only reads, and an export is a read",
    "export_dir": "writes the checkout's .graphmem/; the store it only reads, and an export is a read",
    "enrich": "stores what GitLab says of entities; its project only roots relative refs (!12)",
    "session_start": "the coordinator's session, no memory",
    "session_heartbeat": "the coordinator's session, no memory",
    "session_end": "the coordinator's session; its summary is remembered through remember, a write",
    "claim_item": "the coordinator's claim, no memory",
    "release_item": "the coordinator's claim, no memory",
    "embed_pending": "the vectors of memories stored already",
    "load_model": "the vectors of memories stored already",
    "reindex": "the vectors of memories stored already",
}
SERVICE_VERBS = [each for each in TABLE if each.owner is Owner.MEMORY]


@pytest.mark.parametrize("name", [each.name for each in SERVICE_VERBS if not each.effect.read_only])
def test_a_verb_that_writes_is_declared_a_write_or_says_why_it_stores_nothing_under_a_project(
    name: str,
) -> None:
    declared = is_write(inspect.getattr_static(MemoryService, name))

    assert declared != (name in NOT_UNDER_A_PROJECT), (
        f"MemoryService.{name} writes (server/verbs.py): declare it a write (writes=True on its "
        "PartVerb or CheckoutVerb, @writes on a method) or name it in NOT_UNDER_A_PROJECT with why"
        if not declared
        else f"MemoryService.{name} is declared a write: take it out of NOT_UNDER_A_PROJECT"
    )


@pytest.mark.parametrize("name", [each.name for each in SERVICE_VERBS if each.effect.read_only])
def test_a_verb_that_reads_is_no_write(name: str) -> None:
    assert not is_write(inspect.getattr_static(MemoryService, name))


def test_each_verb_named_as_storing_nothing_under_a_project_is_one_the_table_says_writes() -> None:
    writing = {each.name for each in SERVICE_VERBS if not each.effect.read_only}

    assert set(NOT_UNDER_A_PROJECT) <= writing
