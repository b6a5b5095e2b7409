"""The files a bootstrap left out of the code graph, and why, as the person is told.

The pass names the first few of each reason in its report (the rest counted), and keeps the
first :data:`SKIPPED_KEPT` of them but the vendored (a ``node_modules`` alone holds thousands,
and the reason is plain from the path) under ``SKIPPED_KEY``, so ``graphmem context`` on such a
file says it was skipped and why, instead of sending the person to a bootstrap that would skip
it again.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping

# The largest source file the code graph parses, in bytes (a fixed limit: no setting changes it).
MAX_SOURCE_BYTES = 1_000_000
SKIPPED_NAMED = 5  # paths the report names for each reason
# Paths the store keeps, at most, for ``graphmem context``: one value of the store's meta, kept
# small (about 60 KB) -- Kùzu holds large strings rewritten in place badly (``parse_store.py``).
SKIPPED_KEPT = 1_000
SKIPPED_KEY = "bootstrap_skipped:"  # + project: JSON ``{path: why}`` of the last pass

# Why a file is left out, as the report counts it (``adapters/repo_files.py`` decides).
BINARY = "binary"
HUGE = "huge"  # over MAX_SOURCE_BYTES
GENERATED = "generated"
VENDORED = "vendored"
OUTSIDE = "outside the project"
UNREADABLE = "unreadable"
DENIED = "permission denied"
NOT_REGULAR = "not a regular file"
NOT_UTF8_NAME = "non-UTF-8 name"
NOT_KEPT = frozenset({VENDORED})

# A NUL in a file's first bytes makes it binary, as git takes it: a picture or an executable,
# whatever its name (a source file's, a README's).
BINARY_SNIFF_BYTES = 8192


def looks_binary(data: bytes) -> bool:
    """Whether ``data``, a file's bytes from its start, is a binary file's (``BINARY``)."""
    return b"\0" in data[:BINARY_SNIFF_BYTES]


# What a reason means, and what the person can do about it.
_EXPLAINED = {
    BINARY: "it holds NUL bytes near its start, so it is taken for binary, not source",
    HUGE: (
        f"it is over {MAX_SOURCE_BYTES:,} bytes, the largest source file graphmem parses; "
        "a fixed limit, no setting changes it"
    ),
    GENERATED: "it is named or marked as generated code (e.g. `@generated`, `_pb2.py`)",
    OUTSIDE: "it is a link that leads outside the project, which graphmem never reads",
    UNREADABLE: "it could not be read (a broken link, a loop, or it vanished)",
    DENIED: "this user may not read it",
    NOT_REGULAR: "it is no regular file (a FIFO, a device, a socket)",
    NOT_UTF8_NAME: "its name is not UTF-8",
}


def named_skips(skipped: Mapping[str, str]) -> dict[str, list[str]]:
    """The first :data:`SKIPPED_NAMED` paths of each reason, sorted, from ``{path: why}``."""
    named: dict[str, list[str]] = {}
    for path in sorted(skipped):
        paths = named.setdefault(skipped[path], [])
        if len(paths) < SKIPPED_NAMED:
            paths.append(path)
    return named


def skip_counts(skipped: Mapping[str, str]) -> dict[str, int]:
    """How many paths each reason left out."""
    return dict(Counter(skipped.values()))


def kept_skips(skipped: Mapping[str, str]) -> str:
    """The JSON stored under :data:`SKIPPED_KEY`: every skip worth telling, at most :data:`SKIPPED_KEPT`."""
    kept = sorted((path, why) for path, why in skipped.items() if why not in NOT_KEPT)
    return json.dumps(dict(kept[:SKIPPED_KEPT]), ensure_ascii=False)


def skipped_note(target: str, path: str, stored: str | None) -> str | None:
    """What ``graphmem context`` says first of ``path``, which the last pass skipped (``stored``:
    the JSON under :data:`SKIPPED_KEY`); None when it did not (or nothing is stored)."""
    if not stored:
        return None
    try:
        skipped = json.loads(stored)
    except ValueError:  # a store written by hand or cut short: say nothing rather than fail
        return None
    why = skipped.get(path) if isinstance(skipped, dict) else None
    if why not in _EXPLAINED:  # only graphmem's own reasons are ever said, whatever is stored
        return None
    return (
        f"{target} is not in the graph: `graphmem bootstrap` skipped it ({why}: "
        f"{_EXPLAINED[why]}); showing memories that mention related words."
    )
