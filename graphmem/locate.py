"""Where the store is and the key that opens its daemon, read without the full settings.

A call through a running daemon needs only these two settings (the daemon has its own
for the rest), so the CLI and ``graphmem.open_memory`` read them here (and the embedding
model's name, which a one-shot command starts loading before the rest), with the same
precedence as ``graphmem.settings.load_settings`` (a test holds the two equal): an
explicit ``data_dir``, then ``GRAPHMEM_*`` variables (any letter case, like the
settings), then the config file, then the defaults. This skips pydantic-settings and the
validation of every other setting, which the process that opens the store does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platformdirs import user_config_path, user_data_path

from graphmem.core.path_rules import MAX_NAME_BYTES, MAX_PATH_BYTES, Flaw, PathFlaw, path_flaw
from graphmem.errors import ConfigError
from graphmem.regular_files import read_regular

APP_NAME = "graphmem"
ENV_PREFIX = "GRAPHMEM_"
# A config file is a few dozen lines: no more than this is read of one (nor of a secret's file).
MAX_CONFIG_BYTES = 1 << 20
# A setting's value shown in an error: enough to recognise it, never a page of it.
MAX_SHOWN_CHARS = 300
# Room kept under the longest path the system takes for the names of the store's own files in
# the data dir: a longer data dir fails at every call that names one of them (ENAMETOOLONG).
STORE_NAMES_BYTES = 256


def default_config_file() -> Path:
    return Path(os.environ.get("GRAPHMEM_CONFIG") or user_config_path(APP_NAME) / "config.toml")


def default_data_dir() -> Path:
    return absolute_data_dir(user_data_path(APP_NAME))  # XDG_DATA_HOME may be relative


def absolute_data_dir(
    where: str | os.PathLike[str], relative_to: Path | None = None, *, given_by: str | None = None
) -> Path:
    """The data dir ``where`` as every process must name it: ``~`` expanded, made absolute from
    ``relative_to`` (the folder of the config file that gave it) or else the current directory,
    and normalised as ``os.path.abspath`` does (``.`` and ``..`` dropped, symlinks kept). Made
    so once, where the settings are read (``locate``, ``load_settings``, ``--data-dir``): the
    daemon publishes its data dir in ``daemon.json`` and a client reads ``daemon.token`` by it,
    each from its own current directory. ``ConfigError`` (naming ``given_by``, the variable,
    option or file that gave it) for a path no folder can have (``path_problem``)."""
    path = os.fspath(where)
    problem = path_problem(path)
    if problem:
        source = f" ({given_by})" if given_by else ""
        raise ConfigError(f"The data dir {shown_value(path)}{source} {problem}.")
    path = os.path.expanduser(path)
    if relative_to is not None:
        path = os.path.join(relative_to, path)  # an absolute ``path`` stays as it is
    try:
        absolute = os.path.abspath(path)
    except OSError as exc:  # a relative one, from a current directory deleted since
        raise ConfigError(
            f"The data dir {shown_value(path)} is relative and the current directory cannot be read "
            f"({exc.strerror or exc}): give an absolute path."
        ) from None
    longest = _longest_path() - STORE_NAMES_BYTES
    if len(os.fsencode(absolute)) > longest:
        source = f" ({given_by})" if given_by else ""
        raise ConfigError(
            f"The data dir {shown_value(absolute)}{source} is over {longest:,} bytes: the store's files "
            "in it could not be named. Give a shorter path."
        )
    return Path(absolute)


def _longest_path() -> int:
    """The longest path the system takes, in bytes (4,096 on Linux, 1,024 on macOS)."""
    try:
        return os.pathconf("/", "PC_PATH_MAX")
    except (AttributeError, OSError, ValueError):  # no pathconf (Windows), or no limit said
        return 1024


def path_problem(path: str) -> str | None:
    """Why no file or folder can be at ``path`` as a setting gives it, said after the path, or
    None: a flaw no path may have (``graphmem.core.path_rules``, the rules a caller's path meets
    too), or a ``~user`` of a user this system does not have, or a ``~`` with no home known
    (``os.path.expanduser`` leaves both as they are: the data dir would be a folder named
    ``~user`` in the current directory)."""
    flaw = path_flaw(path)
    if flaw is not None:
        return _said(flaw)
    if path.startswith("~") and os.path.expanduser(path) == path:
        user = path[1:].partition(os.sep)[0]
        if len(user) > MAX_SHOWN_CHARS:
            user = user[:MAX_SHOWN_CHARS] + "…"
        if not user:
            return "starts with ~ and no home directory is known (HOME is not set): give an absolute path"
        return (
            f"starts with ~{user}, and this system has no user {user}: name an existing user's "
            f"home, or write ./~{user} for a folder of that name in the current directory"
        )
    return None


def _said(flaw: PathFlaw) -> str:
    """What ``path_problem`` says of ``flaw``, after the setting's name and value."""
    if flaw.kind is Flaw.NUL:
        return "holds a NUL character, which no path can hold: remove it"
    if flaw.kind is Flaw.TOO_LONG:
        return f"is {flaw.size:,} bytes, over the {MAX_PATH_BYTES:,} a path can have: shorten it"
    if flaw.kind is Flaw.NOT_UTF8:  # undecodable bytes of a variable or an argument, most likely
        return (
            f"is not UTF-8 (at character {flaw.at}), and graphmem takes UTF-8 paths only: "
            "rename it or give another path"
        )
    if flaw.kind is Flaw.UNENCODABLE:
        return f"holds a character no path can be written in here (at character {flaw.at}): remove it"
    return f"has a name over {MAX_NAME_BYTES} bytes, which no file or folder can have: shorten it"


