"""graphmem runs the embedding model without the telemetry ONNX Runtime keeps of its own: no device
id and no queue of events about the machine and each model in the user's cache."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.daemons import sandbox_env

pytestmark = pytest.mark.integration


def test_a_recall_with_the_model_leaves_no_onnx_runtime_telemetry_in_the_home(tmp_path: Path) -> None:
    home, data_dir = tmp_path / "home", tmp_path / "data"
    env = sandbox_env(data_dir, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
    for args in (("remember", "Deploys go out on Tuesdays"), ("recall", "when do we deploy")):
        done = subprocess.run(
            [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr

    assert "Tuesdays" in done.stdout  # the model ran: its file is in the cache
    assert list((home / ".cache" / "graphmem" / "models").glob("*.onnx"))
    assert not (home / ".cache" / "Microsoft").exists()
    assert [path.name for path in home.rglob("*") if "onnxruntime" in path.name.lower()] == []
