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
functions inside classes into methods, and reads signatures, docstrings and body hashes.
Parsers and compiled queries are made once per language per ``TreeSitterParser`` (compiling the
TypeScript query alone takes ~40 ms). A ``TreeSitterParser`` is not thread-safe: use one per thread.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass, field
from importlib import resources
from typing import cast

from tree_sitter import Node, Parser, Query, QueryCursor, QueryError
from tree_sitter_language_pack import SupportedLanguage, get_language, get_parser

from graphmem.core.code import LANGUAGES, CallRef, Definition, ImportRef, InheritRef, ParsedFile
from graphmem.core.code_moves import shape_of, sketches, tokens_of
from graphmem.errors import GraphmemError, InvalidInputError

SIGNATURE_MAX_CHARS = 200
DOCSTRING_MAX_CHARS = 500
RECEIVER_MAX_CHARS = 100
BODY_HASH_BYTES = 8  # 16 hex digits: collisions only matter within one symbol's history
QUALIFIED_NAME_MAX_CHARS = 500  # longer: no symbol, nor what it holds (3,000 nested classes named 1.1 GB)

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
# Nodes that wrap a definition without being one: its comment sits above the wrapper.
_WRAPPERS = frozenset(
    {
        "decorated_definition",
        "export_statement",
        "ambient_declaration",
        "lexical_declaration",
        "variable_declaration",
        "type_declaration",
        "const_declaration",
        "template_declaration",
        "type_definition",
        "declaration",
        "property_declaration",
    }
)
# Siblings between a definition and its comment: decorators, attributes, annotations.
_SKIPPED_ABOVE = frozenset(
    {"decorator", "attribute_item", "attribute_list", "annotation", "marker_annotation", "attribute"}
)
_ROLE_PREFIXES = ("definition.", "reference.")
_BODY_TYPES = frozenset({"function_body", "class_body", "enum_class_body"})
_SEPARATORS = re.compile(r"::|\\|\.")
_SPACES = re.compile(r"\s+")
_HEADER_END = re.compile(r"\s*(?:\{|:|=>|=|;)\s*$")
_COMMENT_OPENERS = re.compile(r"^\s*(?:/\*+!?|\*+(?!/)|//[/!]?|#+)\s?")
_COMMENT_CLOSER = re.compile(r"\s*\*+/\s*$")


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

    def parse(self, source: bytes, language: str) -> ParsedFile:
        """Definitions, calls, imports and inheritance in ``source``.

        Never fails on bad code: what parses is indexed and ``error_count`` says how many
        ERROR and MISSING nodes the tree has. Raises ``InvalidInputError`` for an unknown
        language.
        """
        grammar = self._grammar(language)
        tree = grammar.parser.parse(source)
        return _Extraction(source, language).run(tree.root_node, grammar)

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


