"""What every command shares: the lazily opened Memory service and the project."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import click

if TYPE_CHECKING:
    from graphmem.api import Memory
    from graphmem.core.ports import Embedder


class ServiceFactory(Protocol):
    """Builds the Memory service; tests swap in one with a fake embedder."""

    def __call__(self, data_dir: Path | None, *, check_model: bool = True) -> Memory: ...


def open_default_service(data_dir: Path | None, *, check_model: bool = True) -> Memory:
    """The real service: through the daemon when one holds the store, else the store itself
    (``graphmem.connect.open_memory``); ``--data-dir`` wins over the settings. The CLI passes
    the project to each call itself."""
    from graphmem.connect import open_memory

    return open_memory(data_dir=data_dir, check_model=check_model, project=None)


def configured_embedder() -> Embedder:
    """The embedder the settings name, for the commands that embed outside the service (the
    benchmarks build their own temporary stores)."""
    from graphmem.app import configured_embedder as embedder_of
    from graphmem.settings import load_settings

    return embedder_of(load_settings())


@dataclass
class CliState:
    """The context object of the ``graphmem`` group (``ctx.obj``)."""

    data_dir: Path | None
    project_path: Path | None
    factory: ServiceFactory = open_default_service
    _service: Memory | None = field(default=None, init=False, repr=False)
    _project: str | None = field(default=None, init=False, repr=False)
    _project_resolved: bool = field(default=False, init=False, repr=False)
    _branch: str | None = field(default=None, init=False, repr=False)
    _branch_resolved: bool = field(default=False, init=False, repr=False)
    _settings_checked: bool = field(default=False, init=False, repr=False)

    @property
    def service(self) -> Memory:
        """The Memory service, opened on first use."""
        return self.open_service()

    def open_service(self, *, check_model: bool = True) -> Memory:
        """Open the service once; ``check_model=False`` is for ``reindex`` only."""
        if self._service is None:
            self.check_settings()
            self._service = self.factory(self.data_dir, check_model=check_model)
        return self._service

    def check_settings(self) -> None:
        """Validate every setting once, as every reader does, whether a daemon runs or not
        (``ConfigError``, exit 9), and say on stderr which keys of the config file name nothing."""
        if not self._settings_checked:
            from graphmem.connect import check_settings

            _, notes = check_settings(self.data_dir)
            for note in notes:
                click.echo(f"warning: {note}", err=True)
            self._settings_checked = True

    def warm_model(self) -> None:
        """Before the service opens: start loading the embedding model, which a one-shot command
        that opens the store itself would otherwise load after opening it. Only for the real
        service (a test's factory brings its own embedder); never when the settings are invalid
        (the command fails: no model loading is left behind at its exit)."""
        self.check_settings()
        if self._service is None and self.factory is open_default_service:
            from graphmem.connect import warm_model

            warm_model(self.data_dir)

    @property
    def project(self) -> str | None:
        """The git toplevel of ``--project`` (default: the current directory), or None."""
        if not self._project_resolved:
            from graphmem.connect import resolve_project

            self._project = resolve_project(self.project_path)
            self._project_resolved = True
        return self._project

    @property
    def branch(self) -> str | None:
        """The branch the checkout of ``--project`` (default: the current directory) is on, when
        it is not the project's default branch; None otherwise."""
        if not self._branch_resolved:
            from graphmem.connect import resolve_branch

            self._branch = resolve_branch(self.project_path) if self.project else None
            self._branch_resolved = True
        return self._branch

    def close(self) -> None:
        if self._service is not None:
            service, self._service = self._service, None
            service.close()


pass_state = click.make_pass_decorator(CliState)
