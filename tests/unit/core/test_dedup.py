"""Near-duplicates (reinforce) versus different statements (store, or supersede)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphmem.core.dedup import (
    are_variants,
    differing_content_words,
    is_near_duplicate,
    memory_hash,
    repeat_words,
    replaces,
    similarity,
    variant_forms,
)
from graphmem.core.models import Scope
from graphmem.core.text import fold

THRESHOLD = 0.8  # the default [dedup] near_duplicate


def test_identical_texts_are_fully_similar() -> None:
    assert similarity("We deploy with make release", "We deploy with make release") == 1.0


def test_texts_without_shared_words_are_not_similar() -> None:
    assert similarity("We deploy with make release", "Lunch is at noon") == 0.0


def test_similarity_ignores_case_accents_and_punctuation() -> None:
    assert similarity("Kùzu is the graph store.", "kuzu IS the graph store") == 1.0


@given(st.text(max_size=80), st.text(max_size=80))
def test_similarity_is_symmetric_and_bounded(a: str, b: str) -> None:
    assert similarity(a, b) == similarity(b, a)
    assert 0.0 <= similarity(a, b) <= 1.0


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("We deploy with make release", "We deploy with `make release`."),
        ("We deploy with make release", "we deploy with make release!"),
        (
            "Always run `ruff format` before you push a branch",
            "Always run ruff format before you push a branch.",
        ),
    ],
)
def test_formatting_and_function_words_make_a_near_duplicate(a: str, b: str) -> None:
    assert is_near_duplicate(a, b, THRESHOLD)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The CI cache lives in the shared runner bucket", "The CI cache lives in the shared runners bucket"),
        ("It is fine to squash commits before merging", "It's fine to squash commits before merging"),
        ("Deploy the service with helm", "Deployment of the service with helm"),
    ],
)
def test_function_words_and_word_variants_are_not_differences(a: str, b: str) -> None:
    assert differing_content_words(a, b) == set()


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "We chose SQLite for the memory store because it is embedded",
            "We chose DuckDB for the memory store because it is embedded",
        ),
        ("The API rate limit is 15 requests per second", "The API rate limit is 16 requests per second"),
        (
            "The staging database runs postgres15 on the shared cluster of the platform team",
            "The staging database runs postgres16 on the shared cluster of the platform team",
        ),
    ],
)
def test_a_changed_name_or_number_is_not_a_near_duplicate(a: str, b: str) -> None:
    assert not is_near_duplicate(a, b, THRESHOLD)


def test_a_changed_version_inside_a_word_is_not_a_near_duplicate() -> None:
    # The module docstring: a changed name or number "makes a different statement, never a duplicate".
    a = "We run the nightly test suite with python2 on the legacy CI runners before every release"
    b = "We run the nightly test suite with python3 on the legacy CI runners before every release"
    assert not is_near_duplicate(a, b, THRESHOLD)


def test_singular_and_plural_are_variants_not_different_words() -> None:
    # The module docstring names "test"/"tests" as variants of one word.
    assert (
        differing_content_words("Run the unit tests before pushing", "Run the unit test before pushing")
        == set()
    )


def test_differing_content_words_skip_function_words() -> None:
    assert differing_content_words("We use the cache", "We use a cache") == set()


def test_differing_content_words_name_both_sides() -> None:
    assert differing_content_words("We use SQLite", "We use DuckDB") == {"sqlite", "duckdb"}


def test_low_overlap_is_not_a_near_duplicate_even_without_content_changes() -> None:
    assert not is_near_duplicate("deploy", "we deploy it with the tool", THRESHOLD)


def test_memory_hash_ignores_case_and_whitespace() -> None:
    assert memory_hash(Scope.GLOBAL, None, "We  deploy\twith MAKE release") == memory_hash(
        Scope.GLOBAL, None, "we deploy with make release"
    )


def test_memory_hash_separates_scopes_and_projects() -> None:
    text = "We deploy with make release"
    hashes = {
        memory_hash(Scope.GLOBAL, None, text),
        memory_hash(Scope.PROJECT, "/src/a", text),
        memory_hash(Scope.PROJECT, "/src/b", text),
    }
    assert len(hashes) == 3


VOCABULARY = [
    "test", "tests", "tested", "testing", "tester", "manage", "managed", "management", "handle",
    "handled", "handling", "retry", "retries", "cache", "cached", "caching", "was", "wasn't", "don't",
    "can't", "not", "notify", "python3", "python2", "the", "a", "of", "Kùzu", "kuzu", "it's", "on-call",
    "snake_case", "Redis", "redis",
]  # fmt: skip
texts = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=7).map(" ".join)


def test_variant_forms_are_every_variant_of_a_word() -> None:
    words = {w for w in re.findall(r"[a-z0-9]+", " ".join(VOCABULARY).lower())}
    candidates = words | {w + ending for w in words for ending in ("s", "ed", "ing", "er", "ment", "ly")}
    for word in words:
        forms = variant_forms(word)
        assert {c for c in candidates if are_variants(word, c)} <= forms, word
        assert all(are_variants(word, f) or are_variants(word, f.removesuffix("n")) for f in forms), word


@given(texts, texts)
def test_a_near_duplicate_holds_each_repeat_word_in_some_form(a: str, b: str) -> None:
    """What lets ``remember`` skip its search: a word of ``repeat_words(a)`` that no memory
    holds in any of its ``variant_forms`` (as a full-text index splits words) rules out
    every near-duplicate."""
    if not is_near_duplicate(a, b, 0.01):
        return
    held = set(re.findall(r"[^\W_]+", fold(b)))
    for word in repeat_words(a):
        assert held & variant_forms(word), (a, b, word)


def test_repeat_words_leave_out_what_an_index_may_hold_otherwise() -> None:
    words = repeat_words("The parser wasn't handling it's RETRIES, not notify; python3 " + "x" * 31)
    assert words == ["parser", "handling", "retries", "python3"]  # "was": a function word


# -- replacement: another choice on the same subject -------------------------------------------

SAME_SUBJECT = 0.5  # the default [dedup] same_subject


def test_another_tool_for_the_same_job_replaces_the_older_preference() -> None:
    assert replaces("Prefer pnpm over npm", "Prefer yarn over npm", SAME_SUBJECT)


def test_preferences_about_two_calls_of_one_file_do_not_replace_each_other() -> None:
    older = "Prefer res.sendStatus() over res.status().send() for bare status codes in lib/response.js"
    newer = "Prefer res.json() over res.send() when responding with objects in lib/response.js handlers"

    assert not replaces(newer, older, SAME_SUBJECT)


def test_a_reversed_decision_replaces_the_older_one() -> None:
    assert replaces("Do not cache sessions in Redis", "Cache sessions in Redis", SAME_SUBJECT)


def test_a_statement_that_only_adds_words_replaces_nothing() -> None:
    assert not replaces(
        "Prefer yarn over npm for the monorepo's workspaces too", "Prefer yarn over npm", SAME_SUBJECT
    )


def test_too_little_kept_around_a_changed_word_is_no_subject() -> None:
    assert not replaces("We use DuckDB", "We use SQLite", SAME_SUBJECT)


def test_the_same_choice_for_another_purpose_replaces_nothing() -> None:
    assert replaces("Use yarn for installs", "Use pnpm for installs", SAME_SUBJECT)  # the choice
    assert not replaces("Use pnpm for builds", "Use pnpm for installs", SAME_SUBJECT)  # the subject


def test_a_change_under_a_condition_is_the_subject_unless_it_is_a_value() -> None:
    older = "Always open a draft merge request before starting a change that touches more than one module"
    assert not replaces(older.replace("more than one module", "the public API"), older, SAME_SUBJECT)
    assert replaces("Keep the build logs for 90 days", "Keep the build logs for 30 days", SAME_SUBJECT)


def test_a_second_thing_ruled_out_replaces_nothing() -> None:
    assert not replaces("Do not cache sessions in Memcached", "Do not cache sessions in Redis", SAME_SUBJECT)
    assert not replaces(
        "Never log request headers: they may hold passwords",
        "Never log request bodies: they may hold passwords",
        SAME_SUBJECT,
    )


def test_a_scope_word_or_negation_opens_only_its_own_clause() -> None:
    assert replaces(
        "When the network fails, retry 3 times", "When the network fails, retry twice", SAME_SUBJECT
    )
    assert replaces(
        "Use pipx, not pip, to install tools on developer machines",
        "Use uv, not pip, to install tools on developer machines",
        SAME_SUBJECT,
    )


def test_a_rewording_is_no_change_of_choice() -> None:
    assert not replaces("Run the unit tests, then push", "Run the unit test and then push", SAME_SUBJECT)
