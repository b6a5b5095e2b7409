"""graphmem bench locomo --cross-validate: each conversation scored by a plan chosen without it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from graphmem.adapters.embedders import HashEmbedder
from graphmem.bench import locomo
from graphmem.cli.main import cli

TURNS = {
    "conv-a": [
        ("Ana", "I adopted a grey cat named Pixel last week.", "What is the name of Ana's cat?"),
        ("Ben", "I started rock climbing at the gym downtown.", "Which sport did Ben start?"),
    ],
    "conv-b": [
        ("Cleo", "My sister moved to Lisbon for a design job.", "Where did Cleo's sister move?"),
        ("Dan", "I finally finished the marathon in under four hours.", "What did Dan finish?"),
    ],
}


def _data(tmp_path: Path) -> Path:
    conversations = []
    for sample_id, turns in TURNS.items():
        session = [
            {"speaker": speaker, "dia_id": f"D1:{n}", "text": text}
            for n, (speaker, text, _) in enumerate(turns, 1)
        ]
        qa = [
            {"question": question, "answer": "-", "evidence": [f"D1:{n}"], "category": 4}
            for n, (_, _, question) in enumerate(turns, 1)
        ]
        conversations.append(
            {
                "sample_id": sample_id,
                "conversation": {"session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": session},
                "qa": qa,
            }
        )
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(conversations), "utf-8")
    return path


def test_each_conversation_is_left_out_once_and_scored_by_a_plan_chosen_on_the_other(tmp_path: Path) -> None:
    grid = {"weights.graph": (1.0, 0.5)}

    report = locomo.cross_validate(_data(tmp_path), HashEmbedder(256), grid=grid)

    assert report["candidates"] == 2
    assert [fold["held_out"] for fold in report["folds"]] == ["conv-a", "conv-b"]
    assert all(fold["questions"] == 2 for fold in report["folds"])
    assert report["base"]["plan"] == "hybrid"
    assert 0.0 <= report["cross_validated"] <= report["tuned"]["score"] <= 1.0
    assert report["cross_validated_by_category"]["4 single-hop"]["questions"] == 4
    assert "cross-validated" in locomo.format_cross_validation_report(report)


def test_the_command_prints_the_cross_validated_figure_and_refuses_what_it_cannot_vary(
    tmp_path: Path,
) -> None:
    data = _data(tmp_path)
    runner = CliRunner()

    refused = runner.invoke(
        cli, ["bench", "locomo", "--data", str(data), "--cross-validate", "--plan", "hybrid", "--plan", "rrf"]
    )

    assert refused.exit_code == 2
    assert "at most one --plan" in refused.output

    ran = runner.invoke(cli, ["bench", "locomo", "--data", str(data), "--cross-validate", "--json"])

    assert ran.exit_code == 0, ran.output
    report = json.loads(ran.stdout)
    assert report["benchmark"] == "locomo" and report["metric"] == "R@10"
    assert report["candidates"] == 1 + 23  # the default grid around hybrid
    assert len(report["folds"]) == 2
