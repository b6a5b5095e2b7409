"""The code graph of a project, resolved from parsed files: pure, no I/O.

Parsing yields definitions and unresolved references per file (``core.code``). This
module turns a whole project's worth of them into graph edges:

- ``IMPORTS``: a file imports another project file, or an external module;
- ``CALLS``: a symbol calls another of its language family (a JavaScript ``on()`` is no Python
  ``on``: ``code_bindings.language_family``), with the confidence of the resolution —
  ``self`` (a method of the caller's own class), ``import`` (the name was imported
  from the file that defines it), ``same_file``, ``unique_name`` (one definition of the family
  has that name) or ``ambiguous`` (several do: each is linked, at most
  ``MAX_AMBIGUOUS``; beyond that none — never "the first candidate"). In JavaScript and
  TypeScript (``core.code_bindings``) a wrong edge is worse than none: ``this.f()`` is the
  ``f`` of the caller's class or object (or its prototype, or bases) or nothing, never another
  object's by name; a call of, or on, a name imported from a package is nothing in the project;
- ``INHERITS``: a class extends or implements another, resolved the same way.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from graphmem.core.code import Definition, ImportRef, ParsedFile
from graphmem.core.code_bindings import language_family, member_names, outside_names, root_name, this_object
from graphmem.core.code_moves import MovePlan
from graphmem.core.keys import file_key as file_key  # the one File key (kept here for its users)

MAX_AMBIGUOUS = 3
CONFIDENCE_RANK = {"self": 0, "import": 1, "same_file": 2, "unique_name": 3, "ambiguous": 4}  # surest first
MAX_BASES = 6  # levels of inheritance searched for self.method()
SELF_RECEIVERS = frozenset({"self", "this", "cls", "super", "@", "$this", "static"})
# Source roots a module path may be relative to.
SOURCE_ROOTS = ("", "src/", "lib/", "app/", "pkg/", "internal/")
EXTENSIONS = {
    "python": (".py", "/__init__.py", ".pyi"),
    "typescript": (".ts", ".tsx", ".d.ts", "/index.ts", "/index.tsx", ".js", "/index.js"),
    "tsx": (".tsx", ".ts", "/index.tsx", "/index.ts", ".js"),
    "javascript": (".js", ".mjs", ".cjs", ".jsx", "/index.js", ".ts"),
    "ruby": (".rb",),
    "rust": (".rs", "/mod.rs"),
}


def symbol_key(project: str, path: str, qualified_name: str) -> str:
    """A symbol's identity: stable across edits that move it (no line numbers)."""
    return f"Symbol:{project}::{path}::{qualified_name}"


def module_key(project: str, module: str) -> str:
    return f"ExternalModule:{project}::{module}"


CODE_LABELS = ("File", "Symbol", "ExternalModule")  # the keys that name their project: <label>:<project>::...


def key_in_project(key: str, old: str, new: str) -> str | None:
    """The key of the same file, symbol or external module as ``key`` in project ``new``, when
    ``key`` is one of project ``old``'s (None otherwise): same path, same qualified name."""
    label, _, rest = key.partition(":")
    if label not in CODE_LABELS or not rest.startswith(f"{old}::"):
        return None
    return f"{label}:{new}::{rest[len(old) + 2 :]}"


# Where a project keeps its tests: a folder of these names, or a file named as test runners find it.
_TEST_FOLDERS = frozenset({"test", "tests", "__tests__", "spec", "specs", "testing"})
_TEST_FILE = re.compile(
    r"(?:^test_.*\.py|.*_test\.(?:py|go|rb|exs?)|.*\.(?:test|spec)\.[cm]?[jt]sx?|.*_spec\.rb|.*Tests?\.(?:java|kt|cs))$"
)


# Where a project keeps programs that show how to use it (click's examples/naval/naval.py).
_EXAMPLE_FOLDERS = frozenset({"example", "examples", "demo", "demos", "sample", "samples"})


