"""core.keys: the one way each id and shared entity key is minted."""

from __future__ import annotations

import re

import pytest

from graphmem.core.keys import file_key, memory_id, memory_id_number, numbered_memory_id, person_key


def test_a_new_memory_id_is_random_and_well_formed() -> None:
    first, second = memory_id(), memory_id()

    assert first != second
    assert re.fullmatch(r"mem_[0-9a-f]{16}", first)


def test_a_seeded_memory_id_is_stable_and_a_commit_keeps_its_sha() -> None:
    assert memory_id("bootstrap:README.md#a") == memory_id("bootstrap:README.md#a")
    assert memory_id("bootstrap:README.md#a") != memory_id("bootstrap:README.md#b")
    assert memory_id(commit="0123456789abcdef0123456789abcdef01234567") == "mem_0123456789abcdef"


def test_a_file_key_names_the_project_and_the_relative_path() -> None:
    assert file_key("/src/shop", "billing/refund.py") == "File:/src/shop::billing/refund.py"


def test_a_person_is_keyed_by_username_then_email_then_name() -> None:
    assert person_key(username="alice", email="alice@example.com") == "Person:alice"
    assert person_key(email=" Alice@Example.COM ", name="Alice") == "Person:alice@example.com"
    assert person_key(name="Alice Doe") == "Person:Alice Doe"


def test_a_private_noreply_commit_email_is_the_gitlab_user() -> None:
    git_author = person_key(email="1234-alice@users.noreply.gitlab.com", name="Alice")

    assert git_author == person_key(username="alice")
    assert person_key(email="alice@users.noreply.github.com") == "Person:alice"


@pytest.mark.parametrize("number", [0, 1, -1, 2**63 - 1, -(2**63), 0x0123456789ABCDEF])
def test_a_memory_id_number_names_its_id_again(number: int) -> None:
    memory = numbered_memory_id(number)

    assert memory_id_number(memory) == number
    assert memory_id_number(memory_id()) is not None


@pytest.mark.parametrize("other", ["mem_12", "mem_0123456789ABCDEF", "note:7", "mem_0123456789abcdef0", ""])
def test_an_id_of_another_shape_has_no_number(other: str) -> None:
    assert memory_id_number(other) is None
