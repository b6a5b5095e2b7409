"""A migration's SQL never changes once written: a store that ran it must mean what a new one does.

Versions of a function share constants (its declaration, the move of links), so an edit meant
for a new version could change an old one's text unseen; each text is held to its hash here.
"""

from __future__ import annotations

import hashlib

import pytest

from graphmem.adapters import postgres_functions, postgres_recorded, postgres_schema

FROZEN = {
    "TERM_STATS_7": "efddcbc7425a06ad",
    "REMEMBERED_8": "d40b32d5c8e4e2dd",
    "MOVE_ABOUT_9": "d950984153e67d24",
    "OWNER_KEPT_10": "980f35885893b4da",
    "TERM_STATS_10": "e5526b700fbe2ec0",
    "REMEMBERED_10": "b31e696e64cfc7fa",
    "MOVE_ABOUT_10": "da810127900de05a",
    "ANSWER_ONLY_WHAT_IS_SEEN_10": "e52e477ad3c08525",
    "UNDO_10": "6a2ec380f45b9ec0",
    "MOVE_ABOUT_14": "460b5faee3ff80b2",
    "RECORDED_BODIES_14": "cdd9c314079104fb",
    "UNDO_14": "a6c629a3e3bf4aa6",
    "APPEND_ONLY_16": "1f89e55410e3df57",
    "UNDO_16": "eacaab8472dba91a",
    "COORDINATION_SET_17": "8754d86f87f76105",
    "UNDO_COORDINATION_SET_17": "57af475642727262",
    "SESSIONS_HELD_17": "a829ee273d38b2da",
    "UNDO_SESSIONS_HELD_17": "15b3b2e1ca7f8750",
    "CHANGE_RECORDED_20": "51b3b508e903af98",
    "RECORDED_CHANGES_20": "46f905859f448d60",
    "UNDO_RECORDED_CHANGES_20": "cc31b4d24dd77aed",
    "CONFIRMED_BY_21": "030d25e7a42d82e8",
    "UNDO_CONFIRMED_BY_21": "58c68f8f8343be72",
    "SCOPES_HELD_22": "5478e672cd559070",
    "UNDO_SCOPES_HELD_22": "86c98b07df388653",
}


# Migrations whose SQL is the schema's own (postgres_schema.py, postgres_vector_parts.py).
FROZEN_SCHEMA = {
    "HALF_INDEX_12": "06a7f6c56531f3a2",
    "DROP_HALF_INDEX_12": "63ebf8909fb9c7e8",
    "ENTITY_OWNERS_15": "dfc657053fe86eef",
    "PARTS_19": "656c50571806cb04",
    "UNDO_PARTS_19": "a97f5d64b50ae2b3",
}


# The versions of graphmem_change_recorded after schema 20's (postgres_recorded.py).
FROZEN_RECORDED = {
    "COUNT_RECORDED_23": "c9e6834d49403fc7",
    "UNDO_COUNT_RECORDED_23": "450e2ebe15a9f262",
}


@pytest.mark.parametrize("name", sorted(FROZEN_RECORDED))
def test_a_recorded_changes_migrations_sql_is_the_text_it_ran_with(name: str) -> None:
    sql: str = getattr(postgres_recorded, name)
    assert hashlib.sha256(sql.encode()).hexdigest()[:16] == FROZEN_RECORDED[name], (
        f"{name} changed: a migration that ran keeps its text; write the new version's own constant"
    )


@pytest.mark.parametrize("name", sorted(FROZEN_SCHEMA))
def test_a_schema_migrations_sql_is_the_text_it_ran_with(name: str) -> None:
    sql: str = getattr(postgres_schema, name)
    assert hashlib.sha256(sql.encode()).hexdigest()[:16] == FROZEN_SCHEMA[name], (
        f"{name} changed: a migration that ran keeps its text; write the new version's own constant"
    )


@pytest.mark.parametrize("name", sorted(FROZEN))
def test_a_migrations_sql_is_the_text_it_ran_with(name: str) -> None:
    sql: str = getattr(postgres_functions, name)
    assert hashlib.sha256(sql.encode()).hexdigest()[:16] == FROZEN[name], (
        f"{name} changed: a migration that ran keeps its text; write the new version's own constant"
    )