def is_test_file(path: str) -> bool:
    """Whether ``path`` (project-relative) is a test of the project rather than its code."""
    *folders, name = path.split("/")
    return any(folder in _TEST_FOLDERS for folder in folders) or bool(_TEST_FILE.match(name))


def is_example_file(path: str) -> bool:
    """Whether ``path`` (project-relative) is in an example program of the project, not its code."""
    return any(folder in _EXAMPLE_FOLDERS for folder in path.split("/")[:-1])


def _folders_of(path: str) -> Iterator[str]:
    """The folders ``path`` is in, innermost first ("a/b/c.py": "a/b", "a")."""
    folder = posixpath.dirname(path)
    while folder:
        yield folder
        folder = posixpath.dirname(folder)


@dataclass(frozen=True, slots=True)
class Call:
    caller: str  # symbol key
    callee: str  # symbol key
    confidence: str


@dataclass
class ProjectCode:
    """Every parsed file of a project, indexed for resolution."""

    project: str
    files: dict[str, ParsedFile] = field(default_factory=dict)  # path -> parsed
    # (language family, name) -> the project's definitions of that name in that family's files
    _by_name: dict[tuple[str, str], list[tuple[str, Definition]]] = field(default_factory=dict, init=False)
    _by_qname: dict[tuple[str, str], Definition] = field(default_factory=dict, init=False)
    # (name, path) -> the file's definitions of that name: a call's candidates in one file
    # without reading every definition of the name in the project (a name defined in every
    # module made resolving quadratic in the files).
    _by_name_in: dict[tuple[str, str], list[Definition]] = field(default_factory=dict, init=False)
    _order: dict[str, int] = field(default_factory=dict, init=False)  # path -> its place in ``files``
    _paths: frozenset[str] = field(default_factory=frozenset, init=False)
    _folders: frozenset[str] = field(default_factory=frozenset, init=False)  # of ``_paths``, and theirs
    # A file's name -> the project's files of that name: an include or a type path found without
    # reading every path (``_named``)
    _by_file_name: dict[str, list[str]] = field(default_factory=dict, init=False)
    _bases: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict, init=False)
    # Each file's imports resolved, once a pass: the bases and the calls both read them.
    _resolved: dict[str, list[tuple[ImportRef, list[str]]]] = field(default_factory=dict, init=False)
    _names: dict[str, dict[str, list[str]]] = field(default_factory=dict, init=False)  # _imported_names
    _outside: dict[str, frozenset[str]] = field(default_factory=dict, init=False)  # _bound_outside
    # (language, directory, module, names) -> ``_import_targets``
    _targets: dict[tuple[str, str, str, tuple[str, ...]], list[str]] = field(default_factory=dict, init=False)

    def index(self) -> None:
        by_name: dict[tuple[str, str], list[tuple[str, Definition]]] = defaultdict(list)
        by_qname: dict[tuple[str, str], Definition] = {}
        by_name_in: dict[tuple[str, str], list[Definition]] = defaultdict(list)
        by_file_name: dict[str, list[str]] = defaultdict(list)
        for path, parsed in self.files.items():
            by_file_name[posixpath.basename(path)].append(path)
            for definition in parsed.definitions:
                by_name[(language_family(parsed.language), definition.name)].append((path, definition))
                by_qname[(path, definition.qualified_name)] = definition
                by_name_in[(definition.name, path)].append(definition)
        self._by_name = dict(by_name)
        self._by_qname = by_qname
        self._by_name_in = dict(by_name_in)
        self._order = {path: place for place, path in enumerate(self.files)}
        self._paths = frozenset(self.files)
        self._folders = frozenset(folder for path in self.files for folder in _folders_of(path))
        self._by_file_name = dict(by_file_name)
        self._resolved, self._names, self._targets, self._outside = {}, {}, {}, {}

    # -- imports ----------------------------------------------------------------

    def resolve_import(self, path: str, ref: ImportRef, language: str) -> list[str]:
        """Project files an import names (empty: an external module)."""
        module = ref.module.strip().strip("\"'<>")
        if not module:
            return []
        directory = posixpath.dirname(path)
        # The same import from the same folder names the same files (a package's modules import
        # alike): found once a pass, each file's own path left out after.
        asked = (language, directory, module, tuple(ref.names))
        found = self._targets.get(asked)
        if found is None:
            found = self._targets[asked] = self._import_targets(directory, module, ref.names, language)
        if language == "go":
            return list(found)
        named = [candidate for candidate in found if candidate != path]
        return named[:1] if language not in ("c", "cpp") else named[:5]

    def _import_targets(self, directory: str, module: str, names: Sequence[str], language: str) -> list[str]:
        """The project files an import of ``module`` (``names`` from it) in ``directory`` may
        name, likeliest first, each once (the importing file among them, if it is one)."""
        candidates: list[str] = []
        if language == "python":
            dots = len(module) - len(module.lstrip("."))
            rest = module[dots:].replace(".", "/")
            if dots:
                base = directory
                for _ in range(dots - 1):
                    base = posixpath.dirname(base)
                stems = [posixpath.join(base, rest) if rest else base]
                # `from . import x` names modules: try them too
                stems += [posixpath.join(stems[0], name) for name in names]
            else:
                roots = [root + rest for root in SOURCE_ROOTS]
                # `from pkg import mod` names a module first, else a name in pkg/__init__ (a
                # module only in a folder the project has: most roots are not one)
                folders = [stem for stem in roots if stem in self._folders]
                stems = [f"{stem}/{name}" for stem in folders for name in names] + roots
            candidates = [stem + ext for stem in stems for ext in EXTENSIONS["python"]]
        elif language in ("typescript", "tsx", "javascript"):
            if not module.startswith("."):
                return []
            stem = posixpath.normpath(posixpath.join(directory, module))
            candidates = [stem, *(stem + ext for ext in EXTENSIONS[language])]
        elif language in ("c", "cpp"):
            candidates = [posixpath.normpath(posixpath.join(directory, module)), module]
            candidates += [p for p in self._named(module) if p.endswith("/" + module)]
        elif language == "ruby":
            stem = module if module.endswith(".rb") else module + ".rb"
            candidates = [posixpath.normpath(posixpath.join(directory, stem)), stem, "lib/" + stem]
        elif language == "rust":
            parts = [p for p in module.replace("::", "/").split("/") if p not in ("crate", "self", "super")]
            for cut in range(len(parts), 0, -1):
                stem = "/".join(parts[:cut])
                candidates += [root + stem + ext for root in ("src/", "") for ext in EXTENSIONS["rust"]]
        elif language == "go":
            tail = module.rsplit("/", 1)[-1]
            found = [
                p
                for p in self._paths
                if p.endswith(".go")
                and posixpath.basename(posixpath.dirname(p)) == tail
                and module.endswith(posixpath.dirname(p))
            ]
            return sorted(found)[:20]
        else:  # java, kotlin, csharp, php: a dotted or backslashed type path
            dotted = module.replace("\\", "/").replace(".", "/").lstrip("/")
            suffixes = {"java": ".java", "kotlin": ".kt", "csharp": ".cs", "php": ".php"}
            suffix = suffixes.get(language, "")
            tails = [dotted + suffix, "/".join(dotted.split("/")[-2:]) + suffix]
            # the whole type path first, then its package and name: the more specific match wins
            candidates = [p for t in tails for p in self._named(t) if p == t or p.endswith("/" + t)]
        # one more than a resolution keeps: the importing file may be among them
        return [c for c in dict.fromkeys(candidates) if c in self._paths][:6]

    def _named(self, path: str) -> list[str]:
        """The project's files named as ``path``'s last part is, in the project's order."""
        return self._by_file_name.get(posixpath.basename(path), [])

    # -- calls ----------------------------------------------------------------

    def _imports_of(self, path: str) -> list[tuple[ImportRef, list[str]]]:
        """Each import of the file at ``path`` with the project files it names (``resolve_import``),
        resolved at the first call after ``index``."""
        found = self._resolved.get(path)
        if found is None:
            parsed = self.files[path]
            found = [(ref, self.resolve_import(path, ref, parsed.language)) for ref in parsed.imports]
            self._resolved[path] = found
        return found

    def _imported_names(self, path: str) -> dict[str, list[str]]:
        """Names a file imports -> the project files of its language family they come from (aliases
        included: a script's `import {f} from "./f.py"` brings no Python); once a pass (after ``index``)."""
        known = self._names.get(path)
        if known is not None:
            return known
        names: dict[str, list[str]] = {}
        self._names[path] = names
        family = language_family(self.files[path].language)
        for ref, targets in self._imports_of(path):
            targets = [t for t in targets if language_family(self.files[t].language) == family]
            if not targets:
                continue
            for name in ref.names:
                names[name] = targets
            local = ref.alias or ref.module.rstrip("/").replace("\\", "/").split("/")[-1].split(".")[-1]
            names.setdefault(local, targets)  # `import x` / `import x as y`: receiver x. / y.
        return names

    def _class_of(self, path: str, caller: str | None) -> str | None:
        while caller:
            definition = self._by_qname.get((path, caller))
            if definition is None:
                return None
            if definition.kind in ("class", "interface", "type", "module"):
                return definition.qualified_name
            caller = definition.parent
        return None

    def _resolve(
        self,
        path: str,
        name: str,
        receiver: str | None,
        caller: str | None,
        imported: Mapping[str, list[str]],
    ) -> tuple[list[tuple[str, Definition]], str]:
        family = language_family(self.files[path].language)
        script = family == "javascript"  # and TypeScript: ``code_bindings.SCRIPT_LANGUAGES``
        if receiver in SELF_RECEIVERS:
            own = self._own(path, name, caller, script)
            if own is not None:
                return [own], "self"
            if script:
                return [], ""  # `this` is what the call binds: no other object's method by its name
        elif script and root_name(receiver or name) in self._bound_outside(path):
            return [], ""
        via = imported.get(receiver or "") or imported.get(name)
        if via:
            # the first of the name's definitions in those files, in the project's order
            defining = [p for p in via if (name, p) in self._by_name_in]
            if defining:
                first = min(defining, key=lambda p: self._order.get(p, -1))
                return [(first, self._by_name_in[(name, first)][0])], "import"
        candidates = self._by_name.get((family, name), [])
        if script and receiver is None:  # `f()` is a function or a binding, never an object's method
            candidates = [c for c in candidates if c[1].kind != "method"]
        if receiver is None or receiver in SELF_RECEIVERS:
            same = [(path, d) for d in self._by_name_in.get((name, path), ()) if d.kind != "method"]
            if len(same) == 1:
                return same, "same_file"
        if len(candidates) == 1:
            return candidates, "unique_name"
        if 1 < len(candidates) <= MAX_AMBIGUOUS:
            return candidates, "ambiguous"
        return [], ""

    def _own(self, path: str, name: str, caller: str | None, script: bool) -> tuple[str, Definition] | None:
        """The method ``name`` of the class (or script object) ``self`` is in ``caller``, or of its bases."""
        owner = self._class_of(path, caller)
        if owner is None and script:
            owner = this_object(caller, lambda qualified: self._by_qname.get((path, qualified)))
        at = (path, owner) if owner is not None else None
        for _ in range(MAX_BASES):  # the class itself, then its bases
            if at is None:
                break
            for member in member_names(at[1], name) if script else (f"{at[1]}.{name}",):
                own = self._by_qname.get((at[0], member))
                if own is not None:
                    return at[0], own
            at = self._bases.get(at)
        return None

    def _bound_outside(self, path: str) -> frozenset[str]:
        """The names a script's imports bind to packages (``code_bindings``); once a pass."""
        names = self._outside.get(path)
        if names is None:
            names = self._outside[path] = outside_names(self._imports_of(path), self._folders, SOURCE_ROOTS)
        return names

    def _resolve_bases(self) -> None:
        bases: dict[tuple[str, str], tuple[str, str]] = {}
        for path, parsed in self.files.items():
            imported = self._imported_names(path)
            for inherit in parsed.inherits:
                base = inherit.base.rsplit(".", 1)[-1].split("<", 1)[0].split("(", 1)[0].strip()
                found, _ = self._resolve(path, base, None, None, imported)
                classes = [(p, d) for p, d in found if d.kind in ("class", "interface", "type")]
                if len(classes) == 1:
                    bases[(path, inherit.child)] = (classes[0][0], classes[0][1].qualified_name)
        self._bases = bases

    def edges(self) -> CodeEdges:
        """Resolve every reference of every file."""
        self.index()
        self._resolve_bases()
        edges = CodeEdges()
        for path, parsed in sorted(self.files.items()):
            own = file_key(self.project, path)
            key_of = {
                d.qualified_name: symbol_key(self.project, path, d.qualified_name) for d in parsed.definitions
            }
            for definition in parsed.definitions:
                parent = key_of.get(definition.parent) if definition.parent else None
                edges.contains.append((parent or own, key_of[definition.qualified_name]))
            for ref, targets in self._imports_of(path):
                edges.imports.extend((path, target) for target in targets)
                if not targets:
                    edges.external.append((path, ref.module.strip().strip("\"'<>")))
            imported = self._imported_names(path)
            seen: dict[tuple[str, str], str] = {}  # each pair once, with its surest confidence
            for call in parsed.calls:
                if call.caller is None or call.caller not in key_of:
                    continue
                found, confidence = self._resolve(path, call.name, call.receiver, call.caller, imported)
                source = key_of[call.caller]
                for target_path, definition in found:
                    callee = symbol_key(self.project, target_path, definition.qualified_name)
                    if callee != source:
                        held = seen.get((source, callee), confidence)
                        seen[(source, callee)] = min(held, confidence, key=CONFIDENCE_RANK.__getitem__)
            edges.calls.extend(Call(*pair, confidence) for pair, confidence in seen.items())
            for inherit in parsed.inherits:
                base = self._bases.get((path, inherit.child))
                if inherit.child in key_of and base is not None:
                    edges.inherits.append((key_of[inherit.child], symbol_key(self.project, *base)))
        edges.imports = sorted(set(edges.imports))
        edges.external = sorted(set(edges.external))
        return edges


