"""Mapping between graphmem's records and PostgreSQL rows: memories, vectors, visibility, and
the text search's lexemes and queries.

Full-text search runs in PostgreSQL on a ``tsvector`` graphmem writes itself: the memory's
words as ``adapters/search_terms.py`` analyses them (accents and case folded, Porter-stemmed,
stopwords kept, each at its position), so that a query's words (stopwords dropped) and its
phrase (words adjacent, ``<->``) match as in the other stores, whatever text search
configuration the server has. Lexemes and queries are passed as parameters (``%s::tsvector``,
``%s::tsquery``) built from word characters only.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format

from graphmem.adapters.record_rows import MEMORY_FIELDS as MEMORY_FIELDS  # the stores' one mapping
from graphmem.adapters.record_rows import column_value
from graphmem.adapters.record_rows import memory_from_row as memory_from_row
from graphmem.adapters.record_rows import utc as utc  # the PostgreSQL adapters' one conversion
from graphmem.adapters.search_terms import STOPWORDS, stem, tokens
from graphmem.adapters.visibility_clause import Dialect
from graphmem.adapters.visibility_clause import visibility_clause as shared_clause
from graphmem.core.models import MemoryRecord
from graphmem.core.ports import Vector, Visibility
from graphmem.core.text import fold, phrase_words, words

MEMORY_RETURN = ", ".join(f"m.{name}" for name in MEMORY_FIELDS) + ", m.embedding IS NOT NULL"
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


def vector_param(vector: Vector | Sequence[float]) -> VectorParam:
    """A vector as a query parameter (``%s::vector``); float32 values round-trip exactly."""
    return VectorParam(vector)


def memory_params(record: MemoryRecord, vector: Vector | None) -> dict[str, Any]:
    params = {name: db_value(getattr(record, name)) for name in MEMORY_FIELDS}
    params["terms"] = lexemes(record.text)
    params["embedding"] = None if vector is None else vector_param(vector)
    return params


# SQL's way of writing the condition of a Visibility (visibility_clause.py).
SQL = Dialect(param=lambda name: f"%({name})s", one_of=lambda column, p: f"{column} = ANY({p})", time=utc)


def visibility_clause(visibility: Visibility, alias: str = "m") -> tuple[str, dict[str, Any]]:
    """The SQL condition (named parameters) of the memories ``visibility`` lets a caller see."""
    return shared_clause(visibility, SQL, alias)
