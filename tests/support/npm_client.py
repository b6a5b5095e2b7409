"""An agent client installed from npm into a cache once, and run in a process group of its own.

:func:`ensure_installed` installs ``package`` into ``cache_dir`` (git-ignored ``<repo>/.cache/...``)
the first time: an exclusive ``fcntl`` lock on ``<cache_dir>.lock`` serialises installers (other
pytest-xdist workers, other runs), npm installs into a temporary sibling that is renamed into
place only once ``check`` accepts it, and an ``.installed`` stamp marks it, so an interrupted
install never leaves a broken cache. No npm, a failed install or a failed check raise
:class:`ClientUnavailable`: the client's tests fail, never skip.

:func:`run_in_group` runs a command with a timeout; on timeout the whole process group (the
client and what it started: MCP servers, hooks) is killed and ``TimeoutExpired`` raised with
the output so far.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

INSTALL_TIMEOUT = 600.0


class ClientUnavailable(RuntimeError):
    """The client cannot be installed here (no npm, install failed): its tests must fail, not skip."""


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def version_of(binary: Path) -> str | None:
    """What ``binary --version`` prints, or None when it cannot run."""
    try:
        done = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _npm_install(target: Path, package: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise ClientUnavailable(f"npm is not on PATH: these tests need Node.js and npm to install {package}.")
    target.mkdir(parents=True)
    (target / "package.json").write_text('{"name": "graphmem-client-cache", "private": true}\n', "utf-8")
    cmd = [npm, "install", "--prefix", str(target), "--no-audit", "--no-fund", "--loglevel=error", package]
    try:
        done = subprocess.run(
            cmd, cwd=target, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as exc:
        raise ClientUnavailable(f"`{' '.join(cmd)}` took over {INSTALL_TIMEOUT:.0f} s") from exc
    if done.returncode != 0:
        raise ClientUnavailable(f"`{' '.join(cmd)}` failed ({done.returncode}):\n{done.stderr[-4000:]}")


def ensure_installed(package: str, stamp: str, cache_dir: Path, check: Callable[[Path], None]) -> None:
    """``package`` installed in ``cache_dir`` (once; ``stamp`` marks which install it is).
    ``check(directory)`` raises ``ClientUnavailable`` when the install in ``directory`` does not work."""

    def installed() -> bool:
        mark = cache_dir / ".installed"
        return mark.is_file() and mark.read_text("utf-8").strip() == stamp

    if installed():
        return
    with file_lock(cache_dir.with_name(cache_dir.name + ".lock")):
        if installed():  # another process installed it while we waited
            return
        staging = cache_dir.with_name(f"{cache_dir.name}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            _npm_install(staging, package)
            check(staging)
            (staging / ".installed").write_text(stamp + "\n", "utf-8")
            shutil.rmtree(cache_dir, ignore_errors=True)  # a broken or partial earlier install
            staging.rename(cache_dir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def run_in_group(
    cmd: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``cmd`` with stdin ``input`` (or closed), in a process group of its own, killed on timeout."""
    with subprocess.Popen(
        list(cmd),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            raise subprocess.TimeoutExpired(list(cmd), timeout, stdout, stderr) from None
    return subprocess.CompletedProcess(list(cmd), proc.returncode, stdout, stderr)