@dataclass
class CodeEdges:
    contains: list[tuple[str, str]] = field(default_factory=list)  # (file or symbol key, symbol key)
    imports: list[tuple[str, str]] = field(default_factory=list)  # (path, path)
    external: list[tuple[str, str]] = field(default_factory=list)  # (path, module)
    calls: list[Call] = field(default_factory=list)
    inherits: list[tuple[str, str]] = field(default_factory=list)  # (symbol key, symbol key)


def confidence_counts(calls: Iterable[Call]) -> dict[str, int]:
    return dict(Counter(call.confidence for call in calls))


@dataclass(frozen=True, slots=True)
class FileState:
    """What decides whether a file must be parsed again."""

    path: str
    content_hash: str
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class SymbolInfo:
    key: str
    path: str
    kind: str
    name: str
    qualified_name: str
    start_line: int
    end_line: int
    signature: str
    docstring: str | None
    body_hash: str
    body_changed_at: datetime | None  # None while the body is the one the first scan saw
    deleted_at: datetime | None


@dataclass
class CodeScan:
    """One bootstrap pass over a project's code, ready to store."""

    project: str
    changed: dict[str, tuple[ParsedFile, FileState]]  # path -> what it holds now
    removed: list[str]
    code: ProjectCode  # every file, changed or not, for the edges
    # A Future while they are resolved on a thread beside the store's first writes (a pass's
    # symbols and files need no edge): a store reads them with ``resolved_edges``.
    edges: CodeEdges | Future[CodeEdges]
    at: datetime
    # Symbols renamed or moved and files renamed (``core.code_moves``): their memories follow.
    moves: MovePlan = field(default_factory=MovePlan)
    head: str | None = None  # the commit checked out, for git's rename detection next time

    def resolved_edges(self) -> CodeEdges:
        """The pass's edges, waited for when they are still being resolved."""
        return self.edges.result() if isinstance(self.edges, Future) else self.edges


