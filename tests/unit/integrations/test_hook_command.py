"""A hook command as a process (graphmem/integrations/hook_command.py): an answer that fails adds
nothing and says why in the hook's log (bad input a warning, anything else its traceback), what
ends the process still ends it, and a config that cannot be read, or a data dir that is not
graphmem's (a folder holding files it did not make), is one line on stderr: nothing is written
into that folder."""

from __future__ import annotations

import io
import json
import logging
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.foreign_folder import foreign_folder, snapshot

from graphmem.errors import ConfigError
from graphmem.integrations import claude_code, codex_hook, hook_command
from graphmem.integrations.hook_command import AnswerGuard
from graphmem.integrations.hook_input import HookInputError

log = logging.getLogger("graphmem.integrations.test_hook_command")
SESSION = "0b5c3e8e-3f5a-4c43-9a0e-1f2d3c4b5a69"


def answer(event: str, failure: BaseException | None, named: str | None = None) -> str:
    """What a hook answers for ``event`` when its work raises ``failure`` (None: it answers "done");
    ``named``: the event as the work names it once it has read it."""
    with AnswerGuard(log, event) as guard:
        if named is not None:
            guard.event = named
        if failure is not None:
            raise failure
        return "done"
    return ""


def test_bad_input_adds_nothing_and_is_one_warning_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger=log.name):
        assert answer("stop", HookInputError("session_id '../x' is not an id")) == ""

    [record] = caplog.records
    assert (record.levelname, record.getMessage()) == (
        "WARNING",
        "stop: session_id '../x' is not an id; added nothing",
    )
    assert record.exc_info is None


def test_any_other_failure_adds_nothing_and_logs_its_traceback_under_the_event_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger=log.name):
        assert answer("?", KeyError("session"), named="Stop") == ""

    [record] = caplog.records
    assert (record.levelname, record.getMessage()) == ("ERROR", "Stop failed; added nothing")
    assert record.exc_info is not None and isinstance(record.exc_info[1], KeyError)
    assert "Traceback" in caplog.text and "KeyError" in caplog.text


def test_an_answer_passes_through_and_what_ends_the_process_is_not_swallowed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger=log.name):
        assert answer("stop", None) == "done"
        with pytest.raises(KeyboardInterrupt):
            answer("stop", KeyboardInterrupt())
    assert caplog.records == []


def test_a_hook_command_whose_config_cannot_be_read_says_so_on_stderr_and_answers_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def unreadable() -> tuple[Path, Any]:
        raise ConfigError("graphmem.toml line 3: expected a value")

    asked: list[Path] = []

    def answer_for(data_dir: Path) -> str:
        asked.append(data_dir)
        return "an answer"

    assert hook_command.run_command("codex", unreadable, answer_for) == 0
    assert asked == []
    assert capsys.readouterr() == ("", "graphmem hook codex: graphmem.toml line 3: expected a value\n")


@pytest.fixture
def no_daemon(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[Any]]:
    """What would start a daemon fails the call instead (the hook logs it and goes on); the hook
    command's log, if it made one under ``tmp_path``, is this test's only."""
    started: list[Any] = []

    def refuse(args: Any, *rest: Any, **options: Any) -> Any:
        started.append(args)
        raise OSError("no daemon in this test")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.delenv("GRAPHMEM_PLUGIN", raising=False)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    yield started
    root = logging.getLogger("graphmem")
    for handler in root.handlers[:]:
        if getattr(handler, "baseFilename", "").startswith(str(tmp_path)):
            root.removeHandler(handler)
            handler.close()


PROMPT = {"session_id": SESSION, "prompt": "which port?", "cwd": "/home/me/shop"}
# Each client's hook command, its arguments and a prompt's input: the event that journals it.
HOOKS = {
    "claude-code": (claude_code.main, ["user-prompt-submit"], {**PROMPT, "prompt_id": "p1"}),
    "codex": (codex_hook.main, [], {**PROMPT, "hook_event_name": "UserPromptSubmit", "turn_id": "t1"}),
}


@pytest.mark.parametrize("client", list(HOOKS))
def test_a_hook_on_a_data_dir_that_is_not_graphmems_writes_nothing_there_says_why_on_stderr_and_exits_0(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_daemon: list[Any],
    client: str,
) -> None:
    main, args, given = HOOKS[client]
    folder = foreign_folder(tmp_path)
    before = snapshot(folder)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(given).encode())))

    assert main([*args, "--data-dir", str(folder)]) == 0

    assert snapshot(folder) == before  # no hooks.log, hook-journal or hook-backoff
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"graphmem hook {client}: The data dir {folder} holds files graphmem did not make")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert no_daemon == []


def test_a_hook_command_on_a_data_dir_that_is_not_graphmems_asks_no_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = foreign_folder(tmp_path)
    asked: list[Path] = []

    def answer_for(data_dir: Path) -> str:
        asked.append(data_dir)
        return "an answer"

    assert hook_command.run_command("codex", lambda: (folder, None), answer_for) == 0
    assert asked == []
    assert capsys.readouterr().out == ""
