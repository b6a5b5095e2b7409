"""The strings of an import line that no store holds, found before anything is imported.

Half of a UTF-16 pair (``"\\ud83d"`` alone) and a NUL are valid JSON, but UTF-8 cannot hold the
first, PostgreSQL refuses the second, and graphmem's doors refuse both: each is a problem of its
line, named by its field (``unstorable``), not a store error mid-import.
"""

from __future__ import annotations

from graphmem.core.text import ensure_utf8
from graphmem.errors import InvalidInputError

UNPAIRED = (
    "holds a lone surrogate escape (\\ud800-\\udfff, half of a character) that UTF-8 cannot "
    "store: write the whole character or remove it"
)
_NUL = "holds a NUL character (\\u0000), which PostgreSQL cannot store: remove it"


def unstorable(data: object, where: str) -> str | None:
    """What is wrong with the first text of a line's JSON that no store holds (a lone surrogate,
    a NUL), named by its field; None when every text is storable. A memory's text
    says so in its own words first (``validate_text``), and pydantic finds a surrogate in a bounded
    field; this covers every other field, those added later included."""
    pending: list[tuple[str, object]] = [(where, data)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, str):
            if "\x00" in value:
                return f"{path}: {_NUL}"
            if not value.isascii():
                try:
                    ensure_utf8(value)
                except InvalidInputError:
                    return f"{path}: {UNPAIRED}"
        elif isinstance(value, dict):  # its keys are the line type's own: validated
            pending.extend((f"{path}.{key}", item) for key, item in value.items())
        elif isinstance(value, list):
            pending.extend((path, item) for item in value)
    return None
