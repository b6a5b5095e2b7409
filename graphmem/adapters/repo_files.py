"""The files of a repository worth indexing, and why the others are skipped.

Tracked and untracked-but-not-ignored files come from ``git ls-files`` (so
``.gitignore`` is respected); outside git, a walk that skips hidden, vendored and
build folders. Files are then skipped when they are no source graphmem can parse,
vendored, generated, binary, huge, or not inside the project (a symlink that leads
out of it, or in a loop). The docs and manifests bootstrap reads (``interesting_doc``)
are held to the same rules, since what they say becomes memories agents are fed: a doc
is read when it is a regular file inside the project (a link to another of its files is
fine), never a FIFO, device or socket, and it is opened without blocking.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
from pathlib import Path
from typing import BinaryIO

from graphmem.core.code import language_for
from graphmem.core.ports import SourceContent, SourceFile, SourceListing
from graphmem.core.skipped_files import (
    BINARY,
    DENIED,
    GENERATED,
    HUGE,
    MAX_SOURCE_BYTES,
    NOT_REGULAR,
    NOT_UTF8_NAME,
    OUTSIDE,
    UNREADABLE,
    VENDORED,
    looks_binary,
)
from graphmem.regular_files import NotRegularFile, open_regular

GIT_TIMEOUT_S = 60.0
VENDORED_DIRS = frozenset(
    {
        "node_modules",
        "vendor",
        "third_party",
        "third-party",
        "external",
        "bower_components",
        "dist",
        "build",
        "out",
        "target",
        ".venv",
        "venv",
        "env",
        "__pycache__",
        ".git",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "site-packages",
        ".next",
        ".nuxt",
        "coverage",
        ".gradle",
        "bin",
        "obj",
        "Pods",
        ".cache",
    }
)
GENERATED_NAME = re.compile(
    r"(\.min\.(js|css)$|_pb2(_grpc)?\.pyi?$|\.pb\.go$|\.pb\.(cc|h)$|\.generated\.|\.g\.(cs|dart)$|"
    r"\.designer\.cs$|(^|/)package-lock\.json$|\.bundle\.js$)"
)
# Asked of a file's first 2 KiB in lower case: five times faster than ``(?i)``, which leaves
# the regex engine no literal to look for first (47 -> 9 µs a file).
GENERATED_MARK = re.compile(rb"@generated|code generated .* do not edit|auto-?generated")


def _git_paths(root: Path) -> list[str] | None:
    try:
        done = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return sorted({p for p in done.stdout.decode("utf-8", "surrogateescape").split("\0") if p})


def _walk_paths(root: Path, denied: list[str]) -> list[str]:
    """Every file under ``root`` but hidden and vendored folders; those it may not read go in
    ``denied`` (``"path/"``)."""
    found: list[str] = []

    def refused(error: OSError) -> None:
        if isinstance(error, PermissionError) and error.filename is not None:
            folder = Path(error.filename).relative_to(root).as_posix()
            denied.append("" if folder == "." else folder + "/")  # "": the whole project

    for directory, dirs, names in os.walk(root, onerror=refused, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in VENDORED_DIRS)
        base = Path(directory).relative_to(root)
        found += [(base / name).as_posix() for name in sorted(names)]
    return found


def list_sources(root: Path) -> SourceListing:
    """Every file of ``root`` to index, with the count of skipped ones by reason."""
    # Loaded only here (and by ``service/repository_docs.py``): the docs' and manifests' readers,
    # which a command that bootstraps nothing would otherwise import at its start.
    from graphmem.core.project_facts import interesting_doc

    root = root.resolve()
    listing = SourceListing()
    paths = _git_paths(root)
    if paths is None:
        paths = _walk_paths(root, listing.denied)
    for path in paths:
        if not _utf8(path):  # a name git or the file system gave as bytes no text holds
            # named as text any output can carry: its bytes not UTF-8 escaped (``caf\xe9.py``)
            shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            listing.skip(shown, NOT_UTF8_NAME)
            continue
        parts = path.split("/")
        if any(part in VENDORED_DIRS for part in parts[:-1]):
            listing.skip(path, VENDORED)
            continue
        language = language_for(path)
        if language is None and not interesting_doc(path):
            listing.docs.append(path)  # never read: no check, no count (most of a repo is assets)
            continue
        info = _confined(root, path)
        if isinstance(info, str):
            listing.skip(path, info)
            if info == DENIED:
                listing.denied.append(path)
            continue
        listing.docs.append(path)
        if language is None:
            continue  # a doc or manifest, read by ``read_doc``
        if GENERATED_NAME.search(path):
            listing.skip(path, GENERATED)
            continue
        if info.st_size > MAX_SOURCE_BYTES:
            listing.skip(path, HUGE)
            continue
        listing.files.append(SourceFile(path, language, info.st_size, info.st_mtime_ns))
    return listing


def _confined(root: Path, path: str) -> os.stat_result | str:
    """The status of ``root / path`` (``root`` resolved) when graphmem may read it: a regular
    file inside ``root``, itself or through links; else why not. Nothing is opened."""
    full = root / path
    try:
        # git lists a link, never what is under a linked folder: the last part is the one to follow
        if full.is_symlink() and not full.resolve(strict=True).is_relative_to(root):
            return OUTSIDE
        info = full.stat()
    except PermissionError:  # a folder on its way this user may not enter
        return DENIED
    except (OSError, RuntimeError):  # broken link, loop, vanished
        return UNREADABLE
    return info if stat.S_ISREG(info.st_mode) else NOT_REGULAR


def _open_regular(full: Path) -> BinaryIO | str:
    """``full`` open for reading when it is a regular file, else why not: a file swapped for a
    FIFO or a device since it was listed is refused here too, and never read."""
    try:
        return open_regular(full)
    except NotRegularFile:
        return NOT_REGULAR
    except OSError:
        return UNREADABLE


def _utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_source(root: Path, path: str) -> SourceContent | str:
    """The bytes of a source file, or why it is skipped (binary, generated, huge, unreadable, not
    a regular file, outside the project). Checked again as ``list_sources`` did: the file may have
    grown, or become a link out of the project, since it was listed."""
    root = root.resolve()
    confined = _confined(root, path)
    if isinstance(confined, str):
        return confined
    file = _open_regular(root / path)
    if isinstance(file, str):
        return file
    try:
        with file:
            data = file.read(MAX_SOURCE_BYTES + 1)
    except OSError:
        return UNREADABLE
    if len(data) > MAX_SOURCE_BYTES:
        return HUGE
    if looks_binary(data):
        return BINARY
    if GENERATED_MARK.search(data[:2048].lower()):
        return GENERATED
    return SourceContent(data, hashlib.blake2b(data, digest_size=16).hexdigest())


class RepositoryFileWalker:
    """The ``RepositoryFiles`` port: ``list_sources`` and ``read_source`` above."""

    def list_sources(self, root: Path) -> SourceListing:
        return list_sources(root)

    def read_source(self, root: Path, path: str) -> SourceContent | str:
        return read_source(root, path)

    def read_doc(self, root: Path, path: str, max_bytes: int) -> bytes | None:
        """The first ``max_bytes`` of a doc or manifest ``list_sources`` listed; None when it is
        not, or no longer, a regular file inside ``root`` (checked again: it may have changed)."""
        root = root.resolve()
        if isinstance(_confined(root, path), str):
            return None
        file = _open_regular(root / path)
        if isinstance(file, str):
            return None
        try:
            with file:
                return file.read(max_bytes)
        except OSError:
            return None
