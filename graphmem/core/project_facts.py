"""Which files of a repository teach something, and the facts, directives and procedures in each.

``graphmem bootstrap`` reads the files ``interesting_doc`` names and stores what
``extract_facts`` returns. The readers are by what they read: ``manifest_facts`` for
``pyproject.toml``, ``package.json``, ``go.mod`` and ``Cargo.toml`` (one table-driven
reader), ``doc_facts`` for READMEs, CONTRIBUTING, agent instructions and docs pages
(over ``markdown``). Invalid or unexpected content yields fewer facts, never an
exception; bytes that are no text (``doc_text``) are not read at all.

Keys. ``ProjectFact.key`` is ``"<source>#<category>:<slug>"`` and is what bootstrap
upserts on, so re-running it updates memories instead of adding new ones: a manifest
field is keyed by *what it is* (``pyproject.toml#fact:stack``), a free-text rule or
command by *its own words*, a section-level fact by its role
(``README.md#fact:description``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from graphmem.core.doc_facts import DOC_READERS
from graphmem.core.manifest_facts import MANIFESTS, read_manifest
from graphmem.core.skipped_files import looks_binary
from graphmem.core.text import MAX_TEXT_CHARS, well_formed

MAX_INPUT_CHARS = 500_000  # more than any hand-written doc; keeps one file's parse bounded
MAX_DOC_DEPTH = 2  # manifests and READMEs up to two folders deep (packages/api/package.json)
# The share of a doc's characters that may be undecodable bytes or control characters: a Latin-1
# README has a few (its accents); a binary without NULs, or text in another encoding, has many.
MAX_NOT_TEXT_SHARE = 0.1
_NOT_TEXT_RE = re.compile("[\x00-\x08\x0e-\x1f\x7f\ufffd]")  # but tab, line breaks and form feed


@dataclass(frozen=True, slots=True)
class ProjectFact:
    """One thing a repository's file says: ``category`` is "fact", "directive" or "procedure"."""

    category: str
    text: str  # a self-contained sentence that names its source file
    source: str  # the repo-relative POSIX path it came from
    key: str  # stable identity for upserts: "<source>#<category>:<slug>"


# -- which files ---------------------------------------------------------------------------

AGENT_FILES = frozenset({"agents.md", "claude.md", ".cursorrules"})
# Dependencies, build output and caches: other people's docs.
# fmt: off
VENDORED_DIRS = frozenset({
    "node_modules", "vendor", "third_party", "third-party", ".venv", "venv", "site-packages", "dist", "build",
    "target", "__pycache__", ".git", ".tox", ".cache",
})
# fmt: on
# Example and test projects carry their own manifests and READMEs, not this project's.
EXAMPLE_DIRS = frozenset(
    {"test", "tests", "testdata", "fixtures", "__fixtures__", "example", "examples", "sample", "samples"}
)
_README_SUFFIXES = ("", ".md", ".markdown", ".rst", ".txt")


def _kind(path: str) -> str | None:
    """Which extractor reads ``path``, by its name alone."""
    parts = path.strip("/").split("/")
    name, lower = parts[-1], parts[-1].lower()
    if lower in AGENT_FILES or path.lower() == ".github/copilot-instructions.md":
        return "agents"
    if name in MANIFESTS:
        return name
    stem, dot, suffix = lower.partition(".")
    if stem == "contributing" and dot + suffix in _README_SUFFIXES:
        return "contributing"
    if parts[0] == "docs" and lower.endswith((".md", ".markdown")):
        return "docs"
    if stem == "readme" and dot + suffix in _README_SUFFIXES:
        return "readme"
    return None


def interesting_doc(path: str) -> bool:
    """Whether bootstrap should read ``path`` (repo-relative, POSIX) for facts.

    Manifests (pyproject.toml, package.json, go.mod, Cargo.toml) and READMEs up to two
    folders deep; CONTRIBUTING; agent instructions (AGENTS.md, CLAUDE.md, .cursorrules,
    .github/copilot-instructions.md) at any depth; Markdown under ``docs/``. Never
    inside dependencies or build output, nor (except under docs/) in test or example
    projects.
    """
    kind = _kind(path)
    folders = path.strip("/").split("/")[:-1]
    if kind is None or VENDORED_DIRS.intersection(folders):
        return False
    if kind == "docs":
        return True
    if EXAMPLE_DIRS.intersection(folders):
        return False
    return kind == "agents" or len(folders) <= MAX_DOC_DEPTH


def doc_text(raw: bytes) -> str | None:
    """The text of a doc's or manifest's bytes (UTF-8, an undecodable byte as U+FFFD); None when
    they are no text: binary as a source file is (``skipped_files.looks_binary``), or over
    ``MAX_NOT_TEXT_SHARE`` of their characters undecodable or control characters. What such a
    file "says" is garbage."""
    if looks_binary(raw):
        return None
    text = raw.decode("utf-8", "replace")
    not_text = len(text) - len(_NOT_TEXT_RE.sub("", text))
    return None if not_text > MAX_NOT_TEXT_SHARE * len(text) else text


def is_manifest(path: str) -> bool:
    """Whether ``path`` is a manifest (pyproject.toml, package.json, go.mod, Cargo.toml): its
    facts' keys are its fields' names (``package.json#fact:engines``), never its values."""
    return _kind(path) in MANIFESTS


def extract_facts(path: str, text: str) -> list[ProjectFact]:
    """The facts, directives and procedures in one file, each with a stable key.

    ``path`` is repo-relative and POSIX; it names the file in every text. A file that
    is no known doc or manifest, or is invalid, gives ``[]``.
    """
    return read_facts(path, text) or []


def read_facts(path: str, text: str) -> list[ProjectFact] | None:
    """``extract_facts``, but None for a manifest whose text does not parse: what it says is
    unknown then, which is not the same as saying nothing (bootstrap keeps its facts)."""
    kind = _kind(path)
    if kind is None:
        return []
    text = text[:MAX_INPUT_CHARS].removeprefix("\ufeff")
    found = read_manifest(kind, path, text) if kind in MANIFESTS else DOC_READERS[kind](path, text)
    if found is None:
        return None
    unique: dict[str, ProjectFact] = {}
    for category, slug, sentence in found:
        key = f"{path}#{category}:{slug}"
        # Each part of a fact is bounded, but for its file's path: one longer than any file
        # system's makes a fact no memory may hold (an edit refuses it), and it is left out.
        if len(sentence) <= MAX_TEXT_CHARS:
            unique.setdefault(key, ProjectFact(category, _storable(sentence), path, key))
    return list(unique.values())


def _storable(text: str) -> str:
    """``text`` with each NUL and lone surrogate as U+FFFD, as an undecodable byte of a doc is:
    a JSON or TOML ``\\u0000`` and a JSON ``\\ud83d`` parse to them, and a memory holds neither
    (its hash encodes it as UTF-8; an edit refuses a NUL)."""
    return well_formed(text.replace("\x00", "\ufffd"))
