"""In-memory stand-ins for the sources bootstrap reads (core/ports.py): no git, no tree-sitter.

The real ones (``TreeSitterParser``, ``RepositoryFileWalker``, ``GitLog``) are tested in
tests/unit/adapters and, through bootstrap, in tests/integration/test_bootstrap.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from graphmem.core.code import ParsedFile
from graphmem.core.commits import Commit
from graphmem.core.ports import SourceContent, SourceFile, SourceListing

EMPTY = ParsedFile("python", (), (), (), (), 0)


@dataclass
class FakeParser:
    """Parses each source to what ``results`` says for its bytes (an empty file otherwise)."""

    results: dict[bytes, ParsedFile] = field(default_factory=dict)
    parsed: list[bytes] = field(default_factory=list)
    batches: list[int] = field(default_factory=list)  # how many sources each parse_many had
    prepared: list[int] = field(default_factory=list)  # the files each prepare said were coming
    closed: bool = False

    def parse(self, source: bytes, language: str) -> ParsedFile:
        self.parsed.append(source)
        return self.results.get(source, EMPTY)

    def parse_many(self, sources: Sequence[tuple[bytes, str]]) -> list[ParsedFile]:
        self.batches.append(len(sources))
        return [self.parse(source, language) for source, language in sources]

    def prepare(self, files: int) -> None:
        self.prepared.append(files)

    def close(self) -> None:
        self.closed = True


@dataclass
class FakeFiles:
    """A repository's files as ``path -> (bytes, mtime_ns)``; a ``str`` instead of bytes is a skip reason."""

    files: dict[str, tuple[bytes | str, int]] = field(default_factory=dict)
    docs: dict[str, bytes] = field(default_factory=dict)
    denied: list[str] = field(default_factory=list)  # the listing's paths this user may not read

    def list_sources(self, root: Path) -> SourceListing:
        listing = SourceListing(docs=sorted([*self.files, *self.docs]), denied=list(self.denied))
        for path, (data, mtime_ns) in sorted(self.files.items()):
            listing.files.append(SourceFile(path, "python", len(data), mtime_ns))
        return listing

    def read_source(self, root: Path, path: str) -> SourceContent | str:
        data = self.files[path][0]
        if isinstance(data, str):
            return data
        return SourceContent(data, hashlib.blake2b(data, digest_size=16).hexdigest())

    def read_doc(self, root: Path, path: str, max_bytes: int) -> bytes | None:
        data = self.docs.get(path)
        return None if data is None else data[:max_bytes]


@dataclass
class FakeHistory:
    """Commits newest first, and who last changed each line of a file (``path -> [sha, ...]``)."""

    commits: list[Commit] = field(default_factory=list)
    blame: dict[str, list[str]] = field(default_factory=dict)
    blamed_since: list[datetime | None] = field(default_factory=list)  # each ``blame_files``'s
    reads: int = 0
    said: list[str] = field(default_factory=list)  # what ``notes`` says
    renamed: dict[str, str] = field(default_factory=dict)  # what ``renames`` says: old -> new path

    def read_history(
        self, root: Path, *, max_commits: int, before: datetime | None, merges: bool, revision: str
    ) -> list[Commit]:
        self.reads += 1
        return self.commits[:max_commits]

    def blame_files(
        self, root: Path, paths: Sequence[str], since: datetime | None = None
    ) -> Generator[tuple[str, list[str]], None, None]:
        self.blamed_since.append(since)
        for path in paths:
            yield path, self.blame.get(path, [])

    def notes(self, root: Path) -> list[str]:
        return list(self.said)

    def head(self, root: Path) -> str | None:
        return self.commits[0].sha if self.commits else None

    def renames(self, root: Path, since: str) -> dict[str, str]:
        return dict(self.renamed)
