"""What graphmem prints never drives the terminal: control characters are shown, not obeyed."""

from __future__ import annotations

import io
import json

import pytest

from graphmem.cli import present, terminal

HOSTILE = "fix \x1b]52;c;ZWNobyBwd25lZA==\x07 things \x1b[2J\x1b[H \x9b31m \x7f\r\tend\n"


def test_every_control_but_tab_and_newline_is_shown_as_a_picture() -> None:
    shown = terminal.visible(HOSTILE)

    assert terminal.CONTROLS.search(shown) is None
    assert shown == "fix ␛]52;c;ZWNobyBwd25lZA==␇ things ␛[2J␛[H \\x9b31m ␡␍\tend\n"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("tty", [True, False])
def test_only_a_terminal_gets_the_pictures(monkeypatch: pytest.MonkeyPatch, tty: bool) -> None:
    stream = Tty() if tty else io.StringIO()
    monkeypatch.setattr("sys.stdout", stream)

    terminal.install()
    print(HOSTILE, end="")

    # A pipe or a file (an export, the MCP proxy's messages) gets the bytes it was given.
    assert stream.getvalue() == (terminal.visible(HOSTILE) if tty else HOSTILE)


def test_json_escapes_every_control_and_reads_back_the_same_text(capsys: pytest.CaptureFixture[str]) -> None:
    present.echo_json({"text": HOSTILE})

    printed = capsys.readouterr().out
    assert terminal.CONTROLS.search(printed.replace("\n", "")) is None
    assert json.loads(printed) == {"text": HOSTILE}


def test_an_error_that_quotes_hostile_text_drives_no_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    from graphmem.errors import ImportFileError

    present.error(ImportFileError(f"bad file {HOSTILE}", [(3, f"not JSON: {HOSTILE}")]))

    printed = capsys.readouterr().err
    assert terminal.CONTROLS.search(printed) is None
    assert "bad file fix ␛]52;" in printed and "line 3: not JSON: fix ␛]52;" in printed
