"""Every option and argument of every command reaches the command's function under a name the
function takes: a shared option decorator that names its parameter wrong fails here, not when
someone first runs the command."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

import click

from graphmem.cli.main import commands


def _leaves(name: str, command: click.Command) -> Iterator[tuple[str, click.Command]]:
    yield name, command
    if isinstance(command, click.Group):
        for sub_name, sub in command.commands.items():
            yield from _leaves(f"{name} {sub_name}", sub)


def _named(function: Callable[..., Any]) -> set[str]:
    """The parameters named by ``function`` and by what it wraps (``pass_state``, the
    lifecycle commands' ``filter_options``), each level read as written."""
    named: set[str] = set()
    while function is not None:
        named |= {
            p.name
            for p in inspect.signature(function, follow_wrapped=False).parameters.values()
            if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        }
        function = getattr(function, "__wrapped__", None)
    return named


def test_each_parameter_of_each_command_is_a_parameter_of_its_function() -> None:
    unknown = []
    for name, command in (leaf for top, cmd in commands().items() for leaf in _leaves(top, cmd)):
        if command.callback is None:
            continue
        named = _named(command.callback)
        unknown += [f"{name}: {p.name}" for p in command.params if p.expose_value and p.name not in named]
    assert unknown == []
