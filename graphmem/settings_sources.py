"""Where each setting's value comes from, for ``graphmem.settings``: the ``GRAPHMEM_*`` variables
as read, the secrets' files, and, when pydantic refuses a value, the variable or config file key
that gave it.

pydantic names a field (``server.allowed_hosts``), not where its value came from: a user who set
``GRAPHMEM_SERVER__ALLOWED_HOSTS=graphmem.lan`` looks for that variable, and must be told that a
list is written in JSON. pydantic-settings decodes a list or a section given in a variable as
JSON before any validation, and raised its own ``SettingsError`` for text that is not JSON,
naming only the section: a traceback on every command. ``EnvironmentSource`` hands such text on
as it is, for the field to refuse it beside every other invalid value, and ``invalid_settings``
says each in one ``ConfigError``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, InitErrorDetails
from pydantic_settings import EnvSettingsSource

from graphmem.errors import ConfigError
from graphmem.locate import ENV_PREFIX, MAX_CONFIG_BYTES, path_problem, shown_value
from graphmem.regular_files import read_regular

# Environment variables that may hold the GitLab token, first found wins.
GITLAB_TOKEN_VARIABLES = ("GRAPHMEM_GITLAB_TOKEN", "GITLAB_TOKEN")
STORE_URL_VARIABLE = "GRAPHMEM_STORE_URL"
STORE_PASSWORD_VARIABLE = "GRAPHMEM_STORE_PASSWORD"
# The secret settings, each with the variables of its own that may give it: no error shows their
# values, nor that of a variable that gives a whole section holding one (``GRAPHMEM_STORE``).
SECRET_VARIABLES = {
    ("api_key",): (),
    ("gitlab", "token"): GITLAB_TOKEN_VARIABLES,
    ("store", "url"): (STORE_URL_VARIABLE,),  # may hold the password
    ("store", "password"): (STORE_PASSWORD_VARIABLE,),
}
# The types of pydantic's errors for a value that is not the list or the object (a section) a
# field takes.
_NOT_A_LIST = frozenset({"list_type"})
_NOT_AN_OBJECT = frozenset({"model_type", "model_attributes_type", "dict_type"})
# A value short and plain enough to be written back in the example of a JSON list.
_PLAIN_ITEMS = re.compile(r"[\w.:@*+/-]+(?:\s*,\s*[\w.:@*+/-]+)*")


class EnvironmentSource(EnvSettingsSource):
    """The ``GRAPHMEM_*`` variables as pydantic-settings reads them, but for a list or a section
    whose text is not JSON (or is JSON nested too deep to decode): that text is the field's
    value, which validation refuses as not a list or not an object, at the field's place."""

    def decode_complex_value(self, field_name: str, field: FieldInfo, value: Any) -> Any:
        try:
            return super().decode_complex_value(field_name, field, value)
        except (ValueError, RecursionError):
            return value


def invalid_settings(
    exc: ValidationError,
    model: type[BaseModel],
    overrides: Mapping[str, Any],
    config_file: Path,
) -> ConfigError:
    """One ``ConfigError`` for every value of ``exc``, each said with where it came from: the
    variable (its name, and what it holds unless it may hold a secret: ``SECRET_VARIABLES``) with
    how to write it, else the setting's key (``overrides`` and the config file)."""
    environment = {name.lower(): name for name in os.environ}
    said: dict[str, list[str]] = {}  # by the variable (with its value) or the key: what is wrong
    from_variables = True
    for error in exc.errors():
        loc = tuple(str(part) for part in error["loc"])
        found = None if loc[:1] and loc[0] in overrides else _variable(loc, environment)
        if found is None:
            from_variables = False
            said.setdefault(".".join(loc), []).append(_said(error))
            continue
        variable, path = found
        secret = any(secret[: len(path)] == path for secret in SECRET_VARIABLES)
        head = variable if secret else f"{variable} holds {shown_value(os.environ[variable])}"
        inner = ".".join(loc[len(path) :])
        fix = _how_to_write(error, variable, path, model, secret) if path == loc else None
        said.setdefault(head, []).append(fix or f"{inner + ': ' if inner else ''}{_said(error)}")
    problems = "; ".join(f"{head}: {'; '.join(each)}" for head, each in said.items())
    if from_variables:
        return ConfigError(f"Invalid settings ({problems}). Fix the variable, or unset it for the default.")
    return ConfigError(f"Invalid settings ({problems}). Check {config_file} and GRAPHMEM_* variables.")


