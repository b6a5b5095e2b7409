"""graphmem bench people-first: the protocol of ../shared/data/people-first/ on a small repository
built here (real git, real Kùzu, hash embedder): it runs end to end, and bad input gets one line."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem.adapters.embedders import HashEmbedder
from graphmem.bench import people_first
from graphmem.cli.main import cli

CASES = [
    {"category": "preference", "text": "Use uv, not pip, to install tools", "query": "install tools with uv"},
    {
        "category": "decision",
        "text": "Configuration is read from TOML files only",
        "query": "TOML config files",
    },
    {
        "category": "blocker",
        "text": "Publishing is blocked until the signing key is approved",
        "query": "signing key",
    },
]


@pytest.fixture
def small_repo(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ana",
        "GIT_AUTHOR_EMAIL": "ana@example.com",
        "GIT_COMMITTER_NAME": "Ana",
        "GIT_COMMITTER_EMAIL": "ana@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(tmp_path),
    }
    root.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    for number, (name, body) in enumerate(
        [
            ("packages.py", "def install(name):\n    return name\n"),
            ("config.py", "def load(path):\n    return {}\n"),
        ]
    ):
        (root / name).write_text(body, "utf-8")
        (root / "README.md").write_text(f"# Shop\n\nInstall the packages with pip ({number}).\n", "utf-8")
        git("add", "-A")
        git("commit", "-q", "-m", f"Install packages and tools from {name}")
    return root


@pytest.fixture
def memories(tmp_path: Path) -> Path:
    path = tmp_path / "memories.jsonl"
    path.write_text("".join(json.dumps(case) + "\n" for case in CASES), "utf-8")
    return path


def test_the_bench_reports_both_stores_through_the_cli(
    small_repo: Path, memories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("graphmem.adapters.embedders.make_embedder", lambda *a, **k: HashEmbedder(64))

    result = CliRunner().invoke(
        cli, ["bench", "people-first", "--repo", str(small_repo), "--memories", str(memories), "--json"]
    )

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["cases"] == len(CASES)
    assert report["bootstrapped"]["added"]["commits"] == 2
    for store in ("clean", "bootstrapped"):
        assert {"MRR", "R@1", "R@3", "missed"} <= set(report[store])
        assert len(report[store]["questions"]) == len(CASES)
    assert (small_repo / ".git").is_dir() and not (small_repo / ".graphmem").exists()


def test_the_text_report_names_the_figures(small_repo: Path, memories: Path) -> None:
    report = people_first.run(small_repo, memories, HashEmbedder(64), history=10)

    text = people_first.format_report(report)

    assert "clean" in text and "bootstrapped" in text and "MRR" in text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "holds no memories"),
        ("not json\n", "is not JSON"),
        ('{"category": "decision", "text": "x"}\n', "needs the text fields"),
        ('{"category": "mood", "text": "x", "query": "y"}\n', "unknown category 'mood'"),
    ],
)
def test_a_bad_memories_file_gets_one_line(
    tmp_path: Path, small_repo: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, "utf-8")

    result = CliRunner().invoke(
        cli, ["bench", "people-first", "--repo", str(small_repo), "--memories", str(path)]
    )

    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output


def test_a_folder_that_is_no_repository_gets_one_line(tmp_path: Path, memories: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()

    result = CliRunner().invoke(
        cli, ["bench", "people-first", "--repo", str(plain), "--memories", str(memories)]
    )

    assert result.exit_code != 0
    assert "Cannot clone" in result.output and "Traceback" not in result.output