def pass_edges(scan: CodeScan) -> dict[tuple[str, str, str], dict[tuple[str, str], str | None]]:
    """The edges a pass stores, every one of its project, by (relationship, source label, target
    label): each (source key, target key) once, with its confidence (a call's; None for the
    others). A file's imports join file keys, or a file key and its external module's key."""
    project, edges = scan.project, scan.resolved_edges()
    # A symbol's container is its file or its enclosing symbol: each pair goes to its table in one pass
    in_file: dict[tuple[str, str], str | None] = {}
    in_symbol: dict[tuple[str, str], str | None] = {}
    for pair in edges.contains:
        if pair[0].startswith("File:"):
            in_file[pair] = None
        elif pair[0].startswith("Symbol:"):
            in_symbol[pair] = None
    return {
        ("CONTAINS", "File", "Symbol"): in_file,
        ("CONTAINS", "Symbol", "Symbol"): in_symbol,
        ("CALLS", "Symbol", "Symbol"): {(c.caller, c.callee): c.confidence for c in edges.calls},
        ("INHERITS", "Symbol", "Symbol"): dict.fromkeys(edges.inherits),
        ("IMPORTS", "File", "File"): dict.fromkeys(
            (file_key(project, a), file_key(project, b)) for a, b in edges.imports
        ),
        ("IMPORTS", "File", "ExternalModule"): dict.fromkeys(
            sorted({(file_key(project, a), module_key(project, m)) for a, m in edges.external})
        ),
    }


