"""What a repository export may write over: a folder's ``memories.jsonl`` that holds memories this
store lacks (a teammate's, not imported yet) or has an older copy of would lose them, so the
export is refused, unless forced, with the two ways out in the caller's own terms: merge the
file first, or export over it anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from graphmem.core.dedup import memory_hash
from graphmem.core.ports import GraphStore
from graphmem.errors import ConflictError
from graphmem.service.repository_export import REPOSITORY_FILE
from graphmem.service.transfer_read import owner, parse_export, stamp


@dataclass(frozen=True, slots=True)
class CallerTerms:
    """The two ways out of a refused repository export, in the caller's own terms: merge the
    folder's file first (``{folder}``: its name), or export over it anyway."""

    merge: str
    force: str


CLI_TERMS = CallerTerms("run `graphmem import {folder}`", "export with --force")
TOOL_TERMS = CallerTerms(
    'call import_memories with path="{folder}"', "call export_memories with overwrite=true"
)


def check_nothing_dropped(
    store: GraphStore,
    current: str,
    name: str,
    label: str,
    root: str,
    aliases: frozenset[str],
    terms: CallerTerms,
) -> None:
    """Raise ``ConflictError`` when ``current`` (the folder's file as it is now; ``name`` names it)
    has invalid lines, or memories that ``store`` lacks or holds an older copy of, under
    ``root`` or its ``aliases``; the error says how to go on in ``terms``."""
    # The folder to import: the path ``name`` gives, else ``label``, the folder relative to the
    # project's root (``folder_label``: the CLI's export names the file alone).
    parent = Path(name).parent
    if name.endswith(REPOSITORY_FILE) and parent != Path("."):
        folder = str(parent)
    elif label == "." or label.endswith("/"):
        folder, name = label, f"{label.rstrip('/')}/{name}"
    else:
        folder = "DIR"
    merge = terms.merge.format(folder=folder)
    parsed = parse_export(current)
    problems = sorted(parsed.problems)
    if problems:
        number, message = problems[0]
        raise ConflictError(
            f"{name} has {len(problems)} invalid line(s) (line {number}: {message}); a merge conflict "
            f"left in it? Resolve it and {merge}, or {terms.force} to replace the file."
        )
    stored = store.get_memories([line.id for _, line in parsed.memories])
    missing: list[str] = []  # not in the store, or newer there than here: not imported yet
    for _, line in parsed.memories:
        mine = stored.get(line.id)
        if mine is not None:
            if stamp(line) > mine.updated_at:
                missing.append(line.id)
        elif not any(
            store.find_by_hash(memory_hash(line.scope, owner(line, kept), line.text))
            for kept in (root, *aliases)
        ):
            missing.append(line.id)
    if missing:
        shown = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
        raise ConflictError(
            f"{name} holds {len(missing)} memor{'y' if len(missing) == 1 else 'ies'} this store lacks or "
            f"has an older copy of ({shown}): {merge} first to merge them, or {terms.force} to drop "
            "them from the file."
        )
