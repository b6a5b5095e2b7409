"""Opening the memory, whoever asks: through the daemon that holds the store, or the store itself.

The one place that decides. ``graphmem.open_memory`` (the Python API) and every CLI
command open the memory here: when a daemon serves the data dir (it holds the store,
and Kùzu allows one process per store), the verbs go to it over ``/rpc`` and return
the same objects and raise the same errors; otherwise the store opens in this
process (``graphmem.app.open_memory``, the composition root).

Light on purpose: the path through a daemon imports neither Kùzu nor pyarrow nor the
embedding model, nor the Memory service, nor the full settings (``graphmem.locate``
reads the data dir and the API key alone), so a CLI call through a running daemon
starts fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from graphmem.errors import StoreLockedError

if TYPE_CHECKING:
    from graphmem.api import Memory
    from graphmem.core.ports import Embedder
    from graphmem.settings import Settings

__all__ = ["HERE", "check_settings", "open_memory", "resolve_branch", "resolve_project", "warm_model"]

# ``project=HERE``: the project of the current directory, as the CLI resolves it.
HERE = "."
# How long a call waits for a daemon that is starting when no settings were read ([server]
# start_timeout_seconds' default: the light path reads the data dir and the key alone).
DAEMON_START_WAIT_S = 60.0


def resolve_project(path: str | Path | None) -> str | None:
    """The project of ``path``, or of the current directory: its repository's main checkout
    (one project for every worktree of it); None outside a repository. Raises
    ``InvalidInputError`` for a path that does not exist."""
    from graphmem.adapters.git import project_root

    root = project_root(Path(path or Path.cwd()).expanduser().resolve())
    return str(root) if root else None


def resolve_branch(path: str | Path | None) -> str | None:
    """The branch the checkout at ``path`` (or the current directory) is on, when it is not
    the project's default branch; None on the default branch, a detached HEAD or outside a
    repository."""
    from graphmem.adapters.git import current_branch

    return current_branch(Path(path or Path.cwd()).expanduser().resolve())


def check_settings(data_dir: Path | None = None) -> tuple[Settings | None, list[str]]:
    """Every setting validated, as every reader validates them (the CLI, the daemon, the plugin's
    routes, ``graphmem mcp``), and the config file's unknown sections and keys as warnings.

    The settings are None when nothing could make them other than the defaults (no config file,
    no ``GRAPHMEM_*`` variable but the data dir): a call through a daemon then skips loading the
    settings' modules. Raises ``ConfigError`` for an invalid value, whether a daemon runs or not.
    """
    from graphmem.locate import locate, settings_to_check

    if not settings_to_check():
        locate(data_dir)  # the data dir may still be given empty
        return None, []
    from graphmem.settings import load_settings, unknown_settings

    settings = load_settings(data_dir=data_dir) if data_dir is not None else load_settings()
    return settings, unknown_settings()


def warm_model(data_dir: Path | None = None) -> None:
    """Start loading the configured embedding model in the background when this process will
    open the store at ``data_dir`` itself: a one-shot ``recall`` or ``context`` then builds the
    model's session while it imports the store's modules and opens it, instead of after.
    Nothing happens when a daemon serves the store (it has its own model loaded). Invalid
    settings raise ``ConfigError`` before anything starts: a command that fails leaves no
    model loading behind."""
    from graphmem.locate import locate
    from graphmem.server.daemon_process import find_daemon

    settings, _ = check_settings(data_dir)
    if settings is None:
        location = locate(data_dir)
        where, model, quantized = location.data_dir, location.model, location.quantized_queries
    else:
        where = Path(data_dir or settings.data_dir)
        model, quantized = settings.embedding.model, settings.embedding.quantized_queries
    if find_daemon(where.expanduser()) is None:
        from graphmem.adapters.embedders import preload

        preload(model, quantized_queries=quantized)


def open_memory(
    settings: Settings | None = None,
    *,
    data_dir: Path | None = None,
    embedder: Embedder | None = None,
    check_model: bool = True,
    project: str | Path | None = HERE,
) -> Memory:
    """The memory of ``data_dir`` (default: the configured one), for this process: a
    ``graphmem.api.Memory``, the same verbs whichever way it reaches the store.

    Through the daemon when one serves the data dir (``RemoteMemory``), else the store
    opened here (``MemoryService``).
    ``project`` is the project the verbs use when a call names none (``remember``,
    ``edit``, ``list``, ``recall``, ``get_context``, ``boot_context``, ``enrich``,
    ``import_file``): by default the git toplevel of the current directory, like the CLI;
    None for no project. The branch its checkout is on (when not the default) is the branch
    ``remember`` writes on and ``recall``, ``get_context`` and ``boot_context`` see. An
    explicit ``embedder`` cannot be used through a daemon (the daemon embeds with its own
    model): that raises ``StoreLockedError`` saying so.
    """
    from graphmem.locate import describe_store
    from graphmem.server.daemon_process import check_daemon_store, wait_for_daemon

    if settings is None:
        settings, _ = check_settings(data_dir)
    if settings is None:  # the defaults: only the data dir and the key, until the store opens here
        from graphmem.locate import locate

        location = locate(data_dir)
        where, key, url = location.data_dir.expanduser(), location.api_key, None
    else:
        where = Path(data_dir or settings.data_dir).expanduser()
        key = settings.api_key.get_secret_value() if settings.api_key else None
        url = settings.store.url
    own_project = resolve_project(project) if project is not None else None
    own_branch = resolve_branch(project) if own_project is not None else None
    # A daemon starting (another client's: it holds the lock, its address is not published yet)
    # is waited for: it is the one the call must go through, and it holds the store.
    waited = settings.server.start_timeout_seconds if settings is not None else DAEMON_START_WAIT_S
    daemon = wait_for_daemon(where, waited)
    if daemon is not None:
        check_daemon_store(daemon, describe_store(where, url))
        if embedder is not None:
            raise StoreLockedError(
                f"The graphmem daemon (pid {daemon.pid}, {daemon.url}) holds the store at {where} and "
                f"embeds with its own model, so open_memory(embedder=...) cannot use {embedder.model_name}. "
                "Call open_memory() without embedder= to go through the daemon, or stop it with "
                "`graphmem stop` to open the store in this process."
            )
        from graphmem.server.remote import RemoteMemory

        # its verbs are made from the table: mypy takes it for abstract (see RemoteMemory)
        return RemoteMemory(daemon, key, project=own_project, branch=own_branch)  # type: ignore[abstract]
    if settings is None:
        from graphmem.settings import load_settings

        settings = load_settings(data_dir=data_dir) if data_dir is not None else load_settings()
    from graphmem.app import open_memory as open_store

    memory = open_store(settings, data_dir=where, embedder=embedder, check_model=check_model)
    return memory.bound(own_project, own_branch)
