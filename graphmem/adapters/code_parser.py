"""Source code → definitions, calls, imports and inheritance, with tree-sitter.

Grammars come from tree-sitter-language-pack 0.13.x, bundled in its wheel (1.x downloads
them at run time and fails offline). What to extract is data, not code: one tag query per
language in the top-level ``queries/`` folder, shipped in the package as
``graphmem/queries/<language>.scm``. Each pattern has one role capture, as in tree-sitter's
tags convention, with ``@name``:

    @definition.<kind>   kind: function method class interface type constant module
    @reference.call      @receiver: the object before the dot, when there is one
    @reference.class     a base class, interface, trait or mixin of the enclosing type
    @reference.import    @name is the module; @import.name and @import.alias optional,
                         or @import.path for a whole ``a.b.C`` (module a.b, name C)

and two additions: @owner, the type a definition or an inheritance belongs to when it is
not written inside it (Go receivers, Rust ``impl`` blocks, Kotlin extension functions), and
@scope.file on a body-less ``namespace X;`` that scopes the rest of the file. Captures
starting with ``_`` only feed predicates.

This module nests definitions by their source ranges into qualified names, turns
functions inside classes into methods, and hashes bodies; ``code_names.py`` reads names,
``code_headers.py`` signatures and docstrings. Parsers and compiled queries are made once per
language per ``TreeSitterParser`` (compiling the TypeScript query alone takes ~40 ms). A
``TreeSitterParser`` is not thread-safe: use one per thread.

A file is input nobody vetted: a parse takes time and memory in proportion to the file (its
walks up and across the tree go through ``tree_lineage.py``), and can be given a time budget
(``parse(timeout_s=...)``), which ends tree-sitter's parse and this module's walk alike.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from importlib import resources
from typing import cast

from tree_sitter import Node, Parser, Point, Query, QueryCursor, QueryError
from tree_sitter_language_pack import SupportedLanguage, get_language, get_parser

from graphmem.adapters.code_headers import Headers, bounded, text_of
from graphmem.adapters.code_names import identifier, last_segment, receiver_of, segments, without_generics
from graphmem.adapters.tree_lineage import Lineage
from graphmem.core.code import LANGUAGES, CallRef, Definition, ImportRef, InheritRef, ParsedFile
from graphmem.core.code_moves import shape_of, sketches, tokens_of
from graphmem.errors import GraphmemError, InvalidInputError

RECEIVER_MAX_CHARS = 100
# A receiver is read from its first bytes only: in a chain a.f().g()...z() each call's receiver
# holds the calls before it, and reading each whole read n²/2 bytes for n calls.
RECEIVER_READ_BYTES = 1024
BODY_HASH_BYTES = 8  # 16 hex digits: collisions only matter within one symbol's history
QUALIFIED_NAME_MAX_CHARS = 500  # longer: no symbol, nor what it holds (3,000 nested classes named 1.1 GB)
IMPORT_MAX_CHARS = 500  # an imported module or name longer than this is none (a store keys modules by name)
# Tree-sitter's query engine keeps a partial match open for each call of a chain until its
# receiver is read: a chain of n calls cost n² (10,000 calls, 40 KB: 35 s). At most this many
# are open at once: a chain of up to about half as many calls is read whole, of a longer one
# some of its calls. Real code stays far below it (none of 28,000 files needed 64).
QUERY_MATCHES_OPEN_MAX = 256
# How deep in the tree a pattern may start; below it nothing is read. The query engine counts
# depth on 16 bits: past 65,535 it returned wrong matches and took minutes (a chain of 40,000
# calls is 80,000 deep). Real code is some tens deep; a definition nested past some hundreds
# has a name too long to keep (QUALIFIED_NAME_MAX_CHARS).
QUERY_DEPTH_MAX = 4096
# Work done between two looks at the clock when a parse has a budget.
_CLOCK_EVERY = 256
# The source is handed to tree-sitter this many bytes at a time when a parse has a budget.
_READ_BYTES = 4096


class ParseTimeoutError(GraphmemError):
    """A file's parse ran past the time it was given (``TreeSitterParser.parse(timeout_s=...)``)."""