def pass_modules(scan: CodeScan) -> dict[str, str]:
    """The external modules a pass's files import, each key with its name, by name."""
    return {module_key(scan.project, m): m for m in sorted({m for _, m in scan.resolved_edges().external})}


TITLE_CHARS = 200  # of a symbol's signature, as its entity's title
# A stored symbol's columns besides its key, as ``_symbol_rows`` builds them (its title is the start
# of its signature): a pass leaves a symbol whose columns are all the same as they are
# (``_unchanged_symbols``).
SYMBOL_COLUMNS = (
    "path",
    "kind",
    "name",
    "qualified_name",
    "start_line",
    "end_line",
    "signature",
    "docstring",
    "body_hash",
    "body_changed_at",
    "deleted_at",
)
# A stored symbol as a pass reads it: its body's hash, when its body last changed (None: not
# since graphmem first saw it), and whether memories are about it.
StoredSymbol = tuple[str, datetime | None, bool]


@dataclass(frozen=True, slots=True)
class SymbolChanges:
    """What a pass does to the symbols of its files, decided here for every store; each applies it
    with its own writes (Kùzu, PostgreSQL, the fake):

    - ``rows``: the symbols to write (new, or a column changed), by key, as ``_symbol_rows``
      builds them; a symbol found again with every column as stored is left alone (not here),
      so whatever points at it stays;
    - ``followed``: the stored symbols that moved, by old key, with their new key: the memories
      about one move to its new key;
    - ``removed``: the stored symbols gone from the code that no memory is about: deleted;
    - ``kept``: those gone that memories are about and that did not move: marked deleted.
    """

    rows: dict[str, dict[str, Any]]
    followed: dict[str, str]
    removed: list[str]
    kept: list[str]


