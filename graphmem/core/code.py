"""What one source file defines and references, as the code parser reports it.

Pure data: the tree-sitter adapter (``graphmem.adapters.code_parser``) fills these in,
the bootstrap service turns them into ``File`` and ``Symbol`` nodes and ``CONTAINS`` /
``CALLS`` / ``IMPORTS`` / ``INHERITS`` edges. A symbol is identified by
``project:path::qualified_name``: nothing here carries a file path, and line numbers are
only for display, never part of an identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import PurePosixPath

from pydantic import TypeAdapter

DEFINITION_KINDS = frozenset({"function", "method", "class", "interface", "type", "constant", "module"})


@dataclass(frozen=True, slots=True)
class Definition:
    """A named definition: a function, method, class, interface, type, constant or module."""

    kind: str  # one of DEFINITION_KINDS
    name: str  # the last segment: "apply"
    qualified_name: str  # nested by enclosing definitions: "RefundService.apply", "pkg.Outer.Inner.f"
    start_line: int  # 1-based, for display only
    end_line: int
    signature: str  # the header up to the body, on one line: "def apply(self, amount: int) -> Refund"
    docstring: str | None  # Python docstring or the comment block directly above
    body_hash: str  # stable under whitespace-only changes: a formatter run does not change it
    parent: str | None  # qualified name of the enclosing definition
    # What a re-scan matches a renamed or moved symbol by (``core.code_moves.fingerprint``):
    # the hash of its tokens with its own name normalised away, and a MinHash sketch of them.
    # Empty in files parsed before graphmem kept them: those match by ``body_hash`` only.
    shape: str = ""
    sketch: str = ""


@dataclass(frozen=True, slots=True)
class CallRef:
    """A call site: ``receiver.name(...)`` inside ``caller`` (None at module level)."""

    name: str  # the called identifier, last segment: "validate"
    receiver: str | None  # the text before the dot: "self", "this", "os.path", "RefundService"
    line: int
    caller: str | None  # qualified name of the enclosing definition


@dataclass(frozen=True, slots=True)
class ImportRef:
    """An import: ``from payments.refund import apply as ap`` → ("payments.refund", ("apply",), "ap").

    ``alias`` is the local name given to the module, or to the single name imported with it;
    a statement that renames several names yields one ImportRef per renamed name.
    """

    module: str  # module, package, path or header as written: "payments.refund", "./x", "fmt", "x.h"
    names: tuple[str, ...]  # the names imported from it; empty when the module itself is imported
    alias: str | None
    line: int


@dataclass(frozen=True, slots=True)
class InheritRef:
    """``child`` extends, implements, embeds or mixes in ``base`` (as written at the site)."""

    child: str  # qualified name of the inheriting definition
    base: str  # "BaseService", "React.Component"
    line: int


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """Everything the parser found in one file. ``error_count`` > 0: the file did not fully parse.

    Qualified names are unique within a file: overloads and redefinitions (a property and its
    setter, ``#ifdef`` variants) are one Definition, whose ``body_hash`` covers all of them.
    """

    language: str
    definitions: tuple[Definition, ...]
    calls: tuple[CallRef, ...]
    imports: tuple[ImportRef, ...]
    inherits: tuple[InheritRef, ...]
    error_count: int  # ERROR and MISSING nodes; what parsed is still indexed


# The language names are tree-sitter-language-pack's. ".h" is read as C: a C++ header
# parses with some errors, which are counted rather than fatal.
LANGUAGE_BY_EXTENSION: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".rb": "ruby",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".cs": "csharp",
}

LANGUAGES: tuple[str, ...] = tuple(sorted(set(LANGUAGE_BY_EXTENSION.values())))


def language_for(path: str) -> str | None:
    """The parser language of ``path`` from its extension (any case), or None when unsupported."""
    suffix = PurePosixPath(path.replace("\\", "/")).suffix.lower()
    return LANGUAGE_BY_EXTENSION.get(suffix)


@cache
def _parsed_adapter() -> TypeAdapter[ParsedFile]:
    """Built at the first use: building it cost 15-35 ms of every command's start."""
    return TypeAdapter(ParsedFile)


def parsed_to_json(parsed: ParsedFile) -> str:
    """``parsed`` as the JSON a store keeps of a file's parse."""
    return _parsed_adapter().dump_json(parsed).decode()


def parsed_from_json(text: str | bytes) -> ParsedFile:
    """The parse a store kept as ``parsed_to_json`` wrote it."""
    return _parsed_adapter().validate_json(text)
