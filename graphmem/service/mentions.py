"""Which entities a text names: GitLab refs, files of the project, code symbols.

Every memory, query and edit is read for them (``Mentions``), and the memory is then
*about* what its text names; the writer, recall and ``enrich`` ask here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from graphmem.core.codegraph import SymbolInfo, is_example_file, is_test_file
from graphmem.core.enrichment import relative_namespace
from graphmem.core.models import Entity, EntityKind
from graphmem.core.ports import CodeGraph
from graphmem.core.projects import checkout_path
from graphmem.core.refs import (
    Ref,
    find_dotted_names,
    find_identifiers,
    find_path_candidates,
    find_refs,
    is_plain_word,
    parse_ref,
)
from graphmem.errors import InvalidInputError
from graphmem.service.code_context import find_symbol, symbol_candidates, symbol_entity
from graphmem.service.inputs import file_entity

# Symbol names looked up per text (each is one query).
MAX_SYMBOL_LOOKUPS = 6
# Bare words looked up per text, all in one query (``CodeGraph.unique_symbols``).
MAX_IDENTIFIER_LOOKUPS = 32
# Dotted names written as plain text (``res.sendFile``) looked up per text: their last parts in
# the bare words' query; of those it leaves (a name several symbols share: ``res.get``,
# ``req.get``), this many more one query each.
MAX_DOTTED_LOOKUPS = 32
MAX_DOTTED_SINGLE_LOOKUPS = 4
# Who ``self.flush`` is depends on where it is written: any one member of the project so named.
RECEIVERS = frozenset({"self", "this", "cls"})
# Longest text read as one GitLab ref (a URL with a long project path fits).
MAX_REF_CHARS = 2_000
# Refs one enrich call may name.
MAX_ENRICH_REFS = 1_000

Namespace = Callable[[str], str | None]


def ref_entity(ref: Ref, project: str | None, namespace: Namespace) -> Entity:
    """The entity ``ref`` names, a relative ref (``!12``) resolved in ``project``'s GitLab
    namespace (else its path)."""
    resolved = (namespace(project) if project else None) or project
    return Entity(ref.key(relative_namespace(ref.kind, resolved)), ref.kind, ref.name, project=project)


def parse_ref_entity(token: str, project: str | None, namespace: Namespace) -> Entity:
    """The entity a ref a caller typed names; a clear error when it is not a GitLab ref."""
    ref = parse_ref(token) if isinstance(token, str) and len(token) <= MAX_REF_CHARS else None
    if ref is None:
        raise InvalidInputError(
            f"{str(token)[:80]!r} is not a GitLab ref. Use !12 (merge request), #4 (issue), &7 (epic), "
            "group/project!12, group/project#4, group&7, or a GitLab URL of one."
        )
    return ref_entity(ref, project, namespace)


def parse_ref_entities(refs: Sequence[str], project: str | None, namespace: Namespace) -> list[Entity]:
    """The entities of the refs a caller typed (``enrich``): a list of at most ``MAX_ENRICH_REFS``."""
    if isinstance(refs, str) or len(refs) > MAX_ENRICH_REFS:
        raise InvalidInputError(f"Give a list of at most {MAX_ENRICH_REFS} refs.")
    return [parse_ref_entity(token, project, namespace) for token in refs]


def names_code(named: Sequence[Entity], guessed: frozenset[str]) -> bool:
    """Whether what a text names (``Mentions.named_in``) holds a file or a symbol of its project,
    not only a plain word that happens to be a symbol's name: a preference about them is about
    the project."""
    return any(e.kind in (EntityKind.FILE, EntityKind.SYMBOL) and e.key not in guessed for e in named)


class Mentions:
    """Reads the entities a text names, in the project's GitLab namespace and code graph."""

    def __init__(
        self,
        code: CodeGraph | None,
        namespace: Namespace,
        checkout: Callable[[str], Path | None] = checkout_path,
    ) -> None:
        self.code = code
        self.namespace = namespace
        self.checkout = checkout  # where a project is checked out here (``ProjectRoots.checkout``)

    def refs_in(self, text: str, project: str | None) -> list[Entity]:
        """The GitLab refs a text names (``!12``, ``#45``, ``group/proj&3``, URLs) as entities."""
        return [ref_entity(ref, project, self.namespace) for ref in find_refs(text)]

    def entities_in(self, text: str, project: str | None) -> list[Entity]:
        """Entities a text names (``named_in``)."""
        return self.named_in(text, project)[0]

    def named_in(self, text: str, project: str | None) -> tuple[list[Entity], frozenset[str]]:
        """Entities a text names: GitLab refs, files that exist in ``project``, and its
        code symbols when it has been bootstrapped: written as code (`RefundService.apply`,
        ``apply()``), as a dotted name that is a live symbol's qualified name or the end of one
        (``res.sendFile``, ``self.flush``; see ``core.refs.find_dotted_names``), or, in a text
        that writes no code as code, as a bare word that exactly one live symbol of the project
        is named (``refund_all``, ``cancel``; see ``core.refs.find_identifiers``); and the keys
        of those only guessed from a plain word (``cancel``: prose may use it as a word, where
        ``refund_all`` is written as code)."""
        found = self.refs_in(text, project)
        guessed: set[str] = set()
        if project:
            root = self.checkout(project)  # None: not checked out here, no file to look for
            candidates = find_path_candidates(text) if root is not None else []
            for entity in (file_entity(root, c, project) for c in candidates if root is not None):
                if entity is not None and entity.key not in {e.key for e in found}:
                    found.append(entity)
            if self.code is not None:
                explicit = symbol_candidates(text)[:MAX_SYMBOL_LOOKUPS]
                for name in explicit:
                    symbol, _ = find_symbol(self.code, project, name)
                    if symbol is not None and symbol.key not in {e.key for e in found}:
                        found.append(symbol_entity(symbol, project))
                files = {e.name for e in found if e.kind is EntityKind.FILE}  # index.js: the file
                dotted = [d for d in find_dotted_names(text) if d not in explicit and d not in files]
                dotted = dotted[:MAX_DOTTED_LOOKUPS]
                # A text that writes code as code (`x`, x(), Class.x) marks all of it: its bare
                # words are prose (and linking them lowered blame recall on click).
                bare = [] if explicit else find_identifiers(text)[:MAX_IDENTIFIER_LOOKUPS]
                ends = [d.rsplit(".", 1)[1] for d in dotted]
                known = self.code.unique_symbols(project, [*bare, *ends]) if bare or ends else {}
                named = self._dotted(project, dotted, known)
                for symbol in named:
                    if symbol.key not in {e.key for e in found}:
                        found.append(symbol_entity(symbol, project))
                for name in [] if named else bare:  # res.sendFile written so is code written as code
                    symbol = known.get(name)
                    if symbol is None or symbol.key in {e.key for e in found}:
                        continue
                    if is_plain_word(name):
                        if is_test_file(symbol.path) or is_example_file(symbol.path):
                            # prose's "querystring" is no test's `app.request.querystring`, and
                            # "never ship on Friday" no example's `ship`: neither is the code
                            continue
                        guessed.add(symbol.key)
                    found.append(symbol_entity(symbol, project))
        return found, frozenset(guessed)

    def _dotted(
        self, project: str, names: Sequence[str], known: Mapping[str, SymbolInfo]
    ) -> list[SymbolInfo]:
        """The live symbols the dotted ``names`` are (``res.sendFile``: the one whose qualified name
        is it or ends with it), from ``known`` (simple name -> the one symbol so named), else, for
        the first few, one query each (``res.get``: ``get`` names several). Never a guess: a name
        the code graph does not have (``e.g``, ``index.js``) or has several of names nothing."""
        assert self.code is not None
        found: list[SymbolInfo] = []
        lookups = MAX_DOTTED_SINGLE_LOOKUPS
        for name in names:
            receiver, _, rest = name.partition(".")
            member = receiver in RECEIVERS  # self.flush: a member called flush
            wanted = rest if member else name
            symbol = known.get(name.rsplit(".", 1)[1])
            if symbol is None and not member and lookups > 0:
                lookups -= 1
                symbol, _ = find_symbol(self.code, project, name)
            if symbol is not None and symbol.deleted_at is None and _is_named(symbol, wanted, member=member):
                found.append(symbol)
        return found


def _is_named(symbol: SymbolInfo, name: str, *, member: bool) -> bool:
    """Whether ``name`` (``res.sendFile``; a member's, ``flush``) is ``symbol``'s qualified name
    or the end of it."""
    qualified = symbol.qualified_name
    return qualified.endswith(f".{name}") or (qualified == name and not member)
