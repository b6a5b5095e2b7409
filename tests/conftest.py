"""Shared fixtures: fresh stores in ``tmp_path``, the real model once per session, a git project."""

from __future__ import annotations

import atexit
import gc
import itertools
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema
import pytest
from _pytest.tmpdir import tmppath_result_key  # where pytest notes whether each phase passed
from hypothesis import settings
from support import home_guard
from support.home_guard import REAL_HOME, SHARED_CACHE, TOUCHED_REAL_HOME
from support.temp_root import ROOT_VARIABLE, put_temp_folders_in_memory
from support.warm_start import share_the_warm_up
from support.work_order import costliest_first
from support.worker_groups import group_by_shared_fixtures

# What the fixtures build is imported by the fixture that builds it: pytest-xdist's controller
# and every pytest process load this file, the controller runs no test, and a run of one test
# file needs few of them (graphmem's application, the stores' support and psycopg: 0.1-0.5 s
# of CPU a process).
if TYPE_CHECKING:
    from support.postgres import PostgresServer
    from support.stores import KuzuTemplates

    from graphmem.adapters.embedders import OnnxEmbedder
    from graphmem.adapters.fake_store import FakeGraphStore
    from graphmem.service.memory import MemoryService

GITLAB_REMOTE = "git@gitlab.example.com:group/sub/proj.git"

# Hypothesis profiles (docs/testing.md), chosen with ``--hypothesis-profile=NAME``. Without the
# option the property tests run "full": Hypothesis's 100 examples each (or what a test's own
# ``@settings`` asks for), with no per-example deadline: that is what ``make test`` and CI run.
# Hypothesis's own deadline (200 ms an example) is a timing assert: on a loaded machine one slow
# example failed a property that held (``test_fused_scores_are_non_increasing`` at load 11).
# "dev" is the quick loop of ``make test-unit``: a tenth of the examples. A test that wants more
# examples asks a multiple of the profile's (``settings().max_examples``, read when its module is
# imported, after the profile is loaded): ``3 * settings().max_examples`` is 300 in "full" and 30
# in "dev".
DEV_EXAMPLES = 10
settings.register_profile("full", deadline=None)
settings.register_profile("dev", max_examples=DEV_EXAMPLES, deadline=None)
settings.load_profile("full")  # the option's profile, when given, is loaded after this


home_guard.install()

# The cyclic garbage collector looks at the young objects every 10,000 allocations left alive,
# not every 700: a test run makes millions (pytest's reports and fixtures, the MCP servers'
# pydantic models, the stores' rows), and the collections took about 10% of a unit run's CPU
# (3.0 s of 31 in tests/unit/server and cli, 1.3 s at 10,000). Older objects are looked at as
# often as before, relative to the young collections.
GC_YOUNG_THRESHOLD = 10_000
gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
# What a process holds once it exits is not looked at again: the interpreter's last full
# collections went through every object a worker still held (a million after a unit run) and
# the controller waited seconds for the workers to exit. Objects are frozen, never freed: the
# system takes the memory back with the process.
atexit.register(gc.freeze)


def _check_each_schema_once() -> None:
    """A JSON Schema that passed ``check_schema`` is not checked again in this process.

    The MCP client checks each tool's output schema the first time a session calls the tool
    (``mcp.client.session``, ``_output_schema_validator``), and each test opens a session of its
    own (``support/tools_client.py``; a session for each call when this was measured): the same
    schemas were checked again on every call, 218 times in ``tests/unit/server``, whose CPU this
    takes from 16.0-16.2 s to 15.0-15.2 (two alternated pairs, one process, load 10). A schema
    that fails is checked (and fails) every time."""
    checked: set[tuple[str, str]] = set()
    for name in dir(jsonschema):
        validator = getattr(jsonschema, name)
        if not (isinstance(validator, type) and name.startswith("Draft") and name.endswith("Validator")):
            continue

        def check_schema(
            cls: type, schema: object, *args: object, _check: Any = validator.check_schema, **kwargs: object
        ) -> None:
            key = (cls.__name__, json.dumps([schema, args, kwargs], sort_keys=True, default=repr))
            if key not in checked:
                _check(schema, *args, **kwargs)
                checked.add(key)

        validator.check_schema = classmethod(check_schema)  # type: ignore[assignment,method-assign]