def _variable(loc: tuple[str, ...], environment: Mapping[str, str]) -> tuple[str, tuple[str, ...]] | None:
    """The variable that gave the value at ``loc``, as set (any letter case), with the setting it
    names: the secret's own (``GRAPHMEM_STORE_URL``), the setting's, else its section's (a JSON
    object). None when no variable did (the config file or an override)."""
    for own in SECRET_VARIABLES.get(loc, ()):
        if os.environ.get(own, "").strip():
            return own, loc
    for length in range(len(loc), 0, -1):
        name = environment.get((ENV_PREFIX + "__".join(loc[:length])).lower())
        if name is not None:
            return name, loc[:length]
    return None


def _said(error: ErrorDetails) -> str:
    """pydantic's message, but a validator's own without pydantic's "Value error, " before it."""
    raised = error.get("ctx", {}).get("error")
    return str(raised) if error["type"] == "value_error" and raised is not None else error["msg"]


def _how_to_write(
    error: ErrorDetails, variable: str, path: tuple[str, ...], model: type[BaseModel], secret: bool
) -> str | None:
    """How ``variable`` is written, when it holds no list or no object where the setting at
    ``path`` takes one (a JSON list, a JSON object), its own words in the example unless it may
    hold a ``secret``; None for any other error."""
    if error["type"] in _NOT_A_LIST:
        text = os.environ[variable].strip()
        plain = not secret and len(text) <= 200 and _PLAIN_ITEMS.fullmatch(text)
        items = [item.strip() for item in text.split(",")] if plain else ["first", "second"]
        return f"it takes a JSON list, e.g. {variable}='{json.dumps(items)}'"
    if error["type"] in _NOT_AN_OBJECT:
        key, value = _example(_section(model, path))
        written = value if isinstance(value, str) else json.dumps(value)
        return (
            f"it takes a JSON object, e.g. {variable}='{json.dumps({key: value})}', or a variable "
            f"per setting: {variable}__{key.upper()}={written}"
        )
    return None


def _section(model: type[BaseModel], path: tuple[str, ...]) -> type[BaseModel] | None:
    """The section (a model) of ``model`` at ``path``; None when the path names no section."""
    for name in path:
        field = model.model_fields.get(name)
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model


def _example(section: type[BaseModel] | None) -> tuple[str, Any]:
    """A setting of ``section`` and its default, to show how the section is written: the first
    with a default of plain JSON (text, a number, true or false)."""
    for name, field in (section.model_fields if section is not None else {}).items():
        if isinstance(field.default, str | int | float | bool):
            return name, field.default
    return "setting", "value"


def secret_file(name: object, field: str, clean: Callable[[str], str]) -> str:
    """The secret held by the file that the setting ``field`` (``token_file``) names, ``clean``ed; a
    ``ValidationError`` at ``field`` (a ``ConfigError`` naming the variable or key that gave it)
    when it cannot be read or is empty, never showing the secret."""
    what = field.removesuffix("_file")
    try:
        return _read_secret(str(name), what, clean)
    except ValueError as exc:
        error: InitErrorDetails = {
            "type": "value_error",
            "loc": (field,),
            "input": str(name),
            "ctx": {"error": exc},
        }
        raise ValidationError.from_exception_data(what, [error]) from None


def _read_secret(name: str, what: str, clean: Callable[[str], str]) -> str:
    problem = path_problem(name)
    if problem:
        raise ValueError(f"the {what} file {shown_value(name)} {problem}")
    path = Path(name).expanduser()
    try:
        data = read_regular(path, MAX_CONFIG_BYTES)
        secret = clean(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        why = (exc.strerror if isinstance(exc, OSError) else None) or type(exc).__name__
        raise ValueError(f"cannot read the {what} file {shown_value(str(path))} ({why})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ValueError(
            f"the {what} file {shown_value(str(path))} is over {MAX_CONFIG_BYTES // 1024:,} KiB: "
            "it is not the secret"
        )
    if not secret:
        raise ValueError(f"the {what} file {shown_value(str(path))} is empty")
    return secret


def without_line_break(text: str) -> str:
    """A password as its file holds it: all but the line break an editor ends the file with."""
    return text.rstrip("\r\n")


def usable_path(path: Path | None) -> Path | None:
    """A path setting no file can be at is refused when the settings load, not when it is opened
    (a ``ValueError`` or ``RuntimeError`` there)."""
    problem = path_problem(str(path)) if path is not None else None
    if problem:
        raise ValueError(f"{shown_value(str(path))} {problem}")
    return path
