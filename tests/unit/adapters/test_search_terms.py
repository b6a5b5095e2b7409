"""The words the in-memory store's full-text search sees."""

from __future__ import annotations

import pytest

from graphmem.adapters.search_terms import terms


def test_accents_and_case_are_folded_and_stopwords_dropped() -> None:
    assert terms("We chose Kùzu for THE graph") == ["chose", "kuzu", "graph"]


@pytest.mark.parametrize(
    ("words", "stem"),
    [
        ("deploy deploys deployed deploying", "deploi"),
        ("release released releases", "releas"),
        ("lint linting", "lint"),
        ("hop hopping hopped", "hop"),
        ("file filing filed files", "file"),
    ],
)
def test_inflections_of_a_word_are_one_term(words: str, stem: str) -> None:
    assert set(terms(words)) == {stem}


def test_an_agent_noun_stays_apart_from_its_verb() -> None:
    assert terms("linter") != terms("lint")


def test_short_words_and_numbers_are_kept_as_they_are() -> None:
    assert terms("v2 go 3.11 x86") == ["v2", "go", "3", "11", "x86"]


def test_text_of_no_words_has_no_terms() -> None:
    assert terms("?! -- ** the a") == []
