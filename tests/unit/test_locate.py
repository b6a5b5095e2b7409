"""The light reading of the data dir and the API key agrees with ``load_settings``, case by case."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graphmem.adapters.embedders import DEFAULT_MODEL
from graphmem.errors import ConfigError
from graphmem.locate import default_data_dir, locate, path_problem
from graphmem.settings import load_settings

CASES = {
    "defaults": ({}, "", None),
    "config file": ({}, 'data_dir = "/from/config"\napi_key = " k1 "\n', None),
    "variables over the config file": (
        {"GRAPHMEM_DATA_DIR": "/from/env", "GRAPHMEM_API_KEY": "k2"},
        'data_dir = "/from/config"\napi_key = "k1"\n',
        None,
    ),
    "variables in any letter case": (
        {"graphmem_data_dir": "/lower", "Graphmem_Api_Key": "mixed"},
        'data_dir = "/from/config"\n',
        None,
    ),
    "a blank key variable hides the file's key": ({"GRAPHMEM_API_KEY": "  "}, 'api_key = "k1"\n', None),
    "a relative and a home path": ({}, 'data_dir = "~/mem"\n', None),
    "--data-dir over everything": (
        {"GRAPHMEM_DATA_DIR": "/from/env"},
        'data_dir = "/from/config"\n',
        Path("/explicit"),
    ),
    "other settings do not matter": ({"GRAPHMEM_RECALL__LIMIT": "7"}, "[server]\nport = 9999\n", None),
    "the model from the config file": ({}, '[embedding]\nmodel = "/models/mini"\n', None),
    "exact queries from the config file": ({}, "[embedding]\nquantized_queries = false\n", None),
    "exact queries from a variable": ({"GRAPHMEM_EMBEDDING__QUANTIZED_QUERIES": "Off"}, "", None),
    "the model from a variable": (
        {"GRAPHMEM_EMBEDDING__MODEL": "/models/env"},
        '[embedding]\nmodel = "/models/mini"\n',
        None,
    ),
}


@pytest.fixture
def config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in os.environ:
        if name.upper().startswith("GRAPHMEM_") or name.upper() in ("GITLAB_TOKEN",):
            monkeypatch.delenv(name)
    path = tmp_path / "config.toml"
    monkeypatch.setenv("GRAPHMEM_CONFIG", str(path))
    return path


@pytest.mark.parametrize("case", list(CASES))
def test_locate_reads_what_load_settings_reads(
    case: str, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    variables, text, data_dir = CASES[case]
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    if text:
        config.write_text(text)
    settings = load_settings(data_dir=data_dir)

    location = locate(data_dir)

    assert location.data_dir == settings.data_dir
    assert location.api_key == (settings.api_key.get_secret_value() if settings.api_key else None)
    assert (location.model or DEFAULT_MODEL) == settings.embedding.model
    assert location.quantized_queries == settings.embedding.quantized_queries


@pytest.mark.parametrize(
    ("variables", "text"),
    [({"GRAPHMEM_DATA_DIR": ""}, 'data_dir = "/from/config"\n'), ({}, 'data_dir = " "\n')],
    ids=["an empty data dir variable", "an empty data dir in the config file"],
)
def test_an_empty_data_dir_is_refused_by_both(
    variables: dict[str, str], text: str, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty one would be the current directory: both say so, in one line."""
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    config.write_text(text)
    with pytest.raises(ConfigError, match="The data dir is empty"):
        locate()
    with pytest.raises(ConfigError, match="data_dir is empty"):
        load_settings()


def test_with_nothing_set_the_store_is_in_the_user_data_dir(config: Path) -> None:
    assert locate() == locate(None)
    assert locate().data_dir == default_data_dir()
    assert locate().api_key is None


