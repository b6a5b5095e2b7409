"""Every reader checks the settings the same way, daemon or not, and never uses another store.

The CLI through a running daemon, the CLI opening the store itself and ``graphmem mcp`` give the
same exit 9 for an invalid value and the same "did you mean" warning for an unknown key; a
daemon serving another store than the caller's settings ask for is an error naming both.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.daemons import Daemon, sandbox_env, start_daemon


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    running = start_daemon(tmp_path_factory.mktemp("configured") / "data")
    yield running
    running.stop()


def graphmem(data_dir: Path, config: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphmem", *args],
        env=sandbox_env(data_dir, GRAPHMEM_CONFIG=str(config), **env),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


INVALID = {
    "[recall]\nlimit = -5\n": "recall.limit",
    '[recall]\nplan = "fancy"\n': "recall.plan",
    '[server]\nsession_ttl_seconds = "abc"\n': "server.session_ttl_seconds",
}


@pytest.mark.parametrize("text", INVALID)
def test_an_invalid_value_is_exit_9_whether_a_daemon_runs_or_not(
    daemon: Daemon, tmp_path: Path, text: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(text, "utf-8")

    served = graphmem(daemon.data_dir, config, "recall", "which database")
    alone = graphmem(tmp_path / "no-daemon", config, "recall", "which database")

    for done in (served, alone):
        assert done.returncode == 9, done.stderr
        assert done.stderr.startswith(f"error: Invalid settings ({INVALID[text]}: ")
        assert "Traceback" not in done.stderr
    assert served.stderr == alone.stderr


def test_unknown_sections_and_keys_are_warnings_that_name_the_setting_meant(
    daemon: Daemon, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[recal]\nlimit = 3\n[recall]\nlimt = 4\n", "utf-8")

    done = graphmem(daemon.data_dir, config, "list")

    assert done.returncode == 0, done.stderr
    assert (
        f"warning: [recal] in {config} names no setting and is ignored (did you mean [recall]?)"
        in done.stderr
    )
    assert "warning: [recall] limt in" in done.stderr and "(did you mean limit?)" in done.stderr


def test_a_daemon_serving_another_store_is_never_used_silently(daemon: Daemon, tmp_path: Path) -> None:
    config = tmp_path / "no-config.toml"
    asked = {"GRAPHMEM_STORE_URL": "postgresql://graphmem:hunter2@127.0.0.1:1/team"}

    for args in (("list",), ("remember", "the team store is PostgreSQL"), ("mcp",)):
        done = graphmem(daemon.data_dir, config, *args, **asked)

        assert done.returncode == 6, (args, done.stderr)
        assert f"serves the embedded store in {daemon.data_dir.resolve()}" in done.stderr
        assert (
            "your settings ask for the PostgreSQL store postgresql://graphmem@127.0.0.1:1/team" in done.stderr
        )
        assert "hunter2" not in done.stderr
    listed = graphmem(daemon.data_dir, config, "list")
    assert "the team store is PostgreSQL" not in listed.stdout
