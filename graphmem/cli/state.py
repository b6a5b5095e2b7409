"""What every command shares: the lazily opened Memory service and the project."""

from __future__ import annotations

import threading
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
    _checkout: _Checkout | None = field(default=None, init=False, repr=False)

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

            self._read_checkout_ahead()
            warm_model(self.data_dir)

    def _read_checkout_ahead(self) -> None:
        """Start asking git for the project and branch (``project``, ``branch``) in the
        background: two to four ``git`` processes of 10-40 ms each, which a recall otherwise
        ran one after the other once the store was open, run while the model loads and the
        store opens. The properties wait for them and raise what they raised."""
        if self._checkout is None and not self._project_resolved:
            self._checkout = _Checkout(self.project_path)

    @property
    def project(self) -> str | None:
        """The git toplevel of ``--project`` (default: the current directory), or None."""
        if not self._project_resolved:
            if self._checkout is not None:
                self._project, self._branch = self._checkout.result()
                self._branch_resolved = True
            else:
                from graphmem.connect import resolve_project

                self._project = resolve_project(self.project_path)
            self._project_resolved = True
        return self._project

    @property
    def branch(self) -> str | None:
        """The branch the checkout of ``--project`` (default: the current directory) is on, when
        it is not the project's default branch; None otherwise."""
        if not self._branch_resolved:
            project = self.project  # with the branch, when read ahead
            if not self._branch_resolved:
                from graphmem.connect import resolve_branch

                self._branch = resolve_branch(self.project_path) if project else None
                self._branch_resolved = True
        return self._branch

    def close(self) -> None:
        if self._checkout is not None:
            self._checkout.settle()  # no git left running past the command
        if self._service is not None:
            service, self._service = self._service, None
            service.close()


class _Checkout:
    """The project and branch of ``path`` (``resolve_project``, ``resolve_branch``), read by git
    in a thread of their own; ``result`` waits for them."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._found: tuple[str | None, str | None] | None = None
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._read, name="graphmem-checkout", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        from graphmem.connect import resolve_branch, resolve_project

        try:
            project = resolve_project(self._path)
            self._found = project, resolve_branch(self._path) if project else None
        except BaseException as exc:  # raised again by ``result``, in the command's thread
            self._failed = exc

    def result(self) -> tuple[str | None, str | None]:
        self._thread.join()
        if self._failed is not None:
            raise self._failed
        assert self._found is not None
        return self._found

    def settle(self) -> None:
        self._thread.join()


pass_state = click.make_pass_decorator(CliState)
