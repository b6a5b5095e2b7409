"""A command-line argument that is not UTF-8 gets one answer from every command, whether a daemon
serves the store or not: the CLI refuses it at its intake (``cli/main.py:refuse_undecodable``),
before any service is opened, so nothing reaches the store or the daemon. Before, the daemon
path said "The prefix is not valid UTF-8" while the store itself answered "No memory with id"."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem.api import Memory
from graphmem.cli import main
from graphmem.server.daemon_process import DaemonInfo
from graphmem.server.remote import RemoteMemory

BAD_ID = os.fsdecode(b"mem_\xff")  # what argv holds for bytes UTF-8 cannot read
BAD_WORD = os.fsdecode(b"caf\xe9")  # a Latin-1 word

COMMANDS = {
    "show": ["show", BAD_ID],
    "edit": ["edit", BAD_ID, "new text"],
    "archive": ["archive", BAD_ID],
    "history": ["history", BAD_ID],
    "link": ["link", "--kind", "supersedes", "mem_a", BAD_ID],
    "remember": ["remember", "-c", "fact", f"We use {BAD_WORD} for the cache"],
    "recall": ["recall", BAD_WORD],
    "list --since": ["list", "--since", BAD_WORD],
    "enrich": ["enrich", f"!{BAD_WORD}"],
    "claim": ["claim", BAD_WORD, "src/app.py"],
    "import": ["import", f"/tmp/{BAD_WORD}.jsonl"],
}


def refusal(word: str) -> str:
    """The one answer to ``word``: named with its bytes escaped, and where UTF-8 stops reading it."""
    shown = word.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    at = next(i for i, ch in enumerate(word) if "\udc80" <= ch <= "\udcff")
    return f"error: The argument {shown} is not valid UTF-8 (at character {at}): pass UTF-8 text.\n"


class Opened:
    """The services the CLI opened; each built by ``make`` (the store itself, or a daemon's client)."""

    def __init__(self, make: main.ServiceFactory) -> None:
        self.make = make
        self.data_dirs: list[Path | None] = []

    def __call__(self, data_dir: Path | None, *, check_model: bool = True) -> Memory:
        self.data_dirs.append(data_dir)
        return self.make(data_dir, check_model=check_model)


@pytest.fixture
def daemon_port() -> Iterator[socket.socket]:
    """A socket listening where the daemon's client calls; nothing is accepted."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0)
    yield server
    server.close()


@pytest.fixture(params=["store", "daemon"])
def opened(
    request: pytest.FixtureRequest,
    in_memory_cli: object,
    daemon_port: socket.socket,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Opened:
    """The service factory of each way a command runs: on the store itself (in memory), or
    through a daemon's client (``RemoteMemory``, what ``open_memory`` gives when one runs)."""
    if request.param == "store":
        recorder = Opened(main.SERVICE_FACTORY)  # type: ignore[arg-type]
    else:
        (tmp_path / "daemon.token").write_text("t" * 43 + "\n", "ascii")
        url = f"http://127.0.0.1:{daemon_port.getsockname()[1]}"

        def remote(data_dir: Path | None, *, check_model: bool = True) -> Memory:
            return RemoteMemory(DaemonInfo(os.getpid(), url, str(tmp_path), 0.0, "t"))

        recorder = Opened(remote)
    monkeypatch.setattr(main, "SERVICE_FACTORY", recorder)
    return recorder


def run(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    project = tmp_path / "work"
    project.mkdir(exist_ok=True)
    result = CliRunner().invoke(
        main.cli, ["--data-dir", str(tmp_path / "data"), "--project", str(project), *args]
    )
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_an_argument_that_is_not_utf8_gets_one_answer_with_or_without_a_daemon(
    command: str, opened: Opened, daemon_port: socket.socket, tmp_path: Path
) -> None:
    args = COMMANDS[command]

    code, out, err = run(tmp_path, *args)

    assert (code, out) == (2, "")
    assert err == refusal(next(arg for arg in args if not arg.isascii()))
    assert opened.data_dirs == []  # refused at the intake: no service opened, nothing sent
    with pytest.raises(BlockingIOError):
        daemon_port.accept()


def test_show_of_an_id_that_is_not_utf8_names_it(opened: Opened, tmp_path: Path) -> None:
    _, _, err = run(tmp_path, "show", BAD_ID)

    assert err == "error: The argument mem_\\xff is not valid UTF-8 (at character 4): pass UTF-8 text.\n"


def test_a_global_option_that_is_not_utf8_is_refused_as_well(opened: Opened) -> None:
    result = CliRunner().invoke(main.cli, ["--data-dir", f"data-{BAD_WORD}", "list"])

    assert (result.exit_code, result.stderr) == (2, refusal(f"data-{BAD_WORD}"))
    assert opened.data_dirs == []


def test_a_long_argument_is_shown_around_what_is_not_utf8(opened: Opened, tmp_path: Path) -> None:
    _, _, err = run(tmp_path, "recall", "x" * 200 + BAD_WORD)

    assert err == (
        f"error: The argument …{'x' * 76}caf\\xe9 is not valid UTF-8 (at character 203): pass UTF-8 text.\n"
    )


def test_an_argument_of_utf8_beyond_ascii_still_runs(in_memory_cli: object, tmp_path: Path) -> None:
    code, out, err = run(tmp_path, "remember", "-c", "fact", "We use Kùzu 🚀 for the graph")

    assert (code, err) == (0, "")
    assert out.startswith("mem_")
