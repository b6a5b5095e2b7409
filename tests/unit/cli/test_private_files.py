"""What the CLI keeps from other users of the machine, and the inputs it refuses before
anything is sent: an empty data dir, a text over the limit."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import webbrowser
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from graphmem.cli import main
from graphmem.core.text import MAX_TEXT_CHARS
from graphmem.server import daemon_process, loopback
from graphmem.service.memory import MemoryService

Invoke = Callable[..., Result]  # the ``invoke`` fixture of conftest.py
CODE = "SIGNINCODEthatnooneelsemayread"


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_an_empty_data_dir_option_is_a_one_line_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main.cli, ["--data-dir", "", "stats"])
    assert result.exit_code != 0
    assert result.output.strip().count("\n") == 0 and "--data-dir is empty" in result.output


def test_an_empty_data_dir_variable_is_a_one_line_error(tmp_path: Path) -> None:
    env = {**os.environ, "GRAPHMEM_DATA_DIR": "", "GRAPHMEM_CONFIG": str(tmp_path / "none.toml")}
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "stats"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode != 0 and "data dir is empty" in done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert not list(tmp_path.glob("*.kuzu"))  # nothing made in the current directory


@pytest.mark.parametrize("stdin", [False, True])
def test_a_text_over_the_limit_is_refused_before_it_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stdin: bool
) -> None:
    sent: list[str] = []

    class Daemon:
        """Stands for the daemon the service would send the text to."""

        def remember(self, text: str, **arguments: object) -> None:
            sent.append(text)
            raise AssertionError("the text was sent")

        def close(self) -> None:
            pass

    def factory(data_dir: Path | None, *, check_model: bool = True) -> MemoryService:
        return Daemon()  # type: ignore[return-value]

    monkeypatch.setattr(main, "SERVICE_FACTORY", factory)
    text = "word " * (MAX_TEXT_CHARS // 4)
    args = ["--data-dir", str(tmp_path / "data"), "remember", "-" if stdin else text]
    result = CliRunner().invoke(main.cli, args, input=text if stdin else None)
    assert result.exit_code != 0 and f"the limit is {MAX_TEXT_CHARS:,}" in result.output
    assert sent == []


def test_graphmem_ui_never_gives_the_browser_the_sign_in_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    info = daemon_process.DaemonInfo(os.getpid(), "http://127.0.0.1:9824", str(data_dir), 0.0, "0")
    opened: list[str] = []
    monkeypatch.setattr(daemon_process, "find_daemon", lambda data_dir: info)
    monkeypatch.setattr(daemon_process, "read_token", lambda data_dir: "token")
    monkeypatch.setattr(loopback, "post", lambda *a, **k: (200, f'{{"path": "/ui/#code={CODE}"}}'.encode()))
    monkeypatch.setattr(webbrowser, "open", lambda url, *a, **k: opened.append(url) or True)
    monkeypatch.chdir(tmp_path)  # no project: the URL is the code's alone
    result = CliRunner().invoke(main.cli, ["--data-dir", str(data_dir), "ui"])
    assert result.exit_code == 0, result.output
    assert len(opened) == 1 and CODE not in opened[0] and CODE not in result.output
    page = Path(opened[0].removeprefix("file://"))
    assert page.parent == data_dir and mode(page) == 0o600
    assert f"http://127.0.0.1:9824/ui/#code={CODE}" in page.read_text("utf-8")


def test_export_to_a_file_is_readable_by_the_user_alone(invoke: Invoke, tmp_path: Path) -> None:
    assert invoke("remember", "We deploy on Fridays").exit_code == 0
    out = tmp_path / "memories.jsonl"
    previous = os.umask(0o022)
    try:
        assert invoke("export", "-o", str(out)).exit_code == 0
    finally:
        os.umask(previous)
    assert mode(out) == 0o600


def test_export_to_a_repository_folder_follows_the_users_umask(invoke: Invoke, tmp_path: Path) -> None:
    """Those files are meant to be committed and reviewed: made as any file of the checkout."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path / "work", check=True)
    assert invoke("remember", "-c", "decision", "We use Kùzu for the graph store").exit_code == 0
    previous = os.umask(0o022)
    try:
        result = invoke("export", "--project", "--to", str(tmp_path / "work" / ".graphmem"))
    finally:
        os.umask(previous)
    assert result.exit_code == 0, result.output
    folder = tmp_path / "work" / ".graphmem"
    assert mode(folder) == 0o755 and mode(folder / "memories.jsonl") == 0o644
