"""Compare full-text engines on graphmem's synthetic developer memories.

Query latency p50/p95 at N memories (the queries recall's lexical channel sends, 100 hits
each, as recall asks) and the cost of adding one memory to an index of N, durable on
return, for: Kùzu's built-in FTS (the store's own), SQLite FTS5 (the standard library),
tantivy and bm25s (when installed; they are not graphmem dependencies).

    .venv/bin/python scripts/bench_lexical.py --memories 100000

Prints one JSON object per engine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from graphmem.adapters.lexical_index import query_parts
from graphmem.bench.synthetic import synthetic_memories, synthetic_queries
from graphmem.core.models import Category, MemoryRecord, Scope
from graphmem.core.ports import Visibility
from graphmem.core.text import content_hash, lexical_query

DEPTH = 100
INSERTS = 50
INSERT_DOC = "INSERT INTO docs(id, status, scope) VALUES (?, 'active', 'global')"


def _records(n: int, offset: int = 0) -> list[MemoryRecord]:
    out = []
    for item in synthetic_memories(n + offset)[offset:]:
        created = datetime.fromisoformat(item["created_at"])
        out.append(
            MemoryRecord(
                id=item["id"],
                text=item["text"],
                category=Category(item["category"]),
                scope=Scope.GLOBAL,
                project=None,
                created_at=created,
                updated_at=created,
                valid_from=created,
                content_hash=content_hash(item["text"]),
            )
        )
    return out


def _times(fn: Callable[[str], object], queries: list[str]) -> dict[str, float]:
    for q in queries[:20]:
        fn(q)  # warm up
    spent = []
    for q in queries:
        started = time.perf_counter()
        fn(q)
        spent.append((time.perf_counter() - started) * 1000)
    spent.sort()
    return {"p50_ms": round(statistics.median(spent), 2), "p95_ms": round(spent[int(len(spent) * 0.95)], 2)}


def _insert_cost(add_one: Callable[[MemoryRecord], None], extra: list[MemoryRecord]) -> float:
    spent = []
    for record in extra:
        started = time.perf_counter()
        add_one(record)
        spent.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(spent), 2)


def bench_kuzu(
    records: list[MemoryRecord], extra: list[MemoryRecord], queries: list[str], tmp: Path
) -> dict[str, Any]:
    """Kùzu 0.11.3 with graphmem's schema and the FTS index graphmem kept up to schema 4."""
    import kuzu

    from graphmem.adapters.kuzu_rows import CREATE_MEMORY, memory_params, memory_table
    from graphmem.adapters.kuzu_schema import create_schema

    db = kuzu.Database(str(tmp / "graph.kuzu"))
    conn = kuzu.Connection(db)
    for statement in create_schema():
        conn.execute(statement)
    conn.execute("LOAD EXTENSION fts")
    conn.execute("CALL CREATE_FTS_INDEX('Memory', 'memory_text', ['search_text'], stemmer := 'porter')")
    started = time.perf_counter()
    conn.execute("COPY Memory FROM $t", {"t": memory_table(records, None, 384)})
    load_s = time.perf_counter() - started
    search_query = (
        "CALL QUERY_FTS_INDEX('Memory', 'memory_text', $q, top := $top) "
        "WHERE node.status IN ['active', 'resolved'] AND node.scope = 'global' "
        "RETURN node.id, score ORDER BY score DESC LIMIT $limit"
    )
    prepared = conn.prepare(search_query)

    def search(q: str) -> object:
        return conn.execute(prepared, {"q": q, "top": DEPTH + 50, "limit": DEPTH}).get_all()

    create = conn.prepare(CREATE_MEMORY)

    def add(record: MemoryRecord) -> None:
        params = memory_params(record) | {"embedding": None, "embedded": False}
        conn.execute(create, params)  # auto-commit: durable on return

    result = {"engine": "kuzu-fts", "load_s": round(load_s, 1), **_times(search, queries)}
    result["insert_ms"] = _insert_cost(add, extra[: INSERTS // 2])
    conn.execute("CALL DROP_FTS_INDEX('Memory', 'memory_text')")
    result["insert_ms_without_fts"] = _insert_cost(add, extra[INSERTS // 2 :])
    conn.close()
    db.close()
    return result


def bench_fts5(
    records: list[MemoryRecord], extra: list[MemoryRecord], queries: list[str], tmp: Path
) -> dict[str, Any]:
    """SQLite FTS5 (Porter stemmer, accents folded), WAL, one transaction per insert."""
    import sqlite3

    db = sqlite3.connect(str(tmp / "fts5.sqlite3"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE docs(rowid INTEGER PRIMARY KEY, id TEXT UNIQUE, status TEXT, scope TEXT)")
    db.execute("CREATE VIRTUAL TABLE fts USING fts5(text, tokenize='porter unicode61 remove_diacritics 2')")

    def add(record: MemoryRecord) -> None:
        db.execute("BEGIN")
        cursor = db.execute(INSERT_DOC, (record.id,))
        db.execute("INSERT INTO fts(rowid, text) VALUES (?, ?)", (cursor.lastrowid, record.text))
        db.execute("COMMIT")

    started = time.perf_counter()
    db.execute("BEGIN")
    for record in records:
        cursor = db.execute(INSERT_DOC, (record.id,))
        db.execute("INSERT INTO fts(rowid, text) VALUES (?, ?)", (cursor.lastrowid, record.text))
    db.execute("COMMIT")
    load_s = time.perf_counter() - started

    def search(q: str) -> object:
        terms, _ = query_parts(q)
        expression = " OR ".join(f'"{t}"' for t in terms)
        return db.execute(
            "SELECT d.id, bm25(fts) AS s FROM fts JOIN docs d ON d.rowid = fts.rowid "
            "WHERE fts MATCH ? AND d.status IN ('active', 'resolved') AND d.scope = 'global' "
            "ORDER BY s LIMIT ?",
            (expression, DEPTH),
        ).fetchall()

    result = {"engine": "sqlite-fts5", "load_s": round(load_s, 1), **_times(search, queries)}
    result["insert_ms"] = _insert_cost(add, extra)
    db.close()
    return result


def bench_tantivy(
    records: list[MemoryRecord], extra: list[MemoryRecord], queries: list[str], tmp: Path
) -> dict[str, Any]:
    """tantivy through graphmem's adapter (adapters/lexical_index.py), filters included."""
    from graphmem.adapters.lexical_index import LexicalIndex

    index = LexicalIndex(tmp / "lexical.tantivy", None)  # type: ignore[arg-type]
    started = time.perf_counter()
    index.rebuild(records, token="bench")
    load_s = time.perf_counter() - started
    visibility = Visibility(project=None)
    result = {
        "engine": "tantivy",
        "load_s": round(load_s, 1),
        **_times(lambda q: index.search(q, visibility, DEPTH), queries),
    }

    def acknowledged(record: MemoryRecord) -> None:  # what a store write waits for
        index.mark([record.id])
        index.add([record])

    def committed(record: MemoryRecord) -> None:  # a commit per memory (the background thread batches)
        index.add([record])
        index.flush()

    result["insert_ms"] = _insert_cost(acknowledged, extra[: INSERTS // 2])
    index.flush()
    result["commit_ms"] = _insert_cost(committed, extra[INSERTS // 2 :])
    index.close()
    return result


def bench_bm25s(
    records: list[MemoryRecord], extra: list[MemoryRecord], queries: list[str], tmp: Path
) -> dict[str, Any]:
    import bm25s

    texts = [r.text for r in records]
    started = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    load_s = time.perf_counter() - started

    def search(q: str) -> object:
        tokens = bm25s.tokenize([q], stopwords="en", show_progress=False)
        return retriever.retrieve(tokens, k=DEPTH, show_progress=False)

    result = {"engine": "bm25s", "load_s": round(load_s, 1), **_times(search, queries)}
    # bm25s has no incremental insert: adding a memory re-indexes the corpus.
    result["insert_ms"] = round(load_s * 1000, 0)
    result["insert_note"] = "no incremental insert: the whole corpus is indexed again"
    return result


ENGINES = {"kuzu": bench_kuzu, "fts5": bench_fts5, "tantivy": bench_tantivy, "bm25s": bench_bm25s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--engines", default=",".join(ENGINES))
    args = parser.parse_args()
    records = _records(args.memories)
    extra = _records(INSERTS, offset=args.memories)
    queries = [lexical_query(q) for q in synthetic_queries(args.queries)]
    for name in args.engines.split(","):
        tmp = Path(tempfile.mkdtemp(prefix=f"lexbench-{name}-"))
        try:
            result = ENGINES[name](records, extra, queries, tmp)
        except ImportError as exc:
            result = {"engine": name, "skipped": f"not installed: {exc}"}
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(json.dumps({"memories": args.memories, **result}), flush=True)


if __name__ == "__main__":
    main()
