"""get_context: what is known about an MR, issue, epic, file or free-text subject; and
boot_context: what an agent should know when a session starts."""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from graphmem.core.bundle import ContextBundle, build_bundle, scraped
from graphmem.core.codegraph import SymbolInfo
from graphmem.core.enrichment import parse_key
from graphmem.core.keys import file_key
from graphmem.core.models import GITLAB_KINDS, Category, Entity, EntityKind, Hit, Status
from graphmem.core.ports import Visibility
from graphmem.core.provenance import CONVENTIONS, is_convention
from graphmem.core.refs import find_path_candidates, parse_ref
from graphmem.core.skipped_files import SKIPPED_KEY, skipped_note
from graphmem.core.text import MAX_TEXT_CHARS, ensure_utf8, words
from graphmem.errors import InvalidInputError
from graphmem.service.code_context import file_sections, find_symbol, symbol_entity, symbol_sections
from graphmem.service.enrichment import Enricher
from graphmem.service.gitlab_context import changed_by, pending_note, ref_sections
from graphmem.service.inputs import file_entity
from graphmem.service.line_context import (
    LineTarget,
    count_lines,
    parse_line_target,
    past_end_section,
    range_hits,
    range_section,
)
from graphmem.service.linked_memories import ranked, read_linked
from graphmem.service.mentions import ref_entity
from graphmem.service.recall import _visible
from graphmem.service.results import RecallResult
from graphmem.service.staleness import Staleness
from graphmem.service.stores import Stores

# Memories considered before the budget cuts: direct ones, then recalled ones.
CONTEXT_CANDIDATES = 40
# The fewest tokens a memory's line in a bundle costs (its text, where it came from, its age and
# its 20-character id): of the memories linked to a target, those past what the budget holds at
# this cost are only counted.
MIN_MEMORY_LINE_TOKENS = 10
# What a bundle says while recall is not semantic yet (a daemon loading its model, or embedding a
# backlog): recall's ``semantic_ready: false``.
NOT_EMBEDDED_NOTE = (
    "Search by meaning is not ready yet (memories still being embedded, or the model loading): "
    "related memories are found by their words, entities and the graph for now."
)
# A file's name without its extension must be this long to count as naming it (``io``, ``db``
# are words of too many texts).
MIN_STEM_CHARS = 4
# Directives and preferences read to find the user's own among an agent's and a repository's.
CONVENTIONS_FETCH = 500
# boot_context, in order: (categories, statuses, how many).
BOOT_SECTIONS: tuple[tuple[tuple[Category, ...], tuple[Status, ...], int], ...] = (
    ((Category.DIRECTIVE, Category.PREFERENCE), (Status.ACTIVE,), 30),
    ((Category.BLOCKER,), (Status.ACTIVE,), 20),
    ((Category.DECISION,), (Status.ACTIVE,), 15),
    ((Category.PROCEDURE,), (Status.ACTIVE,), 10),
)

# Files of a directory named as a target that its note suggests instead.
DIRECTORY_FILES_NAMED = 5

Recall = Callable[..., RecallResult]
Checkout = Callable[[str], Path | None]  # where a project is checked out here: ProjectNames.checkout


