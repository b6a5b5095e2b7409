"""``graphmem export -o PATH`` writes only a regular file (a new one, or one it replaces whole):
a FIFO, a device, a socket or a symbolic link is refused with one line that names the path and
the fix, exit 2, before the store is opened; the link and what it points to are left as they
were. A FIFO no one reads must not hold the command: the export runs in a thread with a deadline,
and a hang fails the test (then the FIFO is read, so that the thread ends)."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result

from graphmem.errors import InvalidInputError

Invoke = Callable[..., Result]  # the ``invoke`` fixture of conftest.py

DEADLINE_S = 20.0  # a refusal takes milliseconds; the old code waited on the FIFO for ever


def _within_deadline(invoke: Invoke, *args: str, fifo: Path | None = None) -> Result:
    """``graphmem ARGS``, or a failed test when it is still running after ``DEADLINE_S``."""
    done: list[Result] = []
    worker = threading.Thread(target=lambda: done.append(invoke(*args)), daemon=True)
    worker.start()
    worker.join(DEADLINE_S)
    hung = not done
    if hung and fifo is not None:  # the command waits on the FIFO: read it, so that it ends
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            while worker.is_alive():
                worker.join(0.1)
                with contextlib.suppress(BlockingIOError):  # nothing written since the last read
                    os.read(reader, 1 << 16)
        finally:
            os.close(reader)
    assert not hung, f"graphmem {' '.join(args)} hung for {DEADLINE_S} s"
    return done[0]


def _refused(result: Result, path: Path | str) -> str:
    """The one-line error of a refused export, which names ``path``."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == InvalidInputError.exit_code, result.output
    assert "Traceback" not in result.output
    assert [line for line in result.stderr.splitlines() if line.strip()] == [result.stderr.strip()]
    assert str(path) in result.stderr
    return result.stderr


@pytest.fixture
def socket_file(tmp_path: Path) -> Iterator[Path]:
    """A Unix socket's name in ``tmp_path`` (short: a socket's path has a length limit)."""
    path = tmp_path / "s.sock"
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(path))
    except OSError:
        listener.close()
        pytest.skip("no room for a Unix socket's path here")
    with listener:
        yield path


def test_an_export_onto_a_fifo_is_refused_at_once(invoke: Invoke, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert invoke("remember", "Deploys go out on Tuesdays").exit_code == 0

    message = _refused(_within_deadline(invoke, "export", "-o", str(fifo), fifo=fifo), fifo)

    assert "named pipe" in message and "-o -" in message
    assert fifo.is_fifo()


@pytest.mark.parametrize("kind", ["device", "socket"])
def test_an_export_onto_a_device_or_a_socket_is_refused(
    invoke: Invoke, kind: str, request: pytest.FixtureRequest
) -> None:
    target = Path("/dev/null") if kind == "device" else request.getfixturevalue("socket_file")
    if not target.exists():
        pytest.skip(f"no {target} here")

    message = _refused(_within_deadline(invoke, "export", "-o", str(target)), target)

    assert f"a {kind}" in message and "-o -" in message


@pytest.mark.parametrize("dangling", [False, True], ids=["to-a-file", "dangling"])
def test_an_export_onto_a_symlink_leaves_the_link_and_its_file_alone(
    invoke: Invoke, tmp_path: Path, dangling: bool
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "mine.jsonl"
    if not dangling:
        target.write_text("my own notes\n", "utf-8")
    link = folder / "link.jsonl"
    link.symlink_to(target)
    assert invoke("remember", "Deploys go out on Tuesdays").exit_code == 0

    message = _refused(_within_deadline(invoke, "export", "-o", str(link)), link)

    assert "symbolic link" in message and "-o -" in message
    assert link.is_symlink() and os.readlink(link) == str(target)
    if dangling:
        assert {p.name for p in folder.iterdir()} == {"link.jsonl"}  # nothing made where it points
    else:
        assert {p.name for p in folder.iterdir()} == {"link.jsonl", "mine.jsonl"}
        assert target.read_text("utf-8") == "my own notes\n"


def _fifo(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "pipe")
    return tmp_path / "pipe"


def _link(tmp_path: Path) -> Path:
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    return tmp_path / "link.jsonl"


@pytest.mark.parametrize(
    "target",
    [_fifo, _link, lambda _tmp: Path("/dev/null")],
    ids=["fifo", "symlink", "device"],
)
def test_a_refused_export_never_opens_the_store(
    invoke: Invoke, in_memory_cli: dict[Path, object], tmp_path: Path, target: Callable[[Path], Path]
) -> None:
    path = target(tmp_path)

    _refused(_within_deadline(invoke, "export", "-o", str(path), fifo=path if path.is_fifo() else None), path)

    assert in_memory_cli == {}, "the store was opened for an export that could not be written"
