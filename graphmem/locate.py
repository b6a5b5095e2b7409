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

from graphmem.errors import ConfigError
from graphmem.regular_files import read_regular

APP_NAME = "graphmem"
ENV_PREFIX = "GRAPHMEM_"
# A config file is a few dozen lines: no more than this is read of one (nor of a secret's file).
MAX_CONFIG_BYTES = 1 << 20


def default_config_file() -> Path:
    return Path(os.environ.get("GRAPHMEM_CONFIG") or user_config_path(APP_NAME) / "config.toml")


def default_data_dir() -> Path:
    return absolute_data_dir(user_data_path(APP_NAME))  # XDG_DATA_HOME may be relative


def absolute_data_dir(where: str | os.PathLike[str], relative_to: Path | None = None) -> Path:
    """The data dir ``where`` as every process must name it: ``~`` expanded, made absolute from
    ``relative_to`` (the folder of the config file that gave it) or else the current directory,
    and normalised as ``os.path.abspath`` does (``.`` and ``..`` dropped, symlinks kept). Made
    so once, where the settings are read (``locate``, ``load_settings``, ``--data-dir``): the
    daemon publishes its data dir in ``daemon.json`` and a client reads ``daemon.token`` by it,
    each from its own current directory."""
    path = os.path.expanduser(os.fspath(where))
    if relative_to is not None:
        path = os.path.join(relative_to, path)  # an absolute ``path`` stays as it is
    try:
        return Path(os.path.abspath(path))
    except OSError as exc:  # a relative one, from a current directory deleted since
        raise ConfigError(
            f"The data dir {path} is relative and the current directory cannot be read "
            f"({exc.strerror or exc}): give an absolute path."
        ) from None


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
    ``api_key`` that is not text."""
    environment = {name.lower(): value for name, value in os.environ.items()}
    config = read_config()

    def setting(name: str, section: str | None = None, kind: type = str) -> Any:
        variable = (ENV_PREFIX + (f"{section}__{name}" if section else name)).lower()
        if variable in environment:
            text = environment[variable]
            return _flag(text, name) if kind is bool else text
        table = config.get(section, {}) if section else config
        value = table.get(name) if isinstance(table, dict) else None
        if value is not None and not isinstance(value, kind):
            wanted = "true or false" if kind is bool else "text"
            raise ConfigError(
                f"Invalid settings ({name}: {type(value).__name__} is not {wanted}). Check "
                f"{default_config_file()} and GRAPHMEM_* variables."
            )
        return value

    where = data_dir if data_dir is not None else setting("data_dir")
    if where is not None and not str(where).strip():  # an empty one would be the current directory
        raise ConfigError(
            "The data dir is empty (GRAPHMEM_DATA_DIR or data_dir in the config file): give a folder, "
            "or unset it for the default."
        )
    if where is not None:
        where = absolute_data_dir(where)
    if where is not None and os.path.exists(where) and not os.path.isdir(where):
        raise ConfigError(
            f"The data dir {where} is not a folder (--data-dir, GRAPHMEM_DATA_DIR or data_dir in the "
            "config file): give a folder, or unset it for the default."
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
        config["data_dir"] = str(absolute_data_dir(where, path.parent))
    return config


def _flag(text: str, name: str) -> bool:
    """A yes/no variable, read as the settings read it."""
    folded = text.strip().lower()
    if folded in _TRUE | _FALSE:
        return folded in _TRUE
    raise ConfigError(
        f"Invalid settings ({name}: {text!r} is not true or false). Check the GRAPHMEM_* variables."
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