@pytest.mark.parametrize(
    "text",
    [
        "data_dir = [",
        "data_dir = 3\n",
        "api_key = 12\n",
        'data_dir = "/x"\ndata_dir = "/y"\n',
        '[embedding]\nquantized_queries = "sometimes"\n',
        "data_dir = " + "[" * 5000,  # nested too deep for the parser: RecursionError
    ],
)
def test_a_config_file_both_refuse_is_a_config_error_naming_the_file(config: Path, text: str) -> None:
    config.write_text(text)
    with pytest.raises(ConfigError):
        load_settings()
    with pytest.raises(ConfigError, match=str(config)):
        locate()


def test_an_unreadable_config_file_is_a_config_error(config: Path) -> None:
    config.mkdir()
    with pytest.raises(ConfigError, match="Cannot read"):
        locate()


# -- a relative data dir: made absolute once, where the settings are read ----------------------


@pytest.fixture
def inside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current directory of the command: ``rel/a``, beside the store's ``rel/store``; as the
    system names it (``getcwd``: a /tmp that is a link stays its target)."""
    here = tmp_path / "rel" / "a"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    return Path(os.getcwd())


@pytest.mark.parametrize("given", ["../store", "../store/", "./../a/../store/."])
@pytest.mark.parametrize("way", ["--data-dir", "GRAPHMEM_DATA_DIR"])
def test_a_relative_data_dir_is_made_absolute_and_normal_from_the_current_directory(
    way: str, given: str, config: Path, inside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a daemon publishes in daemon.json and a client finds its token by, from any directory."""
    if way == "GRAPHMEM_DATA_DIR":
        monkeypatch.setenv(way, given)
    explicit = Path(given) if way == "--data-dir" else None
    config.write_text('data_dir = "/from/config"\n')  # under both: never taken from here
    store = inside.parent / "store"

    assert load_settings(data_dir=explicit).data_dir == store
    assert locate(explicit).data_dir == store


