"""graphmem bench locomo --distractors: a repository's history competes with the conversation."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem.adapters.embedders import HashEmbedder
from graphmem.bench import locomo
from graphmem.cli.main import cli
from graphmem.errors import InvalidInputError


def _conversation(tmp_path: Path) -> Path:
    turns = [
        {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey cat named Pixel last week."},
        {"speaker": "Ben", "dia_id": "D1:2", "text": "I started rock climbing at the gym downtown."},
    ]
    qa = [
        {
            "question": "What is the name of Ana's cat?",
            "answer": "Pixel",
            "evidence": ["D1:1"],
            "category": 4,
        },
        {"question": "Which sport did Ben start?", "answer": "climbing", "evidence": ["D1:2"], "category": 4},
    ]
    conversation = {
        "sample_id": "conv-test",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
        }
        | {"session_1": turns},
        "qa": qa,
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([conversation]), "utf-8")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Three commits, one of them about a cat, and a README."""
    root = tmp_path / "repo"
    root.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ana",
        "GIT_AUTHOR_EMAIL": "ana@example.com",
        "GIT_COMMITTER_NAME": "Ana",
        "GIT_COMMITTER_EMAIL": "ana@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(tmp_path),
    }
    subprocess.run(["git", "init", "-q"], cwd=root, env=env, check=True)
    for n, subject in enumerate(["Initial import", "Name the cat sprite Pixel", "Add a climbing level"]):
        (root / "game.py").write_text(f"LEVEL = {n}\n", "utf-8")
        (root / "README.md").write_text("# game\n\nRun `make play` to start the game.\n", "utf-8")
        subprocess.run(["git", "add", "-A"], cwd=root, env=env, check=True)
        subprocess.run(["git", "commit", "-qm", subject], cwd=root, env=env, check=True)
    return root.resolve()


def test_distractors_are_bootstrapped_into_every_conversations_store(tmp_path: Path, repo: Path) -> None:
    [report] = locomo.run(_conversation(tmp_path), HashEmbedder(256), plans=("hybrid",), distractors=repo)

    added = report["distractors"]
    assert (added["repo"], added["commits"]) == (str(repo), 3)
    assert added["memories"] >= 3  # the commits, and the README's facts
    assert report["categories_1_4"]["questions"] == 2
    assert "distractors: " in locomo.format_report(report)


def test_a_clean_run_reports_no_distractors(tmp_path: Path) -> None:
    [report] = locomo.run(_conversation(tmp_path), HashEmbedder(256), plans=("lexical",))

    assert report["distractors"] is None
    assert "distractors" not in locomo.format_report(report)


def test_a_directory_that_is_no_repository_is_refused_with_how_to_fix_it(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="git clone"):
        locomo.run(_conversation(tmp_path), HashEmbedder(256), distractors=tmp_path)


def test_the_cli_refuses_a_missing_distractors_path(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["bench", "locomo", "--data", str(_conversation(tmp_path)), "--distractors", str(tmp_path / "no")],
    )

    assert result.exit_code == 2
    assert "does not exist" in result.output
