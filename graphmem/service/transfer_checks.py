"""What an import file must satisfy beyond each line's own validation (``core/export_format.py``):
what its records name must exist, in the file or the store, and its links must not close a cycle of
``supersedes`` links. Each problem is added to the file's with its line number; ``Transfer`` imports
nothing when there is one.
"""

from __future__ import annotations

from graphmem.core.export_format import ParsedExport
from graphmem.core.models import LinkKind, Scope
from graphmem.core.ports import GraphStore
from graphmem.core.supersession import closes_cycle, describe_chain, supersessions


def check_references(store: GraphStore, parsed: ParsedExport, project: str | None) -> None:
    """What the file's records name: memory ids once each, a project for a project memory, entities
    and link ends of the file or the store."""
    ids: dict[str, int] = {}
    for number, memory in parsed.memories:
        if memory.id in ids:
            parsed.problems.append((number, f"the memory id of line {ids[memory.id]} again"))
        ids.setdefault(memory.id, number)
    for number, memory in parsed.memories:
        if memory.scope is Scope.PROJECT and not (project or memory.project):
            parsed.problems.append(
                (number, "scope 'project' needs a project: set 'project' or import with --project")
            )
    keys = {e.key for _, e in parsed.entities}
    for number, memory in parsed.memories:
        unknown = [k for k in memory.entities if k not in keys]
        if unknown:
            known = store.get_entities(unknown)
            missing = [k for k in unknown if k not in known]
            if missing:
                parsed.problems.append(
                    (number, f"unknown entities ({len(missing)}): add entity lines for them")
                )
    # Each line's ends, by the names of its fields: a line is reported once, whichever are unknown.
    endpoints = [(n, {"source": r.source, "target": r.target}) for n, r in parsed.links]
    endpoints += [(n, {"source": r.source, "target": r.target}) for n, r in parsed.nexts]
    endpoints += [
        (n, {"memory_id": r.memory_id, "other_id": r.other_id or r.memory_id}) for n, r in parsed.events
    ]
    outside = {i for _, ends in endpoints for i in ends.values() if i not in ids}
    stored = store.get_memories(outside) if outside else {}
    for number, ends in endpoints:
        unknown = [field for field, i in ends.items() if i not in ids and i not in stored]
        if unknown:
            parsed.problems.append(
                (number, f"a link endpoint is not a memory in the file or store ({', '.join(unknown)})")
            )


def check_links(store: GraphStore, parsed: ParsedExport, id_map: dict[str, str]) -> None:
    """Links between the memories they land on (a repeated memory maps onto the stored one): none
    from a memory to itself, and no ``supersedes`` link that closes a cycle with the store's and
    the file's (each memory on it would hide the next; ``core/supersession.py``)."""
    lands = [
        (n, id_map.get(r.source, r.source), id_map.get(r.target, r.target), r.kind) for n, r in parsed.links
    ]
    for number, source, target, _ in lands:
        if source == target:
            parsed.problems.append(
                (number, "source and target are the same memory once a repeated text is merged")
            )
    supersede = [(n, s, t) for n, s, t, kind in lands if kind is LinkKind.SUPERSEDES and s != t]
    if not supersede:
        return
    ends = {memory_id for _, s, t in supersede for memory_id in (s, t)}
    graph = supersessions(ends, store.links)  # the store's, one read per level
    for number, source, target in supersede:  # the file's in turn, each checked with those before it
        path = closes_cycle(source, target, graph)
        if path is not None:
            parsed.problems.append(
                (
                    number,
                    f"{describe_chain(path)}, so {source} cannot supersede {target}: the cycle would "
                    "hide every memory on it; drop one of these links",
                )
            )
        else:
            graph.setdefault(source, set()).add(target)