def shown_value(text: str) -> str:
    """``text`` as an error shows a setting's value: quoted on one line (``repr``), cut after
    ``MAX_SHOWN_CHARS`` characters with its length said. Never for a secret's value."""
    if len(text) <= MAX_SHOWN_CHARS:
        return repr(text)
    return f"{text[:MAX_SHOWN_CHARS]!r}… ({len(text):,} characters)"


@dataclass(frozen=True, slots=True)
class Location:
    """The data dir (absolute: ``absolute_data_dir``) and the API key of the daemon that may serve it; and
    the embedding model set by ``[embedding] model`` (None for the default) and whether its
    queries run on the 8-bit variant, which a one-shot command starts loading while the store
    opens (``graphmem.connect.warm_model``)."""

    data_dir: Path
    api_key: str | None
    model: str | None = None
    quantized_queries: bool = True


def locate(data_dir: Path | None = None) -> Location:
    """The data dir and API key as ``load_settings(data_dir=data_dir)`` would give them.

    Raises ``ConfigError`` when the config file is not valid TOML or holds a ``data_dir`` or
    ``api_key`` that is not text, and for a data dir no folder can have (``absolute_data_dir``),
    naming where it was given."""
    # Each variable by the name the settings match it by, with the name it was given and its value.
    environment = {name.lower(): (name, value) for name, value in os.environ.items()}
    config = read_config()

    def setting(name: str, section: str | None = None, kind: type = str) -> Any:
        variable = (ENV_PREFIX + (f"{section}__{name}" if section else name)).lower()
        if variable in environment:
            given, text = environment[variable]
            return _flag(text, given) if kind is bool else text
        table = config.get(section, {}) if section else config
        value = table.get(name) if isinstance(table, dict) else None
        if value is not None and not isinstance(value, kind):
            wanted = "true or false" if kind is bool else "text"
            raise ConfigError(
                f"Invalid settings ({name}: {type(value).__name__} is not {wanted}). Check "
                f"{default_config_file()} and GRAPHMEM_* variables."
            )
        return value

    if data_dir is not None:
        where, given_by = data_dir, "--data-dir"
    else:
        where = setting("data_dir")
        given_by = environment.get("graphmem_data_dir", (f"data_dir in {default_config_file()}",))[0]
    if where is not None and not str(where).strip():  # an empty one would be the current directory
        raise ConfigError(f"The data dir is empty ({given_by}): give a folder, or unset it for the default.")
    if where is not None:
        where = absolute_data_dir(where, given_by=given_by)
    if where is not None and os.path.exists(where) and not os.path.isdir(where):
        raise ConfigError(
            f"The data dir {shown_value(str(where))} is not a folder ({given_by}): give a folder, or unset "
            "it for the default."
        )
    key = (setting("api_key") or "").strip() or None  # a blank key is no key
    model = setting("model", "embedding") or None
    quantized = setting("quantized_queries", "embedding", bool)
    return Location(
        where if where is not None else default_data_dir(),
        key,
        model,
        True if quantized is None else quantized,
    )