def test_a_home_data_dir_is_expanded_by_both(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_DATA_DIR", "~/mem/../store")
    home = Path(os.path.expanduser("~"))

    assert load_settings().data_dir == home / "store"
    assert locate().data_dir == home / "store"


def test_a_relative_data_dir_in_the_config_file_is_taken_from_the_files_folder(
    config: Path, inside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path written in a file is read from where the file is, whatever directory graphmem runs
    in: the same store from every project."""
    folder = config.parent / "settings"
    folder.mkdir()
    monkeypatch.setenv("GRAPHMEM_CONFIG", str(folder / "config.toml"))
    (folder / "config.toml").write_text('data_dir = "../stores/./mine"\n')

    assert load_settings().data_dir == config.parent / "stores" / "mine"
    assert locate().data_dir == config.parent / "stores" / "mine"


def test_a_data_dir_through_a_link_keeps_the_link(config: Path, inside: Path) -> None:
    """Made absolute, not resolved: the path the user gave, in the words they gave it."""
    (inside.parent / "real").mkdir()
    (inside.parent / "link").symlink_to(inside.parent / "real", target_is_directory=True)

    assert load_settings(data_dir=Path("../link")).data_dir == inside.parent / "link"
    assert locate(Path("../link")).data_dir == inside.parent / "link"


def test_a_relative_data_dir_from_a_deleted_directory_is_a_config_error(
    config: Path, inside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inside.rmdir()  # the shell still stands in it; getcwd fails
    monkeypatch.setenv("GRAPHMEM_DATA_DIR", "store")

    with pytest.raises(ConfigError, match="current directory cannot be read"):
        locate()
    with pytest.raises(ConfigError, match="current directory cannot be read"):
        load_settings()


# -- a data dir no folder can have: a ConfigError naming where it was given ---------------------

NO_USER = "~graphmem-no-such-user"


@pytest.mark.parametrize("way", ["--data-dir", "GRAPHMEM_DATA_DIR", "the config file"])
def test_a_data_dir_in_the_home_of_no_user_is_refused_by_both(
    way: str, config: Path, inside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``os.path.expanduser`` leaves ``~user`` of no user as it is: never a folder of that name here."""
    given = f"{NO_USER}/memory"
    if way == "GRAPHMEM_DATA_DIR":
        monkeypatch.setenv(way, given)
    elif way == "the config file":
        config.write_text(f'data_dir = "{given}"\n')
    explicit = Path(given) if way == "--data-dir" else None

    with pytest.raises(ConfigError, match="this system has no user graphmem-no-such-user") as raised:
        locate(explicit)
    assert (str(config) if way == "the config file" else way) in str(raised.value)
    with pytest.raises(ConfigError, match="this system has no user graphmem-no-such-user"):
        load_settings(data_dir=explicit)
    assert list(inside.iterdir()) == []


@pytest.mark.parametrize("way", ["--data-dir", "the config file"])
def test_a_nul_in_the_data_dir_is_refused_by_both(way: str, config: Path) -> None:
    """No variable can hold a NUL (the system refuses it); the config file and a caller's path can."""
    if way == "the config file":
        config.write_text('data_dir = "/tmp/a\\u0000b"\n')
    explicit = Path("/tmp/a\0b") if way == "--data-dir" else None

    with pytest.raises(ConfigError, match="holds a NUL character"):
        locate(explicit)
    with pytest.raises(ConfigError, match="holds a NUL character"):
        load_settings(data_dir=explicit)


@pytest.mark.parametrize(
    "given", ["/tmp/" + "n" * 300, "/tmp/" + "/".join(["p" * 200] * 25)], ids=["a name", "the path"]
)
def test_a_data_dir_longer_than_the_system_takes_is_refused_by_both(
    given: str, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHMEM_DATA_DIR", given)

    with pytest.raises(ConfigError, match="GRAPHMEM_DATA_DIR") as raised:
        locate()
    assert len(str(raised.value)) < 1000
    with pytest.raises(ConfigError, match="GRAPHMEM_DATA_DIR"):
        load_settings()


@pytest.mark.parametrize("way", ["--data-dir", "GRAPHMEM_DATA_DIR"])
def test_a_data_dir_that_is_not_utf8_is_refused_by_both_before_the_store_opens(
    way: str, config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bytes no UTF-8 decodes (a variable's or an argument's, as ``os.fsdecode`` gives them):
    Kùzu cannot open a store there (a ``TypeError`` and a traceback), as a caller's path
    is refused (``inputs.parse_path``)."""
    given = str(tmp_path) + os.fsdecode(b"/data\xff")
    if way == "GRAPHMEM_DATA_DIR":
        monkeypatch.setenv(way, given)
    explicit = Path(given) if way == "--data-dir" else None

    with pytest.raises(ConfigError, match=r"is not UTF-8 \(at character \d+\)") as raised:
        locate(explicit)
    assert way in str(raised.value)
    with pytest.raises(ConfigError, match="is not UTF-8"):
        load_settings(data_dir=explicit)


def test_a_path_setting_over_the_longest_path_is_refused_as_too_long(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller's path over 4,096 bytes is refused (``inputs.parse_path``); a setting's is too,
    saying so, not left to the system's ENAMETOOLONG when the file is read."""
    monkeypatch.setenv("GRAPHMEM_GITLAB__TOKEN_FILE", "/tmp/" + "/".join(["p" * 200] * 25))

    with pytest.raises(ConfigError, match="is 5,029 bytes, over the 4,096 a path can have"):
        load_settings()


def test_a_name_is_counted_in_utf8_under_a_legacy_locale(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's libraries hand the system UTF-8 whatever the locale: a name of 200 é is 400
    bytes there, though a Latin-1 file system encoding would write it in 200."""
    monkeypatch.setattr(os, "fsencode", lambda path: os.fspath(path).encode("latin-1"))

    assert path_problem("/tmp/" + "é" * 200) == (
        "has a name over 255 bytes, which no file or folder can have: shorten it"
    )
    assert path_problem("/tmp/" + "é" * 127) is None


def test_a_yes_or_no_variable_locate_cannot_read_is_named_as_it_was_set(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("graphmem_Embedding__Quantized_Queries", "maybe")

    with pytest.raises(ConfigError, match="graphmem_Embedding__Quantized_Queries holds 'maybe'"):
        locate()
