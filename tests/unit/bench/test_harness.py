"""The environment and percentiles the daemon-driving benchmarks share (bench/harness.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.bench.harness import graphmem_env, percentile


def test_a_benchmark_process_runs_on_its_own_data_dir_and_a_free_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHMEM_RECALL__LIMIT", "3")
    env = graphmem_env(tmp_path / "data", GRAPHMEM_RATE_LIMIT="0")
    assert env["GRAPHMEM_DATA_DIR"] == str(tmp_path / "data")
    assert env["GRAPHMEM_SERVER__PORT"] == "0"
    assert env["GRAPHMEM_RATE_LIMIT"] == "0"
    assert env["GRAPHMEM_RECALL__LIMIT"] == "3"  # the user's settings kept by default


def test_without_user_settings_neither_their_variables_nor_their_config_file_reach_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHMEM_RECALL__LIMIT", "3")
    monkeypatch.setenv("GRAPHMEM_CONFIG", str(tmp_path / "mine.toml"))
    env = graphmem_env(tmp_path / "data", user_settings=False)
    assert "GRAPHMEM_RECALL__LIMIT" not in env
    assert env["GRAPHMEM_CONFIG"] == str(tmp_path / "no-such-config.toml")


def test_percentile_is_the_nearest_rank_and_zero_for_no_values() -> None:
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 0.5) == 3.0
    assert percentile([1.0, 2.0], 0.95) == 2.0
    assert percentile([], 0.5) == 0.0
