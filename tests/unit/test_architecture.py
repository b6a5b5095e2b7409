"""The import rules of docs/architecture.md, read from the source with ``ast``.

Dependencies point one way: entry points (cli) → app → service → core, and
adapters → core. Each rule is one test; a failure names the module, the line and
the import that breaks it.

An import counts wherever it is written (module level, class body, function body),
and so do ``importlib.import_module("name")`` and ``__import__("name")`` with a
literal name. Only rule (e) distinguishes *when* an import runs: the CLI may import
heavy layers inside the function of a command, not while ``graphmem.cli`` loads.
Imports under ``if TYPE_CHECKING:`` never run and count as neither.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# Every rule reads the modules parsed once per process (``tree_of``, ``imports_of``): on one
# pytest-xdist worker they are parsed once, not once on each (docs/testing.md).
pytestmark = pytest.mark.xdist_group("architecture")

PACKAGE = Path(__file__).resolve().parents[2] / "graphmem"

# Third-party packages that do I/O or are slow to import: never in core.
CORE_FORBIDDEN_THIRD_PARTY = (
    "kuzu",
    "psycopg",
    "psycopg_pool",
    "torch",
    "sentence_transformers",
    "transformers",
    "gitlab",
    "fastmcp",
    "click",
    "pyarrow",
    "networkx",
    "tree_sitter",
    "tree_sitter_language_pack",
)
CORE_FORBIDDEN_GRAPHMEM = (
    "graphmem.server",
    "graphmem.adapters",
    "graphmem.service",
    "graphmem.app",
    "graphmem.cli",
    "graphmem.bench",
)
ADAPTERS_FORBIDDEN = ("graphmem.service", "graphmem.app", "graphmem.cli", "graphmem.bench", "graphmem.server")
SERVICE_FORBIDDEN = (
    "graphmem.server",
    "fastmcp",
    "graphmem.app",
    "graphmem.cli",
    "graphmem.bench",
    "kuzu",
    "psycopg",
    "psycopg_pool",
    "torch",
    "sentence_transformers",
)
CLI_FORBIDDEN_AT_IMPORT_TIME = (
    "graphmem.app",
    "graphmem.service",
    "graphmem.adapters",
    "graphmem.bench",
    "graphmem.server",
)
# The web stack belongs to the daemon.
SERVER_ONLY = ("fastmcp", "mcp", "uvicorn", "starlette", "prometheus_client")
# `graphmem mcp` starts with every client and must list tools at once: stdlib only.
PROXY_MODULES = ("graphmem.server.proxy", "graphmem.server.daemon_process", "graphmem.server.identity")
PROXY_MAY_IMPORT = (
    "graphmem.errors",
    "graphmem.server.daemon_process",
    "graphmem.server.identity",
    "graphmem.server",
)


@dataclass(frozen=True, slots=True)
class Import:
    """One imported module name in one graphmem module."""

    module: str  # dotted name of the importing module, e.g. "graphmem.core.models"
    path: str  # its file, relative to the repository, e.g. "graphmem/core/models.py"
    line: int
    name: str  # the imported module, e.g. "kuzu" or "graphmem.adapters.kuzu_store"
    at_import_time: bool  # runs when the importing module is imported (not inside a function)

    def __str__(self) -> str:
        when = "at import time" if self.at_import_time else "inside a function"
        return f"{self.path}:{self.line} ({self.module}) imports {self.name} {when}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module of ``from <node.module> import ...``, resolving relative levels."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _dynamic_import(node: ast.Call) -> str | None:
    """The literal name of ``importlib.import_module("x")`` or ``__import__("x")``, if that is the call."""
    func = node.func
    is_dynamic = (isinstance(func, ast.Name) and func.id in {"__import__", "import_module"}) or (
        isinstance(func, ast.Attribute) and func.attr == "import_module"
    )
    if not is_dynamic or not node.args:
        return None
    first = node.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, path: str, is_package: bool) -> None:
        self.module = module
        self.path = path
        self.is_package = is_package
        self.function_depth = 0
        self.found: list[Import] = []

    def _add(self, node: ast.AST, name: str) -> None:
        line = getattr(node, "lineno", 0)
        self.found.append(Import(self.module, self.path, line, name, self.function_depth == 0))

    def _in_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        self.function_depth += 1
        self.generic_visit(node)
        self.function_depth -= 1

    visit_FunctionDef = _in_function
    visit_AsyncFunctionDef = _in_function
    visit_Lambda = _in_function

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for child in node.orelse:  # the ``else`` of ``if TYPE_CHECKING`` does run
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _absolute(node, self.module, self.is_package)
        self._add(node, base)
        for alias in node.names:
            if alias.name != "*":
                # ``from graphmem import app`` imports the module graphmem.app
                self._add(node, f"{base}.{alias.name}" if base else alias.name)

    def visit_Call(self, node: ast.Call) -> None:
        name = _dynamic_import(node)
        if name is not None:
            self._add(node, name)
        self.generic_visit(node)


@functools.cache
def tree_of(path: Path) -> ast.Module:
    """The syntax tree of one source file, parsed once per test run (the rules only read it)."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@functools.cache