# When the same node is captured as two kinds, the more specific one wins.
_KIND_PRIORITY = {
    "method": 0,
    "interface": 1,
    "type": 2,
    "class": 3,
    "module": 4,
    "function": 5,
    "constant": 6,
}
_CLASS_LIKE = frozenset({"class", "interface", "type"})
_FUNCTION_LIKE = frozenset({"function", "method"})
_ROLE_PREFIXES = ("definition.", "reference.")
_ASCII_SPACES = bytes(c for c in range(128) if chr(c).isspace())  # what str.split() splits at
_NUL_AS_TEXT = "\ufffd".encode()  # text_of reads a NUL so


def query_text(language: str) -> str:
    """The tag query of ``language`` as shipped in the package (``queries/<language>.scm``)."""
    if language not in LANGUAGES:
        raise InvalidInputError(
            f"No code parser for language {language!r}: use one of {', '.join(LANGUAGES)}."
        )
    resource = resources.files("graphmem") / "queries" / f"{language}.scm"
    try:
        return resource.read_text(encoding="utf-8")
    except OSError as exc:
        raise GraphmemError(
            f"The tag query for {language} is missing from the graphmem package ({exc}): reinstall graphmem."
        ) from exc


@dataclass(slots=True)
class _Grammar:
    parser: Parser
    query: Query
    # pattern index → its role capture ("definition.method", "reference.call", ...), learnt from its matches
    roles: dict[int, str] = field(default_factory=dict)


@dataclass(slots=True)
class _Def:
    kind: str
    name: str
    node: Node
    start: int
    end: int
    name_end: int  # nested definitions start after the name (a C typedef's struct does not)
    owner: str | None
    qualified_name: str = ""
    parent: str | None = None
    # The definitions of the same node under other names (`a.x = a.y = function () {}`): what
    # it calls, each of them calls.
    twins: list[_Def] = field(default_factory=list)


@dataclass(slots=True)
class _Ref:
    node: Node
    start: int
    end: int
    name: str
    receiver: str | None = None
    owner: str | None = None
    is_call: bool = True
    container: _Def | None = None


@dataclass(slots=True)
class _Import:
    line: int
    module: str
    names: list[str] = field(default_factory=list)
    aliased: list[tuple[str | None, str]] = field(default_factory=list)  # (name, alias)


class TreeSitterParser:
    """Parses source files of the supported languages into ``ParsedFile`` data."""

    def __init__(self) -> None:
        self._grammars: dict[str, _Grammar] = {}

    def parse(self, source: bytes, language: str, *, timeout_s: float | None = None) -> ParsedFile:
        """Definitions, calls, imports and inheritance in ``source``.

        Never fails on bad code: what parses is indexed and ``error_count`` says how many
        ERROR and MISSING nodes the tree has. Raises ``InvalidInputError`` for an unknown
        language, and ``ParseTimeoutError`` when the parse takes more than ``timeout_s``
        (tree-sitter's query, bounded by ``QUERY_MATCHES_OPEN_MAX`` and ``QUERY_DEPTH_MAX``,
        is the one step that cannot be stopped: it is let finish).
        """
        grammar = self._grammar(language)
        clock = _Clock(timeout_s)
        if timeout_s is None:
            tree = grammar.parser.parse(source)
        else:
            # Tree-sitter stops a parse only when it reads the source through a callback (its
            # queries then read node texts through it too: in pieces, so that none copies much).
            def read(at: int, _point: Point) -> bytes:
                return source[at : at + _READ_BYTES]

            try:
                tree = grammar.parser.parse(read, progress_callback=clock.out)
            except ValueError:  # stopped
                grammar.parser.reset()  # else the next parse would go on with this one
                clock.check()
                raise
        return _Extraction(source, language, clock).run(tree.root_node, grammar)

    def _grammar(self, language: str) -> _Grammar:
        grammar = self._grammars.get(language)
        if grammar is None:
            text = query_text(language)
            name = cast(SupportedLanguage, language)
            try:
                grammar = _Grammar(get_parser(name), Query(get_language(name), text))
            except QueryError as exc:
                raise GraphmemError(f"The tag query for {language} does not compile: {exc}") from exc
            except LookupError as exc:
                raise GraphmemError(
                    f"The {language} grammar cannot be loaded ({exc}): "
                    "reinstall tree-sitter-language-pack>=0.13,<1."
                ) from exc
            self._grammars[language] = grammar
        return grammar


