"""The ``graphmem`` group knows every command, and loads a command's module only when it is asked for."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.memory_service import in_memory_service

import graphmem.cli
from graphmem.cli import main as cli_main
from graphmem.cli.main import COMMAND_GC_THRESHOLD, COMMAND_MODULES, cli, commands
from graphmem.service.memory import MemoryService


def test_the_map_names_every_command_of_every_command_module() -> None:
    defined: dict[str, str] = {}
    for found in pkgutil.iter_modules(graphmem.cli.__path__):
        module = importlib.import_module(f"graphmem.cli.{found.name}")
        for command in getattr(module, "COMMANDS", ()):
            assert command.name not in defined, f"{command.name} is defined twice"
            defined[command.name] = found.name

    assert defined == COMMAND_MODULES
    assert set(commands()) == set(defined)


PROGRAM = """
import json, sys
from click.testing import CliRunner
from graphmem.cli.main import cli
result = CliRunner().invoke(cli, sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.startswith("graphmem.cli."))
print(json.dumps({"exit": result.exit_code, "output": result.output, "loaded": loaded}))
"""


def _run(tmp_path: Path, *args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def test_a_command_loads_its_own_module_and_no_other(tmp_path: Path) -> None:
    report = _run(tmp_path, "recall", "--help")

    assert report["exit"] == 0
    assert "Example:" in str(report["output"])
    modules = {name.removeprefix("graphmem.cli.") for name in report["loaded"]}  # type: ignore[attr-defined]
    assert "retrieval" in modules
    assert modules.isdisjoint(set(COMMAND_MODULES.values()) - {"retrieval"})


# What the group says, not what it loads: in this process.
def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(cli, ["--help"])

    assert result.exit_code == 0, result.output
    listed = result.output.split("Commands:")[1].split()
    assert set(COMMAND_MODULES) <= set(listed)


def test_an_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["recal"])

    assert result.exit_code == 2
    assert "No such command 'recal'" in result.output


def test_a_relative_data_dir_is_handed_on_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--data-dir ../store`` in ``rel/a``: the store is opened, and ``stats`` names it, as
    ``rel/store`` in full, as any other directory would name it (once: ``data dir: ../store``)."""
    (tmp_path / "rel" / "a").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "rel" / "a")
    store = Path(os.getcwd()).parent / "store"
    opened: list[Path | None] = []

    def factory(data_dir: Path | None, *, check_model: bool = True) -> MemoryService:
        opened.append(data_dir)
        return in_memory_service(data_dir or tmp_path)

    monkeypatch.setattr(cli_main, "SERVICE_FACTORY", factory)
    result = CliRunner().invoke(cli, ["--data-dir", "../store/", "stats"])

    assert result.exit_code == 0, result.output
    assert opened == [store]
    assert f"data dir: {store}\n" in result.output


GC_PROGRAM = """
import gc, json, sys
from graphmem.cli.main import main
sys.argv = ["graphmem", "--help"]
try:
    main()
except SystemExit:
    pass
print(json.dumps({"threshold": gc.get_threshold()[0], "frozen": gc.get_freeze_count()}), file=sys.stderr)
"""


def test_a_command_collects_rarely_and_leaves_what_is_alive_to_the_exit(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", GC_PROGRAM], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["threshold"] == COMMAND_GC_THRESHOLD
    assert report["frozen"] > 1000  # the modules and what the command built


SERVING_PROGRAM = """
import gc, json, sys
from graphmem.cli.main import COMMAND_GC_THRESHOLD
from graphmem.server.daemon_process import collect_as_long_running
gc.set_threshold(COMMAND_GC_THRESHOLD, 50, 50)  # as a command starts
collect_as_long_running()  # the daemon and `graphmem mcp`, once started
print(json.dumps({"threshold": gc.get_threshold(), "frozen": gc.get_freeze_count()}), file=sys.stderr)
"""


def test_a_process_that_serves_collects_at_pythons_pace_once_started(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SERVING_PROGRAM], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["threshold"] == [700, 10, 10]
    assert report["frozen"] > 1000


# A dependency that warns on every call, as platformdirs does when XDG_RUNTIME_DIR is unset.
WARNING_DEPENDENCY = """
import sys, warnings
import platformdirs
from graphmem import locate
from graphmem.cli.main import main

def data_path(name):
    platformdirs.user_runtime_dir(name)  # RuntimeDirWarning: XDG_RUNTIME_DIR is not set
    warnings.warn("a dependency's notice", UserWarning)
    return original(name)

original, locate.user_data_path = locate.user_data_path, data_path
sys.argv = ["graphmem", "list"]
main()
"""


def test_no_warning_of_a_dependency_reaches_the_terminal(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "PYTHONWARNINGS")}
    done = subprocess.run(
        [sys.executable, "-c", WARNING_DEPENDENCY], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert "No memories" in done.stdout or "mem_" in done.stdout or done.stdout == ""
    assert done.stderr == ""
