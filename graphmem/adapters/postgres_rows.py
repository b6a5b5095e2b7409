"""Mapping between graphmem's records and PostgreSQL rows: memories, vectors, visibility, and
the text search's lexemes and queries.

Full-text search runs in PostgreSQL on a ``tsvector`` graphmem writes itself: the memory's
words as ``adapters/search_terms.py`` analyses them (accents and case folded, Porter-stemmed,
stopwords kept, each at its position), so that a query's words (stopwords dropped) and its
phrase (words adjacent, ``<->``) match as in the other stores, whatever text search
configuration the server has. Lexemes and queries are passed as parameters (``%s::tsvector``,
``%s::tsquery``) built from word characters only.

Rows another writer made (``psql``, a script) are read within graphmem's bounds
(``record_rows.py``): a memory's text and labels are read no longer than graphmem holds them (a
100 MB text is not sent for one recall), a time PostgreSQL holds and Python does not
(``infinity``, a date before year 1 or after 9999) as the nearest one Python holds
(``configure_reads``), and a JSON value too long or too deep to read as none.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg
from psycopg.adapt import Buffer, Dumper, Loader
from psycopg.pq import Format
from psycopg.types.json import set_json_loads

from graphmem.adapters.record_rows import LABEL_CHARS, MAX_AUTHOR_CHARS, column_value, not_understood
from graphmem.adapters.record_rows import MEMORY_FIELDS as MEMORY_FIELDS  # the stores' one mapping
from graphmem.adapters.record_rows import memory_from_row as memory_from_row
from graphmem.adapters.record_rows import utc as utc  # the PostgreSQL adapters' one conversion
from graphmem.adapters.search_terms import STOPWORDS, stem, tokens
from graphmem.adapters.visibility_clause import Dialect
from graphmem.adapters.visibility_clause import visibility_clause as shared_clause
from graphmem.core.models import MemoryRecord
from graphmem.core.ports import Vector, Visibility
from graphmem.core.text import MAX_TEXT_CHARS, fold, phrase_words, words

# The columns of a memory another writer may have made longer than graphmem does, and how much of
# each is read: one more character than graphmem holds, so that ``memory_from_row`` knows to cut.
READ_CHARS = {"text": MAX_TEXT_CHARS + 1} | {name: most + 1 for name, most in LABEL_CHARS.items()}


def read_column(alias: str, name: str) -> str:
    """Column ``name`` of the memory ``alias`` as a read asks it: no longer than ``READ_CHARS``."""
    most = READ_CHARS.get(name)
    return f"{alias}.{name}" if most is None else f"left({alias}.{name}, {most})"


# Then the memory's writer and who confirmed it, when not the reader (``MemoryRecord.author`` and
# ``confirmed_by``, "" for a confirmation of no one known), each at most a role's length.
MEMORY_RETURN = (
    ", ".join(read_column("m", name) for name in MEMORY_FIELDS)
    + f", m.embedding IS NOT NULL, left(NULLIF(m.owner, current_user::text), {MAX_AUTHOR_CHARS + 1})"
    + ", CASE WHEN m.trust = 'confirmed' AND m.confirmed_by IS DISTINCT FROM current_user::text"
    + f" THEN left(COALESCE(m.confirmed_by, ''), {MAX_AUTHOR_CHARS + 1}) END"
)
INSERT_MEMORY = (
    f"INSERT INTO memories ({', '.join(MEMORY_FIELDS)}, terms, embedding) VALUES ("
    + ", ".join(f"%({name})s" for name in MEMORY_FIELDS)
    + ", %(terms)s::tsvector, %(embedding)s::vector)"
)
# A lexeme longer than this is left out of the index (tsvector's limit is 2,047 bytes; a word
# that long is a hash or a blob, found by nothing a person types).
MAX_LEXEME_BYTES = 100
# tsvector positions end at 16,383.
MAX_POSITION = 16_383


def db_value(value: object) -> object:
    """A field's value as PostgreSQL takes it: a time aware in UTC, an enum its string."""
    return utc(value) if isinstance(value, datetime) else column_value(value)


def _lexeme(word: str) -> str | None:
    word = word.replace("'", "").replace("’", "")
    if not word or len(word.encode("utf-8")) > MAX_LEXEME_BYTES:
        return None
    return word


def lexemes(text: str) -> str:
    """The ``tsvector`` of ``text``: each analysed word with its positions."""
    positions: dict[str, list[int]] = {}
    for position, word in enumerate(tokens(text), start=1):
        lexeme = _lexeme(word)
        if lexeme is not None and position <= MAX_POSITION:
            positions.setdefault(lexeme, []).append(position)
    return " ".join(f"'{lexeme}':{','.join(map(str, at))}" for lexeme, at in positions.items())


