"""The service's verbs that are a part's own, called for its checkout (``service/parts.py``)."""

from __future__ import annotations

import inspect

import pytest

from graphmem.api import Memory
from graphmem.errors import InvalidInputError
from graphmem.service.memory import MemoryService


def test_remember_writes_in_the_memorys_own_project_and_branch(memory_service: MemoryService) -> None:
    shop = memory_service.bound("/src/shop", "feature/fees")
    mine = shop.remember("Refund fees are rounded up to the cent").memory
    theirs = shop.remember("The billing service retries twice", project="/src/billing").memory
    assert (mine.project, mine.branch) == ("/src/shop", "feature/fees")
    assert (theirs.project, theirs.branch) == ("/src/billing", None)  # another project: not this branch


def test_a_checkout_verb_checks_the_project_it_is_given(memory_service: MemoryService) -> None:
    with pytest.raises(InvalidInputError, match="project"):
        memory_service.remember("A fact", project=42)  # type: ignore[arg-type]


def test_a_checkout_verb_has_its_parts_signature_and_the_doc_the_protocol_declares(
    memory_service: MemoryService,
) -> None:
    signature = inspect.signature(memory_service.remember)
    assert list(signature.parameters)[:3] == ["text", "category", "scope"]
    assert memory_service.remember.__doc__ == Memory.remember.__doc__
    assert inspect.signature(memory_service.review).parameters["limit"].default == 50
