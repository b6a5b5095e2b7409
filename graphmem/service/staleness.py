"""Which memories may no longer hold: the code they are about changed, or is gone, since.

A memory about a symbol is *possibly stale* while the symbol's body is not the one the memory
was written against: its link to the symbol records that body (``EntityGraph.about_bodies``)
when it is made and whenever the memory is written again, edited or confirmed (its
``updated_at`` moves), so a branch switched to and back clears the flag it raised. A link from
before schema 14 that records none keeps the rule of before: the body changed after the memory's
``updated_at``. A memory about a symbol or a file the code no longer holds says so. Every surface
that shows memories asks ``Staleness`` once per answer, with the memories' entities it already
holds: one lookup of the symbols, one of the files and, when a symbol changed since first seen,
one of the recorded bodies; never one per hit.

The flag is for a statement about how code is ("``Context.invoke`` retries on timeouts"), whoever
wrote it, when that code changed: it asks someone to look again, so it must be rare enough to be
read. Two kinds of link would otherwise raise it for nothing:

- *A record of a past event*, a memory of a ``NEVER_STALE`` category (a commit bootstrap learned
  from the history, ``git:SHA``; a session's summary; anything remembered as an event), says what
  happened then. A later change of its code does not make it less true, nor does the code going
  away (which no ``confirm`` clears): it is never flagged. Bootstrap links a commit to each
  definition whose lines it last changed, a class included for a blank line or a decorator
  between its methods, so 2 lines changed in ``Context.find_object`` (a method of click's
  750-line ``Context``) flagged 38 of click's 3,000 latest commits beside the one decision about
  that method, and ``review`` was commits before all else.
- *The enclosing symbol of a narrower one*: a memory linked to a class and to one of its methods
  (``Context`` and ``Context.invoke``) is about the method, the class says where it is; the
  class's body changes with every method in it, so only the method's change flags the memory.
  A memory linked to the class alone is about the class, and any change of it flags the memory.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from graphmem.core.codegraph import SymbolInfo
from graphmem.core.models import Category, Entity, EntityKind, Hit, MemoryRecord
from graphmem.service.stores import Stores

# Code entities looked up per answer: bounds the cost of a recall, a list or an export
# whose memories name thousands of files and symbols (a bootstrap commit names up to 50 files).
STALE_LOOKUP_KEYS = 5_000
# Memory-to-code links read to count the stale memories of a store (``stats``), and how many
# memories are judged at a time (each names a few code entities: the lookups stay bounded).
STALE_COUNT_LINKS = 200_000
STALE_COUNT_CHUNK = 500
# Categories that record what happened (see the module doc): true of their time, never flagged.
NEVER_STALE = frozenset({Category.EVENT})


class Staleness:
    """Flags memories about code that changed or went away after they were written."""

    def __init__(self, stores: Stores) -> None:
        self._stores = stores  # reads: the memories' entities, and the code graph (None: nothing is stale)

    def flags(
        self, memories: Iterable[MemoryRecord], about: Mapping[str, Sequence[Entity]]
    ) -> dict[str, str]:
        """Memory id -> why it may be stale, for the flagged ones among ``memories``."""
        code = self._stores.code
        if code is None:
            return {}
        memories = [m for m in memories if m.category not in NEVER_STALE]
        symbol_keys: dict[str, None] = {}
        file_keys: dict[str, None] = {}
        for memory in memories:
            for entity in about.get(memory.id, ()):
                if entity.kind is EntityKind.SYMBOL:
                    symbol_keys.setdefault(entity.key)
                elif entity.kind is EntityKind.FILE:
                    file_keys.setdefault(entity.key)
        if not symbol_keys and not file_keys:
            return {}
        symbols = code.symbols(list(symbol_keys)[:STALE_LOOKUP_KEYS])
        gone = code.deleted_files(list(file_keys)[:STALE_LOOKUP_KEYS])
        # A body never changed since first seen is the one every link recorded: only memories
        # about a changed symbol need the bodies their links record (none, most recalls).
        edited = {key for key, symbol in symbols.items() if symbol.body_changed_at is not None}
        linked = [m.id for m in memories if any(e.key in edited for e in about.get(m.id, ()))]
        written = self._stores.store.about_bodies(linked) if linked else {}
        flags: dict[str, str] = {}
        for memory in memories:
            changed: str | None = None
            enclosing = _enclosing([e.key for e in about.get(memory.id, ()) if e.key in symbols])
            for entity in about.get(memory.id, ()):
                symbol = symbols.get(entity.key)
                if symbol is not None and symbol.deleted_at is not None:
                    flags[memory.id] = (
                        f"about `{symbol.qualified_name}`, which no longer exists "
                        f"(deleted on {symbol.deleted_at.date()})"
                    )
                    break
                if entity.key in gone:
                    flags[memory.id] = (
                        f"about {entity.name}, which no longer exists (deleted on {gone[entity.key].date()})"
                    )
                    break
                if changed is None and symbol is not None and entity.key not in enclosing:
                    changed = _changed(symbol, written.get(memory.id, {}).get(entity.key), memory)
            if changed is not None and memory.id not in flags:
                flags[memory.id] = changed
        return flags

    def annotate(self, memories: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        """``memories`` with ``stale`` set on the flagged ones."""
        if self._stores.code is None or not memories:
            return list(memories)
        about = self._stores.store.about([m.id for m in memories])
        return _marked(memories, self.flags(memories, about))

    def annotate_hits(
        self, hits: Sequence[Hit], about: Mapping[str, Sequence[Entity]] | None = None
    ) -> list[Hit]:
        """``hits`` with ``stale`` set on the flagged memories, from what each is about:
        ``about``'s entities when given, else the ones the hit carries (a recall's)."""
        if self._stores.code is None or not hits:
            return list(hits)
        known = about if about is not None else {h.memory.id: h.entities for h in hits}
        flags = self.flags([h.memory for h in hits], known)
        return [
            replace(h, memory=replace(h.memory, stale=flags[h.memory.id])) if h.memory.id in flags else h
            for h in hits
        ]

    def count(self) -> int:
        """How many current memories (active or resolved, of every project) are flagged."""
        code = self._stores.code
        if code is None:
            return 0
        about: dict[str, list[Entity]] = {}
        for memory_id, entity in code.code_links(STALE_COUNT_LINKS):
            about.setdefault(memory_id, []).append(entity)
        flagged = 0
        ids = list(about)
        for start in range(0, len(ids), STALE_COUNT_CHUNK):
            records = self._stores.store.get_memories(ids[start : start + STALE_COUNT_CHUNK])
            flagged += len(self.flags([r for r in records.values() if r.is_current], about))
        return flagged


def _changed(symbol: SymbolInfo, written: str | None, memory: MemoryRecord) -> str | None:
    """Why ``memory`` about ``symbol`` may be stale, or None: the body is not ``written``, the one
    its link records; with none recorded (a link from before schema 14), the body changed after
    the memory was last written."""
    when = symbol.body_changed_at
    on = f" on {when.date()}" if when is not None else ""
    if written is not None:
        return None if symbol.body_hash == written else f"possibly stale: {symbol.qualified_name} changed{on}"
    if when is not None and when > memory.updated_at:
        return f"possibly stale: {symbol.qualified_name} changed{on}"
    return None


def _enclosing(keys: Sequence[str]) -> set[str]:
    """The keys among ``keys`` of symbols another of them is nested in: ``Context``'s when
    ``Context.invoke`` (the same file, its qualified name below ``Context``'s) is there too.
    A key nested in ``K`` starts with ``K + "."``, so it sorts in ``[K + ".", K + "/")``."""
    ordered = sorted(set(keys))
    found: set[str] = set()
    for key in ordered:
        at = bisect_left(ordered, key + ".")
        if at < len(ordered) and ordered[at] < key + "/":
            found.add(key)
    return found


def _marked(memories: Sequence[MemoryRecord], flags: Mapping[str, str]) -> list[MemoryRecord]:
    return [replace(m, stale=flags[m.id]) if m.id in flags else m for m in memories]