def nodes_of(path: Path) -> tuple[ast.AST, ...]:
    """Every node of one source file in ``ast.walk``'s order, walked once per test run: five
    rules go through all of them (a walk of graphmem is a quarter of a second of CPU)."""
    return tuple(ast.walk(tree_of(path)))


@functools.cache
def imports_of(path: Path) -> tuple[Import, ...]:
    """The imports of one source file (every rule reads them all)."""
    module = module_name(path)
    relative = path.relative_to(PACKAGE.parent).as_posix()
    collector = _Collector(module, relative, path.name == "__init__.py")
    collector.visit(tree_of(path))
    return tuple(collector.found)


def all_imports() -> Iterator[Import]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield from imports_of(path)


def matches(name: str, prefixes: Iterable[str]) -> bool:
    """``name`` is one of ``prefixes`` or a submodule of one (``kuzu`` matches ``kuzu.database``)."""
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def in_layer(found: Import, layer: str) -> bool:
    return found.module == layer or found.module.startswith(layer + ".")


def report(rule: str, violations: list[Import]) -> str:
    return rule + ":\n" + "\n".join(f"  {v}" for v in sorted(set(violations), key=str))


# -- the rules ------------------------------------------------------------------


def test_core_imports_no_io_library_and_no_outer_layer() -> None:
    violations = [
        found
        for found in all_imports()
        if in_layer(found, "graphmem.core")
        and matches(found.name, CORE_FORBIDDEN_THIRD_PARTY + CORE_FORBIDDEN_GRAPHMEM)
    ]

    assert not violations, report("graphmem/core must stay pure", violations)


def test_adapters_import_no_service_app_cli_or_bench() -> None:
    violations = [
        found
        for found in all_imports()
        if in_layer(found, "graphmem.adapters") and matches(found.name, ADAPTERS_FORBIDDEN)
    ]

    assert not violations, report("graphmem/adapters must not import service, app, cli or bench", violations)


def test_service_imports_no_entry_point_and_no_store_or_model_library() -> None:
    violations = [
        found
        for found in all_imports()
        if in_layer(found, "graphmem.service") and matches(found.name, SERVICE_FORBIDDEN)
    ]

    assert not violations, report(
        "graphmem/service must not import app, cli, bench, kuzu, torch or sentence_transformers", violations
    )


# Adapters the service may import, each with the reason it is no port. Every other external
# system reaches the service through core/ports.py, its implementation picked by graphmem/app.py.
SERVICE_MAY_IMPORT_ADAPTERS: dict[str, str] = {}


def test_service_imports_adapters_only_from_the_allow_list() -> None:
    violations = [
        found
        for found in all_imports()
        if in_layer(found, "graphmem.service")
        and matches(found.name, ("graphmem.adapters",))
        and not matches(found.name, SERVICE_MAY_IMPORT_ADAPTERS)
    ]

    assert not violations, report(
        "graphmem/service reaches adapters through core/ports.py (built in graphmem/app.py); "
        "add a port, or name the adapter in SERVICE_MAY_IMPORT_ADAPTERS with the reason",
        violations,
    )


