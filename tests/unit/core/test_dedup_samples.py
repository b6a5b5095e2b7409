"""The near-duplicate rule, at its default threshold, on the labelled pairs in samples/."""

import json
from pathlib import Path

from graphmem.core.dedup import is_near_duplicate
from graphmem.settings import DedupSettings

PAIRS = [
    json.loads(line)
    for line in (Path(__file__).parents[3] / "samples" / "dedup_pairs.jsonl").read_text("utf-8").splitlines()
    if line.strip()
]
THRESHOLD = DedupSettings().near_duplicate


def test_no_distinct_statement_is_taken_for_a_duplicate() -> None:
    wrong = [p for p in PAIRS if not p["duplicate"] and is_near_duplicate(p["a"], p["b"], THRESHOLD)]
    assert wrong == []


def test_most_rewordings_are_recognised_as_duplicates() -> None:
    duplicates = [p for p in PAIRS if p["duplicate"]]
    found = [p for p in duplicates if is_near_duplicate(p["a"], p["b"], THRESHOLD)]
    assert len(found) / len(duplicates) >= 0.8