class _Clock:
    """A parse's time budget: :meth:`out` tells tree-sitter to stop, :meth:`tick` and
    :meth:`check` stop this module's walk with ``ParseTimeoutError``."""

    def __init__(self, timeout_s: float | None) -> None:
        self.timeout_s = timeout_s
        self.deadline = math.inf if timeout_s is None else time.monotonic() + timeout_s
        self._ticks = 0

    def out(self, _offset: int, _has_error: bool) -> bool:
        # Must never raise: tree-sitter's binding reads what this returns without checking.
        return time.monotonic() > self.deadline

    def check(self) -> None:
        if time.monotonic() > self.deadline:
            raise ParseTimeoutError(f"The parse took more than the {self.timeout_s:.3g} s it was given.")

    def tick(self) -> None:
        """:meth:`check` once every ``_CLOCK_EVERY`` calls: one per step of a walk."""
        self._ticks += 1
        if self._ticks % _CLOCK_EVERY == 0:
            self.check()


class _Extraction:
    """One file's pass over the query matches."""

    def __init__(self, source: bytes, language: str, clock: _Clock) -> None:
        self.source = source
        self.language = language
        self.clock = clock
        self.defs: dict[tuple[int, int, str, int], _Def] = {}
        self.refs: dict[tuple[int, int, str], _Ref] = {}
        self.imports: dict[tuple[int, str], _Import] = {}
        self.scoped: list[_Def] = []  # body-less namespaces, which scope what follows them

    def run(self, root: Node, grammar: _Grammar) -> ParsedFile:
        roles = grammar.roles
        cursor = QueryCursor(grammar.query, match_limit=QUERY_MATCHES_OPEN_MAX)
        cursor.set_max_start_depth(QUERY_DEPTH_MAX)
        self.clock.check()
        for index, captures in cursor.matches(root):
            self.clock.tick()
            role = roles.get(index)
            if role is None:
                role = roles[index] = next((k for k in captures if k.startswith(_ROLE_PREFIXES)), "")
            self._take(role, captures)
        self._scope_to_file_end(root)
        refs = sorted(self.refs.values(), key=lambda r: (r.start, -r.end))
        kept = self._nest(list(self.defs.values()), refs)
        prints = self._fingerprints(kept)
        groups = _by_qualified_name(kept)
        headers = self._headers(root, groups)
        return ParsedFile(
            language=self.language,
            definitions=tuple(self._definition(group, prints, headers) for group in groups),
            calls=tuple(
                CallRef(r.name, r.receiver, _line(r.node), caller)
                for r in refs
                if r.is_call
                for caller in _callers(r.container)
            ),
            imports=self._import_refs(),
            inherits=tuple(self._inherit_refs(refs)),
            error_count=self._error_count(root),
        )

    # -- matches -------------------------------------------------------------------

    def _take(self, role: str, captures: dict[str, list[Node]]) -> None:
        names = captures.get("name")
        if role == "reference.call":
            if names:
                self._take_call(captures[role][0], names[0], captures.get("receiver"))
        elif role == "reference.import":
            self._take_import(captures[role][0], captures)
        elif role == "reference.class":
            if names:
                self._take_base(captures[role][0], names[0], captures.get("owner"))
        elif role.startswith("definition.") and names:
            self._take_definition(role[len("definition.") :], captures[role][0], names[0], captures)

    def _take_call(self, node: Node, name_node: Node, receiver: list[Node] | None) -> None:
        text = self._name(name_node)
        call = _Ref(node, node.start_byte, node.end_byte, last_segment(text, self.language))
        if receiver:
            call.receiver = self._receiver(receiver[0])
        else:
            whole = receiver_of(text, self.language)
            call.receiver = bounded(whole, RECEIVER_MAX_CHARS) if whole else None
        self.refs.setdefault((call.start, call.end, call.name), call)

    def _take_base(self, node: Node, name_node: Node, owner: list[Node] | None) -> None:
        base = without_generics(" ".join(self._name(name_node).split()))
        ref = _Ref(node, node.start_byte, node.end_byte, base, is_call=False)
        ref.owner = self._name(owner[0]) if owner else None
        self.refs.setdefault((name_node.start_byte, -1, base), ref)

    def _take_definition(
        self, kind: str, node: Node, name_node: Node, captures: dict[str, list[Node]]
    ) -> None:
        if kind not in _KIND_PRIORITY:
            return
        name = self._name(name_node).strip()
        if not name:
            return
        owners = captures.get("owner")
        owner = self._name(owners[0]) if owners else None
        start, end = node.start_byte, node.end_byte
        key = (start, end, name, name_node.start_byte)  # `a.x = b.x = function () {}`: two names
        found = self.defs.get(key)
        if found is not None and _KIND_PRIORITY[found.kind] <= _KIND_PRIORITY[kind]:
            return
        self.defs[key] = _Def(kind, name, node, start, end, name_node.end_byte, owner)
        if "scope.file" in captures:
            self.scoped.append(self.defs[key])

    def _scope_to_file_end(self, root: Node) -> None:
        """A body-less ``namespace X;`` scopes what follows it: up to the next one, or the end
        of what holds it."""
        lineage = Lineage(root)
        for d in sorted(self.scoped, key=lambda d: (d.start, -d.end)):
            self.clock.tick()
            path = lineage.visit(d.node)
            if path is None or len(path) < 2:
                continue
            holder = path[-2]
            following = next((s for s in holder.after() if s.type == d.node.type), None)
            d.end = following.start_byte if following is not None else holder.node.end_byte

    def _take_import(self, node: Node, captures: dict[str, list[Node]]) -> None:
        names = [self._name(n).strip() for n in captures.get("import.name", ())]
        if "name" in captures:
            module = self._text(captures["name"][0])
        elif "import.path" in captures:  # `a.b.C` whole: module a.b, name C
            path = segments(self._name(captures["import.path"][0]), self.language)
            module, names = ".".join(path[:-1]), path[-1:]
        else:
            return
        module = module.strip().strip("\"'`<>").strip()
        alias = captures.get("import.alias")
        local = self._name(alias[0]).strip() if alias else None
        if not module or max(len(text) for text in [module, local or "", *names]) > IMPORT_MAX_CHARS:
            return  # none: an empty module, or a name no store keys
        entry = self.imports.get((node.start_byte, module))
        if entry is None:
            entry = self.imports[(node.start_byte, module)] = _Import(_line(node), module)
        if local is not None:
            pair = (names[0] if names else None, local)
            if pair not in entry.aliased:
                entry.aliased.append(pair)
        else:
            entry.names.extend(n for n in names if n and n not in entry.names)

    # -- nesting -------------------------------------------------------------------

    def _nest(self, defs: list[_Def], refs: list[_Ref]) -> list[_Def]:
        """Qualified names and parents from source ranges; the enclosing definition of each reference."""
        events: list[_Def | _Ref] = [*defs, *refs]
        events.sort(key=lambda e: (e.start, -e.end, isinstance(e, _Ref)))
        stack: list[_Def] = []
        kept: list[_Def] = []
        unnamed_end = -1  # the end of the last definition too long to name: what it holds is left out
        for event in events:
            self.clock.tick()
            while stack and stack[-1].end <= event.start:
                stack.pop()
            container = next((d for d in reversed(stack) if d.name_end <= event.start), None)
            if isinstance(event, _Def) and container is not None and _same_range(container, event):
                # the same node under another name (`a.x = a.y = function () {}`): beside it, not in it
                event.twins = [d for d in stack if _same_range(d, event)]
                outer = [d for d in stack if d.name_end <= event.start and not _same_range(d, event)]
                container = outer[-1] if outer else None
            if isinstance(event, _Ref):
                event.container = container
                continue
            local = event.kind == "constant" and container is not None and container.kind in _FUNCTION_LIKE
            if local or event.start < unnamed_end:
                continue  # a local, not a constant of the module or class; or in one too long to name
            parts = segments(event.name, self.language)
            prefix = container.qualified_name if container else None
            if event.owner:
                owner = ".".join(segments(without_generics(event.owner).strip("*& "), self.language))
                prefix = f"{prefix}.{owner}" if prefix else owner
            if event.kind == "function" and len(parts) > 1:
                # `void Service::apply() {}`: defined outside the type it belongs to
                event.kind = "method"
                prefix = ".".join([prefix, *parts[:-1]] if prefix else parts[:-1])
                parts = parts[-1:]
            if event.kind == "function" and (event.owner or (container and container.kind in _CLASS_LIKE)):
                event.kind = "method"
            event.name = parts[-1]
            event.qualified_name = ".".join([prefix, *parts] if prefix else parts)
            event.parent = prefix
            if len(event.qualified_name) > QUALIFIED_NAME_MAX_CHARS:
                unnamed_end = event.end
                continue
            stack.append(event)
            kept.append(event)
        return kept

    # -- results -------------------------------------------------------------------

    def _fingerprints(self, kept: list[_Def]) -> dict[str, tuple[str, str]]:
        """Qualified name -> the fingerprint (``core.code_moves``) of its own text, each
        definition nested in it replaced by that one's shape: every byte is read once, and a
        class is the same but for its name when its own lines and its members' shapes are."""
        nested: dict[int, list[_Def]] = defaultdict(list)  # id(definition) -> its direct members
        stack: list[_Def] = []
        for d in sorted(kept, key=lambda d: (d.node.start_byte, -d.node.end_byte)):
            self.clock.tick()
            while stack and stack[-1].node.end_byte <= d.node.start_byte:
                stack.pop()
            outer = next((o for o in reversed(stack) if _encloses(o.node, d.node)), None)
            if outer is not None:
                nested[id(outer)].append(d)
            stack.append(d)
        shapes: dict[int, str] = {}
        order: list[tuple[str, str, list[str]]] = []  # (qualified name, shape, tokens)
        groups = _by_qualified_name(kept)  # the innermost first: a member's shape is ready
        for group in sorted(groups, key=lambda g: max(d.node.end_byte - d.node.start_byte for d in g)):
            self.clock.tick()
            text = "\n".join(self._own_text(d, nested[id(d)], shapes) for d in group)
            tokens = tokens_of(text, group[0].name)
            shape = shape_of(tokens)
            shapes.update((id(d), shape) for d in group)
            order.append((group[0].qualified_name, shape, tokens))
        drawn = sketches([tokens for _, _, tokens in order])  # the whole file's at once
        return {name: (shape, sketch) for (name, shape, _), sketch in zip(order, drawn, strict=True)}

    def _own_text(self, d: _Def, members: list[_Def], shapes: dict[int, str]) -> str:
        at, end = d.node.start_byte, d.node.end_byte
        parts: list[str] = []
        for member in members:  # in source order
            shape = shapes.get(id(member))
            if shape is None or member.node.start_byte < at:
                continue  # overlapping: its text stays
            parts += [self.source[at : member.node.start_byte].decode("utf-8", "replace"), f" {shape} "]
            at = member.node.end_byte
        parts.append(self.source[at:end].decode("utf-8", "replace"))
        return "".join(parts)

    def _headers(self, root: Node, groups: list[list[_Def]]) -> dict[str, tuple[str, str | None]]:
        """Qualified name -> the signature and docstring of the first definition of that name,
        read walking the tree once in source order (``tree_lineage``)."""
        reader, lineage = Headers(self.source, self.language), Lineage(root)
        found: dict[str, tuple[str, str | None]] = {}
        for d in sorted((group[0] for group in groups), key=lambda d: (d.node.start_byte, -d.node.end_byte)):
            self.clock.tick()
            path = lineage.visit(d.node)
            if path is not None:
                found[d.qualified_name] = (reader.signature(path), reader.docstring(path))
        return found

    def _definition(
        self,
        group: list[_Def],
        prints: dict[str, tuple[str, str]],
        headers: dict[str, tuple[str, str | None]],
    ) -> Definition:
        """One symbol per qualified name: overloads and redefinitions (a property's setter) share it.

        The first one gives lines, signature and docstring; the hash covers them all, so an
        edit to any of them marks the symbol changed.
        """
        self.clock.tick()
        d = group[0]
        raw = b"\n".join(self.source[other.node.start_byte : other.node.end_byte] for other in group)
        shape, sketch = prints[d.qualified_name]
        signature, docstring = headers.get(d.qualified_name, ("", None))
        return Definition(
            kind=d.kind,
            name=d.name,
            qualified_name=d.qualified_name,
            start_line=_line(d.node),
            end_line=_end_line(d.node),
            signature=signature,
            docstring=docstring,
            body_hash=_ascii_body_hash(raw) if raw.isascii() else body_hash(text_of(raw, 0, len(raw))),
            parent=d.parent,
            shape=shape,
            sketch=sketch,
        )

    def _import_refs(self) -> tuple[ImportRef, ...]:
        found: list[ImportRef] = []
        for entry in sorted(self.imports.values(), key=lambda e: e.line):
            if entry.names or not entry.aliased:
                found.append(ImportRef(entry.module, tuple(entry.names), None, entry.line))
            for name, alias in entry.aliased:
                found.append(ImportRef(entry.module, (name,) if name else (), alias, entry.line))
        return tuple(found)

    def _inherit_refs(self, refs: list[_Ref]) -> list[InheritRef]:
        found: list[InheritRef] = []
        for ref in refs:
            if ref.is_call:
                continue
            if ref.owner:
                prefix = ref.container.qualified_name if ref.container else None
                owner = ".".join(segments(without_generics(ref.owner).strip("*& "), self.language))
                child = f"{prefix}.{owner}" if prefix else owner
            elif ref.container is not None:
                child = ref.container.qualified_name
            else:
                continue
            if ref.name and ref.name != child:
                found.append(InheritRef(child, ref.name, _line(ref.node)))
        return found

    # -- text ----------------------------------------------------------------------

    def _text(self, node: Node) -> str:
        return text_of(self.source, node.start_byte, node.end_byte)

    def _name(self, node: Node) -> str:
        """An identifier's text, its escapes decoded (``code_names.identifier``)."""
        return identifier(self._text(node), self.language)

    def _receiver(self, node: Node) -> str:
        end = min(node.end_byte, node.start_byte + RECEIVER_READ_BYTES)
        text = text_of(self.source, node.start_byte, end)
        return bounded(" ".join(text.split()), RECEIVER_MAX_CHARS)

    def _error_count(self, root: Node) -> int:
        """ERROR and MISSING nodes, visiting only the subtrees that contain one."""
        if not root.has_error:
            return 0
        count = 0
        stack = [root]
        while stack:
            self.clock.tick()
            node = stack.pop()
            if node.is_error or node.is_missing:
                count += 1
            stack.extend(child for child in node.children if child.has_error or child.is_missing)
        return count