def test_the_service_allow_list_names_only_adapters_the_service_imports() -> None:
    used = {
        allowed
        for found in all_imports()
        if in_layer(found, "graphmem.service")
        for allowed in SERVICE_MAY_IMPORT_ADAPTERS
        if matches(found.name, (allowed,))
    }

    assert used == set(SERVICE_MAY_IMPORT_ADAPTERS), (
        f"no service module imports {sorted(set(SERVICE_MAY_IMPORT_ADAPTERS) - used)}: "
        "drop it from SERVICE_MAY_IMPORT_ADAPTERS"
    )


def test_kuzu_is_imported_only_by_the_kuzu_adapters() -> None:
    violations = [
        found
        for found in all_imports()
        if matches(found.name, ("kuzu",))
        and not (found.path.startswith("graphmem/adapters/kuzu_") and found.path.count("/") == 2)
    ]

    assert not violations, report("kuzu belongs in graphmem/adapters/kuzu_*.py only", violations)


def test_psycopg_is_imported_only_by_the_postgres_adapters() -> None:
    violations = [
        found
        for found in all_imports()
        if matches(found.name, ("psycopg", "psycopg_pool"))
        and not (found.path.startswith("graphmem/adapters/postgres_") and found.path.count("/") == 2)
    ]

    assert not violations, report("psycopg belongs in graphmem/adapters/postgres_*.py only", violations)


def test_sentence_transformers_is_imported_only_by_the_embedders_adapter() -> None:
    violations = [
        found
        for found in all_imports()
        if matches(found.name, ("sentence_transformers",)) and found.path != "graphmem/adapters/embedders.py"
    ]

    assert not violations, report(
        "sentence_transformers belongs in graphmem/adapters/embedders.py only", violations
    )


def test_python_gitlab_is_imported_only_by_the_gitlab_adapters() -> None:
    violations = [
        found
        for found in all_imports()
        if matches(found.name, ("gitlab", "requests"))
        and found.path not in ("graphmem/adapters/gitlab_api.py", "graphmem/adapters/gitlab_transport.py")
    ]

    assert not violations, report(
        "gitlab and requests belong in graphmem/adapters/gitlab_api.py and gitlab_transport.py", violations
    )


def test_tree_sitter_is_imported_only_by_the_code_parser() -> None:
    violations = [
        found
        for found in all_imports()
        if matches(found.name, ("tree_sitter", "tree_sitter_language_pack"))
        and found.path != "graphmem/adapters/code_parser.py"
    ]

    assert not violations, report("tree_sitter belongs in graphmem/adapters/code_parser.py only", violations)


def test_cli_imports_no_heavy_layer_at_import_time() -> None:
    violations = [
        found
        for found in all_imports()
        if in_layer(found, "graphmem.cli")
        and found.at_import_time
        and matches(found.name, CLI_FORBIDDEN_AT_IMPORT_TIME)
    ]

    assert not violations, report(
        "graphmem/cli must import app, service, adapters and bench inside command functions", violations
    )


def _service_arrows() -> dict[str, set[str]]:
    """Module -> the graphmem.service modules it imports (wherever written), within graphmem/service."""
    modules = {module_name(p) for p in (PACKAGE / "service").rglob("*.py")}
    arrows: dict[str, set[str]] = {m: set() for m in modules}
    for found in all_imports():
        if found.module in modules and found.name in modules and found.name != found.module:
            arrows[found.module].add(found.name)
    return arrows


def test_nothing_in_the_service_imports_the_facade() -> None:
    violations = [
        found
        for found in all_imports()
        if in_layer(found, "graphmem.service")
        and found.module != "graphmem.service.memory"
        and matches(found.name, ("graphmem.service.memory",))
    ]

    assert not violations, report(
        "MemoryService (service/memory.py) is the entry points' facade: peer services get what they "
        "need from app.py, never the facade",
        violations,
    )


