"""The full-text contract tests of ``GraphStore`` (``test_store_contract.py``,
``test_store_remember_contract.py``) run again on a PostgreSQL store whose searches its
full-text index answers (``postgres_lexical.py``), built at open: every search of a test is
then the index's, caught up by the change feed after the writes before it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.stores import postgres_url
from unit.adapters.test_store_contract import (
    DIM,
    test_cypher_like_text_is_stored_and_found_literally,
    test_cypher_like_text_is_stored_literally_in_bulk,
    test_full_text_search_finds_memories_added_in_bulk,
    test_full_text_search_folds_accents,
    test_full_text_search_joins_inflections,
    test_full_text_search_of_no_words_finds_nothing,
    test_full_text_search_ranks_more_matched_words_first,
    test_search_text_honours_the_limit,
    test_search_text_respects_visibility,
    test_updating_text_updates_full_text_search,
)
from unit.adapters.test_store_remember_contract import (
    test_text_matches_are_the_search_hits_with_their_text_and_fields,
    test_text_matches_follow_changes_and_deletions,
    test_text_matches_holding_follow_changes,
    test_text_matches_holding_keep_the_memories_with_a_word_of_each_group,
    test_text_matches_rank_by_the_words_held_and_honour_the_limit,
)

from graphmem.adapters.postgres_store import PostgresGraphStore

__all__ = [
    "test_cypher_like_text_is_stored_and_found_literally",
    "test_cypher_like_text_is_stored_literally_in_bulk",
    "test_full_text_search_finds_memories_added_in_bulk",
    "test_full_text_search_folds_accents",
    "test_full_text_search_joins_inflections",
    "test_full_text_search_of_no_words_finds_nothing",
    "test_full_text_search_ranks_more_matched_words_first",
    "test_search_text_honours_the_limit",
    "test_search_text_respects_visibility",
    "test_text_matches_are_the_search_hits_with_their_text_and_fields",
    "test_text_matches_follow_changes_and_deletions",
    "test_text_matches_holding_follow_changes",
    "test_text_matches_holding_keep_the_memories_with_a_word_of_each_group",
    "test_text_matches_rank_by_the_words_held_and_honour_the_limit",
    "test_updating_text_updates_full_text_search",
]


@pytest.fixture
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PostgresGraphStore]:
    opened = PostgresGraphStore(
        postgres_url(request, DIM), dimension=DIM, text_index=tmp_path, text_index_background=False
    )
    assert opened.lexical is not None
    yield opened
    assert opened.lexical.answering == "index"  # no search of the test fell back to the database
    opened.close()