_TRUE = frozenset({"1", "true", "t", "yes", "y", "on"})
_FALSE = frozenset({"0", "false", "f", "no", "n", "off"})


# Variables that are no setting of their own, or that ``locate`` checks itself.
_LOCATED_VARIABLES = frozenset({"graphmem_config", "graphmem_data_dir"})


def settings_to_check() -> bool:
    """Whether anything could make the settings other than their defaults: a config file, or a
    ``GRAPHMEM_*`` variable besides the config file's path and the data dir. When nothing can,
    the defaults are valid by construction and a call through a daemon skips loading them."""
    if default_config_file().exists():
        return True
    return any(
        name.lower().startswith(ENV_PREFIX.lower()) and name.lower() not in _LOCATED_VARIABLES
        for name in os.environ
    )


def describe_store(data_dir: Path, url: str | None) -> str:
    """The store that settings ask for, as a daemon publishes it and a client compares it:
    the PostgreSQL store at ``url`` (without its password or options), else the embedded store
    in ``data_dir``."""
    if url:
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(url)
            user = f"{parts.username}@" if parts.username else ""
            port = f":{parts.port}" if parts.port else ""
            where = f"{user}{parts.hostname or 'localhost'}{port}{parts.path}"
        except ValueError:
            where = "(an unreadable URL)"
        return f"the PostgreSQL store postgresql://{where}"
    return f"the embedded store in {data_dir.expanduser().resolve()}"


def read_config() -> dict[str, Any]:
    """The config file as TOML gives it ({} when there is none), but for a relative ``data_dir``,
    made absolute from the file's folder: a path written in a file is read from where the file
    is, not from wherever graphmem runs. ``ConfigError`` when it cannot be read or is not TOML."""
    path = default_config_file()
    config = _read_config(path)
    where = config.get("data_dir")
    if isinstance(where, str) and where.strip():  # an empty or non-text one is refused as it is
        config["data_dir"] = str(absolute_data_dir(where, path.parent, given_by=f"data_dir in {path}"))
    return config


def _flag(text: str, variable: str) -> bool:
    """A yes/no variable, read as the settings read it."""
    folded = text.strip().lower()
    if folded in _TRUE | _FALSE:
        return folded in _TRUE
    raise ConfigError(
        f"Invalid settings ({variable} holds {shown_value(text)}, not true or false). Fix the "
        "variable, or unset it for the default."
    )


def _read_config(path: Path) -> dict[str, Any]:
    try:
        data = read_regular(path, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"Cannot read {path} ({exc.strerror or exc}).") from exc
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path} is over {MAX_CONFIG_BYTES // 1024:,} KiB, more than a config file holds.")
    import tomllib  # here: a call with no config file does not load the parser

    try:
        return tomllib.loads(data.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}.") from exc
    except RecursionError:  # arrays or tables nested thousands deep
        raise ConfigError(f"{path} is nested too deep to be a config file.") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(_not_utf8(path, exc)) from None


def _not_utf8(path: Path, exc: UnicodeDecodeError) -> str:
    """What to say of a config file that is not UTF-8, which TOML must be."""
    return f"{path} is not UTF-8 text (byte {exc.start} is 0x{exc.object[exc.start]:02x}): save it as UTF-8."