def test_the_service_modules_import_no_circle() -> None:
    arrows = _service_arrows()
    cycles: list[str] = []

    def visit(module: str, path: list[str], done: set[str]) -> None:
        for target in sorted(arrows[module]):
            if target in path:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in done:
                visit(target, [*path, target], done)
        done.add(module)

    done: set[str] = set()
    for module in sorted(arrows):
        if module not in done:
            visit(module, [module], done)

    assert not cycles, "import circles in graphmem/service:\n" + "\n".join(sorted(set(cycles)))


# -- the checker itself -------------------------------------------------------------


def test_the_checker_sees_the_imports_it_must_police() -> None:
    names = {(found.path, found.name) for found in all_imports()}

    assert ("graphmem/adapters/kuzu_store.py", "kuzu") in names
    assert ("graphmem/app.py", "graphmem.service.memory") in names


def test_the_checker_tells_import_time_from_function_and_skips_type_checking(tmp_path: Path) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "import kuzu\n"
        "if TYPE_CHECKING:\n"
        "    import torch\n"
        "from . import sibling\n"
        "def command():\n"
        "    import graphmem.app\n"
        "    importlib.import_module('fastmcp')\n"
    )
    collector = _Collector("graphmem.cli.example", "graphmem/cli/example.py", is_package=False)
    collector.visit(ast.parse(source))
    seen = {(found.name, found.at_import_time) for found in collector.found}

    assert ("kuzu", True) in seen
    assert ("graphmem.cli.sibling", True) in seen
    assert ("graphmem.app", False) in seen
    assert ("fastmcp", False) in seen
    assert not any(name == "torch" for name, _ in seen)


def test_the_web_stack_is_imported_only_by_the_server_and_its_benchmark() -> None:
    violations = [
        found
        for found in all_imports()
        if matches(found.name, SERVER_ONLY)
        and not in_layer(found, "graphmem.server")
        and not in_layer(found, "graphmem.bench")
    ]

    assert not violations, report("fastmcp, uvicorn, starlette belong in graphmem/server", violations)


def test_the_stdio_proxy_imports_only_the_standard_library() -> None:
    violations = [
        found
        for found in all_imports()
        if found.module in PROXY_MODULES
        and found.at_import_time
        and not matches(found.name, PROXY_MAY_IMPORT)
        and found.name.split(".")[0] not in sys.stdlib_module_names
        and found.name != "__future__"
    ]

    assert not violations, report(
        "graphmem mcp must start fast: stdlib only in proxy and daemon_process", violations
    )


# -- the redaction door ------------------------------------------------------------------
#
# Every write to the memory store and the GitLab graph passes ``service/redacting.py``
# (docs/learning.md, "Redaction"): the door defines every write method of the ports and
# redacts in each, and outside the adapters nothing writes except through the door.

PORTS = (PACKAGE / "core" / "ports.py", PACKAGE / "core" / "gitlab_ports.py")
DOOR = PACKAGE / "service" / "redacting.py"
DOORS = {
    "GraphStore": ("RedactingStore", "STORE_READS"),
    "GitLabGraph": ("RedactingGitLabGraph", "GITLAB_READS"),
}
# The attributes that hold a guarded store, and the classes that hold them: MemoryWriter
# wraps its store first thing, Enricher its graph; the Ingester keeps its cursor in the
# writer's store (``self._meta``). A new class that writes must be added here, and given a
# guarded store -- and a memory, its entities and links are written by MemoryWriter only
# (``test_only_the_writer_writes_memories``).
GUARDED_RECEIVERS = ("self.store", "self._meta", "self.graph")
# WriterHistory is a part of MemoryWriter (its ``history``): its store is the writer's.
WRITING_CLASSES = frozenset({"MemoryWriter", "WriterHistory", "Ingester", "Enricher"})


# Writes of graphmem's own metadata, not of anyone's text: app records the embedding model,
# bootstrap whether a stopped pass left commits to link.
METADATA_WRITERS = {
    "graphmem/app.py": ("set_meta",),
    "graphmem/service/semantic.py": ("set_meta",),
    "graphmem/service/bootstrap.py": ("set_meta",),
}