def symbol_changes(
    scan: CodeScan, stored: Mapping[str, Sequence[Any]], remembered: Collection[str], at: datetime
) -> SymbolChanges:
    """What ``scan`` does to the symbols of its changed and removed files. ``stored`` is what the
    store holds of them, each key's :data:`SYMBOL_COLUMNS` in that order, its times as the store
    writes them (as ``at``, the time it writes for the pass); ``remembered``, those of them that
    memories are about (anyone's). ``removed`` and ``kept`` are in ``stored``'s order."""
    body_hash, body_changed_at = SYMBOL_COLUMNS.index("body_hash"), SYMBOL_COLUMNS.index("body_changed_at")
    old = {key: (row[body_hash], row[body_changed_at], key in remembered) for key, row in stored.items()}
    new, followed = _symbol_rows(scan, old, at)
    same = _unchanged_symbols(new, stored)
    gone = [key for key in stored if key not in new]
    return SymbolChanges(
        rows={key: row for key, row in new.items() if key not in same},
        followed=followed,
        removed=[key for key in gone if key not in remembered],
        kept=[key for key in gone if key in remembered and key not in followed],
    )


def _symbol_rows(
    scan: CodeScan, old: Mapping[str, StoredSymbol], at: datetime
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """What a pass stores of the symbols in its changed files, every store alike: each symbol's
    columns by key (``project``, ``path``, ``kind``, ``name``, ``title``, ``qualified_name``, lines,
    ``signature``, ``docstring``, ``body_hash``, ``body_changed_at``, ``deleted_at``), and the
    stored symbols that moved, by old key, with their new key. ``old`` is what the store holds
    of the symbols in those files and ``at`` the time the store writes for the pass.

    A symbol's ``body_changed_at`` is None until its body changes after graphmem first saw it;
    a moved symbol keeps its body's age when only its name or file changed."""
    moves = {
        symbol_key(scan.project, m.old_path, m.old_name): (
            symbol_key(scan.project, m.new_path, m.new_name),
            m,
        )
        for m in scan.moves.symbols
    }
    new: dict[str, dict[str, Any]] = {}
    for path, (parsed, _) in scan.changed.items():
        for d in parsed.definitions:
            key = symbol_key(scan.project, path, d.qualified_name)
            before = old.get(key)
            changed_at = None if before is None else at if before[0] != d.body_hash else before[1]
            new[key] = {
                "key": key,
                "project": scan.project,
                "path": path,
                "kind": d.kind,
                "name": d.name,
                "title": d.signature[:TITLE_CHARS],
                "qualified_name": d.qualified_name,
                "start_line": d.start_line,
                "end_line": d.end_line,
                "signature": d.signature,
                "docstring": d.docstring,
                "body_hash": d.body_hash,
                "body_changed_at": changed_at,
                "deleted_at": None,
            }
    followed = {k: v for k, v in moves.items() if k in old and k not in new and v[0] in new}
    for key, (target, move) in followed.items():
        new[target]["body_changed_at"] = old[key][1] if move.same_body else at
    return new, {key: target for key, (target, _) in followed.items()}


def _unchanged_symbols(new: Mapping[str, Mapping[str, Any]], stored: Mapping[str, Sequence[Any]]) -> set[str]:
    """The keys of ``new`` (rows as ``_symbol_rows`` builds them) whose stored columns (``stored``:
    each key's :data:`SYMBOL_COLUMNS`, in that order) are all the same: a pass neither deletes
    nor writes them, so whatever else points at them (a merge request's changed-symbol link, a
    memory) stays as it was. A symbol is the same one when its key is (its project, path and
    qualified name: ``symbol_key``); its kind is one of its columns (docs/code-graph.md)."""
    return {
        key
        for key, row in new.items()
        if (before := stored.get(key)) is not None and tuple(before) == tuple(row[c] for c in SYMBOL_COLUMNS)
    }