_check_each_schema_once()


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist registers it too, but only when it is loaded (not under ``-p no:xdist``).
    config.addinivalue_line("markers", "xdist_group(name): run on the worker of the group's other tests")
    put_temp_folders_in_memory(config)  # before pytest makes its first temporary folder
    # On a clean clone, the workers share out the caches each would make for itself as it
    # collects (support/warm_start.py).
    share_the_warm_up(config)
    # pytest-xdist hands the work units out in collection order, not by their number of tests:
    # the order is costliest_first's (support/work_order.py).
    if getattr(config.option, "loadscopereorder", None):
        config.option.loadscopereorder = False


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # pytest-xdist's hook (none under -p no:xdist)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadgroup``'s scheduler, without its cost growing with the square of the run
    (``support/scheduler.py``); pytest-xdist's own for any other ``--dist``."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from support.scheduler import LoadGroupOnce  # imports pytest-xdist, which may be left out

    return LoadGroupOnce(config, log)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (``--dist loadgroup``)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that share a fixture wider than one test share a pytest-xdist worker
    (``support/worker_groups.py``), and the costliest work goes out first
    (``support/work_order.py``, docs/testing.md)."""
    group_by_shared_fixtures(items)
    costliest_first(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The modules, tests and fixtures collected live as long as the process: frozen, the
    collector's full collections during the run skip them (half a million objects a worker),
    after one collection of what the collection left as garbage."""
    gc.collect()
    gc.freeze()


def _own_home(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """Point HOME and the XDG folders at ``home`` (the model files at the shared cache)."""
    home.mkdir(parents=True, exist_ok=True)
    # No `git maintenance run --auto` after each commit a test makes (a process each, some 150 a
    # unit run): a test's repository lives for the test.
    (home / ".gitconfig").write_text(
        "[user]\n\tname = graphmem tests\n\temail = tests@graphmem.invalid\n[maintenance]\n\tauto = false\n"
    )
    runtime = home / ".run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(SHARED_CACHE))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))


@pytest.fixture(scope="session", autouse=True)
def _session_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The session's own HOME, for what session fixtures build before any test runs."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _own_home(monkeypatch, tmp_path_factory.mktemp("session-home"))
        for name in [n for n in os.environ if n.startswith("GRAPHMEM_")]:
            monkeypatch.delenv(name)
        yield


@pytest.fixture(scope="session")
def _homes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the tests' homes: one numbered folder each, made with a plain mkdir
    (``tmp_path_factory.mktemp`` lists every folder made before it, each test)."""
    return tmp_path_factory.mktemp("homes")


_HOME_NUMBERS = itertools.count()
# The developer's variables no test sees, besides every GRAPHMEM_* one.
_OWN_VARIABLES = ("GITLAB_TOKEN", "OPENCODE_DB")
# The next number of each test name's folder (pytest's own numbering, which counts from 0 again
# once the name's folders are removed, mostly gave 0: the paths stay as short, for Unix sockets).
_TMP_NUMBERS: dict[str, itertools.count[int]] = {}
# The test's name in its folder's, as pytest writes it: what a word may not hold made "_", 30 at most.
_NOT_A_WORD = re.compile(r"\W")


@pytest.fixture
def tmp_path(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """pytest's own ``tmp_path``, made with a plain mkdir: a new folder in the run's base folder
    named after the test and numbered, removed once the test passed (kept when it failed, for a
    look: ``tmp_path_retention_policy`` in pyproject.toml). pytest's lists the whole base folder
    to number each folder, where it also leaves a ``<name>current`` link per test name: thousands
    in a unit run, so that each test's folder cost more than the one before (2.5 ms of CPU a test
    in a run of 2,000)."""
    stem = _NOT_A_WORD.sub("_", request.node.name)[:30]
    base = tmp_path_factory.getbasetemp()
    numbers = _TMP_NUMBERS.setdefault(stem, itertools.count())
    while True:
        path = base / f"{stem}{next(numbers)}"
        try:
            path.mkdir(mode=0o700)
            break
        except FileExistsError:  # a folder tmp_path_factory.mktemp made: the next number
            continue
    yield path
    passed = request.node.stash.get(tmppath_result_key, {}).get("call", True)
    if passed and request.config.getini("tmp_path_retention_policy") == "failed":
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(autouse=True)
def _isolated_settings(_homes: Path) -> Iterator[None]:
    """Every test has its own HOME, XDG folders and so its own default data dir and config file:
    nothing it runs (in process or in a child) reads the developer's config, GRAPHMEM_*
    variables or GitLab token, nor finds the developer's daemon, store or OpenCode. And the test
    that touched the developer's home anyway fails (``support/home_guard.py``).

    One fixture for both, with a MonkeyPatch of its own (undone after the test's own
    ``monkeypatch``): every test runs it, and each fixture a test runs costs pytest's
    bookkeeping besides its own work."""
    TOUCHED_REAL_HOME.clear()
    umask = os.umask(0o022)  # the CLI's main makes its process's files private (restrict_umask):
    os.umask(umask)  # a test that runs it in process must not leave that to the next test
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name in [n for n in os.environ if n.startswith("GRAPHMEM_") or n in _OWN_VARIABLES]:
            monkeypatch.delenv(name)
        home = _homes / str(next(_HOME_NUMBERS))
        _own_home(monkeypatch, home)
        monkeypatch.setenv("GRAPHMEM_CONFIG", str(home / "no-such-config.toml"))
        yield
    os.umask(umask)
    touched, TOUCHED_REAL_HOME[:] = list(TOUCHED_REAL_HOME), []
    if touched:
        pytest.fail(f"the test touched the real home {REAL_HOME}: " + "; ".join(touched[:5]), pytrace=False)


@pytest.fixture
def fake_memory(tmp_path: Path, kuzu_templates: KuzuTemplates) -> Iterator[MemoryService]:
    """A Memory service on a fresh Kùzu store with the deterministic hash embedder: the store a
    copy of the process's empty one (``support/stores.py``), opened as a new one is."""
    from graphmem.adapters.embedders import HashEmbedder
    from graphmem.app import open_memory
    from graphmem.settings import load_settings

    embedder = HashEmbedder(256)
    kuzu_templates.lay_out(tmp_path / "data", embedder.dimension)
    memory = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=embedder)
    yield memory
    memory.close()