def _classes(*paths: Path) -> dict[str, ast.ClassDef]:
    return {node.name: node for path in paths for node in nodes_of(path) if isinstance(node, ast.ClassDef)}


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in cls.body if isinstance(node, ast.FunctionDef)}


def _protocol_methods(classes: dict[str, ast.ClassDef], name: str) -> set[str]:
    """The methods of port ``name`` with those of the ports it unites (``GraphStore``'s groups)."""
    bases = [b.id for b in classes[name].bases if isinstance(b, ast.Name) and b.id in classes]
    return set(_methods(classes[name])).union(*(_protocol_methods(classes, b) for b in bases))


def _frozenset_literal(path: Path, name: str) -> set[str]:
    tree = tree_of(path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            assert isinstance(node.value, ast.Call) and node.value.args
            return set(ast.literal_eval(node.value.args[0]))
    raise AssertionError(f"{name} is not defined in {path}")


def _calls_redaction(function: ast.FunctionDef) -> bool:
    names = {
        node.func.id
        for node in ast.walk(function)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    return any(name.startswith(("redact", "_clean")) for name in names)


def _port_writes() -> set[str]:
    """The write methods that carry text (vectors, ids and links carry none)."""
    ports = _classes(*PORTS)
    writes: set[str] = set()
    for port, (_, reads_name) in DOORS.items():
        writes |= _protocol_methods(ports, port) - _frozenset_literal(DOOR, reads_name)
    return writes - _frozenset_literal(DOOR, "NO_TEXT_WRITES")


def test_every_write_method_of_the_store_ports_is_on_the_door_and_redacts() -> None:
    ports, doors = _classes(*PORTS), _classes(DOOR)
    no_text = _frozenset_literal(DOOR, "NO_TEXT_WRITES")
    problems = []
    for port, (door, reads_name) in DOORS.items():
        port_methods = _protocol_methods(ports, port)
        reads = _frozenset_literal(DOOR, reads_name)
        defined = _methods(doors[door])
        problems += [
            f"{reads_name} names {m}, which {port} does not have" for m in sorted(reads - port_methods)
        ]
        for method in sorted(port_methods - reads):
            if method not in defined:
                problems.append(f"{port}.{method} writes but {door} does not define it: add it, redacting")
            elif method not in no_text and not _calls_redaction(defined[method]):
                problems.append(f"{door}.{method} does not call redact(): every write carrying text must")
    assert not problems, "\n".join(problems)


def test_outside_the_adapters_the_store_is_written_only_through_the_door() -> None:
    writes = _port_writes()
    violations = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).as_posix()
        if relative.startswith("graphmem/adapters/") or path == DOOR:
            continue
        allowed = METADATA_WRITERS.get(relative, ())
        for cls in [None, *(n for n in nodes_of(path) if isinstance(n, ast.ClassDef))]:
            for node in nodes_of(path) if cls is None else ast.walk(cls):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                    continue
                if node.func.attr not in writes or not isinstance(node.func.value, ast.Attribute | ast.Name):
                    continue
                if node.func.attr in allowed:
                    continue
                receiver = ast.unparse(node.func.value)
                if receiver in GUARDED_RECEIVERS and cls is not None and cls.name in WRITING_CLASSES:
                    continue
                if receiver in GUARDED_RECEIVERS and cls is None:
                    continue  # seen again, with its class, in the loop above
                violations.append(f"{relative}:{node.lineno} {receiver}.{node.func.attr}(...)")
    assert not violations, "store writes that may skip redaction:\n" + "\n".join(sorted(set(violations)))


def test_the_writer_and_the_enricher_guard_what_they_are_given_first() -> None:
    writer = _methods(_classes(PACKAGE / "service" / "writer.py")["MemoryWriter"])["__init__"]
    enricher = _methods(_classes(PACKAGE / "service" / "enrichment.py")["Enricher"])["__init__"]
    assert ast.unparse(writer.body[0]) == "store = guard_store(store)"
    assert any(ast.unparse(s) == "self.graph = guard_gitlab(graph)" for s in enricher.body)


# -- the one door for writing memories ----------------------------------------------------
#
# ``service/writer.py`` (``MemoryWriter``) is the only service code that writes a memory, its
# entities or its links: redaction, hashing, ids, the write lock and the semantic index's
# bookkeeping happen there once. ``redacting.py`` is the door it writes through.

WRITER = PACKAGE / "service" / "writer.py"
WRITER_PARTS = (WRITER, PACKAGE / "service" / "writer_history.py")  # MemoryWriter and its history part
MEMORY_WRITES = frozenset(
    {
        "add_memories", "update_memory", "replace_text", "delete_memory",
        "upsert_entities", "link_about", "add_links", "remove_link", "add_next", "add_events", "set_undone",
    }
)  # fmt: skip


def memory_write_calls(path: Path) -> list[str]:
    """Calls in ``path`` of a method named like one of the store's memory writes."""
    return [
        f"{path.relative_to(PACKAGE.parent).as_posix()}:{node.lineno} {ast.unparse(node.func)}(...)"
        for node in nodes_of(path)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in MEMORY_WRITES
    ]


def test_the_memory_writes_are_the_store_ports_write_methods() -> None:
    ports = _classes(*PORTS)
    store_methods = _protocol_methods(ports, "GraphStore")
    reads = _frozenset_literal(DOOR, "STORE_READS")

    assert not MEMORY_WRITES - (store_methods - reads), (
        "MEMORY_WRITES names a method the store does not write"
    )


def test_only_the_writer_writes_memories() -> None:
    violations = [
        call
        for path in sorted((PACKAGE / "service").rglob("*.py"))
        if path not in (*WRITER_PARTS, DOOR)
        for call in memory_write_calls(path)
    ]

    assert not violations, (
        "only service/writer.py and writer_history.py (MemoryWriter) may call the store's memory writes; "
        "call the writer:\n" + "\n".join(violations)
    )


INDEX_BOOKKEEPING = frozenset({"added", "status_changed", "text_changed", "removed"})


def test_only_the_writer_keeps_the_semantic_index_in_step_with_writes() -> None:
    violations = []
    for path in sorted((PACKAGE / "service").rglob("*.py")):
        if path in (*WRITER_PARTS, PACKAGE / "service" / "semantic.py"):
            continue
        violations += [
            f"{path.relative_to(PACKAGE.parent).as_posix()}:{node.lineno} {ast.unparse(node.func)}(...)"
            for node in nodes_of(path)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in INDEX_BOOKKEEPING
            and ast.unparse(node.func.value).endswith("semantic")
        ]

    assert not violations, "the semantic index is told about writes by MemoryWriter only:\n" + "\n".join(
        violations
    )


MINTED_PREFIXES = ("File:", "Person:", "mem_")


def test_ids_and_shared_keys_are_minted_only_in_core_keys() -> None:
    violations = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "core" / "keys.py":
            continue
        for node in nodes_of(path):
            if not (isinstance(node, ast.JoinedStr) and node.values):
                continue
            first = node.values[0]
            if isinstance(first, ast.Constant) and str(first.value).startswith(MINTED_PREFIXES):
                violations.append(
                    f"{path.relative_to(PACKAGE.parent).as_posix()}:{node.lineno} {ast.unparse(node)}"
                )

    assert not violations, (
        "memory ids and File/Person keys are minted by core/keys.py (memory_id, file_key, person_key):\n"
        + "\n".join(violations)
    )


def test_the_writer_check_sees_a_write() -> None:
    module = PACKAGE / "service" / "writer.py"
    assert any("add_memories" in call for call in memory_write_calls(module))


MAX_MODULE_LINES = 600  # past this a module usually holds two concerns; split it by what each part owns


def test_no_module_is_longer_than_the_cap() -> None:
    sizes = {path: len(path.read_text("utf-8").splitlines()) for path in PACKAGE.rglob("*.py")}
    too_long = [
        f"{path.relative_to(PACKAGE.parent)}: {lines} lines"
        for path, lines in sorted(sizes.items())
        if lines > MAX_MODULE_LINES
    ]

    assert len(sizes) > 100, "the size check found too few modules to police"
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines (split them):\n" + "\n".join(too_long)
