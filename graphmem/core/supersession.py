"""Chains of ``supersedes`` links: which memory replaces which, and which link would close a cycle.

A ``supersedes`` link hides its target behind its source. A chain of them that comes back to
where it started would hide every memory on it (each replaced by another), so no write may
close one: ``link`` refuses it (``service/lifecycle.py``) and so does an import
(``service/transfer.py``). Nor may a memory only its writer sees hide one others see: on a
team's store, a person's own global memory never supersedes a project memory or a team-wide one
(``keep_in_sight``; docs/team.md, "Scopes"). Pure: the links are read through the callable a
caller passes, and who sees what is given by the caller (``GraphStore.shared_memories``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

from graphmem.core.models import Link, LinkKind
from graphmem.errors import NotAllowedError

# Reads the links from and to some memories (``GraphStore.links``).
LinkReader = Callable[[Collection[str]], Iterable[Link]]
# Memory id -> the ids of the memories it supersedes.
Supersessions = dict[str, set[str]]


def supersessions(starts: Collection[str], read: LinkReader) -> Supersessions:
    """Every ``supersedes`` link that ``starts`` reach along such links, read a level at a time
    (one read per level, however many memories start)."""
    found: Supersessions = {}
    seen = set(starts)
    level = set(starts)
    while level:
        after: set[str] = set()
        for link in read(level):
            if link.kind is LinkKind.SUPERSEDES and link.source in level:
                found.setdefault(link.source, set()).add(link.target)
                if link.target not in seen:
                    after.add(link.target)
        seen |= after
        level = after
    return found


def chain(start: str, goal: str, supersedes: Mapping[str, Collection[str]]) -> list[str] | None:
    """The shortest chain by which ``start`` supersedes ``goal`` (``[start, ..., goal]``, each
    superseding the next), or None when there is none."""
    came_from: dict[str, str] = {}
    level = [start]
    while level:
        after: list[str] = []
        for memory_id in level:
            for older in sorted(supersedes.get(memory_id, ())):  # sorted: the same chain every time
                if older == start or older in came_from:
                    continue
                came_from[older] = memory_id
                if older == goal:
                    path = [goal]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1]
                after.append(older)
        level = after
    return None


def closes_cycle(newer: str, older: str, supersedes: Mapping[str, Collection[str]]) -> list[str] | None:
    """The chain by which ``older`` already supersedes ``newer`` (``[older, ..., newer]``), when a
    link ``newer`` supersedes ``older`` would close a cycle; None when it would not."""
    return chain(older, newer, supersedes)


def describe_chain(path: list[str]) -> str:
    """``mem_b already supersedes mem_a`` (``through mem_c`` for a longer chain)."""
    through = f" (through {', '.join(path[1:-1])})" if len(path) > 2 else ""
    return f"{path[0]} already supersedes {path[-1]}{through}"


def keep_in_sight(newer: str, older: str, shared: Collection[str]) -> None:
    """Refuse (``NotAllowedError``) ``newer`` superseding ``older`` when others see ``older`` (it
    is in ``shared``) and not ``newer``: it would vanish for them with nothing they can see in
    its place, its history with it. Both shared, or ``older`` the caller's alone: it may."""
    if older not in shared or newer in shared:
        return
    raise NotAllowedError(
        f"{older} is the team's (a project memory, or a team-wide one) and {newer} is a global memory "
        f"only you see: superseding {older} with it would hide it from everyone else with nothing in "
        f"its place. Replace it for the team with a project memory (`graphmem remember --supersedes "
        f'{older} "..."` in the project, without --scope global), or link yours to it instead '
        f"(`graphmem link {newer} {older} --kind related`)."
    )
