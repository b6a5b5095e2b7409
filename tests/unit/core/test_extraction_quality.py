"""Extraction quality on the labelled sessions in samples/sessions/ stays at the measured level.

A quality regression test, not a timing one. `graphmem bench extraction` measured
(docs/learning.md): dev precision 1.000 / recall 1.000, held-out 1.000 / 0.941,
stress 0.923 / 0.857. The floors leave room for about one wrong item per set, not for
a rule that starts to misfire.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graphmem.bench.extraction import load_sessions, score

SESSIONS = Path(__file__).resolve().parents[3] / "samples" / "sessions"
# set: (overall precision, precision in any category, overall recall)
FLOORS = {
    "dev": (0.95, 0.85, 0.9),  # measured 1.000, 1.000, 1.000
    "heldout": (0.95, 0.85, 0.9),  # measured 1.000, 1.000, 0.941
    "stress": (0.9, 0.65, 0.8),  # measured 0.923, 0.667 (blocker), 0.857
}


@pytest.fixture(scope="module", params=sorted(FLOORS))
def measured(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    return request.param, score(load_sessions(SESSIONS / f"{request.param}.jsonl"))


def test_the_labelled_set_is_big_enough() -> None:
    sessions = [s for name in FLOORS for s in load_sessions(SESSIONS / f"{name}.jsonl")]
    assert len(sessions) >= 40
    assert sum(len(s.transcript.messages) for s in sessions) >= 200


def test_overall_precision_stays_above_the_floor(measured: tuple[str, dict[str, Any]]) -> None:
    name, result = measured
    assert result["overall"]["precision"] >= FLOORS[name][0], result["false_positives"]


def test_every_categorys_precision_stays_above_the_floor(measured: tuple[str, dict[str, Any]]) -> None:
    name, result = measured
    low = {
        c: row["precision"] for c, row in result["categories"].items() if row["precision"] < FLOORS[name][1]
    }
    assert not low, result["false_positives"]


def test_recall_stays_above_the_floor(measured: tuple[str, dict[str, Any]]) -> None:
    name, result = measured
    assert result["overall"]["recall"] >= FLOORS[name][2], result["misses"]


def test_no_injection_becomes_an_instruction(measured: tuple[str, dict[str, Any]]) -> None:
    _, result = measured
    assert result["low_trust_instructions"] == 0
