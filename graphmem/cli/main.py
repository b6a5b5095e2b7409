"""The ``graphmem`` group: global options, the shared state, error presentation."""

from __future__ import annotations

import contextlib
import gc
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

try:  # Ctrl-C while the command line's modules load: a quiet exit (130), not a traceback
    import click

    from graphmem.cli.present import error
    from graphmem.cli.state import CliState, ServiceFactory, open_default_service
    from graphmem.errors import ConfigError, GraphmemError, InvalidInputError
except KeyboardInterrupt:
    raise SystemExit(130) from None

# Tests set this to build the service with a fake embedder; None means the real one.
SERVICE_FACTORY: ServiceFactory | None = None

# Each command and the module of ``graphmem.cli`` that defines it (in its ``COMMANDS``): a
# command's module loads only when that command runs, or when ``--help`` lists them all, so
# a call loads only what it uses (tests/unit/cli/test_main.py holds this map to the modules).
COMMAND_MODULES = {
    **dict.fromkeys(
        ("remember", "show", "list", "edit", "unresolve", "link", "unlink"), "memories"
    ),
    **dict.fromkeys(("archive", "restore", "delete", "resolve", "confirm", "reject", "widen"), "lifecycle"),
    **dict.fromkeys(("recall", "context", "boot"), "retrieval"),
    "bootstrap": "code",
    **dict.fromkeys(("export", "import"), "transfer"),
    **dict.fromkeys(("stats", "status", "reindex"), "maintenance"),
    **dict.fromkeys(("install", "uninstall", "doctor"), "integrations"),
    "bench": "bench",
    **dict.fromkeys(("serve", "mcp", "stop", "ui"), "server"),
    "ingest": "ingest",
    "enrich": "gitlab",
    **dict.fromkeys(("session", "claim", "release"), "coordination"),
    **dict.fromkeys(("history", "undo", "review"), "history"),
    "migrate": "store",
}  # fmt: skip


# Characters of a refused argument its error shows: those around where UTF-8 stops reading it.
SHOWN_ARGUMENT_CHARS = 80


def refuse_undecodable(words: Sequence[str]) -> None:
    """Refuse a command line that holds a word that is not UTF-8 (bytes UTF-8 cannot read, which
    Python keeps as lone surrogates): ``InvalidInputError`` naming the word, its bytes escaped.

    Decided here, before click parses any command or option, so that every command gives one
    answer whether a daemon serves the store or not: a daemon cannot be sent such text (JSON
    cannot carry it: ``rpc_types.encode_arguments``), while the store itself would take it as
    any text and answer, say, "No memory with id ...". What graphmem stores or looks up is
    UTF-8 anyway."""
    for word in words:
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            # Loaded only here: graphmem.core.text loads hashlib, a few ms of every command's start.
            from graphmem.core.text import ensure_utf8, escape_undecodable

            ensure_utf8(word, what=f"The argument {escape_undecodable(word, SHOWN_ARGUMENT_CHARS)}")


class RefusedCommandLine(click.ClickException):
    """A command line refused before click parses it (``refuse_undecodable``): shown as any
    graphmem error is (``present.error``), with invalid input's exit code."""

    exit_code = InvalidInputError.exit_code

    def __init__(self, cause: InvalidInputError) -> None:
        super().__init__(str(cause))
        self.cause = cause

    def show(self, file: IO[Any] | None = None) -> None:
        error(self.cause)


class GraphmemGroup(click.Group):
    """Loads a command's module when the command is asked for; refuses a command line that is
    not UTF-8 (``refuse_undecodable``); presents graphmem's own errors as one line and exits
    with their code."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:  # shell completion parses what it can
            try:
                refuse_undecodable(args)
            except InvalidInputError as exc:
                raise RefusedCommandLine(exc) from None
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMAND_MODULES, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMAND_MODULES.get(cmd_name)
        if cmd_name not in self.commands and module is not None:
            for command in importlib.import_module(f"graphmem.cli.{module}").COMMANDS:
                self.add_command(command)
        return self.commands.get(cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GraphmemError as exc:
            error(exc)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.Abort):
            raise  # click's own ends of a command (RuntimeErrors, one raised while handling a Ctrl-C)
        except (ImportError, RuntimeError) as exc:
            # Ctrl-C while a module loads can come out as another error: "ImportError:
            # initialization failed" when a compiled module (Kùzu's, ONNX Runtime's) initialises,
            # "RuntimeError: Error calling __set_name__" when it lands in a dataclass's field as
            # the class is made (Python 3.11). It is the Ctrl-C, not a broken install.
            if isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt):
                raise click.Abort() from None
            raise


def configure_logging(verbosity: int) -> None:
    """Log graphmem's messages to stderr: -v for info, -vv for debug."""
    if verbosity <= 0:
        return
    import logging  # here: a call without -v does not need it

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("graphmem")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbosity == 1 else logging.DEBUG)