class _Extraction:
    """One file's pass over the query matches."""

    def __init__(self, source: bytes, language: str) -> None:
        self.source = source
        self.language = language
        self.defs: dict[tuple[int, int, str], _Def] = {}
        self.refs: dict[tuple[int, int, str], _Ref] = {}
        self.imports: dict[tuple[int, str], _Import] = {}

    def run(self, root: Node, grammar: _Grammar) -> ParsedFile:
        roles = grammar.roles
        for index, captures in QueryCursor(grammar.query).matches(root):
            role = roles.get(index)
            if role is None:
                role = roles[index] = next((k for k in captures if k.startswith(_ROLE_PREFIXES)), "")
            self._take(role, captures)
        refs = sorted(self.refs.values(), key=lambda r: (r.start, -r.end))
        kept = self._nest(list(self.defs.values()), refs)
        prints = self._fingerprints(kept)
        return ParsedFile(
            language=self.language,
            definitions=tuple(self._definition(group, prints) for group in _by_qualified_name(kept)),
            calls=tuple(
                CallRef(
                    r.name, r.receiver, _line(r.node), r.container.qualified_name if r.container else None
                )
                for r in refs
                if r.is_call
            ),
            imports=self._import_refs(),
            inherits=tuple(self._inherit_refs(refs)),
            error_count=_error_count(root),
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
        text = self._text(name_node)
        call = _Ref(node, node.start_byte, node.end_byte, _last_segment(text))
        call.receiver = self._receiver(receiver[0]) if receiver else _receiver_of(text)
        self.refs.setdefault((call.start, call.end, call.name), call)

    def _take_base(self, node: Node, name_node: Node, owner: list[Node] | None) -> None:
        base = _without_generics(self._one_line(name_node))
        ref = _Ref(node, node.start_byte, node.end_byte, base, is_call=False)
        ref.owner = self._text(owner[0]) if owner else None
        self.refs.setdefault((name_node.start_byte, -1, base), ref)

    def _take_definition(
        self, kind: str, node: Node, name_node: Node, captures: dict[str, list[Node]]
    ) -> None:
        if kind not in _KIND_PRIORITY:
            return
        name = self._text(name_node).strip()
        if not name:
            return
        owner = captures.get("owner")
        start, end = node.start_byte, node.end_byte
        if "scope.file" in captures:
            end = _file_scope_end(node)  # `namespace X;` scopes what follows it
        key = (start, end, name)
        found = self.defs.get(key)
        if found is not None and _KIND_PRIORITY[found.kind] <= _KIND_PRIORITY[kind]:
            return
        self.defs[key] = _Def(
            kind, name, node, start, end, name_node.end_byte, self._text(owner[0]) if owner else None
        )

    def _take_import(self, node: Node, captures: dict[str, list[Node]]) -> None:
        names = [self._text(n).strip() for n in captures.get("import.name", ())]
        if "name" in captures:
            module = self._text(captures["name"][0])
        elif "import.path" in captures:  # `a.b.C` whole: module a.b, name C
            path = _segments(self._text(captures["import.path"][0]))
            module, names = ".".join(path[:-1]), path[-1:]
        else:
            return
        module = module.strip().strip("\"'`<>").strip()
        if not module:
            return
        entry = self.imports.get((node.start_byte, module))
        if entry is None:
            entry = self.imports[(node.start_byte, module)] = _Import(_line(node), module)
        alias = captures.get("import.alias")
        if alias:
            pair = (names[0] if names else None, self._text(alias[0]).strip())
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
            while stack and stack[-1].end <= event.start:
                stack.pop()
            container = next((d for d in reversed(stack) if d.name_end <= event.start), None)
            if isinstance(event, _Ref):
                event.container = container
                continue
            local = event.kind == "constant" and container is not None and container.kind in _FUNCTION_LIKE
            if local or event.start < unnamed_end:
                continue  # a local, not a constant of the module or class; or in one too long to name
            segments = _segments(event.name)
            prefix = container.qualified_name if container else None
            if event.owner:
                owner = ".".join(_segments(_without_generics(event.owner).strip("*& ")))
                prefix = f"{prefix}.{owner}" if prefix else owner
            if event.kind == "function" and len(segments) > 1:
                # `void Service::apply() {}`: defined outside the type it belongs to
                event.kind = "method"
                prefix = ".".join([prefix, *segments[:-1]] if prefix else segments[:-1])
                segments = segments[-1:]
            if event.kind == "function" and (event.owner or (container and container.kind in _CLASS_LIKE)):
                event.kind = "method"
            event.name = segments[-1]
            event.qualified_name = ".".join([prefix, *segments] if prefix else segments)
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

    def _definition(self, group: list[_Def], prints: dict[str, tuple[str, str]]) -> Definition:
        """One symbol per qualified name: overloads and redefinitions (a property's setter) share it.

        The first one gives lines, signature and docstring; the hash covers them all, so an
        edit to any of them marks the symbol changed.
        """
        d = group[0]
        text = "\n".join(self._text(other.node) for other in group)
        shape, sketch = prints[d.qualified_name]
        return Definition(
            kind=d.kind,
            name=d.name,
            qualified_name=d.qualified_name,
            start_line=_line(d.node),
            end_line=_end_line(d.node),
            signature=self._signature(d.node),
            docstring=self._docstring(d.node),
            body_hash=body_hash(text),
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
                owner = ".".join(_segments(_without_generics(ref.owner).strip("*& ")))
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
        return self._slice(node.start_byte, node.end_byte)

    def _slice(self, start: int, end: int) -> str:
        """Source bytes as text: what is not UTF-8, and a NUL (PostgreSQL refuses one in text), as U+FFFD."""
        return self.source[start:end].decode("utf-8", "replace").replace("\x00", "\ufffd")

    def _one_line(self, node: Node) -> str:
        return " ".join(self._text(node).split())

    def _receiver(self, node: Node) -> str:
        return _bounded(self._one_line(node), RECEIVER_MAX_CHARS)

    def _signature(self, node: Node) -> str:
        body = node.child_by_field_name("body")
        if body is None:
            value = node.child_by_field_name("value")
            body = value.child_by_field_name("body") if value is not None else None
        if body is None:  # grammars without a body field (Kotlin)
            body = next((c for c in node.named_children if c.type in _BODY_TYPES), None)
        start = node.start_byte
        wrapper = node.parent
        while wrapper is not None and wrapper.type in _WRAPPERS and wrapper.named_child_count == 1:
            start = wrapper.start_byte  # `export const X`, `type X struct`: the keywords belong to the header
            wrapper = wrapper.parent
        if body is not None and body.start_byte > node.start_byte:
            header = self._slice(start, body.start_byte)
        else:
            header = self._slice(start, node.end_byte)
            header = header.split("\n", 1)[0].split("{", 1)[0]
        header = _HEADER_END.sub("", _SPACES.sub(" ", header).strip())
        return _bounded(header, SIGNATURE_MAX_CHARS)

    def _docstring(self, node: Node) -> str | None:
        if self.language == "python":
            doc = self._python_docstring(node)
            if doc:
                return doc
        return self._comment_above(node)

    def _python_docstring(self, node: Node) -> str | None:
        body = node.child_by_field_name("body")
        if body is None or body.named_child_count == 0:
            return None
        first = body.named_child(0)
        if first.type == "expression_statement" and first.named_child_count:
            first = first.named_child(0)
        if first.type != "string":
            return None
        content = "".join(self._text(c) for c in first.named_children if c.type == "string_content")
        return _clean_doc(content)

    def _comment_above(self, node: Node) -> str | None:
        anchor = node
        while True:
            above = anchor.prev_named_sibling
            while above is not None and above.type in _SKIPPED_ABOVE:
                above = above.prev_named_sibling
            if above is not None and "comment" in above.type:
                break
            parent = anchor.parent
            if above is None and parent is not None and parent.type in _WRAPPERS:
                anchor = parent
                continue
            return None
        lines: list[str] = []
        row = anchor.start_point.row
        while (
            above is not None
            and "comment" in above.type
            and above.end_point.row >= row - 1
            and self._starts_line(above)  # not the trailing comment of the statement above
        ):
            lines[:0] = self._text(above).splitlines()
            row = above.start_point.row
            above = above.prev_named_sibling
        return _clean_doc(
            "\n".join(_COMMENT_OPENERS.sub("", _COMMENT_CLOSER.sub("", line)) for line in lines)
        )

    def _starts_line(self, node: Node) -> bool:
        line_start = self.source.rfind(b"\n", 0, node.start_byte) + 1
        return not self.source[line_start : node.start_byte].strip()


def body_hash(text: str) -> str:
    """A short hash of a definition's source that whitespace, line breaks and trailing commas leave alone.

    A formatter run (re-indenting, re-wrapping, adding trailing commas) keeps the hash; so would
    an edit that only adds or removes whitespace, which in real code almost never changes meaning.
    """
    normal = "".join(text.split())
    for trailing in (",)", ",]", ",}"):
        normal = normal.replace(trailing, trailing[1])
    return hashlib.blake2b(normal.encode("utf-8"), digest_size=BODY_HASH_BYTES).hexdigest()


def _encloses(outer: Node, inner: Node) -> bool:
    """Whether ``inner`` lies inside ``outer`` and is not the same range."""
    return (
        outer.start_byte <= inner.start_byte
        and inner.end_byte <= outer.end_byte
        and (outer.start_byte, outer.end_byte) != (inner.start_byte, inner.end_byte)
    )


def _by_qualified_name(defs: list[_Def]) -> list[list[_Def]]:
    groups: dict[str, list[_Def]] = {}
    for d in defs:
        groups.setdefault(d.qualified_name, []).append(d)
    return list(groups.values())


def _error_count(root: Node) -> int:
    """ERROR and MISSING nodes, visiting only the subtrees that contain one."""
    if not root.has_error:
        return 0
    count = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            count += 1
        stack.extend(child for child in node.children if child.has_error or child.is_missing)
    return count


def _file_scope_end(node: Node) -> int:
    """Where a body-less namespace declaration's scope ends: the next one, or the end of its parent."""
    sibling = node.next_named_sibling
    while sibling is not None:
        if sibling.type == node.type:
            return sibling.start_byte
        sibling = sibling.next_named_sibling
    return node.parent.end_byte if node.parent is not None else node.end_byte


def _segments(name: str) -> list[str]:
    if "." not in name and ":" not in name and "\\" not in name:
        return [name.strip()]
    return [part for part in _SEPARATORS.split(name.strip()) if part] or [name]


def _without_generics(text: str) -> str:
    """``Base<T, List<U>>`` → ``Base`` in one pass (stripping innermost pairs took minutes on A<A<...>>)."""
    depths: list[list[str]] = [[]]  # the text outside any pair, then inside each open ``<``
    for piece in re.split(r"([<>])", text):
        if piece == "<":
            depths.append([piece])
        elif piece == ">" and len(depths) > 1:
            depths.pop()
        else:
            depths[-1].append(piece)
    return "".join(piece for depth in depths for piece in depth).strip()


def _last_segment(text: str) -> str:
    return _segments(text)[-1].strip()


def _receiver_of(text: str) -> str | None:
    """``a::b`` and ``a.b`` captured whole as a call name: the part before the last separator."""
    parts = _segments(text)
    return ".".join(parts[:-1]) if len(parts) > 1 else None


def _line(node: Node) -> int:
    return node.start_point.row + 1


def _end_line(node: Node) -> int:
    """The last line of ``node``; a node that ends with its newline (``#define``) ends on the line before."""
    end = node.end_point
    return max(end.row + 1 if end.column else end.row, node.start_point.row + 1)


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _clean_doc(text: str) -> str | None:
    lines = [line.strip() for line in text.strip().splitlines()]
    doc = "\n".join(lines).strip()
    return _bounded(doc, DOCSTRING_MAX_CHARS) if doc else None
