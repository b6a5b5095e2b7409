"""A hook command as a process (graphmem/integrations/hook_command.py): an answer that fails adds
nothing and says why in the hook's log (bad input a warning, anything else its traceback), what
ends the process still ends it, and a config that cannot be read is one line on stderr."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from graphmem.errors import ConfigError
from graphmem.integrations import hook_command
from graphmem.integrations.hook_command import AnswerGuard
from graphmem.integrations.hook_input import HookInputError

log = logging.getLogger("graphmem.integrations.test_hook_command")


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