class ContextBuilder:
    """Resolves a target, gathers its memories and entities, and fits them to a budget.
    ``get_context`` and ``boot_context`` are documented where ``graphmem.api.Memory`` declares them."""

    def __init__(
        self,
        stores: Stores,
        recall: Recall,
        checkout: Checkout,
        staleness: Staleness,
        enricher: Enricher | None = None,
        *,
        max_tokens: int = 1500,
    ) -> None:
        self._stores = stores
        self._recall = recall  # unmarked: the hits are marked with this bundle's own, at once
        self._max_tokens = max_tokens  # a bundle's budget when a call gives none: [recall] context_max_tokens
        self._checkout = checkout
        self._staleness = staleness  # what changed in the code since a memory was written
        self._enricher = enricher  # GitLab's MRs, issues and epics, fetched on demand

    def named(self, target: str, project: str | None) -> tuple[Entity | None, list[str]]:
        """What ``target`` names, read as ``get_context`` reads it (checked, and lines of a file,
        ``src/x.py:40-52``, naming the file): see ``resolve``. The page's graph asks here, so that
        a target names the same thing in the graph as in a bundle (``graphmem context``)."""
        target = checked_target(target)
        lines = parse_line_target(target)
        return self.resolve(lines.path if lines is not None else target, project)

    def resolve(self, target: str, project: str | None) -> tuple[Entity | None, list[str]]:
        """The entity ``target`` names (a ref, a file or a symbol: ``Context``, ``Context.invoke``,
        ``src/x.py::Context``), or None for free text, with the symbols it may mean when it names
        several (``Group.invoke (src/x.py)``). In a project, a file or symbol of that project only:
        never another project's of the same name."""
        ref = parse_ref(target)
        if ref is not None:
            named = ref_entity(ref, project, self._stores.namespace)
            return self._stores.store.get_entities([named.key]).get(named.key) or named, []
        if project:
            entity = self._project_file(project, target)
            if entity is not None:
                return entity, []
        else:  # no project asked: a file of any project, when only one has it
            known = self._stores.store.find_entities(target, (EntityKind.FILE,))
            if len(known) == 1:
                return known[0], []
        if self._stores.code is None:
            return None, []
        symbol, candidates = find_symbol(self._stores.code, project, target)
        return (symbol_entity(symbol, project or ""), []) if symbol is not None else (None, candidates)

    def _project_file(self, project: str, target: str) -> Entity | None:
        """The ``File`` entity of ``project`` that ``target`` names: a file or folder of its
        checkout here (stored or not), else a file the graph keeps under the project (one since
        deleted, or of a project not checked out on this machine)."""
        root = self._checkout(project)
        entity = file_entity(root, target, project) if root is not None else None
        if entity is not None:
            return self._stores.store.get_entities([entity.key]).get(entity.key) or entity
        name = relative_path(target, root)
        if name is None:
            return None
        key = file_key(project, name)
        return self._stores.store.get_entities([key]).get(key)

    def get_context(
        self,
        target: str,
        *,
        project: str | None = None,
        max_tokens: int | None = None,
        branch: str | None = None,
    ) -> ContextBundle:
        max_tokens = self._max_tokens if max_tokens is None else max_tokens
        target = checked_target(target)
        if not 50 <= max_tokens <= 32_000:
            raise InvalidInputError("max_tokens must be between 50 and 32000.")
        lines = parse_line_target(target)
        if lines is not None:
            ranged = self._lines(target, lines, project, max_tokens, branch)
            if ranged is not None:
                return ranged
            target = lines.path  # a file graphmem cannot read lines of: what is known about it
        now = self._stores.clock()
        entity, candidates = self.resolve(target, project)
        found = self._found(target, entity)
        hits: list[Hit] = []
        beyond = Beyond([], set())  # linked to it, past what the budget holds: counted, not shown
        about: Mapping[str, Sequence[Entity]] = {}  # memory id -> its entities, read once a call
        notes: list[str] = []
        code_sections: list[tuple[str, list[str]]] = []
        extra_keys: list[str] = []
        if entity is not None and self._stores.code is not None:
            code_sections, extra_keys = self._code_sections(entity)
        elif candidates:
            notes.append("Several symbols match: " + "; ".join(candidates) + ". Give the qualified name.")
        if entity is not None and self._enricher is not None:
            more, keys, note = self._gitlab_sections(entity, project)
            code_sections, extra_keys = [*code_sections, *more], [*extra_keys, *keys]
            notes += [note] if note else []
            entity = self._stores.shown(entity, project)  # a GitHub ref: not another project's title
        if found is False:
            inside = self._files_under(project, target, entity)
            notes.insert(
                0,
                self._not_in_graph(target, entity, project)
                if inside is None
                else directory_note(target, inside),
            )
        elif entity is not None:
            hits, beyond, about = self._direct(entity, project, extra_keys, branch, max_tokens)
            if not hits:
                notes.append(f"No memory is linked to {entity.name} yet; showing related memories.")
        query = entity.name if entity is not None and not entity.title else target
        if entity is not None and entity.title:
            query = f"{entity.name} {entity.title}"
        answer = self._recall(query, project=project, limit=CONTEXT_CANDIDATES, branch=branch)
        recalled = answer.hits
        about = {**{h.memory.id: h.entities for h in recalled}, **about}  # recall read what each is about
        if not answer.semantic_ready:
            notes.append(NOT_EMBEDDED_NOTE)
        seen = {h.memory.id for h in hits} | beyond.linked
        others = [h for h in recalled if h.memory.id not in seen]
        # A target that names something: only what is linked to it is about it (never shown as
        # not linked); the rest mention related words and are shown apart. A topic: what recall
        # finds is the answer.
        if found is False:  # nothing is linked to it: only what clearly names it may be shown
            others = [h for h in others if names_it(target, h.memory.text)]
        related_hits = others if found is not None else []
        hits += [] if found is not None else others
        related = self._related([*hits, *related_hits], entity, about)
        hits, related_hits = self._marked(hits, related_hits, about)
        bundle = build_bundle(
            target,
            entity,
            hits,
            related,
            max_tokens=max_tokens,
            now=now,
            notes=notes,
            code=code_sections,
            found=found,
            related_hits=related_hits,
        )
        return with_left_out(bundle, beyond)

    def _lines(
        self, target: str, lines: LineTarget, project: str | None, max_tokens: int, branch: str | None
    ) -> ContextBundle | None:
        """What is known about lines of a file (``src/x.py:40-52``); None when the file is
        not one of the project's or there is no code graph."""
        root = self._checkout(project) if project and self._stores.code is not None else None
        file = file_entity(root, lines.path, project) if root is not None else None
        if file is None or root is None or self._stores.code is None:
            return None
        file = self._stores.store.get_entities([file.key]).get(file.key) or file
        length = count_lines(root / file.name, lines.start)
        if length is not None and length < lines.start and not self._scanned_at(file, lines):
            return self._past_end(target, lines, file, length, project, max_tokens, branch)
        hits, symbols = self._range_hits(file, lines, project, branch)
        sections = [range_section(lines, symbols)]
        if symbols:
            sections += symbol_sections(self._stores.code, symbols[0])[1:]  # its callers and callees
        notes = (
            []
            if hits
            else [f"No memory is linked to {lines.label} of {file.name} yet; showing related ones."]
        )
        query = " ".join([file.name, *(f"`{s.qualified_name}`" for s in symbols[:3])])
        seen = {h.memory.id for h in hits}
        related_hits = [
            h
            for h in self._recall(query, project=project, limit=CONTEXT_CANDIDATES, branch=branch).hits
            if h.memory.id not in seen
        ]
        about = {
            **{h.memory.id: h.entities for h in related_hits},
            **self._stores.shown_about([h.memory.id for h in hits], project),
        }
        hits, related_hits = self._marked(hits, related_hits, about)
        shown = Entity(file.key, file.kind, target, file.project, file.title)
        return build_bundle(
            target,
            shown,
            hits,
            self._related([*hits, *related_hits], file, about),
            max_tokens=max_tokens,
            now=self._stores.clock(),
            notes=notes,
            code=sections,
            found=file.key in self._stores.store.get_entities([file.key]),
            related_hits=related_hits,
        )

    def _range_hits(
        self, file: Entity, lines: LineTarget, project: str | None, branch: str | None
    ) -> tuple[list[Hit], list[SymbolInfo]]:
        """The memories about ``lines`` of ``file`` visible from ``project`` on ``branch``, and
        the symbols those lines are in (``line_context.range_hits``)."""
        assert self._stores.code is not None
        aliases = self._stores.aliases(project)
        visibility = Visibility(project, branch=branch, expired_by=self._stores.clock(), aliases=aliases)
        return range_hits(
            self._stores.store,
            self._stores.code,
            file,
            lines,
            visible=lambda record: _visible(record, visibility),
            limit=CONTEXT_CANDIDATES,
        )

    def _past_end(
        self,
        target: str,
        lines: LineTarget,
        file: Entity,
        length: int,
        project: str | None,
        max_tokens: int,
        branch: str | None,
    ) -> ContextBundle:
        """A context for lines past the end of ``file`` (``length`` lines): it says so, and
        nothing is about them; the file's memories and recalled ones are shown apart."""
        about_file, _ = self._range_hits(file, lines, project, branch)
        seen = {h.memory.id for h in about_file}
        recalled = self._recall(file.name, project=project, limit=CONTEXT_CANDIDATES, branch=branch).hits
        related_hits = [*about_file, *(h for h in recalled if h.memory.id not in seen)]
        about = {
            **{h.memory.id: h.entities for h in recalled},
            **self._stores.shown_about([h.memory.id for h in about_file], project),
        }
        _, related_hits = self._marked([], related_hits, about)
        note = (
            f"{file.name} has {length:,} line{'' if length == 1 else 's'}: {lines.label} "
            f"{'is' if lines.start == lines.end else 'are'} past its end. Ask for lines within "
            f"1–{length:,}, or for {file.name} itself."
        )
        shown = Entity(file.key, file.kind, target, file.project, file.title)
        return build_bundle(
            target,
            shown,
            [],
            self._related(related_hits, file, about),
            max_tokens=max_tokens,
            now=self._stores.clock(),
            notes=[note],
            code=[past_end_section(lines, file.name, length)],
            found=False,
            related_hits=related_hits,
        )

    def _scanned_at(self, file: Entity, lines: LineTarget) -> bool:
        """Whether a live symbol of the last scan of ``file`` reaches ``lines`` (the file was
        longer then: what is about that code still is)."""
        assert self._stores.code is not None
        symbols = self._stores.code.symbols_in(file.project or "", file.name)
        return any(s.deleted_at is None and s.end_line >= lines.start for s in symbols)

    def _not_in_graph(self, target: str, entity: Entity | None, project: str | None) -> str:
        """What a context says first of a target the graph does not hold: for a file the last
        bootstrap skipped, that it did and why (a bootstrap again would skip it again)."""
        if project and entity is not None and entity.kind is EntityKind.FILE:
            skipped = skipped_note(target, entity.name, self._stores.store.get_meta(SKIPPED_KEY + project))
            if skipped is not None:
                return skipped
        return not_in_graph_note(target, entity)

    def _files_under(self, project: str | None, target: str, entity: Entity | None) -> list[str] | None:
        """When ``target`` names a directory of ``project`` (in its checkout here, or holding
        files of the code graph), the code graph's files in it, the shallowest first; else None."""
        if not project or (entity is not None and entity.kind is not EntityKind.FILE):
            return None
        root = self._checkout(project)
        name = entity.name if entity is not None else relative_path(target, root)
        if not name:
            return None
        # Only a path ``file_entity`` checked to be inside the checkout is looked at on disk.
        on_disk = entity is not None and root is not None and (root / entity.name).is_dir()
        known = self._stores.code.file_states(project) if self._stores.code is not None else {}
        inside = sorted((p for p in known if p.startswith(f"{name}/")), key=lambda p: (p.count("/"), p))
        return inside if on_disk or inside else None

    def _marked(
        self, hits: list[Hit], related_hits: list[Hit], about: Mapping[str, Sequence[Entity]]
    ) -> tuple[list[Hit], list[Hit]]:
        """Both lists with their memories' staleness, judged from ``about`` at once."""
        marked = self._staleness.annotate_hits([*hits, *related_hits], about)
        return marked[: len(hits)], marked[len(hits) :]

    def _found(self, target: str, entity: Entity | None) -> bool | None:
        """Whether the graph holds what ``target`` names; None for a free-text topic."""
        if entity is not None:
            if entity.kind is EntityKind.SYMBOL:
                return True  # found in the code graph
            return entity.key in self._stores.store.get_entities([entity.key])
        if parse_ref(target) is not None or find_path_candidates(target) == [target]:
            return False
        return None

    def boot_context(
        self, *, project: str | None = None, max_tokens: int | None = None, branch: str | None = None
    ) -> ContextBundle:
        # The user's own directives and preferences (an agent's or a file's are not rules:
        # core/provenance.py), open blockers, recent decisions and procedures.
        max_tokens = self._max_tokens if max_tokens is None else max_tokens
        if not 50 <= max_tokens <= 32_000:
            raise InvalidInputError("max_tokens must be between 50 and 32000.")
        hits: list[Hit] = []
        for categories, statuses, limit in BOOT_SECTIONS:
            visibility = Visibility(
                project,
                frozenset(statuses),
                frozenset(categories),
                branch=branch,
                expired_by=self._stores.clock(),
                aliases=self._stores.aliases(project),
            )
            if set(categories) & CONVENTIONS:  # only the user's own: an agent's or a file's are data
                found = self._stores.store.list_memories(visibility, limit=CONVENTIONS_FETCH, offset=0)
                records = [r for r in found if is_convention(r)][:limit]
            else:
                records = self._stores.store.list_memories(visibility, limit=limit, offset=0)
            hits += [Hit(record, 1.0, (), ()) for record in self._staleness.annotate(records)]
        name = project.rstrip("/").rsplit("/", 1)[-1] if project else ""  # a path's or a shared name's end
        target = f"start of a session in {name}" if name else "start of a session"
        return build_bundle(target, None, hits, [], max_tokens=max_tokens, now=self._stores.clock())

    def _code_sections(self, entity: Entity) -> tuple[list[tuple[str, list[str]]], list[str]]:
        assert self._stores.code is not None
        if entity.kind is EntityKind.FILE and entity.project:
            return file_sections(self._stores.code, entity.project, entity.name)
        if entity.kind is EntityKind.SYMBOL:
            symbol = self._stores.code.symbols([entity.key]).get(entity.key)
            if symbol is not None:
                return symbol_sections(self._stores.code, symbol), []
        return [], []

    def _gitlab_sections(
        self, entity: Entity, project: str | None
    ) -> tuple[list[tuple[str, list[str]]], list[str], str | None]:
        """An MR's, issue's or epic's GitLab facts (or why there are none: a ref of a GitHub
        repository ``project``, else the entity's, is none of GitLab's, and what GitLab may have
        said of it is another project's); a file's MRs."""
        assert self._enricher is not None
        graph = self._enricher.graph
        if entity.kind is EntityKind.FILE:  # not a GitHub checkout's MR: GitLab's diff was another's
            theirs = self._stores.another_projects  # what a reader is shown: one owner
            mine = changed_by(graph, entity.key, lambda mr: not theirs(mr, project))
            return mine, [], None
        if entity.kind not in GITLAB_KINDS:
            return [], [], None
        row = graph.rows([entity.key]).get(entity.key)
        foreign = self._enricher.foreign(entity.key, project, entity.project)  # refs resolve in origins
        note = pending_note(entity, row, self._enricher.configured, foreign)
        if foreign is not None:
            return [], [], note
        target = parse_key(entity.key)
        root = entity.project
        local = root if root and target and self._stores.namespace(root) == target.namespace else None
        sections, keys = ref_sections(graph, self._stores.code, entity, local)
        return sections, keys, note

    def _direct(
        self,
        entity: Entity,
        project: str | None,
        extra_keys: Sequence[str],
        branch: str | None,
        max_tokens: int,
    ) -> tuple[list[Hit], Beyond, dict[str, list[Entity]]]:
        """Memories linked to ``entity`` (or to its symbols), best first (``linked_memories.ranked``),
        as many as a budget of ``max_tokens`` may hold (at least ``CONTEXT_CANDIDATES``); then the
        rest, which it cannot, with those of a hub not read (``read_linked``); and what each read
        one is about (one read)."""
        keys = [entity.key, *extra_keys]
        found = self._stores.store.memories_about(keys)
        ids = list(dict.fromkeys(i for key in keys for i in found.get(key, [])))
        aliases = self._stores.aliases(project)
        visibility = Visibility(project, branch=branch, expired_by=self._stores.clock(), aliases=aliases)
        shown = max(CONTEXT_CANDIDATES, max_tokens // MIN_MEMORY_LINE_TOKENS)
        read = read_linked(self._stores.store, ids, visibility, wanted=shown)
        about = self._stores.shown_about([r.id for r in read.records], project)
        linked = [Hit(r, 1.0, (), (entity.name,)) for r in ranked(read.records, about)]
        # What it may not show (a decision not merged: recall shows it lower, marked) is not linked
        # for this reader: only what was read, and what of a hub was not, is kept from recall's.
        seen = {r.id for r in read.records} | read.unread_ids
        return linked[:shown], Beyond(linked[shown:], seen, read.unread, read.unread_events), about

    def _related(
        self, hits: list[Hit], entity: Entity | None, about: Mapping[str, Sequence[Entity]]
    ) -> list[tuple[Entity, int]]:
        """The entities ``hits`` are about (``about``, as the reader is shown them:
        ``Stores.shown_about``), but ``entity``, most named first."""
        counts: Counter[str] = Counter()
        by_key: dict[str, Entity] = {}
        for memory_id in dict.fromkeys(h.memory.id for h in hits):
            for item in about.get(memory_id, ()):
                if entity is None or item.key != entity.key:
                    counts[item.key] += 1
                    by_key[item.key] = item
        return [(by_key[key], n) for key, n in counts.most_common()]


@dataclass(frozen=True, slots=True)
class Beyond:
    """Memories linked to a target that its budget cannot hold: those read (``hits``), and those
    of a hub not read (``unread``; of them ``unread_events`` events, a hub's history); ``linked``:
    the ids of the memories linked to it that this reader may be shown or that were not read
    (one recall finds is never shown as not linked)."""

    hits: list[Hit]
    linked: set[str]
    unread: int = 0
    unread_events: int = 0


def with_left_out(bundle: ContextBundle, left_out: Beyond) -> ContextBundle:
    """``bundle`` counting ``left_out``, memories about its target that its budget cannot hold,
    among the ones it left out (``omitted_about``, and ``omitted_history`` for the repository's)."""
    count = len(left_out.hits) + left_out.unread
    if not count:
        return bundle
    history = sum(1 for hit in left_out.hits if scraped(hit)) + left_out.unread_events
    return replace(
        bundle,
        omitted=bundle.omitted + count,
        omitted_about=bundle.omitted_about + count,
        omitted_history=bundle.omitted_history + history,
    )


def names_it(target: str, text: str) -> bool:
    """Whether ``text`` clearly names ``target``: the target itself, or a path's file name, or its
    name without the extension as a word (``sessions.py``: "sessions" or "session")."""
    folded = text.casefold()
    target = target.strip().casefold()
    if target in folded:
        return True
    name = target.rstrip("/").rsplit("/", 1)[-1]
    if name != target and name in folded:
        return True
    stem = name.split(".", 1)[0]
    if len(stem) < MIN_STEM_CHARS or (stem == name and "/" not in target):
        return False
    said = set(words(folded))
    return stem in said or stem.removesuffix("s") in said


def checked_target(target: object) -> str:
    """``target`` without the spaces around it, refused when it is not text, empty, too long or
    not UTF-8: what every reading of a target (``ContextBuilder.named``, ``get_context``) takes."""
    text = target.strip() if isinstance(target, str) else ""
    if not text:
        raise InvalidInputError("Give a target: a ref like !123, a file path, or a few words.")
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidInputError(f"The target is over {MAX_TEXT_CHARS:,} characters: shorten it.")
    ensure_utf8(text, what="The target")
    return text


def relative_path(target: str, root: Path | None) -> str | None:
    """``target`` as a ``/``-separated path inside a project (``./src/a.py``: ``src/a.py``; an
    absolute path inside its checkout ``root``: the part after it), or None when it is none."""
    try:
        path = PurePosixPath(posixpath.normpath(target.strip()))
        if path.is_absolute():
            path = path.relative_to(root.as_posix()) if root is not None else path
    except ValueError:  # outside the checkout
        return None
    name = path.as_posix()
    if path.is_absolute() or name in {".", ""} or path.parts[0] == ".." or "\x00" in name:
        return None
    return name


def directory_note(target: str, files: Sequence[str]) -> str:
    """What a context for a directory says first: name a file in it (a few of them)."""
    named = ", ".join(files[:DIRECTORY_FILES_NAMED])
    more = len(files) - DIRECTORY_FILES_NAMED
    some = f" ({named}{f', and {more:,} more' if more > 0 else ''})" if files else ""
    return f"{target} is a directory: name a file in it{some}; showing memories that mention related words."


def not_in_graph_note(target: str, entity: Entity | None) -> str:
    """What a context for a file, symbol or ref the graph does not hold says first."""
    hint = ""
    if entity is not None and entity.kind is EntityKind.FILE:
        hint = " (`graphmem bootstrap` scans the repository's code)"
    return (
        f"{target} is not in the graph: nothing is linked to it{hint}; "
        "showing memories that mention related words."
    )