def query_lexemes(query: str) -> list[str]:
    """The words of ``query`` as the index holds them (stopwords dropped, stemmed), each once."""
    return list(
        dict.fromkeys(
            lexeme
            for w in words(fold(query))
            if w not in STOPWORDS and (lexeme := _lexeme(stem(w))) is not None
        )
    )


def phrase_query(query: str, phrase: str | None) -> str | None:
    """``phrase`` (``query`` when None) asked whole, each word next to the next, stopwords
    kept; None when it is no phrase (``core.text.phrase_words``)."""
    held = [_lexeme(stem(w)) for w in phrase_words(query if phrase is None else phrase)]
    if not held or any(lexeme is None for lexeme in held):
        return None
    return " <-> ".join(f"'{lexeme}'" for lexeme in held)


class VectorParam:
    """A vector passed to PostgreSQL in pgvector's binary form (``%s::vector``): a few µs per
    vector where its text (384 decimal numbers) took most of a millisecond to write and parse."""

    __slots__ = ("values",)

    def __init__(self, vector: Vector | Sequence[float]) -> None:
        self.values = np.asarray(vector, dtype=np.float32).ravel()


class _VectorDumper(Dumper):
    """pgvector's ``vector_recv`` format: dimension and a reserved word (int16 each), then the
    values as big-endian float32. No type oid: every use casts it (``::vector``)."""

    format = Format.BINARY

    def dump(self, obj: VectorParam) -> bytes:
        return struct.pack(">HH", obj.values.shape[0], 0) + obj.values.astype(">f4").tobytes()


# Registered once for the class (graphmem's own), before any connection copies the adapters.
psycopg.adapters.register_dumper(VectorParam, _VectorDumper)


def cosine_of(value: float) -> float | None:
    """A cosine PostgreSQL computed (``1 - (a <=> b)``); None when it is no number: pgvector's
    cosine with a vector of zeros (none graphmem writes) is NaN, which no ranking or JSON holds."""
    cosine = float(value)
    return cosine if math.isfinite(cosine) else None


def vector_param(vector: Vector | Sequence[float]) -> VectorParam:
    """A vector as a query parameter (``%s::vector``); float32 values round-trip exactly."""
    return VectorParam(vector)


def memory_params(record: MemoryRecord, vector: Vector | None) -> dict[str, Any]:
    params = {name: db_value(getattr(record, name)) for name in MEMORY_FIELDS}
    params["terms"] = lexemes(record.text)
    params["embedding"] = None if vector is None else vector_param(vector)
    return params


# -- reading what PostgreSQL holds and Python does not ----------------------------------------

# A JSON value longer than this is read as none: graphmem writes none near it (an event's states,
# a GitLab answer), and parsing one of hundreds of megabytes would hold gigabytes.
MAX_JSON_BYTES = 16 * 1024 * 1024
EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)


def _json(data: str | bytes) -> Any:
    """A JSON value as read; None when it is too long or too deeply nested to read."""
    if len(data) > MAX_JSON_BYTES:
        not_understood("JSON value", f"{len(data):,} bytes", "of a json column", "none")
        return None
    try:
        return json.loads(data)
    except RecursionError:  # PostgreSQL nests deeper than Python's parser recurses
        not_understood("JSON value", "nested too deep", "of a json column", "none")
        return None


class _HeldTimestamptz(Loader):
    """A ``timestamptz`` as psycopg reads it, or the nearest time Python holds (``EARLIEST``,
    ``LATEST``) for one it cannot (``infinity``, ``-infinity``, before year 1, after 9999)."""

    def __init__(self, oid: int, context: Any = None) -> None:
        super().__init__(oid, context)
        loader = psycopg.adapters.get_loader(oid, Format.TEXT)
        assert loader is not None
        self._read = loader(oid, context)

    def load(self, data: Buffer) -> datetime:
        try:
            value: datetime = self._read.load(data)
        except psycopg.DataError:
            text = bytes(data)
            return EARLIEST if text.startswith(b"-") or text.endswith(b"BC") else LATEST
        return value


def configure_reads(conn: psycopg.Connection[Any]) -> None:
    """Make ``conn`` read times and JSON as graphmem can hold them (see the module doc)."""
    conn.adapters.register_loader("timestamptz", _HeldTimestamptz)
    set_json_loads(_json, conn)


# SQL's way of writing the condition of a Visibility (visibility_clause.py).
SQL = Dialect(param=lambda name: f"%({name})s", one_of=lambda column, p: f"{column} = ANY({p})", time=utc)


def visibility_clause(visibility: Visibility, alias: str = "m") -> tuple[str, dict[str, Any]]:
    """The SQL condition (named parameters) of the memories ``visibility`` lets a caller see."""
    return shared_clause(visibility, SQL, alias)
