"""`graphmem bench phrase` runs end to end on a tiny LoCoMo-shaped file (real Kùzu, hash
embedder): half-remembered sentences, recall against plain full-text search."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem.adapters.embedders import HashEmbedder
from graphmem.bench import phrase
from graphmem.cli.main import cli

TURNS = [
    "I finally finished painting the old blue fence behind the garden shed last Sunday.",
    "Nice! Did you use the brushes I left on the kitchen table after the party?",
    "Yes, and then me when I was young, and it rained all afternoon so we stayed in.",
    "The new bakery on the corner sells the best sourdough bread I have ever tasted.",
    "We should go hiking up the northern ridge trail again once the snow has melted.",
    "Short turn.",
]


def _file(tmp_path: Path) -> Path:
    speakers = ("Ana", "Ben")
    conversation = {
        "sample_id": "conv-phrase",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": speakers[i % 2], "dia_id": f"D1:{i + 1}", "text": text}
                for i, text in enumerate(TURNS)
            ],
        },
        "qa": [],
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([conversation]), "utf-8")
    return path


def test_the_queries_are_spans_from_the_middle_of_the_long_turns() -> None:
    assert phrase.span_of("Ana: " + TURNS[0], 7) == "painting the old blue fence behind the"
    assert phrase.span_of("Ana: Short turn.", 7) is None


def test_every_long_turn_is_found_by_its_span_by_each_searcher(tmp_path: Path) -> None:
    report = phrase.run(_file(tmp_path), HashEmbedder(256), plans=("hybrid", "lexical"), every=1)

    assert report["queries"] == 5  # the short turn is not asked for
    assert report["recall_at_10"] == {"hybrid": 1.0, "lexical": 1.0, phrase.PLAIN: 1.0}
    assert report["misses"] == {"hybrid": [], "lexical": [], phrase.PLAIN: []}
    assert "plain-fts" in phrase.format_report(report)


def test_the_command_prints_the_report_as_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("graphmem.adapters.embedders.make_embedder", lambda *a, **k: HashEmbedder(64))
    result = CliRunner().invoke(
        cli, ["bench", "phrase", "--data", str(_file(tmp_path)), "--span", "5", "--json"]
    )

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["span"] == 5 and report["queries"] == 1  # one turn in five is asked for
    assert set(report["recall_at_10"]) == {"hybrid", "lexical", "plain-fts"}


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--plan", "nope"], "known plans"), (["--span", "2"], "--span"), (["--span", "13"], "--span")],
)
def test_a_bad_option_exits_2_saying_what_to_pass(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["bench", "phrase", "--data", str(_file(tmp_path)), *args])

    assert result.exit_code == 2, result.output
    assert message in result.output
