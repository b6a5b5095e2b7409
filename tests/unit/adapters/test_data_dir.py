"""The data dir is the user's alone: made 0700, and an older store's folder and files tightened once."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from graphmem.adapters import data_dir
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.errors import InvalidInputError


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_data_dir_is_made_0700(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "data"
    data_dir.make_private(folder)
    assert mode(folder) == 0o700


def test_a_store_others_could_read_is_tightened_once_with_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "data"
    (folder / "vectors").mkdir(parents=True)
    os.chmod(folder, 0o755)
    os.chmod(folder / "vectors", 0o755)
    for name in ("graph.kuzu", "graph.kuzu.wal", "daemon.log", "vectors/index.bin"):
        (folder / name).write_text("memories", "utf-8")
        os.chmod(folder / name, 0o644)
    with caplog.at_level(logging.INFO, logger="graphmem"):
        data_dir.make_private(folder)
        data_dir.make_private(folder)
    assert mode(folder) == 0o700 and mode(folder / "vectors") == 0o700
    assert {
        mode(folder / name) for name in ("graph.kuzu", "graph.kuzu.wal", "daemon.log", "vectors/index.bin")
    } == {0o600}
    lines = [r.getMessage() for r in caplog.records if "tightened" in r.getMessage()]
    assert len(lines) == 1 and str(folder) in lines[0] and "5 file(s)" in lines[0]


def test_opening_a_kuzu_store_makes_its_folder_private(tmp_path: Path) -> None:
    """Whatever the caller's umask (the Python API sets none): no one else enters the folder."""
    folder = tmp_path / "data"
    folder.mkdir()
    os.chmod(folder, 0o755)
    store = KuzuGraphStore(folder, dimension=8)
    store.close()
    assert mode(folder) == 0o700
    assert mode(folder / data_dir.OWNER_FILENAME) == 0o600


def test_private_opener_makes_0600_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        with open(tmp_path / "f", "w", opener=data_dir.private_opener) as out:
            out.write("x")
    finally:
        os.umask(previous)
    assert mode(tmp_path / "f") == 0o600


def test_a_data_dir_that_is_a_device_is_refused_and_left_as_it_was() -> None:
    device = Path("/dev/null")
    mode = device.stat().st_mode

    with pytest.raises(InvalidInputError, match="not a folder"):
        data_dir.make_private(device)

    assert device.stat().st_mode == mode


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["/venv/bin/graphmem", "--data-dir", "/tmp/d", "bootstrap", "/src/shop"], "graphmem bootstrap"),
        (["/venv/bin/graphmem", "-v", "--project", "/src", "remember", "secret text"], "graphmem remember"),
        (["/venv/lib/graphmem/__main__.py", "--data-dir=/d", "recall", "q"], "graphmem recall"),
        (["/home/me/backup.py", "--all"], "backup.py"),
        ([], "?"),
    ],
)
def test_the_owner_of_a_store_is_recorded_as_the_command_a_person_typed(argv: list[str], shown: str) -> None:
    assert data_dir.process_command(argv) == shown


def test_a_locked_store_names_the_command_holding_it_and_how_to_share_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.argv", ["/venv/bin/graphmem", "--data-dir", str(tmp_path), "bootstrap", "/src"])
    data_dir.write_owner(tmp_path)

    message = data_dir.locked_message(tmp_path, tmp_path / "graph.kuzu")

    assert f"(process {os.getpid()}: graphmem bootstrap)" in message
    assert "Wait for it to finish" in message and "graphmem serve --detach" in message
