"""Recall before the embedding model is ready: the lexical channel alone, stemmed."""

from __future__ import annotations

import pytest

from graphmem.core.text import lexical_query, word_variants
from graphmem.service.memory import MemoryService


@pytest.mark.parametrize(
    ("word", "variants"),
    [("linter", ["lint"]), ("formatters", ["format"]), ("runner", ["run"]), ("user", []), ("v2er", [])],
)
def test_agent_nouns_also_ask_for_their_base_word(word: str, variants: list[str]) -> None:
    assert word_variants(word) == variants


def test_the_lexical_query_keeps_the_words_and_adds_their_variants() -> None:
    assert lexical_query("Which LINTER?") == "which linter lint"


def test_which_linter_finds_ruff_for_linting_before_the_model_is_ready(fake_memory: MemoryService) -> None:
    stored = fake_memory.remember("Use ruff for linting", category="directive").memory.id
    fake_memory.remember("Deploy on Fridays only after the freeze", category="decision")
    assert fake_memory.semantic is not None
    fake_memory.semantic.ready = False  # what a daemon says while its model loads

    result = fake_memory.recall("which linter")

    assert [hit.memory.id for hit in result.hits] == [stored]
    assert result.semantic_ready is False