class DataDirPath(click.Path):
    """``--data-dir``: a folder, made absolute as the settings make it (``absolute_data_dir``):
    every command hands it on as given, to the store, a daemon it starts, ``daemon.json``. An
    empty one (click would make it the current directory) stays empty, for the group to refuse
    in one line."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            return ""
        import os

        from graphmem.locate import absolute_data_dir

        try:
            return absolute_data_dir(os.fsdecode(super().convert(value, param, ctx)))
        except ConfigError as exc:  # raised while click parses: said as click says a bad option
            self.fail(str(exc), param, ctx)


@click.group(cls=GraphmemGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data-dir",
    type=DataDirPath(file_okay=False, path_type=Path),
    default=None,
    help="Where the store lives (default: GRAPHMEM_DATA_DIR, the config file, or the user data dir).",
)
@click.option(
    "--project",
    "project_path",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="A path inside the project; its git toplevel is the project (default: the current directory).",
)
@click.option("-v", "--verbose", count=True, help="Log to stderr: -v info, -vv debug.")
@click.version_option(package_name="graphmem", prog_name="graphmem")
@click.pass_context
def cli(ctx: click.Context, data_dir: Path | None, project_path: Path | None, verbose: int) -> None:
    """Local knowledge-graph memory for coding agents.

    Remember decisions, blockers and facts as you work; recall them later by
    meaning, words, or the files, MRs and issues they are about.

    \b
    Example:
        graphmem remember -c decision "We use Kùzu for the graph store"
        graphmem recall "which graph database"
    """
    if data_dir is not None and not str(data_dir).strip():
        raise ConfigError("--data-dir is empty: give the store's folder, or leave it out for the default.")
    configure_logging(verbose)
    state = CliState(data_dir, project_path, SERVICE_FACTORY or open_default_service)
    ctx.obj = state
    ctx.call_on_close(state.close)


def commands() -> dict[str, click.Command]:
    """Every command by name, each module loaded (what ``graphmem --help`` lists)."""
    with click.Context(cli) as ctx:
        found = {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}
    return {name: command for name, command in found.items() if command is not None}


# A command keeps most of what it builds (modules, settings, the opened store) until it
# exits. With CPython's default thresholds the cycle collector ran about 140 times while a
# one-shot recall imported its modules and opened the store (0.05-0.1 s of it), and at exit
# it went over everything once more (0.2 s at 100,000 memories). So a command collects
# rarely and, once it is done, leaves what is alive to the exit (``gc.freeze``); finalizers
# still run as references go. ``graphmem serve`` and ``graphmem mcp`` go back to the
# defaults once they serve (``server.daemon_process.collect_as_long_running``).
COMMAND_GC_THRESHOLD = 50_000


def quiet_dependency_warnings() -> None:
    """Send Python warnings (a dependency's, such as platformdirs' ``RuntimeDirWarning`` on every
    call where ``XDG_RUNTIME_DIR`` is unset) to graphmem's debug log instead of the terminal:
    they are no business of the user's, and ``graphmem mcp``'s stderr is the client's log.
    ``-W`` and ``PYTHONWARNINGS`` still show them."""
    if sys.warnoptions:
        return
    import warnings

    warnings.showwarning = _log_warning


def _log_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    import logging

    logging.getLogger("graphmem.warnings").debug(
        "%s:%s: %s: %s", filename, lineno, category.__name__, message
    )


# How long an exit waits for a model warm-up still running (building a session takes about
# 0.5 s, a few seconds on a loaded machine); past it the process leaves without tearing the
# interpreter down under that thread (``_leave``).
EXIT_WAIT_S = 5.0


def main() -> None:
    """The ``graphmem`` console script."""
    from graphmem.adapters.data_dir import restrict_umask
    from graphmem.cli import interrupts, terminal

    interrupts.install()  # a Ctrl-C inside a finalizer still ends the command
    terminal.install()  # stored text never drives the terminal
    restrict_umask()  # what this process and its children create is private (docs/operations.md)
    quiet_dependency_warnings()
    gc.set_threshold(COMMAND_GC_THRESHOLD, 50, 50)
    code: int | str | None = 0
    try:
        cli(prog_name="graphmem")
    except SystemExit as exc:
        code = exc.code
    finally:
        gc.freeze()
    _leave(code)


def _leave(code: int | str | None) -> None:
    """Exit with ``code`` once no background work can abort the exit: a model warm-up thread
    inside ONNX Runtime while the interpreter finalizes ends the process with "terminate
    called" (exit 134), whatever the command printed. So the exit waits for it, and a warm-up
    that outlasts ``EXIT_WAIT_S`` (or a second Ctrl-C) is abandoned with ``os._exit`` once
    the output is flushed."""
    status = code if isinstance(code, int) else (0 if code is None else 1)
    if isinstance(code, str):
        print(code, file=sys.stderr)
    embedders = sys.modules.get("graphmem.adapters.embedders")
    if embedders is not None:
        try:
            settled = embedders.settle_warm_ups(EXIT_WAIT_S)
        except KeyboardInterrupt:
            settled, status = False, 130
        if not settled:
            import os

            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            os._exit(status)
    sys.exit(status)


if __name__ == "__main__":
    main()
