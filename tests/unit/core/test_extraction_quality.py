"""Extraction quality on the labelled sessions in samples/sessions/ stays at the measured level.

A quality regression test, not a timing one: `graphmem bench extraction` measured
precision 1.000 and recall 0.976 over all 45 sessions (docs/learning.md). The floors
leave room for one wrong item per set, not for a rule that starts to misfire.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.bench.extraction import load_sessions, score

SESSIONS = Path(__file__).resolve().parents[3] / "samples" / "sessions"
PRECISION_FLOOR = 0.95  # measured 1.000 on each set
CATEGORY_PRECISION_FLOOR = 0.85  # measured 1.000 in every category
RECALL_FLOOR = 0.9  # measured 1.000 (dev) and 0.941 (held-out)


@pytest.fixture(scope="module", params=["dev", "heldout"])
def result(request: pytest.FixtureRequest) -> dict[str, object]:
    return score(load_sessions(SESSIONS / f"{request.param}.jsonl"))


def test_the_labelled_set_is_big_enough() -> None:
    sessions = load_sessions(SESSIONS / "dev.jsonl") + load_sessions(SESSIONS / "heldout.jsonl")
    assert len(sessions) >= 40
    assert sum(len(s.transcript.messages) for s in sessions) >= 200


def test_overall_precision_stays_above_the_floor(result: dict[str, object]) -> None:
    overall = result["overall"]
    assert isinstance(overall, dict)
    assert overall["precision"] >= PRECISION_FLOOR, result["false_positives"]


def test_every_categorys_precision_stays_above_the_floor(result: dict[str, object]) -> None:
    categories = result["categories"]
    assert isinstance(categories, dict)
    low = {
        name: row["precision"]
        for name, row in categories.items()
        if row["precision"] < CATEGORY_PRECISION_FLOOR
    }
    assert not low, result["false_positives"]


def test_recall_stays_above_the_floor(result: dict[str, object]) -> None:
    overall = result["overall"]
    assert isinstance(overall, dict)
    assert overall["recall"] >= RECALL_FLOOR, result["misses"]


def test_no_injection_becomes_an_instruction(result: dict[str, object]) -> None:
    assert result["low_trust_instructions"] == 0
