"""The daemon's local secret: ``daemon.token``, made once, readable only by its user; and found,
with the daemon, from any directory."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from graphmem.server.daemon import published_info
from graphmem.server.daemon_process import (
    TOKEN_FILENAME,
    ServeLock,
    ensure_token,
    find_daemon,
    read_token,
)
from graphmem.server.remote import RemoteMemory
from graphmem.settings import load_settings


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_the_token_is_made_once_with_mode_0600_and_kept(tmp_path: Path) -> None:
    assert read_token(tmp_path) is None
    token = ensure_token(tmp_path)
    assert len(token) >= 43 and mode(tmp_path / TOKEN_FILENAME) == 0o600
    assert ensure_token(tmp_path) == token == read_token(tmp_path)  # a restarted daemon keeps it
    assert [p.name for p in tmp_path.iterdir()] == [TOKEN_FILENAME]  # no temporary file left


def test_a_token_others_could_read_is_replaced(tmp_path: Path) -> None:
    token = ensure_token(tmp_path)
    (tmp_path / TOKEN_FILENAME).chmod(0o644)
    replaced = ensure_token(tmp_path)
    assert replaced != token and mode(tmp_path / TOKEN_FILENAME) == 0o600


def test_a_symlinked_token_file_is_replaced_and_its_target_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("x" * 50, "ascii")
    target.chmod(0o600)
    (tmp_path / TOKEN_FILENAME).symlink_to(target)
    token = ensure_token(tmp_path)
    assert not (tmp_path / TOKEN_FILENAME).is_symlink() and token != "x" * 50
    assert target.read_text("ascii") == "x" * 50


def test_a_short_or_empty_token_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / TOKEN_FILENAME
    path.write_text("\n", "ascii")
    path.chmod(0o600)
    assert read_token(tmp_path) is None
    assert len(ensure_token(tmp_path)) >= 43


def test_a_daemon_given_a_relative_data_dir_is_found_with_its_token_from_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``graphmem --data-dir ../store serve`` in ``rel/a``, then a client elsewhere naming the store
    by its full path: it finds the daemon, and the token by the data dir daemon.json gives (once
    ``../store``, read from the client's own directory: no token, exit 5)."""
    (tmp_path / "rel" / "a").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "rel" / "a")
    settings = load_settings(data_dir=Path("../store"))
    lock = ServeLock(settings.data_dir)  # the daemon, as ``serve`` takes its lock and publishes
    try:
        token = ensure_token(settings.data_dir)
        lock.publish(published_info(settings, "http://127.0.0.1:9", "test"))
        monkeypatch.chdir(tmp_path)

        info = find_daemon(Path(os.getcwd()) / "rel" / "store")
        assert info is not None
        memory = RemoteMemory(info)
        try:
            assert read_token(memory.data_dir) == token  # what its every call sends
        finally:
            memory.close()
    finally:
        lock.release()
