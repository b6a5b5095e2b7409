"""``graphmem.regular_files``: the one way graphmem opens a file something else put in place."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from graphmem.regular_files import NotRegularFile, open_regular, read_regular


def test_a_regular_file_is_read_up_to_one_byte_past_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_bytes(b"0123456789")
    assert read_regular(path, 100) == b"0123456789"
    assert read_regular(path, 4) == b"01234"  # one past the bound: the caller sees "too long"


@pytest.mark.timeout(60)
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile) as raised:
        read_regular(fifo, 10)
    assert not raised.value.folder
    assert raised.value.strerror == "not a regular file: a pipe, device or socket"


@pytest.mark.timeout(60)
def test_a_device_is_refused_not_read_without_end() -> None:
    with pytest.raises(NotRegularFile):
        open_regular("/dev/zero")


def test_a_folder_is_told_apart(tmp_path: Path) -> None:
    with pytest.raises(NotRegularFile) as raised:
        open_regular(tmp_path)
    assert raised.value.folder
    assert raised.value.errno == errno.EISDIR


def test_a_link_is_followed_unless_asked_not_to(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"x")
    link = tmp_path / "link"
    link.symlink_to(target)
    with open_regular(link) as handle:
        assert handle.read() == b"x"
    with pytest.raises(OSError) as raised:
        open_regular(link, follow_links=False)
    assert raised.value.errno == errno.ELOOP


def test_a_missing_file_is_the_open_s_own_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        open_regular(tmp_path / "missing")


def test_no_descriptor_is_left_open_by_a_refusal(tmp_path: Path) -> None:
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        with pytest.raises(NotRegularFile):
            open_regular(tmp_path)
    assert len(os.listdir("/proc/self/fd")) == before