@pytest.fixture
def memory_store() -> FakeGraphStore:
    """A fresh in-memory store (``adapters/fake_store.py``): the Kùzu store's contract, no Kùzu."""
    from support.memory_service import DIMENSION

    from graphmem.adapters.fake_store import FakeGraphStore

    return FakeGraphStore(dimension=DIMENSION)


@pytest.fixture
def memory_service(memory_store: FakeGraphStore, tmp_path: Path) -> Iterator[MemoryService]:
    """A Memory service on ``memory_store`` (with in-memory code and GitLab graphs) and the hash
    embedder: service logic without Kùzu (``fake_memory`` is the same service on a fresh Kùzu)."""
    from support.memory_service import in_memory_service

    memory = in_memory_service(tmp_path / "data", store=memory_store)
    yield memory
    memory.close()


@pytest.fixture(scope="session")
def postgres_server() -> PostgresServer:
    """A PostgreSQL server with pgvector, started for the session (each pytest-xdist worker has
    its own) and stopped at its end; ``support/postgres.py`` says where it comes from. It has
    a template database with graphmem's schema applied (``support/stores.py``). Its cluster is
    where the run's temporary folders are, in memory when there is room (``support/temp_root.py``):
    a database made on the disk cost 0.3 s, in memory 0.02 s."""
    from support.postgres import PostgresServer
    from support.stores import MIGRATED

    from graphmem.adapters.postgres_migrate import migrate

    where = os.environ.get(ROOT_VARIABLE)
    server = PostgresServer(parent=Path(where) if where else None)
    _STOP_AT_THE_END.append(server)
    server.start()
    server.new_template(MIGRATED, lambda url: migrate(url))
    return server


@pytest.fixture(scope="session")
def kuzu_templates(tmp_path_factory: pytest.TempPathFactory) -> KuzuTemplates:
    """The empty Kùzu stores the contract tests' new stores are copied from (``support/stores.py``),
    made once per process as they are first asked for."""
    from support.stores import KuzuTemplates

    return KuzuTemplates(tmp_path_factory.mktemp("kuzu-templates"))


# Servers stopped once every test ran (``pytest_sessionfinish``), not in a fixture's teardown:
# that would run inside the last test using it and count against its time limit.
_STOP_AT_THE_END: list[PostgresServer] = []


def pytest_sessionfinish(session: pytest.Session) -> None:
    while _STOP_AT_THE_END:
        _STOP_AT_THE_END.pop().stop()


@pytest.fixture(scope="session")
def real_embedder() -> OnnxEmbedder:
    """The bundled MiniLM on ONNX Runtime (the default embedder), loaded once per test session."""
    from graphmem.adapters.embedders import OnnxEmbedder

    embedder = OnnxEmbedder()
    embedder.load()
    return embedder


@pytest.fixture
def real_memory(
    tmp_path: Path, real_embedder: OnnxEmbedder, kuzu_templates: KuzuTemplates
) -> Iterator[MemoryService]:
    """A Memory service on a fresh Kùzu store (a copy of the process's empty one, as
    ``fake_memory``'s) with the real embedding model."""
    from graphmem.app import open_memory
    from graphmem.settings import load_settings

    kuzu_templates.lay_out(tmp_path / "data", real_embedder.dimension)
    memory = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=real_embedder)
    yield memory
    memory.close()


@pytest.fixture(scope="session")
def _git_project_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``git_project`` copies: made once a session (two git processes), where some 150 tests
    of a unit run each made their own."""
    root = tmp_path_factory.mktemp("git-project") / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main() -> None:\n    print('hello')\n", "utf-8")
    (root / "README.md").write_text("# proj\n", "utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "remote", "add", "origin", GITLAB_REMOTE], cwd=root, check=True)
    return root


@pytest.fixture
def git_project(tmp_path: Path, _git_project_template: Path) -> str:
    """A git repository with ``src/app.py``, ``README.md`` and a GitLab ``origin``; its resolved path.
    The test's own copy of the session's template, its files written now (``shutil.copy``: fresh
    times, as if made here)."""
    root = tmp_path / "proj"
    shutil.copytree(_git_project_template, root, symlinks=True, copy_function=shutil.copy)
    return str(root.resolve())
