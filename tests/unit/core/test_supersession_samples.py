"""The replacement rule (``core.dedup.replaces``), at the default ``same_subject``, on the labelled
pairs in samples/supersession_pairs.jsonl: an older memory and a newer one of the same kind, and
whether the newer makes another choice on the older one's subject."""

import json
from pathlib import Path

from graphmem.core.dedup import replaces
from graphmem.settings import DedupSettings

PAIRS = [
    json.loads(line)
    for line in (Path(__file__).parents[3] / "samples" / "supersession_pairs.jsonl")
    .read_text("utf-8")
    .splitlines()
    if line.strip()
]
SAME_SUBJECT = DedupSettings().same_subject


def test_every_changed_choice_in_the_samples_replaces_the_older_memory() -> None:
    missed = [p for p in PAIRS if p["replaces"] and not replaces(p["newer"], p["older"], SAME_SUBJECT)]
    assert missed == []


def test_no_other_statement_replaces_but_the_known_limits() -> None:
    # "limit": the subject changed where no word says so ("tabs in the Makefile" -> "tabs in the
    # Python files"): words alone cannot tell it from a changed choice ("sessions in Redis" ->
    # "sessions in Memcached"). The note on stderr quotes what was replaced and the undo.
    wrong = [p for p in PAIRS if not p["replaces"] and replaces(p["newer"], p["older"], SAME_SUBJECT)]
    assert [p for p in wrong if not p.get("limit")] == []