def body_hash(text: str) -> str:
    """A short hash of a definition's source that whitespace, line breaks and trailing commas leave alone.

    A formatter run (re-indenting, re-wrapping, adding trailing commas) keeps the hash; so would
    an edit that only adds or removes whitespace, which in real code almost never changes meaning.
    """
    normal = "".join(text.split())
    for trailing in (",)", ",]", ",}"):
        normal = normal.replace(trailing, trailing[1])
    return hashlib.blake2b(normal.encode("utf-8"), digest_size=BODY_HASH_BYTES).hexdigest()


def _ascii_body_hash(raw: bytes) -> str:
    """``body_hash`` of ASCII source, the same, on its bytes: a tenth of the time, which counts
    where definitions nest (each one's text holds its members': 250 deep, a megabyte took 21 s)."""
    normal = raw.translate(None, _ASCII_SPACES).replace(b"\x00", _NUL_AS_TEXT)
    for trailing in (b",)", b",]", b",}"):
        normal = normal.replace(trailing, trailing[1:])
    return hashlib.blake2b(normal, digest_size=BODY_HASH_BYTES).hexdigest()


def _encloses(outer: Node, inner: Node) -> bool:
    """Whether ``inner`` lies inside ``outer`` and is not the same range."""
    return (
        outer.start_byte <= inner.start_byte
        and inner.end_byte <= outer.end_byte
        and (outer.start_byte, outer.end_byte) != (inner.start_byte, inner.end_byte)
    )


def _same_range(one: _Def, other: _Def) -> bool:
    return (one.start, one.end) == (other.start, other.end)


def _callers(container: _Def | None) -> list[str | None]:
    """The qualified names a call inside ``container`` is made from: its own and its twins'."""
    if container is None:
        return [None]
    return [container.qualified_name, *(twin.qualified_name for twin in container.twins)]


def _by_qualified_name(defs: list[_Def]) -> list[list[_Def]]:
    groups: dict[str, list[_Def]] = {}
    for d in defs:
        groups.setdefault(d.qualified_name, []).append(d)
    return list(groups.values())


def _line(node: Node) -> int:
    return node.start_point.row + 1


def _end_line(node: Node) -> int:
    """The last line of ``node``; a node that ends with its newline (``#define``) ends on the line before."""
    end = node.end_point
    return max(end.row + 1 if end.column else end.row, node.start_point.row + 1)
