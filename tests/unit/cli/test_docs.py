"""docs/cli.md describes every command of the CLI, and every command's help has an example."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from graphmem.cli.main import commands

DOCS = Path(__file__).resolve().parents[3] / "docs" / "cli.md"
COMMANDS = sorted(commands())


def sections() -> dict[str, str]:
    """``## heading`` → the text under it."""
    parts = re.split(r"^## (.+)$", DOCS.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {heading.strip(): body for heading, body in zip(parts[1::2], parts[2::2], strict=True)}


@pytest.mark.parametrize("name", COMMANDS)
def test_command_has_a_section_in_docs(name: str) -> None:
    assert name in sections(), f"docs/cli.md has no '## {name}' section"


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_of_the_command_is_in_its_section(name: str) -> None:
    body = sections().get(name, "")
    options = [
        opt
        for param in commands()[name].params
        if isinstance(param, click.Option) and not param.hidden  # hidden: internal plumbing
        for opt in param.opts
        if opt.startswith("--") and opt != "--help"
    ]

    missing = [opt for opt in options if f"`{opt}" not in body]

    assert not missing, f"docs/cli.md '## {name}' does not describe {missing}"


@pytest.mark.parametrize("name", COMMANDS)
def test_command_help_has_an_example(name: str) -> None:
    assert "Example:" in (commands()[name].help or "")
