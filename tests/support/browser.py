"""Debian's Chromium, headless, driven by Playwright for graphmem ui's browser tests.

Install. :func:`ensure_chromium` finds ``/usr/bin/chromium`` (``$GRAPHMEM_TEST_CHROMIUM``
names another); when it is missing and the tests run as root on Debian (as CI does), it
installs the ``chromium`` package with apt once (an exclusive ``fcntl`` lock serialises
pytest-xdist workers), the way ``opencode.py`` installs the OpenCode client with npm.
Otherwise a missing browser is an error that says how to install it (:class:`BrowserUnavailable`),
never a skip. Playwright (a dev dependency) only drives it: no ``playwright install``, no
browser download.

Launch. :func:`launch` starts it with a fresh ``--user-data-dir`` and the flags that keep it
off the network (without ``--disable-background-networking`` and friends Chromium keeps
calling home, which floods a closed network and slows every test).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from support.home_guard import REPOSITORY

CHROMIUM = Path(os.environ.get("GRAPHMEM_TEST_CHROMIUM") or "/usr/bin/chromium")
INSTALL_HINT = (
    "graphmem ui's browser tests drive Debian's Chromium: install it with "
    "`sudo apt-get install chromium` (or point GRAPHMEM_TEST_CHROMIUM at a Chromium binary), "
    "and Playwright with `pip install -e '.[dev]'`."
)
FLAGS = [
    "--headless",
    "--no-sandbox",  # as root in CI, Chromium's sandbox refuses to start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--metrics-recording-only",
    "--password-store=basic",
]
INSTALL_LOCK = REPOSITORY / ".cache" / "chromium-install.lock"
APT_TIMEOUT_S = 540  # each apt step (test_ui_browser.py gives its tests the time for three)


class BrowserUnavailable(RuntimeError):
    """No Chromium to drive, and none could be installed here."""


def ensure_chromium() -> Path:
    """The Chromium binary, installed with apt first when missing and allowed."""
    if CHROMIUM.is_file():
        return CHROMIUM
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0 or "GRAPHMEM_TEST_CHROMIUM" in os.environ:
        raise BrowserUnavailable(f"No Chromium at {CHROMIUM}. {INSTALL_HINT}")
    # One lock for every worker of every run (each worker has a temporary folder of its own:
    # tests/integration/conftest.py), beside the OpenCode client's install.
    INSTALL_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with INSTALL_LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not CHROMIUM.is_file():
            _apt_install(apt)
    if not CHROMIUM.is_file():
        raise BrowserUnavailable(f"apt installed chromium but there is no {CHROMIUM}. {INSTALL_HINT}")
    return CHROMIUM


def _apt_install(apt: str) -> None:
    try:
        _apt_steps(apt)
    except subprocess.TimeoutExpired as exc:
        command = " ".join(map(str, exc.cmd))
        raise BrowserUnavailable(f"`{command}` took over {exc.timeout:.0f} s. {INSTALL_HINT}") from None


def _apt_steps(apt: str) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [apt, "-o", "DPkg::Lock::Timeout=300", "install", "-y", "--no-install-recommends", "chromium"]
    done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=APT_TIMEOUT_S)
    if done.returncode != 0:  # a fresh machine's package lists may be empty or old
        subprocess.run([apt, "update"], capture_output=True, text=True, env=env, timeout=APT_TIMEOUT_S)
        done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=APT_TIMEOUT_S)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise BrowserUnavailable(f"`apt-get install chromium` failed:\n{tail}\n{INSTALL_HINT}")


@contextlib.contextmanager
def launch() -> Iterator[Any]:
    """A headless Chromium (a Playwright ``Browser``), closed when the block ends."""
    executable = ensure_chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise BrowserUnavailable(f"Playwright is not installed ({exc}). {INSTALL_HINT}") from None
    with tempfile.TemporaryDirectory(prefix="graphmem-chromium-") as profile, sync_playwright() as playwright:
        # Playwright's launch() takes no --user-data-dir; a persistent context does, with the
        # fresh profile: nothing of a developer's own Chromium is read or written.
        context = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=str(executable),
            headless=True,
            args=FLAGS,
            viewport={"width": 1280, "height": 860},
        )
        try:
            yield context
        finally:
            context.close()
