"""Ctrl-C that lands while a command's modules load ends the command as any Ctrl-C does
(``GraphmemGroup.invoke``): Python may hand it over wrapped in another error."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from click.testing import Result

from graphmem.service.memory import MemoryService

Invoke = Callable[..., Result]  # the ``invoke`` fixture of conftest.py


class _InterruptedAsItIsNamed:
    """A class attribute whose ``__set_name__`` meets a Ctrl-C, as a dataclass's ``field()``
    does when SIGINT arrives while a module defining one loads: Python 3.11 wraps it in
    ``RuntimeError: Error calling __set_name__``, later versions let it through."""

    def __set_name__(self, owner: type, name: str) -> None:
        raise KeyboardInterrupt


def test_ctrl_c_while_a_class_is_made_ends_the_command_without_a_traceback(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(self: MemoryService, *args: object, **kwargs: object) -> None:
        type("Coordinator", (), {"_sessions": _InterruptedAsItIsNamed()})

    monkeypatch.setattr(MemoryService, "recall", interrupted)

    result = invoke("recall", "which database")

    assert result.exit_code == 1
    assert "Aborted!" in result.output
    assert isinstance(result.exception, SystemExit)  # click's Abort, not the RuntimeError


def test_a_runtime_error_that_is_no_ctrl_c_still_fails_the_command(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: MemoryService, *args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(MemoryService, "recall", broken)

    result = invoke("recall", "which database")

    assert isinstance(result.exception, RuntimeError)
    assert "Aborted!" not in result.output
